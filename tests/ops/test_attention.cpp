// scaled_dot_product_attention and attention_weights (ops/attention.h): values worked by hand; the
// fused kernel against the composed math (every mask kind, causal square and rectangular across
// several query blocks, GQA/MQA, strided inputs, 2-D to 5-D), forward and gradients; gradcheck and
// gradgradcheck in float64; rows with nothing to attend to; dropout; bad inputs.
#include <cmath>
#include <limits>
#include <vector>

#include "test_util.h"

using namespace tt;
using Catch::Matchers::Contains;
using tt::testing::allclose;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The reference: PyTorch 2's math path in tensor ops (k, v repeated per group).
Tensor reference_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                      std::optional<double> scale = std::nullopt) {
  const int n = q.dim();
  Tensor kk = k, vv = v;
  if (n >= 3 && q.size(n - 3) != k.size(n - 3)) {
    const int64_t G = q.size(n - 3) / k.size(n - 3);
    std::vector<Tensor> ks, vs;
    for (int64_t h = 0; h < k.size(n - 3); ++h)
      for (int64_t g = 0; g < G; ++g) {
        ks.push_back(k.select(n - 3, h).unsqueeze(n - 3));
        vs.push_back(v.select(n - 3, h).unsqueeze(n - 3));
      }
    kk = cat(ks, n - 3);
    vv = cat(vs, n - 3);
  }
  const double s = scale ? *scale : 1.0 / std::sqrt(double(q.size(n - 1)));
  Tensor scores = matmul(q, kk.transpose(-2, -1)) * s;
  if (mask.defined()) {
    scores = mask.dtype() == kBool ? masked_fill(scores, eq(mask, scalar_tensor(false, kBool)), -kInf) : scores + mask;
  }
  if (causal) {
    const int64_t Tq = q.size(n - 2), Tk = k.size(n - 2);
    const Tensor allowed = le(arange(Tk).reshape({1, Tk}), arange(Tq).reshape({Tq, 1}));
    scores = masked_fill(scores, eq(allowed, scalar_tensor(false, kBool)), -kInf);
  }
  return matmul(softmax(scores, -1), vv);
}

struct Grads {
  Tensor out, dq, dk, dv;
};

// Forward and the gradients of q, k, v for a fixed upstream gradient.
template <typename F>
Grads run(F f, const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& up) {
  Tensor q = q0.detach().requires_grad_(), k = k0.detach().requires_grad_(), v = v0.detach().requires_grad_();
  Tensor out = f(q, k, v);
  (out * up).sum().backward();
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

void check_against_reference(const Shape& qs, const Shape& ks, const Shape& vs, const Tensor& mask, bool causal,
                             bool gqa = false, ScalarType dtype = kFloat32) {
  manual_seed(7);
  const Tensor q = randn(qs, dtype), k = randn(ks, dtype), v = randn(vs, dtype);
  Shape os = qs;
  os[os.size() - 1] = vs[vs.size() - 1];
  const Tensor up = randn(os, dtype);
  const Grads want = run([&](const Tensor& a, const Tensor& b, const Tensor& c) {
    return reference_sdpa(a, b, c, mask, causal);
  }, q, k, v, up);
  const double rtol = dtype == kFloat32 ? 1e-4 : 1e-10, atol = dtype == kFloat32 ? 1e-5 : 1e-12;
  for (SDPBackend backend : {SDPBackend::Math, SDPBackend::Flash}) {
    INFO("kernel " << (backend == SDPBackend::Math ? "math" : "flash"));
    SdpaKernelGuard guard(backend);
    const Grads got = run([&](const Tensor& a, const Tensor& b, const Tensor& c) {
      return scaled_dot_product_attention(a, b, c, mask, 0.0, causal, std::nullopt, gqa);
    }, q, k, v, up);
    CHECK_ALLCLOSE(got.out, want.out, rtol, atol);
    CHECK_ALLCLOSE(got.dq, want.dq, rtol, atol);
    CHECK_ALLCLOSE(got.dk, want.dk, rtol, atol);
    CHECK_ALLCLOSE(got.dv, want.dv, rtol, atol);
  }
}

}  // namespace

TEST_CASE("sdpa: values worked by hand", "[ops][attention]") {
  // One query against two keys, D = 1, scale 1: scores (1*1, 1*0) = (1, 0),
  // weights (e/(e+1), 1/(e+1)), out = w0 * 10 + w1 * 20.
  const Tensor q = tensor({1.0}, kFloat64).reshape({1, 1}), k = tensor({1.0, 0.0}, kFloat64).reshape({2, 1});
  const Tensor v = tensor({10.0, 20.0}, kFloat64).reshape({2, 1});
  const double e = std::exp(1.0);
  const Tensor out = scaled_dot_product_attention(q, k, v, {}, 0.0, false, 1.0);
  CHECK(out.item<double>() == Approx(10.0 * e / (e + 1) + 20.0 / (e + 1)).epsilon(1e-12));
  const Tensor w = attention_weights(q, k, {}, false, 1.0);
  CHECK(w.to_vector<double>()[0] == Approx(e / (e + 1)).epsilon(1e-12));
  // Causal, square: the first query sees only the first key.
  const Tensor q2 = ones({2, 1}, kFloat64);
  const Tensor out2 = scaled_dot_product_attention(q2, k, v, {}, 0.0, true, 1.0);
  CHECK(out2.to_vector<double>()[0] == Approx(10.0));
  // Default scale is 1/sqrt(D): D = 4 halves the scores.
  const Tensor q4 = ones({1, 4}, kFloat64), k4 = cat({ones({1, 4}, kFloat64), zeros({1, 4}, kFloat64)}, 0);
  const Tensor w4 = attention_weights(q4, k4);
  CHECK(w4.to_vector<double>()[0] == Approx(std::exp(2.0) / (std::exp(2.0) + 1)).epsilon(1e-12));
}

TEST_CASE("sdpa: fused equals the math path without a mask", "[ops][attention]") {
  check_against_reference({2, 3, 5, 4}, {2, 3, 7, 4}, {2, 3, 7, 6}, {}, false);
  check_against_reference({2, 3, 5, 4}, {2, 3, 7, 4}, {2, 3, 7, 6}, {}, false, false, kFloat64);
}

TEST_CASE("sdpa: causal across query blocks, square and rectangular", "[ops][attention]") {
  check_against_reference({1, 2, 150, 8}, {1, 2, 150, 8}, {1, 2, 150, 8}, {}, true);
  check_against_reference({1, 2, 100, 8}, {1, 2, 170, 8}, {1, 2, 170, 8}, {}, true);  // Tq < Tk
  check_against_reference({1, 2, 170, 8}, {1, 2, 100, 8}, {1, 2, 100, 8}, {}, true);  // Tq > Tk
  check_against_reference({2, 1, 65, 3}, {2, 1, 65, 3}, {2, 1, 65, 5}, {}, true, false, kFloat64);
}

TEST_CASE("sdpa: bool and float masks that broadcast", "[ops][attention]") {
  manual_seed(3);
  const Tensor m2 = (rand({5, 7}) > 0.3);           // [Tq, Tk]
  const Tensor m4 = (rand({2, 1, 1, 7}) > 0.2);     // key padding style
  const Tensor mf = randn({2, 3, 5, 7});             // float, per batch and head
  Tensor minf = randn({1, 5, 7});
  minf = masked_fill(minf, (rand({1, 5, 7}) > 0.7), -kInf);
  for (const Tensor& m : {m2, m4, mf, minf})
    check_against_reference({2, 3, 5, 4}, {2, 3, 7, 4}, {2, 3, 7, 6}, m, false);
  // A mask combined with is_causal: a key must pass both.
  check_against_reference({2, 3, 7, 4}, {2, 3, 7, 4}, {2, 3, 7, 6}, (rand({7, 7}) > 0.3), true);
}

TEST_CASE("sdpa: GQA and MQA", "[ops][attention]") {
  check_against_reference({2, 4, 6, 4}, {2, 2, 9, 4}, {2, 2, 9, 4}, {}, false, true);
  check_against_reference({2, 4, 70, 4}, {2, 1, 70, 4}, {2, 1, 70, 3}, {}, true, true);
  check_against_reference({2, 6, 5, 4}, {2, 3, 5, 4}, {2, 3, 5, 4}, (rand({2, 1, 5, 5}) > 0.2), false, true, kFloat64);
}

TEST_CASE("sdpa: 2-D, 3-D and 5-D inputs", "[ops][attention]") {
  check_against_reference({6, 4}, {9, 4}, {9, 3}, {}, false);
  check_against_reference({3, 6, 4}, {3, 9, 4}, {3, 9, 3}, {}, true);
  check_against_reference({2, 2, 3, 6, 4}, {2, 2, 3, 6, 4}, {2, 2, 3, 6, 4}, (rand({6, 6}) > 0.3), false);
}

TEST_CASE("sdpa: strided heads as MultiHeadAttention passes them", "[ops][attention]") {
  manual_seed(11);
  // [B, T, H*D] split into heads by a view: [B, H, T, D] with strides (T*H*D, D, H*D, 1).
  const Tensor x = randn({2, 9, 3 * 4});
  const Tensor q = x.reshape({2, 9, 3, 4}).transpose(1, 2);
  const Tensor kv = randn({2, 9, 3, 4}).transpose(1, 2);
  const Tensor got = scaled_dot_product_attention(q, kv, kv, {}, 0.0, true);
  CHECK_ALLCLOSE(got, reference_sdpa(q, kv, kv, {}, true), 1e-5, 1e-6);
  // The output is laid out token-major, so merging heads is a view.
  CHECK(got.transpose(1, 2).is_contiguous());
}

TEST_CASE("sdpa: rows with nothing to attend to give zeros and zero gradients", "[ops][attention]") {
  manual_seed(5);
  const Tensor q = randn({1, 2, 4, 3}, kFloat64), k = randn({1, 2, 5, 3}, kFloat64), v = randn({1, 2, 5, 3}, kFloat64);
  Tensor mask = ones({4, 5}, kBool);
  mask = masked_fill(mask, (reshape(arange(4), {4, 1}) == 2), false);  // query 2 may attend nowhere
  for (SDPBackend backend : {SDPBackend::Math, SDPBackend::Flash}) {
    SdpaKernelGuard guard(backend);
    const Grads g = run([&](const Tensor& a, const Tensor& b, const Tensor& c) {
      return scaled_dot_product_attention(a, b, c, mask);
    }, q, k, v, ones({1, 2, 4, 3}, kFloat64));
    CHECK(g.out.select(2, 2).abs().sum().item<double>() == 0.0);
    CHECK(g.dq.select(2, 2).abs().sum().item<double>() == 0.0);
    for (const Tensor& t : {g.out, g.dq, g.dk, g.dv})
      CHECK(eq(t, t).to(kInt64).sum().item<int64_t>() == t.numel());  // no NaN
  }
  const Tensor w = attention_weights(q, k, mask);
  CHECK(w.select(2, 2).abs().sum().item<double>() == 0.0);
  CHECK_ALLCLOSE(w.select(2, 0).sum(Shape{-1}), ones({1, 2}, kFloat64), 1e-12, 1e-12);
}

TEST_CASE("sdpa: gradcheck and gradgradcheck in float64", "[ops][attention]") {
  manual_seed(2);
  const Tensor q = randn({1, 2, 3, 2}, kFloat64).requires_grad_(), k = randn({1, 1, 4, 2}, kFloat64).requires_grad_(),
               v = randn({1, 1, 4, 3}, kFloat64).requires_grad_();
  const Tensor mask = (rand({3, 4}) > 0.25);
  auto fused = [&](const autograd::TensorList& in) {
    return scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, true, std::nullopt, true);
  };
  for (SDPBackend backend : {SDPBackend::Math, SDPBackend::Flash}) {
    SdpaKernelGuard guard(backend);
    CHECK(autograd::gradcheck(fused, {q, k, v}).message == "");
    CHECK(autograd::gradgradcheck(fused, {q, k, v}).message == "");
  }
  // A float mask that requires grad goes the composed way and gets its gradient.
  const Tensor fm = randn({3, 4}, kFloat64).requires_grad_();
  auto with_mask = [&](const autograd::TensorList& in) {
    return scaled_dot_product_attention(in[0], in[1], in[2], in[3], 0.0, false, std::nullopt, true);
  };
  CHECK(autograd::gradcheck(with_mask, {q, k, v, fm}).message == "");
}

TEST_CASE("sdpa: dropout is seeded and scales the kept weights", "[ops][attention]") {
  manual_seed(1);
  const Tensor q = randn({1, 2, 8, 4}), k = randn({1, 2, 8, 4}), v = randn({1, 2, 8, 4});
  manual_seed(42);
  const Tensor a = scaled_dot_product_attention(q, k, v, {}, 0.5);
  manual_seed(42);
  const Tensor b = scaled_dot_product_attention(q, k, v, {}, 0.5);
  CHECK(allclose(a, b, 0.0, 0.0));
  CHECK_FALSE(allclose(a, scaled_dot_product_attention(q, k, v)));
  // With v = ones each output is the sum of the kept weights over (1 - p): 1 on average (and
  // exactly 1 without dropout).
  const Tensor q2 = randn({1, 4, 256, 4}), k2 = randn({1, 4, 256, 4}), ones_v = ones({1, 4, 256, 1});
  CHECK_ALLCLOSE(scaled_dot_product_attention(q2, k2, ones_v), ones({1, 4, 256, 1}), 1e-5, 1e-5);
  const double m = scaled_dot_product_attention(q2, k2, ones_v, {}, 0.5).mean().item<float>();
  CHECK(std::abs(m - 1.0) < 0.05);
}

TEST_CASE("sdpa: expanded gradients and inputs (row stride 0) are read correctly", "[ops][attention]") {
  manual_seed(21);
  const Tensor q0 = randn({2, 2, 9, 4}), k0 = randn({2, 2, 1, 4}).expand({2, 2, 7, 4}), v0 = randn({2, 2, 7, 3});
  const Tensor v1 = randn({2, 2, 7, 1});
  for (SDPBackend backend : {SDPBackend::Math, SDPBackend::Flash}) {
    INFO("kernel " << (backend == SDPBackend::Math ? "math" : "flash"));
    // Pooling over tokens: out.sum(-2) sends back a dout expanded along T (row stride 0).
    auto pooled = [&](SDPBackend b, const Tensor& v) {
      Tensor q = q0.detach().requires_grad_(), k = k0.detach().requires_grad_(), vv = v.detach().requires_grad_();
      Tensor out;
      if (b == SDPBackend::Auto) {
        out = reference_sdpa(q, k, vv, {}, true);
      } else {
        SdpaKernelGuard guard(b);
        out = scaled_dot_product_attention(q, k, vv, {}, 0.0, true);
      }
      out.sum(Shape{-2}).pow(2).sum().backward();
      return std::vector<Tensor>{out.detach(), q.grad(), k.grad(), vv.grad()};
    };
    for (const Tensor& v : {v0, v1}) {  // Dv = 1: every stride of dout is 0
      const std::vector<Tensor> got = pooled(backend, v), want = pooled(SDPBackend::Auto, v);
      for (size_t i = 0; i < got.size(); ++i) CHECK_ALLCLOSE(got[i], want[i], 1e-4, 1e-5);
    }
  }
}

TEST_CASE("sdpa: a NaN in a query makes its row NaN on every path", "[ops][attention]") {
  manual_seed(22);
  Tensor q = randn({1, 1, 3, 4});
  q.select(2, 1).fill_(std::numeric_limits<float>::quiet_NaN());
  const Tensor k = randn({1, 1, 5, 4}), v = randn({1, 1, 5, 2});
  auto nan_rows = [](const Tensor& out) {
    const Tensor isnan = ne(out, out).to(kInt64).sum(Shape{-1});  // NaN count per row
    return isnan.to_vector<int64_t>();
  };
  const std::vector<int64_t> want{0, 2, 0};
  for (SDPBackend backend : {SDPBackend::Math, SDPBackend::Flash}) {
    SdpaKernelGuard guard(backend);
    CHECK(nan_rows(scaled_dot_product_attention(q, k, v)) == want);
    CHECK(nan_rows(scaled_dot_product_attention(q, k, v, {}, 0.0, true)) == want);
  }
  CHECK(nan_rows(reference_sdpa(q, k, v, {}, false)) == want);
}

TEST_CASE("sdpa: the kernel guard nests, and forcing flash where it cannot run throws", "[ops][attention]") {
  CHECK(sdpa_backend() == SDPBackend::Auto);
  {
    SdpaKernelGuard a(SDPBackend::Math);
    {
      SdpaKernelGuard b(SDPBackend::Flash);
      CHECK(sdpa_backend() == SDPBackend::Flash);
      const Tensor q = randn({1, 2, 4, 8});
      CHECK_THROWS_WITH(scaled_dot_product_attention(q, q, q, {}, 0.1), Contains("flash kernel was forced"));
    }
    CHECK(sdpa_backend() == SDPBackend::Math);
  }
  CHECK(sdpa_backend() == SDPBackend::Auto);
}

TEST_CASE("sdpa: bad inputs throw with the rule and the shapes", "[ops][attention]") {
  const Tensor q = randn({2, 4, 5, 8}), k = randn({2, 4, 6, 8}), v = randn({2, 4, 6, 8});
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, randn({2, 4, 6, 7}), v),
                    Contains("same last dim") && Contains("[2, 4, 6, 7]"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, randn({2, 2, 6, 8}), randn({2, 2, 6, 8})),
                    Contains("enable_gqa"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, randn({2, 3, 6, 8}), randn({2, 3, 6, 8}), {}, 0.0, false,
                                                 std::nullopt, true),
                    Contains("must divide"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k, randn({2, 4, 7, 8})), Contains("same length"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k, v, ones({5, 5}, kBool)),
                    Contains("does not broadcast") && Contains("[5, 5]") && Contains("[2, 4, 5, 6]"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k, v, ones({5, 6}, kInt64)), Contains("attn_mask must be bool"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k.to(kFloat64), v), Contains("one dtype"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k, v, {}, 1.0), Contains("dropout_p must be in [0, 1)"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(randn({5}), k, v), Contains("at least 2 dims"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(randint(0, 3, {5, 8}), randint(0, 3, {6, 8}), randint(0, 3, {6, 8})),
                    Contains("floating-point"));
}
