// Module 15 suite: bf16 conversion (the bits of known values, round trips, ties to even, NaN,
// infinity, overflow and subnormals), the promotion rules, bf16 ops that compute in float32 and
// round once, sums and matrix products that accumulate in float32, and autocast (the policy of
// each listed op and the dtype it gives, nested guards and enabled = false, the device type,
// float32 parameters and gradients, the cast cache, backward without autocast, the refusal of
// other dtypes), and a tiny GPT trained under bf16 autocast whose loss falls as float32's does.
// It is the judge in exercise mode (`tools/tt exercise 15`): the cases tagged [exercise] lean on
// BFloat16::round_to_bits and autocast's cast(), the bodies a learner writes.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "test_util.h"

using Catch::Matchers::Contains;
using tt::BFloat16;
using tt::Shape;
using tt::Tensor;

namespace nn = tt::nn;
namespace optim = tt::optim;

namespace {

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t bf16_bits(float f) { return BFloat16(f).bits; }

// True when a and b have the same dtype, shape and values (NaN matching NaN).
bool same_values(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
  return true;
}

double max_abs(const Tensor& t) { return t.detach().to(tt::kFloat64).abs().max().item<double>(); }

}  // namespace

// --- the format --------------------------------------------------------------------------------

TEST_CASE("BFloat16 holds the top 16 bits of a float32, rounded", "[module15][exercise]") {
  CHECK(sizeof(BFloat16) == 2);
  CHECK(bf16_bits(1.0f) == 0x3F80);
  CHECK(bf16_bits(-2.0f) == 0xC000);
  CHECK(bf16_bits(0.5f) == 0x3F00);
  CHECK(bf16_bits(0.1f) == 0x3DCD);         // 0x3DCCCCCD: the dropped 0xCCCD is above half, up
  CHECK(bf16_bits(1.0f / 3.0f) == 0x3EAB);  // 0x3EAAAAAB: up
  CHECK(bf16_bits(3.14159265f) == 0x4049);  // 0x40490FDB: the dropped 0x0FDB is below half, down
  CHECK(bf16_bits(-0.0f) == 0x8000);        // the sign of zero is kept
  CHECK(float(BFloat16(0.1f)) == 0.10009765625f);
  CHECK(float(BFloat16::from_bits(0x7F7F)) == 3.3895313892515355e38f);  // the largest finite bf16
  CHECK(float(BFloat16::from_bits(0x0080)) == std::ldexp(1.0f, -126));  // the smallest normal: float32's
  CHECK(float(BFloat16::from_bits(0x0001)) == std::ldexp(1.0f, -133));  // the smallest subnormal
  // Every bf16 value is a float32: bf16 -> float32 -> bf16 gives back the same bits.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    BFloat16 v = BFloat16::from_bits(uint16_t(b));
    if (std::isnan(float(v))) continue;
    if (BFloat16(float(v)).bits != v.bits) FAIL("bits " << b << " do not survive the round trip");
  }
  // float32 -> bf16 picks the nearer of the two bf16 neighbours: error at most 2^-8 relative.
  tt::manual_seed(1501);
  for (float x : (tt::randn({100000}) * 100.0).to_vector<float>()) {
    const uint32_t down = tt::BFloat16::float_bits(x) & 0xFFFF0000u;  // cut: towards zero
    const float lo = float_of(down), hi = float_of(down + 0x10000u);   // the neighbours
    const float r = float(BFloat16(x));
    REQUIRE((r == lo || r == hi));
    REQUIRE(std::fabs(r - x) <= std::fabs((r == lo ? hi : lo) - x));
    REQUIRE(std::fabs(double(r) - x) <= std::ldexp(std::fabs(double(x)), -8));
  }
}

TEST_CASE("BFloat16 rounds exact ties to the even neighbour", "[module15][exercise]") {
  CHECK(bf16_bits(float_of(0x3F808000u)) == 0x3F80);  // 1 + 2^-8: halfway, 0x3F80 is even: down
  CHECK(bf16_bits(float_of(0x3F818000u)) == 0x3F82);  // halfway, 0x3F81 is odd: up
  CHECK(bf16_bits(float_of(0x3F807FFFu)) == 0x3F80);  // just below a tie: down
  CHECK(bf16_bits(float_of(0x3F808001u)) == 0x3F81);  // just above a tie: up
  CHECK(bf16_bits(float_of(0xBF808000u)) == 0xBF80);  // negative ties alike
  CHECK(bf16_bits(float_of(0xBF818000u)) == 0xBF82);
  CHECK(bf16_bits(float_of(0x3FFF8000u)) == 0x4000);  // an odd tie carries into the exponent: 2.0
  CHECK(float(BFloat16(257.0f)) == 256.0f);           // integers: a gap of 2 above 256, ties to even
  CHECK(float(BFloat16(259.0f)) == 260.0f);
  CHECK(float(BFloat16(255.0f)) == 255.0f);
  // Ties split both ways: rounding 1 + k 2^-8 for k = 0 .. 255 has no drift on average.
  double drift = 0;
  for (int k = 0; k < 256; ++k) {
    const float x = 1.0f + float(k) * std::ldexp(1.0f, -8);
    drift += double(float(BFloat16(x))) - x;
  }
  CHECK(drift == 0.0);
}

TEST_CASE("BFloat16 keeps NaN a NaN, infinity infinite, and overflows to infinity", "[module15][exercise]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(std::isnan(float(BFloat16(std::nanf("")))));
  CHECK(std::isnan(float(BFloat16(float_of(0x7F800001u)))));  // a NaN in the low bits only: not inf
  CHECK(bf16_bits(float_of(0x7F800001u)) == 0x7FC0);         // quiet
  CHECK((bf16_bits(float_of(0xFF800001u)) & 0x8000) != 0);    // the sign is kept
  CHECK(std::isnan(float(BFloat16(float_of(0xFF800001u)))));
  CHECK(float(BFloat16(inf)) == inf);
  CHECK(float(BFloat16(-inf)) == -inf);
  CHECK(float(BFloat16(std::numeric_limits<float>::max())) == inf);   // past bf16's largest: rounds up to inf
  CHECK(float(BFloat16(-std::numeric_limits<float>::max())) == -inf);
  CHECK(float(BFloat16(3.3895313892515355e38f)) == 3.3895313892515355e38f);  // the largest stays
  // Small values: float32's range, so gradients that would vanish in float16 (below 2^-24) stay.
  CHECK(float(BFloat16(1e-8f)) == Approx(1e-8).epsilon(0.004));
  CHECK(float(BFloat16(1e-30f)) == Approx(1e-30).epsilon(0.004));
  CHECK(float(BFloat16(std::ldexp(1.0f, -130))) == std::ldexp(1.0f, -130));  // a subnormal
  CHECK(float(BFloat16(std::ldexp(1.0f, -149))) == 0.0f);                    // below half of 2^-133: 0
}

TEST_CASE("bf16 promotes to float32 with float32, and computes in float32", "[module15]") {
  CHECK(std::string(tt::dtype_name(tt::kBFloat16)) == "bfloat16");
  CHECK(tt::element_size(tt::kBFloat16) == 2);
  CHECK(tt::is_floating_point(tt::kBFloat16));
  CHECK(tt::compute_dtype(tt::kBFloat16) == tt::kFloat32);
  CHECK(tt::compute_dtype(tt::kFloat32) == tt::kFloat32);
  CHECK(tt::promote_types(tt::kBFloat16, tt::kFloat32) == tt::kFloat32);
  CHECK(tt::promote_types(tt::kFloat32, tt::kBFloat16) == tt::kFloat32);
  CHECK(tt::promote_types(tt::kBFloat16, tt::kFloat64) == tt::kFloat64);
  CHECK(tt::promote_types(tt::kBFloat16, tt::kInt64) == tt::kBFloat16);
  CHECK(tt::promote_types(tt::kBFloat16, tt::kBool) == tt::kBFloat16);
  Tensor h = tt::ones({3}, tt::kBFloat16);
  CHECK((h + tt::ones({3})).dtype() == tt::kFloat32);                // a bf16 branch + a float32 stream
  CHECK((h * 2.5).dtype() == tt::kBFloat16);                          // a number does not widen
  CHECK((h + tt::ones({3}, tt::kInt64)).dtype() == tt::kBFloat16);
  CHECK((h + tt::ones({3}, tt::kFloat64)).dtype() == tt::kFloat64);
  CHECK(h.sum().dtype() == tt::kBFloat16);                            // stored bf16, added in float32
}

// --- ops on bf16 -----------------------------------------------------------------------------

TEST_CASE("bf16 elementwise ops equal the float32 result rounded once", "[module15][exercise]") {
  tt::manual_seed(1502);
  Tensor a = tt::randn({37, 29}).to(tt::kBFloat16), b = tt::randn({37, 29}).to(tt::kBFloat16);
  REQUIRE(a.dtype() == tt::kBFloat16);
  // +, -, * by hand: each element's float32 result, rounded once by BFloat16.
  std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
  std::vector<float> sum(av.size()), diff(av.size()), prod(av.size());
  for (size_t i = 0; i < av.size(); ++i) {
    sum[i] = float(BFloat16(av[i] + bv[i]));
    diff[i] = float(BFloat16(av[i] - bv[i]));
    prod[i] = float(BFloat16(av[i] * bv[i]));
  }
  CHECK((a + b).dtype() == tt::kBFloat16);
  CHECK((a + b).to_vector<float>() == sum);
  CHECK((a - b).to_vector<float>() == diff);
  CHECK((a * b).to_vector<float>() == prod);
  // Every other op: the float32 op on the same values, then one rounding.
  const Tensor a32 = a.to(tt::kFloat32), b32 = b.to(tt::kFloat32);
  CHECK(same_values(tt::exp(a), tt::exp(a32).to(tt::kBFloat16)));
  CHECK(same_values(tt::tanh(a), tt::tanh(a32).to(tt::kBFloat16)));
  CHECK(same_values(tt::gelu(a), tt::gelu(a32).to(tt::kBFloat16)));
  Tensor c = b.abs() + 1;  // bf16, away from 0
  REQUIRE(c.dtype() == tt::kBFloat16);
  CHECK(same_values(a / c, (a32 / c.to(tt::kFloat32)).to(tt::kBFloat16)));
  CHECK(same_values(tt::softmax(a, 1), tt::softmax(a32, 1).to(tt::kBFloat16)));
  // Rounding twice would differ: (a * b) * 3 in bf16 rounds after each op, in float32 once.
  Tensor twice = (a * b) * 3.0, once = (a32 * b32 * 3.0).to(tt::kBFloat16);
  CHECK_FALSE(same_values(twice, once));
}

TEST_CASE("A bf16 sum of 4096 ones is 4096: sums accumulate in float32", "[module15][exercise]") {
  // A bf16 register stops at 256: 256 + 1 = 257 rounds back to 256.
  BFloat16 reg(0.0f);
  for (int i = 0; i < 4096; ++i) reg = BFloat16(float(reg) + 1.0f);
  CHECK(float(reg) == 256.0f);
  // The library's sum reads bf16 and adds in float32.
  CHECK(tt::ones({4096}, tt::kBFloat16).sum().item<double>() == 4096.0);
  CHECK(tt::ones({64, 4096}, tt::kBFloat16).sum({1}).to(tt::kFloat64).min().item<double>() == 4096.0);
  CHECK(tt::ones({4096}, tt::kBFloat16).mean().item<double>() == 1.0);
  // Ten thousand small terms: within one final rounding (2^-8) of the exact sum.
  tt::manual_seed(1503);
  Tensor xs = (tt::rand({10000}) * 0.002).to(tt::kBFloat16);
  std::vector<float> v = xs.to_vector<float>();
  const double exact = std::accumulate(v.begin(), v.end(), 0.0);
  CHECK(std::fabs(xs.sum().item<double>() - exact) <= std::ldexp(exact, -8));
  BFloat16 small(0.0f);
  for (float x : v) small = BFloat16(float(small) + x);
  CHECK(float(small) < 0.6 * exact);  // the bf16 register loses more than 40%
}

TEST_CASE("bf16 matmul accumulates in float32: within one rounding of the exact product", "[module15][exercise]") {
  tt::manual_seed(1504);
  for (int64_t K : {1, 31, 512, 4096}) {
    INFO("K = " << K);
    Tensor a = tt::randn({16, K}).to(tt::kBFloat16), b = tt::randn({K, 24}).to(tt::kBFloat16);
    Tensor got = a.matmul(b);
    REQUIRE(got.dtype() == tt::kBFloat16);
    REQUIRE(got.shape() == Shape{16, 24});
    Tensor a64 = a.to(tt::kFloat64), b64 = b.to(tt::kFloat64);
    Tensor exact = a64.matmul(b64), scale = a64.abs().matmul(b64.abs());
    // One rounding of the output, plus float32 accumulation: K roundings of 2^-24 of sum |a b|.
    Tensor bound = exact.abs() * std::ldexp(1.0, -8) + scale * (double(K) * std::ldexp(1.0, -24));
    Tensor err = (got.to(tt::kFloat64) - exact).abs();
    CHECK((err <= bound).to(tt::kInt64).min().item<int64_t>() == 1);
  }
  // Transposed operands (strided reads) give the same values.
  Tensor a = tt::randn({20, 40}).to(tt::kBFloat16), b = tt::randn({40, 12}).to(tt::kBFloat16);
  CHECK(same_values(a.t().contiguous().t().matmul(b), a.matmul(b)));
  CHECK(same_values(a.matmul(b.t().contiguous().t()), a.matmul(b)));
}

// --- autocast ----------------------------------------------------------------------------------

TEST_CASE("Autocast: each listed op's policy and the dtype it gives", "[module15][exercise]") {
  // The list and its policies, by name: a product in bf16, anything that exponentiates,
  // normalizes or adds up a row in float32.
  const std::vector<std::string> lower = {"matmul", "mm", "bmm", "linear", "scaled_dot_product_attention"};
  const std::vector<std::string> f32 = {"softmax", "log_softmax", "layer_norm", "rms_norm", "cross_entropy",
                                        "nll_loss", "mse_loss", "binary_cross_entropy",
                                        "binary_cross_entropy_with_logits", "sum", "mean"};
  size_t found = 0;
  for (size_t i = 0; i < tt::amp::kNumAutocastOps; ++i) {
    const tt::AutocastOp op = tt::AutocastOp(i);
    const std::string name = tt::amp::op_name(op);
    INFO(name);
    for (const std::string& n : lower) {
      if (n != name) continue;
      CHECK(tt::amp::policy(op) == tt::CastPolicy::LowerPrecision);
      ++found;
    }
    for (const std::string& n : f32) {
      if (n != name) continue;
      CHECK(tt::amp::policy(op) == tt::CastPolicy::Float32);
      ++found;
    }
  }
  CHECK(found == lower.size() + f32.size());

  tt::manual_seed(1505);
  Tensor x = tt::randn({6, 8}), w = tt::randn({5, 8}), bias = tt::randn({5});
  Tensor q = tt::randn({1, 2, 4, 8});
  Tensor labels = tt::tensor(std::vector<int64_t>{0, 4, 2, 1, 3, 3}, Shape{6});
  Tensor x16 = x.to(tt::kBFloat16);
  tt::AutocastGuard autocast(tt::kCPU, tt::kBFloat16);
  // LowerPrecision: float32 in, bf16 out, the same bits as the bf16 op on inputs cast by hand.
  Tensor lin = tt::linear(x, w, bias);
  CHECK(lin.dtype() == tt::kBFloat16);
  CHECK(tt::matmul(x, w.t()).dtype() == tt::kBFloat16);
  CHECK(tt::mm(x, w.t()).dtype() == tt::kBFloat16);
  CHECK(tt::bmm(x.unsqueeze(0), w.t().unsqueeze(0)).dtype() == tt::kBFloat16);
  CHECK(tt::scaled_dot_product_attention(q, q, q).dtype() == tt::kBFloat16);
  {
    tt::AutocastGuard off(tt::kCPU, tt::kBFloat16, false);
    CHECK(same_values(lin, tt::linear(x16, w.to(tt::kBFloat16), bias.to(tt::kBFloat16))));
  }
  // Float32: bf16 in, float32 out, the float32 op on the bf16 values.
  CHECK(tt::softmax(x16, 1).dtype() == tt::kFloat32);
  CHECK(same_values(tt::softmax(x16, 1), tt::softmax(x16.to(tt::kFloat32), 1)));
  CHECK(tt::log_softmax(x16, 1).dtype() == tt::kFloat32);
  CHECK(tt::layer_norm(x16, {8}).dtype() == tt::kFloat32);
  CHECK(tt::rms_norm(x16, {8}).dtype() == tt::kFloat32);
  CHECK(tt::F::cross_entropy(x16, labels).dtype() == tt::kFloat32);
  CHECK(tt::F::mse_loss(x16, x16 * 0.5).dtype() == tt::kFloat32);
  CHECK(x16.sum().dtype() == tt::kFloat32);
  CHECK(x16.mean().dtype() == tt::kFloat32);
  // Unlisted ops keep their inputs' dtype, promoted as usual.
  CHECK(tt::relu(lin).dtype() == tt::kBFloat16);
  CHECK((lin + tt::randn({6, 5})).dtype() == tt::kFloat32);
  // Integers and float64 are not autocast's business.
  CHECK(tt::ones({3}, tt::kInt64).sum().dtype() == tt::kInt64);
  Tensor d = tt::randn({3, 3}, tt::kFloat64);
  CHECK(tt::matmul(d, d).dtype() == tt::kFloat64);
}

TEST_CASE("Autocast guards nest and restore, enabled=false turns it off, per device type", "[module15][exercise]") {
  Tensor a = tt::randn({3, 4}), b = tt::randn({4, 2});
  CHECK_FALSE(tt::amp::is_autocast_enabled(tt::kCPU));
  CHECK(a.matmul(b).dtype() == tt::kFloat32);
  {
    tt::AutocastGuard outer(tt::kCPU);  // bf16 by default
    CHECK(tt::amp::is_autocast_enabled(tt::kCPU));
    CHECK(tt::amp::get_autocast_dtype(tt::kCPU) == tt::kBFloat16);
    CHECK(a.matmul(b).dtype() == tt::kBFloat16);
    {
      tt::AutocastGuard off(tt::kCPU, tt::kBFloat16, false);
      CHECK_FALSE(tt::amp::is_autocast_enabled(tt::kCPU));
      CHECK(a.matmul(b).dtype() == tt::kFloat32);
      {
        tt::AutocastGuard on_again(tt::kCPU);
        CHECK(a.matmul(b).dtype() == tt::kBFloat16);
      }
      CHECK(a.matmul(b).dtype() == tt::kFloat32);
    }
    CHECK(a.matmul(b).dtype() == tt::kBFloat16);
  }
  CHECK_FALSE(tt::amp::is_autocast_enabled(tt::kCPU));
  CHECK(a.matmul(b).dtype() == tt::kFloat32);
  {
    tt::AutocastGuard cuda_only(tt::kCUDA);  // does not touch CPU tensors
    CHECK(tt::amp::is_autocast_enabled(tt::kCUDA));
    CHECK_FALSE(tt::amp::is_autocast_enabled(tt::kCPU));
    CHECK(a.matmul(b).dtype() == tt::kFloat32);
  }
  CHECK_FALSE(tt::amp::is_autocast_enabled(tt::kCUDA));
}

TEST_CASE("AutocastGuard refuses dtypes other than bf16 and changes nothing", "[module15]") {
  REQUIRE_THROWS_WITH(tt::AutocastGuard(tt::kCPU, tt::kFloat32),
                      Contains("AutocastGuard: autocast supports bfloat16 only, got float32"));
  REQUIRE_THROWS_WITH(tt::AutocastGuard(tt::kCPU, tt::kFloat64), Contains("got float64"));
  CHECK_FALSE(tt::amp::is_autocast_enabled(tt::kCPU));
  CHECK(tt::randn({2, 3}).matmul(tt::randn({3, 2})).dtype() == tt::kFloat32);
}

TEST_CASE("Under autocast, parameters and their gradients stay float32", "[module15][exercise]") {
  tt::manual_seed(1506);
  nn::Linear fc1(16, 32), fc2(32, 5);
  Tensor x = tt::randn({64, 16}), y = tt::randint(5, {64});
  // GELU, not ReLU: smooth, so that a bf16 rounding cannot flip a unit on or off (a flipped ReLU
  // moves a gradient by a whole term, not by a rounding).
  auto loss_of = [&] { return tt::F::cross_entropy(fc2.forward(tt::gelu(fc1.forward(x))), y); };
  Tensor ref = loss_of();
  ref.backward();
  std::vector<Tensor> params = {fc1.weight, fc1.bias, fc2.weight, fc2.bias}, ref_grads;
  for (const Tensor& p : params) ref_grads.push_back(p.grad().clone());
  fc1.zero_grad();
  fc2.zero_grad();

  Tensor loss;
  {
    tt::AutocastGuard autocast(tt::kCPU);
    Tensor h = fc1.forward(x);
    CHECK(h.dtype() == tt::kBFloat16);
    loss = tt::F::cross_entropy(fc2.forward(tt::gelu(h)), y);
  }
  CHECK(loss.dtype() == tt::kFloat32);
  CHECK(loss.item<double>() == Approx(ref.item<double>()).epsilon(0.02));
  loss.backward();
  for (size_t i = 0; i < params.size(); ++i) {
    INFO("parameter " << i);
    CHECK(params[i].dtype() == tt::kFloat32);
    REQUIRE(params[i].grad().defined());
    CHECK(params[i].grad().dtype() == tt::kFloat32);
    // A few bf16 roundings of the activations and weights along the way: within 5% (about 1%).
    CHECK(max_abs(params[i].grad() - ref_grads[i]) <= 0.05 * max_abs(ref_grads[i]));
  }
}

TEST_CASE("Autocast casts a parameter once per outermost guard", "[module15][exercise]") {
  // The cast of a leaf that requires grad is cached until the outermost guard closes: a weight
  // used twice is converted once, and, the pitfall, a change made to it inside the guard is not
  // seen until then (Note [autocast]: step the optimizer outside the guard).
  tt::manual_seed(1507);
  Tensor w = tt::randn({4, 4}).requires_grad_(), x = tt::randn({2, 4});
  Tensor before, stale, fresh;
  {
    tt::AutocastGuard outer(tt::kCPU);
    before = tt::linear(x, w);
    {
      tt::NoGradGuard no_grad;
      w.mul_(2.0);
    }
    {
      tt::AutocastGuard inner(tt::kCPU);  // a nested guard shares the cache
      stale = tt::linear(x, w);
    }
    CHECK(same_values(tt::linear(x, w), before));
  }
  CHECK(same_values(stale, before));
  {
    tt::AutocastGuard again(tt::kCPU);  // a new outermost guard casts again
    fresh = tt::linear(x, w);
  }
  CHECK(max_abs(fresh.to(tt::kFloat32) - before.to(tt::kFloat32) * 2.0) <= 0.02 * max_abs(fresh));
  // A tensor that does not require grad (an activation) is cast afresh every time.
  Tensor act = tt::randn({4, 4});
  tt::AutocastGuard autocast(tt::kCPU);
  Tensor first = tt::linear(x, act);
  {
    tt::NoGradGuard no_grad;
    act.mul_(2.0);
  }
  CHECK_FALSE(same_values(tt::linear(x, act), first));
}

TEST_CASE("Backward runs without autocast: each gradient has its value's dtype", "[module15][exercise]") {
  tt::manual_seed(1508);
  Tensor w = tt::randn({6, 3}).requires_grad_();
  Tensor x16 = tt::randn({5, 6}).to(tt::kBFloat16).requires_grad_();
  tt::AutocastGuard autocast(tt::kCPU);
  Tensor out = x16.matmul(w);  // w cast to bf16, the product bf16
  REQUIRE(out.dtype() == tt::kBFloat16);
  Tensor loss = out.sum();     // listed Float32: float32
  REQUIRE(loss.dtype() == tt::kFloat32);
  loss.backward();             // inside the guard: the backward's own matmuls are not autocast
  CHECK(w.grad().dtype() == tt::kFloat32);
  CHECK(x16.grad().dtype() == tt::kBFloat16);
  // d sum(x w) / dw = x^T 1: column sums of x, here on the bf16 values.
  Tensor expect = x16.detach().to(tt::kFloat32).sum({0}).unsqueeze(1).expand({6, 3});
  CHECK_ALLCLOSE(w.grad(), expect, 1e-2, 1e-2);
}

// --- training ---------------------------------------------------------------------------------

TEST_CASE("A tiny GPT trained under bf16 autocast learns as the float32 one does", "[module15][exercise]") {
  // The reverse task of module 14 (5 digits), 2 blocks of E = 32: the same seed, data and AdamW,
  // once in float32 and once with every forward and loss under AutocastGuard. The two loss
  // curves differ by bf16 roundings in the products only.
  auto train = [](bool bf16) {
    tt::manual_seed(1509);
    tt::data::SequenceTask task = tt::data::make_sequence_task(tt::data::SequenceTaskKind::kReverse, 5, 15);
    const int64_t V = task.vocab_size();
    nn::GPT gpt(nn::GPTOptions(V, task.sequence_length()).n_layer(2).n_embd(32).n_head(2));
    optim::AdamW opt(gpt.parameters(), optim::AdamWOptions(3e-3).weight_decay(0.0));
    std::vector<double> losses;
    for (int step = 0; step < 120; ++step) {
      tt::data::SequenceBatch b = task.sample(32);
      Tensor loss;
      {
        tt::AutocastGuard autocast(tt::kCPU, tt::kBFloat16, bf16);
        loss = tt::F::cross_entropy(gpt(b.input).reshape({-1, V}), b.target.reshape({-1}));
      }
      REQUIRE(loss.dtype() == tt::kFloat32);
      opt.zero_grad();
      loss.backward();
      opt.step();
      losses.push_back(loss.item<double>());
    }
    for (const Tensor& p : gpt.parameters()) REQUIRE(p.dtype() == tt::kFloat32);
    return losses;
  };
  const std::vector<double> f32 = train(false), bf16 = train(true);
  auto mean = [](const std::vector<double>& v, size_t from, size_t to) {
    return std::accumulate(v.begin() + long(from), v.begin() + long(to), 0.0) / double(to - from);
  };
  INFO("float32: first " << f32.front() << ", last 20 " << mean(f32, 100, 120) << "; bf16: first " << bf16.front()
                         << ", last 20 " << mean(bf16, 100, 120));
  CHECK(bf16.front() == Approx(f32.front()).epsilon(0.02));  // the same model, one forward apart
  CHECK(mean(bf16, 100, 120) < 0.5 * bf16.front());          // it learns
  // Over each stretch of 20 steps the mean losses stay close.
  for (size_t from = 0; from < 120; from += 20) {
    INFO("steps " << from << " .. " << from + 19);
    CHECK(std::fabs(mean(bf16, from, from + 20) - mean(f32, from, from + 20)) <= 0.1 * mean(f32, from, from + 20));
  }
}
