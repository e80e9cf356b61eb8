// Autocast (Note [autocast] in amp/autocast.cpp): which ops run in bf16 and which in float32,
// float32 parameters and gradients, nesting and enabled = false, the device type, the cast cache,
// backward without autocast, every listed op's hook, and a tiny GPT's bf16 loss curve against
// its float32 one.
#include <cmath>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {

// Calls the listed op `op` on CPU float32 inputs (bf16 ones for the Float32 policy) and returns
// its output. A switch without default: an op given an autocast policy in core/op_registry.h
// fails the build here until the test calls it, and the hit counter then proves it has its hook.
Tensor call_listed_op(AutocastOp op) {
  const ScalarType in = amp::policy(op) == CastPolicy::LowerPrecision ? kFloat32 : kBFloat16;
  Tensor x = randn({4, 6}).to(in), w = randn({6, 6}).to(in), q = randn({1, 2, 4, 8}).to(in);
  Tensor labels = tensor({0, 5, 2, 1}, kInt64), probs = rand({4, 6}).to(in);
  switch (op) {
    case AutocastOp::matmul: return matmul(x, w);
    case AutocastOp::mm: return mm(x, w);
    case AutocastOp::bmm: return bmm(x.unsqueeze(0), w.unsqueeze(0));
    case AutocastOp::linear: return linear(x, w, randn({6}).to(in));
    case AutocastOp::scaled_dot_product_attention: return scaled_dot_product_attention(q, q, q);
    case AutocastOp::softmax: return softmax(x, 1);
    case AutocastOp::log_softmax: return log_softmax(x, 1);
    case AutocastOp::softplus: return softplus(x);
    case AutocastOp::layer_norm: return layer_norm(x, {6});
    case AutocastOp::rms_norm: return rms_norm(x, {6});
    case AutocastOp::cross_entropy: return cross_entropy(x, labels);
    case AutocastOp::nll_loss: return nll_loss(log_softmax(x.to(kFloat32), 1).to(in), labels);
    case AutocastOp::mse_loss: return mse_loss(x, probs);
    case AutocastOp::binary_cross_entropy: return binary_cross_entropy(sigmoid(x), probs);
    case AutocastOp::binary_cross_entropy_with_logits: return binary_cross_entropy_with_logits(x, probs);
    case AutocastOp::sum: return x.sum();
    case AutocastOp::mean: return x.mean();
  }
  return Tensor();
}

}  // namespace

TEST_CASE("every listed op has its autocast hook and the policy's output dtype", "[amp][autocast]") {
  for (size_t i = 0; i < amp::kNumAutocastOps; ++i) {
    const AutocastOp op = AutocastOp(i);
    INFO(amp::op_name(op));
    const uint64_t before = amp::autocast_hits(op);
    Tensor out;
    {
      AutocastGuard autocast(kCPU);
      out = call_listed_op(op);
    }
    CHECK(amp::autocast_hits(op) > before);
    CHECK(out.dtype() == (amp::policy(op) == CastPolicy::LowerPrecision ? kBFloat16 : kFloat32));
    // Outside a guard the same call keeps its inputs' dtype.
    Tensor plain = call_listed_op(op);
    CHECK(plain.dtype() == (amp::policy(op) == CastPolicy::LowerPrecision ? kFloat32 : kBFloat16));
  }
}

TEST_CASE("autocast: products in bf16, the rest by promotion, integers and float64 untouched", "[amp][autocast]") {
  nn::Linear lin(8, 4);
  Tensor x = randn({3, 8});
  AutocastGuard autocast(kCPU, kBFloat16);
  CHECK(amp::is_autocast_enabled(kCPU));
  CHECK_FALSE(amp::is_autocast_enabled(kCUDA));
  CHECK(amp::get_autocast_dtype(kCPU) == kBFloat16);
  Tensor h = lin.forward(x);
  CHECK(h.dtype() == kBFloat16);
  CHECK(relu(h).dtype() == kBFloat16);          // not listed: the input's dtype
  CHECK((h + x.slice(1, 0, 4)).dtype() == kFloat32);  // bf16 + float32 promotes
  CHECK(softmax(h, 1).dtype() == kFloat32);
  CHECK(lin.weight.dtype() == kFloat32);        // parameters are never converted
  Tensor i = tensor({1, 2}, kInt64);
  CHECK(i.sum().dtype() == kInt64);
  Tensor d = randn({2, 3}, kFloat64);
  CHECK(matmul(d, d.t()).dtype() == kFloat64);  // float64 is not autocast's business
}

TEST_CASE("autocast guards nest, enabled=false turns it off, and it is per device type", "[amp][autocast]") {
  Tensor a = randn({2, 3}), b = randn({3, 2});
  CHECK(matmul(a, b).dtype() == kFloat32);
  {
    AutocastGuard outer(kCPU);
    CHECK(matmul(a, b).dtype() == kBFloat16);
    {
      AutocastGuard off(kCPU, kBFloat16, false);
      CHECK_FALSE(amp::is_autocast_enabled(kCPU));
      CHECK(matmul(a, b).dtype() == kFloat32);
      {
        AutocastGuard again(kCPU);
        CHECK(matmul(a, b).dtype() == kBFloat16);
      }
      CHECK(matmul(a, b).dtype() == kFloat32);
    }
    CHECK(matmul(a, b).dtype() == kBFloat16);
  }
  CHECK_FALSE(amp::is_autocast_enabled(kCPU));
  {
    AutocastGuard gpu_only(kCUDA, kBFloat16);  // CPU tensors are not affected
    CHECK(amp::is_autocast_enabled(kCUDA));
    CHECK(matmul(a, b).dtype() == kFloat32);
  }
  CHECK_FALSE(amp::is_autocast_enabled(kCUDA));
}

TEST_CASE("AutocastGuard refuses dtypes other than bf16", "[amp][autocast]") {
  REQUIRE_THROWS_WITH(AutocastGuard(kCPU, kFloat32),
                      Contains("AutocastGuard: autocast supports bfloat16 only, got float32"));
  REQUIRE_THROWS_WITH(AutocastGuard(kCUDA, kFloat64), Contains("got float64"));
  CHECK_FALSE(amp::is_autocast_enabled(kCPU));  // a refused guard leaves nothing behind
}

TEST_CASE("autocast keeps parameters and gradients float32; grads match float32 training", "[amp][autocast]") {
  manual_seed(2);
  nn::Linear l1(16, 32), l2(32, 5);
  Tensor x = randn({64, 16}), y = randint(0, 5, {64});
  // tanh, not relu: a relu mask can flip where bf16 rounds an activation across zero, which
  // moves whole entries of the gradient; a smooth activation leaves only rounding.
  auto loss_of = [&] { return cross_entropy(l2.forward(tanh(l1.forward(x))), y); };
  Tensor ref = loss_of();
  ref.backward();
  std::vector<Tensor> ref_grads;
  for (Tensor& p : l1.parameters()) ref_grads.push_back(p.grad().clone());
  for (Tensor& p : l1.parameters()) p.set_grad(Tensor());
  for (Tensor& p : l2.parameters()) p.set_grad(Tensor());
  Tensor loss;
  {
    AutocastGuard autocast(kCPU);
    loss = loss_of();
  }
  CHECK(loss.dtype() == kFloat32);
  CHECK(std::fabs(loss.item<double>() - ref.item<double>()) < 0.02 * std::fabs(ref.item<double>()));
  loss.backward();
  std::vector<Tensor> params = l1.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    REQUIRE(params[i].grad().dtype() == kFloat32);
    double err = (params[i].grad() - ref_grads[i]).pow(2).sum().sqrt().item<double>();
    double scale = ref_grads[i].pow(2).sum().sqrt().item<double>();
    INFO("parameter " << i << ": relative error " << err / scale);
    CHECK(err <= 0.02 * scale);  // a few bf16 roundings along the way (measured: under 0.5%)
  }
}

TEST_CASE("a weight used twice is cast once and gets both gradients; backward inside the guard works",
          "[amp][autocast]") {
  Tensor w = randn({4, 4}).requires_grad_();
  Tensor x = randn({2, 4});
  AutocastGuard autocast(kCPU);
  Tensor out = linear(linear(x, w), w);  // the second use finds the cached bf16 copy
  CHECK(out.dtype() == kBFloat16);
  out.to(kFloat32).sum().backward();     // the backward runs with autocast off
  REQUIRE(w.grad().dtype() == kFloat32);
  NoGradGuard no_grad;
  Tensor w16 = w.detach().to(kBFloat16).to(kFloat32), h = matmul(x.to(kBFloat16).to(kFloat32), w16.t());
  Tensor g_out = ones({2, 4});
  // d/dw of sum(linear(linear(x, w), w)) = g^T h + (g w)^T x, evaluated in float32 on bf16 values.
  Tensor expect = matmul(g_out.t(), h) + matmul(matmul(g_out, w16).t(), x.to(kBFloat16).to(kFloat32));
  CHECK((w.grad() - expect).abs().max().item<double>() <= 0.05 * expect.abs().max().item<double>());
}

TEST_CASE("a tiny GPT trained under bf16 autocast follows the float32 loss curve", "[amp][autocast][slow]") {
  // Same seed, data and optimizer; the two curves differ only by bf16 rounding in the products.
  // Bound: every 5th step's loss within 3% of float32's (measured: 0.4% at most, at step 55 of
  // 60, where the loss has fallen from 2.81 to 0.15).
  constexpr int kSteps = 60;
  auto train = [](bool bf16) {
    manual_seed(0);
    nn::GPT gpt(nn::GPTOptions(16, 16).n_layer(2).n_embd(32).n_head(2));
    optim::AdamW opt(gpt.parameters(), optim::AdamWOptions(3e-3));
    std::vector<double> curve;
    Generator gen(1);
    for (int step = 0; step < kSteps; ++step) {
      // Counting: each row runs start, start + 1, ... (mod 16), so the next token is learnable.
      Tensor start = randint(0, 16, {8, 1}, TensorOptions(kInt64), &gen);
      Tensor ids = start + arange(0, 16, 1, kInt64).unsqueeze(0);
      ids = where(ids >= 16, ids - 16, ids);
      Tensor inputs = ids.slice(1, 0, 15), targets = ids.slice(1, 1, 16);
      Tensor loss;
      {
        AutocastGuard autocast(kCPU, kBFloat16, bf16);
        Tensor logits = gpt.forward(inputs);
        loss = cross_entropy(logits.reshape({-1, 16}), targets.reshape({-1}));
      }
      opt.zero_grad();
      loss.backward();
      opt.step();
      curve.push_back(loss.item<double>());
    }
    return curve;
  };
  std::vector<double> f32 = train(false), bf16 = train(true);
  CHECK(bf16.back() < 0.8 * bf16.front());  // it learns
  for (size_t i = 0; i < f32.size(); i += 5) {
    INFO("step " << i << ": float32 " << f32[i] << ", bf16 " << bf16[i]);
    CHECK(std::fabs(bf16[i] - f32[i]) <= 0.03 * f32[i]);
  }
}
