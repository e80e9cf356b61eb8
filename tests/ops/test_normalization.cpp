// Normalization (ops/normalization.h): layer_norm and rms_norm against values worked by hand and
// against a naive float64 reference; 1-D to 4-D inputs and several normalized dims; non-contiguous
// inputs; rows of one element; stability at x = 1e4 + small noise; the fused backward against the
// naive gradient formulas, its independence from the thread count; bad inputs.
#include <cmath>
#include <limits>
#include <vector>

#include <omp.h>

#include "test_util.h"

using namespace tt;
using Catch::Matchers::Contains;

namespace {

Tensor f64(const std::vector<double>& v, const Shape& s) { return tensor(v, s, kFloat64); }

// Naive layer_norm / rms_norm over rows of the last C elements, in double, from the definition.
Tensor naive_norm(const Tensor& x, int64_t C, const Tensor& w, const Tensor& b, double eps, bool rms) {
  std::vector<double> v = x.to(kFloat64).contiguous().to_vector<double>(), out(v.size());
  std::vector<double> wv = w.defined() ? w.to(kFloat64).contiguous().to_vector<double>() : std::vector<double>();
  std::vector<double> bv = b.defined() ? b.to(kFloat64).contiguous().to_vector<double>() : std::vector<double>();
  const int64_t R = C ? int64_t(v.size()) / C : 0;
  for (int64_t r = 0; r < R; ++r) {
    const double* row = v.data() + r * C;
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t i = 0; i < C; ++i) mean += row[i];
      mean /= double(C);
    }
    for (int64_t i = 0; i < C; ++i) var += (row[i] - mean) * (row[i] - mean);
    const double rstd = 1.0 / std::sqrt(var / double(C) + eps);
    for (int64_t i = 0; i < C; ++i) {
      double y = (row[i] - mean) * rstd;
      if (!wv.empty()) y *= wv[size_t(i)];
      if (!bv.empty()) y += bv[size_t(i)];
      out[size_t(r * C + i)] = y;
    }
  }
  return tensor(out, x.shape(), kFloat64);
}

}  // namespace

TEST_CASE("layer_norm: values worked by hand", "[ops][normalization]") {
  // mean 2.5, biased variance 1.25: y = (x - 2.5) / sqrt(1.25)
  Tensor x = f64({1, 2, 3, 4}, {4});
  CHECK_ALLCLOSE(layer_norm(x, {4}, {}, {}, 0.0), f64({-1.3416407864998738, -0.4472135954999579,
                                                       0.4472135954999579, 1.3416407864998738}, {4}), 1e-12, 1e-12);
  // weight and bias, eps folded into the variance
  Tensor w = f64({1, 2, 3, 4}, {4}), b = f64({0.5, 0, -0.5, 1}, {4});
  const double r = 1.0 / std::sqrt(1.25 + 0.25);
  CHECK_ALLCLOSE(layer_norm(x, {4}, w, b, 0.25), f64({-1.5 * r + 0.5, -0.5 * r * 2, 0.5 * r * 3 - 0.5, 1.5 * r * 4 + 1},
                                                    {4}), 1e-12, 1e-12);
  // float32 keeps its dtype
  Tensor y = layer_norm(x.to(kFloat32), {4});
  CHECK(y.dtype() == kFloat32);
  CHECK_ALLCLOSE(y, naive_norm(x, 4, {}, {}, 1e-5, false), 1e-5, 1e-6);
}

TEST_CASE("rms_norm: values worked by hand", "[ops][normalization]") {
  // mean(x^2) = 12.5: y = x / sqrt(12.5)
  Tensor x = f64({3, 4}, {2});
  CHECK_ALLCLOSE(rms_norm(x, {2}, {}, 0.0), f64({0.848528137423857, 1.131370849898476}, {2}), 1e-12, 1e-12);
  Tensor w = f64({2, -1}, {2});
  CHECK_ALLCLOSE(rms_norm(x, {2}, w, 0.5), f64({6 / std::sqrt(13.0), -4 / std::sqrt(13.0)}, {2}), 1e-12, 1e-12);
  // eps defaults to the dtype's machine epsilon (PyTorch 2.4): visible on a row of zeros + tiny
  Tensor tiny = f64({1e-9, 1e-9}, {2});
  const double expect = 1e-9 / std::sqrt(1e-18 + std::numeric_limits<double>::epsilon());
  CHECK_ALLCLOSE(rms_norm(tiny, {2}), f64({expect, expect}, {2}), 1e-10, 0);
  Tensor tiny32 = tiny.to(kFloat32);
  const double expect32 = 1e-9 / std::sqrt(1e-18 + double(std::numeric_limits<float>::epsilon()));
  CHECK_ALLCLOSE(rms_norm(tiny32, {2}), f64({expect32, expect32}, {2}), 1e-5, 0);
}

TEST_CASE("layer_norm and rms_norm: 1-D to 4-D inputs, several normalized dims", "[ops][normalization]") {
  manual_seed(1100);
  for (bool rms : {false, true}) {
    for (Shape s : {Shape{7}, Shape{3, 5}, Shape{2, 3, 4}, Shape{2, 2, 3, 5}}) {
      for (int k = 1; k <= s.size(); ++k) {
        Shape ns(s.begin() + (s.size() - k), s.end());
        INFO("shape " << s << ", normalized_shape " << ns << (rms ? ", rms" : ", layer"));
        Tensor x = randn(s, kFloat64);
        Tensor w = randn(ns, kFloat64), b = randn(ns, kFloat64);
        const int64_t C = numel_of(ns);
        if (rms) {
          CHECK_ALLCLOSE(rms_norm(x, ns, w, 1e-6), naive_norm(x, C, w, {}, 1e-6, true), 1e-10, 1e-12);
          CHECK_ALLCLOSE(rms_norm(x.to(kFloat32), ns, w.to(kFloat32), 1e-6), naive_norm(x, C, w, {}, 1e-6, true), 1e-5,
                         1e-5);
        } else {
          CHECK_ALLCLOSE(layer_norm(x, ns, w, b), naive_norm(x, C, w, b, 1e-5, false), 1e-10, 1e-12);
          CHECK_ALLCLOSE(layer_norm(x, ns, {}, b), naive_norm(x, C, {}, b, 1e-5, false), 1e-10, 1e-12);
          CHECK_ALLCLOSE(layer_norm(x.to(kFloat32), ns, w.to(kFloat32), b.to(kFloat32)),
                         naive_norm(x, C, w, b, 1e-5, false), 1e-5, 1e-5);
        }
      }
    }
  }
}

TEST_CASE("layer_norm and rms_norm: non-contiguous inputs and parameters", "[ops][normalization]") {
  manual_seed(1101);
  Tensor base = randn({6, 4}, kFloat64);
  Tensor xt = base.transpose(0, 1);                   // [4, 6], rows strided
  Tensor xs = randn({3, 10}, kFloat64).slice(1, 1, kEnd, 2);  // [3, 5], stride 2, offset 1
  Tensor xe = randn({1, 5}, kFloat64).expand({3, 5});        // stride 0 rows
  Tensor w = randn({12}, kFloat64).slice(0, 0, kEnd, 2);     // [6], strided weight
  CHECK_ALLCLOSE(layer_norm(xt, {6}, w), naive_norm(xt, 6, w, {}, 1e-5, false), 1e-10, 1e-12);
  CHECK_ALLCLOSE(rms_norm(xt, {6}, w), naive_norm(xt, 6, w, {}, std::numeric_limits<double>::epsilon(), true), 1e-10,
                 1e-12);
  CHECK_ALLCLOSE(layer_norm(xs, {5}), naive_norm(xs, 5, {}, {}, 1e-5, false), 1e-10, 1e-12);
  CHECK_ALLCLOSE(layer_norm(xe, {5}), naive_norm(xe, 5, {}, {}, 1e-5, false), 1e-10, 1e-12);
  CHECK_ALLCLOSE(layer_norm(xt, {4, 6}), naive_norm(xt, 24, {}, {}, 1e-5, false), 1e-10, 1e-12);
  CHECK(xt.shape() == Shape{4, 6});  // the input is untouched
}

TEST_CASE("layer_norm and rms_norm: rows of one element and empty inputs", "[ops][normalization]") {
  Tensor x = f64({3, -2, 5}, {3, 1});
  // a row of one element has variance 0: layer_norm gives bias (0 without affine)
  CHECK_ALLCLOSE(layer_norm(x, {1}), f64({0, 0, 0}, {3, 1}), 0, 0);
  CHECK_ALLCLOSE(layer_norm(x, {1}, f64({2}, {1}), f64({0.5}, {1})), f64({0.5, 0.5, 0.5}, {3, 1}), 0, 0);
  CHECK_ALLCLOSE(rms_norm(x, {1}, {}, 0.0), f64({1, -1, 1}, {3, 1}), 1e-15, 0);
  Tensor e = empty({0, 4}, kFloat32);
  CHECK(layer_norm(e, {4}).shape() == Shape{0, 4});
  CHECK(rms_norm(e, {4}).shape() == Shape{0, 4});
  // gradients of weight and bias over zero rows are zeros
  Tensor w = ones({4}, TensorOptions().requires_grad(true)), b = zeros({4}, TensorOptions().requires_grad(true));
  layer_norm(e, {4}, w, b).sum().backward();
  CHECK_ALLCLOSE(w.grad(), zeros({4}));
  CHECK_ALLCLOSE(b.grad(), zeros({4}));
}

TEST_CASE("layer_norm: a large offset keeps its small variance (float32)", "[ops][normalization]") {
  manual_seed(1102);
  Tensor noise = randn({4, 768}, kFloat64) * 0.1;
  Tensor x64 = noise + 1e4;
  Tensor x32 = x64.to(kFloat32);
  // the reference sees exactly the float32 inputs, in double
  Tensor expected = naive_norm(x32, 768, {}, {}, 1e-5, false);
  Tensor y = layer_norm(x32, {768});
  // a one-pass E[x^2] - E[x]^2 in float32 cancels to garbage here, and a mean rounded to one float
  // (ulp(1e4) ~ 1e-3, noise 0.1) would shift every output by up to 5e-3
  CHECK_ALLCLOSE(y, expected, 1e-4, 1e-4);
  Tensor y64 = layer_norm(x64, {768});
  CHECK_ALLCLOSE(y64, naive_norm(x64, 768, {}, {}, 1e-5, false), 1e-8, 1e-8);
  // and the variance is right: the output has unit variance
  CHECK(std::fabs(var(y.to(kFloat64), {1}, 0).mean().item<double>() - 1.0) < 1e-3);
}

TEST_CASE("layer_norm and rms_norm: huge float32 values do not overflow the statistics", "[ops][normalization]") {
  // x^2 overflows float32 above 1.8e19, and the sum of a row overflows near 3.4e38: the row's
  // statistics must not. [3e38, -3e38] normalizes to [1, -1] (float64 gives the same; PyTorch 1.13
  // returns NaN for it in float32, a deliberate difference).
  Tensor x = tensor({{3e38, -3e38}, {1e20, -1e20}, {3e38, 3e38}, {3e38, 3.2e38}});
  CHECK_ALLCLOSE(layer_norm(x, {2}), tensor({{1.0, -1.0}, {1.0, -1.0}, {0.0, 0.0}, {-1.0, 1.0}}), 1e-5, 1e-6);
  Tensor x4 = tensor({{3e38, 3e38, -3e38, 1.0}, {-3.4e38, 3.4e38, 3.4e38, 3.4e38}});
  CHECK_ALLCLOSE(layer_norm(x4, {4}), naive_norm(x4, 4, {}, {}, 1e-5, false), 1e-5, 1e-6);
  Tensor w = tensor({2.0, 0.5}), b = tensor({1.0, -1.0});
  CHECK_ALLCLOSE(layer_norm(x, {2}, w, b), naive_norm(x, 2, w, b, 1e-5, false), 1e-5, 1e-6);
  CHECK_ALLCLOSE(rms_norm(x, {2}), naive_norm(x, 2, {}, {}, 1e-6, true), 1e-5, 1e-6);
  CHECK_ALLCLOSE(rms_norm(x, {2}).narrow(0, 0, 3), tensor({{1.0, -1.0}, {1.0, -1.0}, {1.0, 1.0}}), 1e-5, 1e-6);
  Tensor w4 = tensor({2.0, 0.5, 2.0, 0.5});
  CHECK_ALLCLOSE(rms_norm(x4, {4}, w4), naive_norm(x4, 4, w4, {}, 1e-6, true), 1e-5, 1e-6);
  // float64 rows past 1e154, whose squares overflow float64.
  Tensor d = tensor({{1e300, -1e300}, {1e200, 3e200}}, kFloat64);
  CHECK_ALLCLOSE(layer_norm(d, {2}), tensor({{1.0, -1.0}, {-1.0, 1.0}}, kFloat64), 1e-12, 1e-12);
  CHECK_ALLCLOSE(rms_norm(d, {2}), tensor({{1.0, -1.0}, {1.0 / std::sqrt(5.0), 3.0 / std::sqrt(5.0)}}, kFloat64),
                 1e-12, 1e-12);
  // Non-finite inputs still give NaN, as before and as PyTorch.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(std::isnan(layer_norm(tensor({{inf, 1.0}}), {2}).to_vector<float>()[1]));
}

TEST_CASE("layer_norm and rms_norm: the fused backward matches the formulas", "[ops][normalization]") {
  manual_seed(1103);
  const int64_t R = 70, C = 33;  // more rows than one block of the weight-gradient sums
  for (bool rms : {false, true}) {
    Tensor x = randn({R, C}, kFloat64).requires_grad_();
    Tensor w = randn({C}, kFloat64).requires_grad_(), b = randn({C}, kFloat64).requires_grad_();
    Tensor dy = randn({R, C}, kFloat64);
    Tensor y = rms ? rms_norm(x, {C}, w, 1e-5) : layer_norm(x, {C}, w, b);
    y.backward(dy);
    // the same through composite tensor ops
    Tensor x2 = x.detach().requires_grad_(), w2 = w.detach().requires_grad_(), b2 = b.detach().requires_grad_();
    Tensor xc = rms ? x2 : x2 - x2.mean({1}, true);
    Tensor y2 = xc * rsqrt((xc * xc).mean({1}, true) + 1e-5) * w2;
    if (!rms) y2 = y2 + b2;
    y2.backward(dy);
    INFO((rms ? "rms_norm" : "layer_norm"));
    CHECK_ALLCLOSE(x.grad(), x2.grad(), 1e-9, 1e-11);
    CHECK_ALLCLOSE(w.grad(), w2.grad(), 1e-9, 1e-11);
    if (!rms) CHECK_ALLCLOSE(b.grad(), b2.grad(), 1e-9, 1e-11);
  }
}

TEST_CASE("layer_norm: gradients of the parameters do not depend on the thread count", "[ops][normalization]") {
  manual_seed(1104);
  Tensor x = randn({1000, 64}).requires_grad_();
  Tensor w = randn({64}).requires_grad_(), b = randn({64}).requires_grad_();
  Tensor dy = randn({1000, 64});
  layer_norm(x, {64}, w, b).backward(dy);
  const std::vector<float> gw = w.grad().to_vector<float>(), gb = b.grad().to_vector<float>(),
                           gx = x.grad().to_vector<float>();
  const int before = omp_get_max_threads();
  omp_set_num_threads(before == 1 ? 3 : 1);
  for (const Tensor& t : {x, w, b}) t.set_grad(Tensor());
  layer_norm(x, {64}, w, b).backward(dy);
  omp_set_num_threads(before);
  CHECK(w.grad().to_vector<float>() == gw);
  CHECK(b.grad().to_vector<float>() == gb);
  CHECK(x.grad().to_vector<float>() == gx);
}

TEST_CASE("layer_norm and rms_norm: bad inputs", "[ops][normalization]") {
  Tensor x = randn({2, 3, 4});
  CHECK_THROWS_AS(layer_norm(x, {3}), ShapeError);
  CHECK_THROWS_WITH(layer_norm(x, {3}), Contains("layer_norm") && Contains("last 1 dims") && Contains("[3]") &&
                                            Contains("[2, 3, 4]"));
  CHECK_THROWS_WITH(layer_norm(x, {2, 3, 4, 5}), Contains("[2, 3, 4, 5]") && Contains("[2, 3, 4]"));
  CHECK_THROWS_WITH(layer_norm(x, {}), Contains("at least one dim"));
  CHECK_THROWS_AS(layer_norm(x, {4}, ones({3})), ShapeError);
  CHECK_THROWS_WITH(layer_norm(x, {4}, ones({3})), Contains("weight") && Contains("[4]") && Contains("[3]"));
  CHECK_THROWS_WITH(layer_norm(x, {3, 4}, ones({3, 4}), ones({4})), Contains("bias") && Contains("[3, 4]"));
  CHECK_THROWS_AS(layer_norm(x, {4}, ones({4}, kFloat64)), DtypeError);
  CHECK_THROWS_AS(layer_norm(x, {4}, {}, {}, -1e-5), Error);
  CHECK_THROWS_WITH(layer_norm(x, {4}, {}, {}, -1e-5), Contains("eps") && Contains(">= 0"));
  CHECK_THROWS_AS(layer_norm(tensor({1, 2, 3}), {3}), DtypeError);
  CHECK_THROWS_WITH(layer_norm(tensor({1, 2, 3}), {3}), Contains("layer_norm") && Contains("int64"));
  CHECK_THROWS_AS(rms_norm(tensor({true, false}), {2}), DtypeError);
  CHECK_THROWS_AS(rms_norm(x, {3}), ShapeError);
  CHECK_THROWS_WITH(rms_norm(x, {4}, ones({2, 2})), Contains("rms_norm") && Contains("weight") && Contains("[2, 2]"));
  CHECK_THROWS_WITH(rms_norm(x, {4}, {}, -1.0), Contains("rms_norm") && Contains("eps"));
}
