// bf16 on the GPU against bf16 on the CPU (their CPU twins): bits through transfers, elementwise
// ops and reductions (both compute in float32 and round once: equal up to one bf16 ulp where the
// two math libraries differ in float32's last bit), the cuBLAS bf16 GEMM against the AVX512-BF16
// one, and a step of training under AutocastGuard(kCUDA) against AutocastGuard(kCPU).
#include <cmath>

#include "test_util.h"

using namespace tt;

namespace {

// max |a - b| in units of b's bf16 spacing (2^-7 of its binade), elementwise.
double max_ulps(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to(kFloat32).cpu().to_vector<float>(), y = b.to(kFloat32).cpu().to_vector<float>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == y[i]) continue;
    int e;
    std::frexp(double(y[i]), &e);
    m = std::max(m, std::fabs(double(x[i]) - double(y[i])) / std::ldexp(1.0, e - 8));
  }
  return m;
}

}  // namespace

TEST_CASE("bf16 moves between CPU and GPU bit for bit, and casts there as here", "[cuda][bf16]") {
  TT_REQUIRE_CUDA();
  Tensor h = randn({1000}).to(kBFloat16);
  CHECK(max_ulps(h.cuda().cpu(), h) == 0.0);
  Tensor f = randn({1000});
  CHECK(max_ulps(f.cuda().to(kBFloat16), f.to(kBFloat16)) == 0.0);  // the same rounding
  CHECK(max_ulps(h.cuda().to(kFloat64), h.to(kFloat64)) == 0.0);
}

TEST_CASE("bf16 elementwise ops, reductions, softmax and norms: GPU equals CPU", "[cuda][bf16]") {
  TT_REQUIRE_CUDA();
  manual_seed(4);
  Tensor x = randn({64, 96}).to(kBFloat16), y = randn({96}).to(kBFloat16);
  Tensor gx = x.cuda(), gy = y.cuda();
  CHECK(max_ulps(gx * gy + 1, x * y + 1) <= 1.0);
  CHECK(max_ulps(exp(gx), exp(x)) <= 1.0);
  CHECK(max_ulps(gelu(gx), gelu(x)) <= 1.0);
  CHECK(max_ulps(softmax(gx, 1), softmax(x, 1)) <= 1.0);
  CHECK(max_ulps(layer_norm(gx, {96}), layer_norm(x, {96})) <= 1.0);
  CHECK(max_ulps(gx.sum(1), x.sum(1)) <= 1.0);
  CHECK((gx > gy).cpu().to_vector<bool>() == (x > y).to_vector<bool>());
}

TEST_CASE("bf16 matmul: cuBLAS on the tensor cores against the CPU kernel", "[cuda][bf16]") {
  TT_REQUIRE_CUDA();
  manual_seed(6);
  for (auto [M, K, N] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {17, 33, 65}, {256, 512, 128}}) {
    Tensor a = randn({M, K}).to(kBFloat16), b = randn({K, N}).to(kBFloat16);
    Tensor cpu = matmul(a, b), gpu = matmul(a.cuda(), b.cuda());
    REQUIRE(gpu.dtype() == kBFloat16);
    // Both accumulate the same exact products in float32, in different orders: a few ulps of
    // the sum, then one rounding to bf16 each.
    CHECK(max_ulps(gpu, cpu) <= 2.0);
  }
  Tensor batch = randn({3, 16, 32}).to(kBFloat16), w = randn({32, 8}).to(kBFloat16);
  CHECK(max_ulps(matmul(batch.cuda(), w.cuda()), matmul(batch, w)) <= 2.0);
}

TEST_CASE("a training step under AutocastGuard(kCUDA) matches AutocastGuard(kCPU)", "[cuda][bf16][autocast]") {
  TT_REQUIRE_CUDA();
  manual_seed(8);
  nn::Linear cpu_layer(32, 10);
  nn::Linear gpu_layer(32, 10);
  gpu_layer.load_state_dict(cpu_layer.state_dict());
  gpu_layer.to(Device(kCUDA));
  Tensor x = randn({16, 32}), target = randint(0, 10, {16});
  Tensor cpu_loss, gpu_loss;
  {
    AutocastGuard autocast(kCPU);
    cpu_loss = cross_entropy(cpu_layer.forward(x), target);
  }
  {
    AutocastGuard autocast(kCUDA);
    Tensor logits = gpu_layer.forward(x.cuda());
    CHECK(logits.dtype() == kBFloat16);
    gpu_loss = cross_entropy(logits, target.cuda());
  }
  CHECK(gpu_loss.dtype() == kFloat32);
  CHECK(std::fabs(gpu_loss.item<double>() - cpu_loss.item<double>()) < 1e-2);
  cpu_loss.backward();
  gpu_loss.backward();
  REQUIRE(gpu_layer.weight.grad().dtype() == kFloat32);
  Tensor diff = (gpu_layer.weight.grad().cpu() - cpu_layer.weight.grad()).abs().max();
  CHECK(diff.item<double>() <= 0.02 * cpu_layer.weight.grad().abs().max().item<double>());
}
