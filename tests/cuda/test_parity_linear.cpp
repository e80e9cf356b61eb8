// linear on the GPU against its CPU twin (backend/cuda/linear.cu vs backend/cpu/linear.cpp): the
// forward with the bias in cuBLASLt's epilogue, the weight and bias gradients from one GEMM with
// the BGRADB epilogue, in float32 (TF32 off and on), bfloat16 (float32 accumulation) and float64
// (the fallback path); batched, transposed, strided and misaligned operands; no bias; empty sizes;
// repeated calls (the cached plans); and the one-cat backward of split on the GPU. [cuda]: skipped
// where no GPU is present.
#include <algorithm>
#include <tuple>
#include <vector>

#include "cuda/parity.h"
#include "tinytorch/backend/backend.h"

using namespace tt;
using namespace tt::testing;

namespace {

// Float32 sums of k products in another order: the absolute slack grows with k (as the matmul
// parity cases); float64 to rounding.
ParityOptions lin_tol(ScalarType dt, int64_t k) {
  return dt == kFloat64 ? tol(1e-10, 1e-11) : tol(1e-5, 2e-6 * double(k));
}

struct Tf32Scope {
  explicit Tf32Scope(bool on) : saved_(cuda::allow_tf32()) { cuda::set_allow_tf32(on); }
  ~Tf32Scope() { cuda::set_allow_tf32(saved_); }
  Tf32Scope(const Tf32Scope&) = delete;
  Tf32Scope& operator=(const Tf32Scope&) = delete;

 private:
  bool saved_;
};

Tensor lin(const Tensor& x, const Tensor& w, const Tensor& b) { return linear(x, w, b); }
Tensor lin_nb(const Tensor& x, const Tensor& w) { return linear(x, w); }

}  // namespace

TEST_CASE("parity: linear, bias in the cuBLASLt epilogue, float32 and float64", "[cuda][parity][linear]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    const std::string at = dtype_name(dt);
    for (auto [R, K, N] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 33, 5}, {64, 96, 48},
                           {33, 1000, 129}, {300, 64, 200}}) {
      const std::string shape = " R " + std::to_string(R) + ", K " + std::to_string(K) + ", N " + std::to_string(N);
      // The backward sums over R (weight and bias gradients) and N (input gradient) as well.
      const int64_t k = std::max(K, std::max(R, N));
      check_parity_with("linear " + at + shape, lin_tol(dt, k), lin, rnd({R, K}, dt), rnd({N, K}, dt), rnd({N}, dt));
      check_parity_with("linear, no bias " + at + shape, lin_tol(dt, k), lin_nb, rnd({R, K}, dt), rnd({N, K}, dt));
    }
    check_parity_with("linear, [2, 5, 33] input " + at, lin_tol(dt, 33), lin, rnd({2, 5, 33}, dt), rnd({17, 33}, dt),
                      rnd({17}, dt));
    check_parity_with("linear, 1-D input " + at, lin_tol(dt, 33), lin, rnd({33}, dt), rnd({17, 33}, dt),
                      rnd({17}, dt));
    // Transposed operands reach cuBLASLt as transpose flags; a strided bias takes the fallback.
    check_parity_with("linear, transposed input and weight " + at, lin_tol(dt, 40),
                      [](const Tensor& x, const Tensor& w, const Tensor& b) { return linear(x.t(), w.t(), b); },
                      rnd({33, 40}, dt), rnd({33, 17}, dt), rnd({17}, dt));
    check_parity_with("linear, strided bias " + at, lin_tol(dt, 40),
                      [](const Tensor& x, const Tensor& w, const Tensor& b) {
                        return linear(x, w, b.slice(0, 0, 34, 2));
                      },
                      rnd({40, 33}, dt), rnd({17, 33}, dt), rnd({34}, dt));
    // Views that start one element in: pointers aligned to 4 (8) bytes only, a plan of their own.
    check_parity_with("linear, misaligned operands " + at, lin_tol(dt, 40),
                      [](const Tensor& x, const Tensor& w, const Tensor& b) {
                        return linear(x.slice(1, 1, 34), w.slice(1, 1, 34), b.slice(0, 1, 18));
                      },
                      rnd({40, 34}, dt), rnd({17, 34}, dt), rnd({18}, dt));
    // Aligned input and weight with a bias one element in: the bias alone sends it to the fallback.
    check_parity_with("linear, misaligned bias only " + at, lin_tol(dt, 32),
                      [](const Tensor& x, const Tensor& w, const Tensor& b) {
                        return linear(x, w, b.slice(0, 1, 17));
                      },
                      rnd({40, 32}, dt), rnd({16, 32}, dt), rnd({17}, dt));
    // The upstream gradient of a plain sum is an expanded tensor: made contiguous first.
    check_parity_with("linear then sum " + at, lin_tol(dt, 64),
                      [](const Tensor& x, const Tensor& w, const Tensor& b) { return linear(x, w, b).sum(); },
                      rnd({64, 32}, dt), rnd({24, 32}, dt), rnd({24}, dt));
    // Empty: no rows, no input features (the output is the bias, the bias gradient the sums).
    check_parity("linear, no rows " + at, lin, rnd({0, 5}, dt), rnd({3, 5}, dt), rnd({3}, dt));
    check_parity("linear, no input features " + at, lin, rnd({4, 0}, dt), rnd({3, 0}, dt), rnd({3}, dt));
  }
}

TEST_CASE("parity: linear repeated calls reuse their plans and agree", "[cuda][parity][linear]") {
  TT_REQUIRE_CUDA();
  Tensor x = randn({128, 64}).to(gpu()), w = randn({96, 64}).to(gpu()), b = randn({96}).to(gpu());
  const std::vector<float> first = linear(x, w, b).cpu().to_vector<float>();
  for (int i = 0; i < 3; ++i) CHECK(linear(x, w, b).cpu().to_vector<float>() == first);
  CHECK_ALLCLOSE(linear(x, w, b).cpu(), linear(x.cpu(), w.cpu(), b.cpu()), 1e-5, 2e-6 * 64);
}

TEST_CASE("parity: linear with TF32 on stays within TF32's precision", "[cuda][parity][linear]") {
  TT_REQUIRE_CUDA();
  Tf32Scope tf32(true);
  // TF32 keeps 10 mantissa bits of each operand: a relative error up to 2^-11 per operand, so each
  // product of N(0, 1) values is off by about 2^-11 * sqrt(2) * |x w| at most; over K = 256 terms of
  // random sign the errors add like a random walk, an error of sd ~ 0.0064 on every output, whatever
  // its size (outputs near 0 get no help from rtol). With 8192 outputs the largest is ~4 sd: atol
  // 4e-2 is ~6 sd (1e-2, ~1.5 sd, failed 1-3 elements in every simulated run).
  check_parity_with("linear, TF32", tol(1e-2, 4e-2), lin, rnd({128, 256}), rnd({64, 256}), rnd({64}));
}

TEST_CASE("parity: linear in bfloat16, float32 accumulation on both devices", "[cuda][parity][linear][bf16]") {
  TT_REQUIRE_CUDA();
  // Both sum exact bf16 products in float32 (in different orders), add the bias in float32 and
  // round once: a bf16 ulp or two of the result (2^-7 relative), so 2e-2 with room for cancellation.
  for (auto [R, K, N] : {std::tuple<int64_t, int64_t, int64_t>{1, 8, 8}, {17, 33, 65}, {256, 128, 96}}) {
    const std::string shape = " R " + std::to_string(R) + ", K " + std::to_string(K) + ", N " + std::to_string(N);
    check_parity_with("linear bf16" + shape, tol(2e-2, 2e-2), lin, rnd({R, K}, kBFloat16), rnd({N, K}, kBFloat16),
                      rnd({N}, kBFloat16));
  }
  // The kernels directly: gemm_bias_grad's bias gradient comes out of the BGRADB epilogue in bf16.
  Tensor g = randn({64, 24}).to(kBFloat16), x = randn({64, 40}).to(kBFloat16);
  Tensor gw = empty({24, 40}, kBFloat16), gb = empty({24, 1}, kBFloat16);
  Tensor gw_d = empty({24, 40}, TensorOptions().dtype(kBFloat16).device(gpu()));
  Tensor gb_d = empty({24, 1}, TensorOptions().dtype(kBFloat16).device(gpu()));
  backend_for(Device(kCPU)).gemm_bias_grad(gw, g.t(), x, gb);
  backend_for(gpu()).gemm_bias_grad(gw_d, g.to(gpu()).t(), x.to(gpu()), gb_d);
  CHECK_ALLCLOSE(gw_d.cpu().to(kFloat32), gw.to(kFloat32), 2e-2, 2e-2);
  CHECK_ALLCLOSE(gb_d.cpu().to(kFloat32), gb.to(kFloat32), 2e-2, 2e-2);
}

TEST_CASE("parity: split's one-cat backward on the GPU", "[cuda][parity][split]") {
  TT_REQUIRE_CUDA();
  check_parity("split into q, k, v",
               [](const Tensor& t) { return split(t, std::vector<int64_t>{32, 16, 16}, 2); }, rnd({2, 7, 64}));
  check_parity("chunk, one piece unused",
               [](const Tensor& t) {
                 std::vector<Tensor> p = t.chunk(3, 1);
                 return p[0] * p[2];
               },
               rnd({5, 12}));
}
