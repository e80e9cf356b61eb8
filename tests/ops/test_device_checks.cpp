// Mixing devices in one op is a DeviceError naming the op and both devices, raised before any
// kernel runs: every op that takes two tensors or more, one REQUIRE_THROWS_WITH each. The CUDA
// side is a fake: a tensor whose storage claims cuda:0 but is host memory that nothing may read
// (a kernel touching it would fail with "no CUDA device", not with the message checked here).
#include <string>
#include <utility>

#include <tinytorch/ops/optim_step.h>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {

// A tensor whose storage says cuda:0 (host memory, never read): device checks run without a GPU.
Tensor fake_cuda(const Shape& shape, ScalarType dtype = kFloat32) {
  static double host[64] = {};
  auto storage = std::make_shared<StorageImpl>(host, sizeof host, Device(kCUDA, 0), nullptr);
  return detail::make_tensor(storage, 0, shape, contiguous_strides(shape), dtype);
}

// Matches "op: expected all tensors on the same device, got cpu and cuda:0" (either order).
class MixedDevices : public Catch::MatcherBase<std::string> {
 public:
  explicit MixedDevices(std::string op) : op_(std::move(op)) {}
  bool match(const std::string& msg) const override {
    const std::string head = op_ + ": expected all tensors on the same device, got ";
    return msg.find(head + "cpu and cuda:0") != std::string::npos ||
           msg.find(head + "cuda:0 and cpu") != std::string::npos;
  }
  std::string describe() const override { return "says that " + op_ + " got tensors on cpu and cuda:0"; }

 private:
  std::string op_;
};
MixedDevices mixed(const std::string& op) { return MixedDevices(op); }

}  // namespace

TEST_CASE("device checks: elementwise, where, matmul family", "[ops][device]") {
  Tensor cpu = ones({2, 2}), gpu = fake_cuda({2, 2});
  REQUIRE_THROWS_AS(cpu + gpu, DeviceError);
  REQUIRE_THROWS_WITH(cpu + gpu, mixed("add"));
  REQUIRE_THROWS_WITH(gpu - cpu, mixed("sub"));
  REQUIRE_THROWS_WITH(cpu.mul_(gpu), mixed("mul"));
  REQUIRE_THROWS_WITH(where(ones({2, 2}, kBool), cpu, gpu), mixed("where"));
  REQUIRE_THROWS_WITH(where(fake_cuda({2, 2}, kBool), cpu, cpu), mixed("where"));
  REQUIRE_THROWS_WITH(matmul(cpu, gpu), mixed("matmul"));
  REQUIRE_THROWS_WITH(mm(gpu, cpu), mixed("mm"));
  REQUIRE_THROWS_WITH(bmm(ones({1, 2, 2}), fake_cuda({1, 2, 2})), mixed("bmm"));
  REQUIRE_THROWS_WITH(dot(ones({2}), fake_cuda({2})), mixed("dot"));
  REQUIRE_THROWS_WITH(linear(cpu, gpu), mixed("linear"));
  REQUIRE_THROWS_WITH(linear(cpu, cpu, fake_cuda({2})), mixed("linear"));
  // A 0-d CPU tensor is a scalar operand and may meet any device (as in PyTorch); the fake tensor is
  // never read because the CUDA backend is not reached for the check above.
  CHECK(cpu.to_vector<float>() == std::vector<float>(4, 1.f));
}

TEST_CASE("device checks: cat, stack and the index ops", "[ops][device]") {
  Tensor cpu = ones({2, 2}), gpu = fake_cuda({2, 2});
  REQUIRE_THROWS_WITH(cat({cpu, gpu}), mixed("cat"));
  REQUIRE_THROWS_WITH(cat({gpu, cpu}, 1), mixed("cat"));
  REQUIRE_THROWS_WITH(cat({cpu, zeros({0}), gpu}), mixed("cat"));
  REQUIRE_THROWS_WITH(stack({cpu, gpu}), mixed("stack"));
  REQUIRE_THROWS_WITH(index_select(cpu, 0, fake_cuda({1}, kInt64)), mixed("index_select"));
  REQUIRE_THROWS_WITH(index_select(gpu, 0, tensor({0})), mixed("index_select"));
  REQUIRE_THROWS_WITH(gather(cpu, 0, fake_cuda({1, 2}, kInt64)), mixed("gather"));
  REQUIRE_THROWS_WITH(scatter_add(cpu, 0, zeros({1, 2}, kInt64), gpu), mixed("scatter_add"));
  REQUIRE_THROWS_WITH(scatter_add(gpu, 0, zeros({1, 2}, kInt64), cpu), mixed("scatter_add"));
  Tensor target = zeros({2, 2});
  REQUIRE_THROWS_WITH(target.scatter_add_(0, fake_cuda({1, 2}, kInt64), cpu), mixed("scatter_add_"));
  REQUIRE_THROWS_WITH(masked_fill(cpu, fake_cuda({2, 2}, kBool), 0.0), mixed("masked_fill"));
  REQUIRE_THROWS_WITH(target.masked_fill_(fake_cuda({2, 2}, kBool), 0.0), mixed("masked_fill"));
  REQUIRE_THROWS_WITH(embedding(ones({4, 3}), fake_cuda({2}, kInt64)), mixed("embedding"));
  REQUIRE_THROWS_WITH(embedding(fake_cuda({4, 3}), tensor({0, 1})), mixed("embedding"));
  CHECK(target.to_vector<float>() == std::vector<float>(4, 0.f));
  CHECK(target.version() == 0);
}

TEST_CASE("device checks: losses", "[ops][device]") {
  Tensor x = zeros({3, 4}), gpu = fake_cuda({3, 4});
  REQUIRE_THROWS_WITH(mse_loss(x, gpu), mixed("mse_loss"));
  REQUIRE_THROWS_WITH(l1_loss(gpu, x), mixed("l1_loss"));
  REQUIRE_THROWS_WITH(cross_entropy(x, fake_cuda({3}, kInt64)), mixed("cross_entropy"));
  REQUIRE_THROWS_WITH(cross_entropy(x, tensor({0, 1, 2}), fake_cuda({4})), mixed("cross_entropy"));
  REQUIRE_THROWS_WITH(cross_entropy(x, gpu), mixed("cross_entropy"));  // probability targets
  REQUIRE_THROWS_WITH(nll_loss(x, fake_cuda({3}, kInt64)), mixed("nll_loss"));
  Tensor p = full({3, 4}, 0.5);
  REQUIRE_THROWS_WITH(binary_cross_entropy(p, gpu), mixed("binary_cross_entropy"));
  REQUIRE_THROWS_WITH(binary_cross_entropy(p, p, fake_cuda({4})), mixed("binary_cross_entropy"));
  REQUIRE_THROWS_WITH(binary_cross_entropy_with_logits(x, p, Tensor(), fake_cuda({4})),
                      mixed("binary_cross_entropy_with_logits"));
}

TEST_CASE("device checks: normalization, activations' backward, attention", "[ops][device]") {
  Tensor x = ones({2, 4});
  REQUIRE_THROWS_WITH(layer_norm(x, {4}, fake_cuda({4})), mixed("layer_norm"));
  REQUIRE_THROWS_WITH(layer_norm(x, {4}, ones({4}), fake_cuda({4})), mixed("layer_norm"));
  REQUIRE_THROWS_WITH(layer_norm(fake_cuda({2, 4}), {4}, ones({4})), mixed("layer_norm"));
  REQUIRE_THROWS_WITH(rms_norm(x, {4}, fake_cuda({4})), mixed("rms_norm"));
  REQUIRE_THROWS_WITH(softmax_backward(fake_cuda({2, 4}), x, 1), mixed("softmax_backward"));
  REQUIRE_THROWS_WITH(log_softmax_backward(x, fake_cuda({2, 4}), 1), mixed("log_softmax_backward"));
  REQUIRE_THROWS_WITH(gelu_backward(fake_cuda({2, 4}), x), mixed("gelu_backward"));

  Tensor q = ones({1, 2, 3, 4}), g = fake_cuda({1, 2, 3, 4});
  const char* sdpa = "scaled_dot_product_attention";
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, g, q), mixed(sdpa));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, q, g), mixed(sdpa));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(g, q, q), mixed(sdpa));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, q, q, fake_cuda({3, 3}, kBool)), mixed(sdpa));
  REQUIRE_THROWS_WITH(attention_weights(q, g), mixed("attention_weights"));
  REQUIRE_THROWS_WITH(attention_weights(q, q, fake_cuda({3, 3})), mixed("attention_weights"));
}

TEST_CASE("device checks: optimizer steps and modules", "[ops][device]") {
  Tensor p = zeros({2, 3}), g = fake_cuda({2, 3});
  SgdStepArgs sgd;
  sgd.lr = 0.1;
  REQUIRE_THROWS_WITH(detail::sgd_step_(p, g, Tensor(), sgd), mixed("sgd_step"));
  sgd.momentum = 0.9;
  REQUIRE_THROWS_WITH(detail::sgd_step_(p, ones({2, 3}), fake_cuda({2, 3}), sgd), mixed("sgd_step"));
  AdamStepArgs adam;
  adam.lr = 0.1;
  Tensor m = zeros({2, 3}), v = zeros({2, 3});
  REQUIRE_THROWS_WITH(detail::adam_step_(p, g, m, v, Tensor(), adam), mixed("adam_step"));
  REQUIRE_THROWS_WITH(detail::adam_step_(p, ones({2, 3}), fake_cuda({2, 3}), v, Tensor(), adam), mixed("adam_step"));
  adam.decoupled = true;
  adam.amsgrad = true;
  REQUIRE_THROWS_WITH(detail::adam_step_(p, ones({2, 3}), m, v, fake_cuda({2, 3}), adam), mixed("adamw_step"));
  CHECK(p.to_vector<float>() == std::vector<float>(6, 0.f));
  CHECK(p.version() == 0);

  // set_grad refuses a gradient on another device where it is assigned.
  Tensor w = zeros({2, 3}).requires_grad_();
  REQUIRE_THROWS_AS(w.set_grad(fake_cuda({2, 3})), DeviceError);
  REQUIRE_THROWS_WITH(w.set_grad(fake_cuda({2, 3})), "set_grad: assigned grad is on a different device: expected cpu "
                                                     "(the tensor's device), got cuda:0");
  CHECK_FALSE(w.grad().defined());
  // The optimizers' own check, for a gradient on another device that got past set_grad (written
  // into the TensorImpl directly).
  w.unsafe_impl()->grad = fake_cuda({2, 3}).impl_ptr();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  REQUIRE_THROWS_WITH(opt.step(), mixed("sgd_step"));
  optim::AdamW adamw({w});
  REQUIRE_THROWS_WITH(adamw.step(), mixed("adamw_step"));
  CHECK(adamw.state(w).empty());

  // A module on the CPU fed a CUDA tensor.
  nn::Linear fc(3, 2);
  REQUIRE_THROWS_WITH(fc.forward(fake_cuda({4, 3})), mixed("linear"));
  nn::LayerNorm ln(nn::LayerNormOptions(Shape{3}));
  REQUIRE_THROWS_WITH(ln.forward(fake_cuda({4, 3})), mixed("layer_norm"));
  nn::Embedding emb(5, 3);
  REQUIRE_THROWS_WITH(emb.forward(fake_cuda({2}, kInt64)), mixed("embedding"));
}
