// Backend::gemm_bias and Backend::gemm_bias_grad on the CPU (backend/cpu/linear.cpp), called
// directly: known values in float32, float64 and bf16, transposed and strided operands, empty
// sizes. These are the CPU twins the CUDA parity suite (tests/cuda/test_parity_linear.cpp) checks
// cuBLASLt's bias epilogues against.
#include <vector>

#include "test_util.h"
#include "tinytorch/backend/backend.h"

using namespace tt;

namespace {

// x: [2, 3], w: [2, 3], bias [2]; x @ w^T = [[-2, 4], [-2, 13]], + bias = [[8, 24], [8, 33]].
Tensor x_of(ScalarType dt) { return tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}).to(dt); }
Tensor w_of(ScalarType dt) { return tensor({{1.0, 0.0, -1.0}, {2.0, 1.0, 0.0}}).to(dt); }
Tensor bias_of(ScalarType dt) { return tensor({10.0, 20.0}).to(dt); }
// g: [2 rows, 2 outputs]; g^T x = [[13, 17, 21], [18, 24, 30]], the sums of g's columns [4, 6].
Tensor g_of(ScalarType dt) { return tensor({{1.0, 2.0}, {3.0, 4.0}}).to(dt); }

std::vector<double> values(const Tensor& t) { return t.to(kFloat64).contiguous().to_vector<double>(); }

}  // namespace

TEST_CASE("linear kernels: gemm_bias adds the bias row to every row of the product", "[backend][linear]") {
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16}) {
    INFO(dt);
    Tensor out = empty({2, 2}, dt);
    backend_for(kCPU).gemm_bias(out, x_of(dt), w_of(dt).t(), bias_of(dt).expand({2, 2}));
    CHECK(values(out) == std::vector<double>{8, 24, 8, 33});
  }
}

TEST_CASE("linear kernels: gemm_bias_grad gives g^T x and the column sums of g together", "[backend][linear]") {
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16}) {
    INFO(dt);
    Tensor gw = empty({2, 3}, dt), gb = empty({2, 1}, dt);
    backend_for(kCPU).gemm_bias_grad(gw, g_of(dt).t(), x_of(dt), gb);
    CHECK(values(gw) == std::vector<double>{13, 17, 21, 18, 24, 30});
    CHECK(values(gb) == std::vector<double>{4, 6});
  }
}

TEST_CASE("linear kernels: any BLAS layout, a strided output row, and the reference sums", "[backend][linear]") {
  manual_seed(17);
  const int64_t R = 37, K = 29, N = 13;
  Tensor x = randn({K, R}, kFloat64).t();                          // column-major [R, K]
  Tensor w = randn({N, 2 * K + 1}, kFloat64).slice(1, 1, K + 1);  // [N, K] with row stride 2K + 1, offset 1
  Tensor b = randn({N}, kFloat64);
  Tensor wide = zeros({R, N + 5}, kFloat64);
  Tensor out = wide.slice(1, 2, N + 2);                           // rows N + 5 apart
  backend_for(kCPU).gemm_bias(out, x, w.t(), b.expand({R, N}));
  CHECK_ALLCLOSE(out, x.matmul(w.t()) + b, 1e-12, 1e-12);
  CHECK(values(wide.slice(1, 0, 2)) == std::vector<double>(size_t(R * 2), 0.0));  // outside out: untouched

  Tensor g = randn({R, N}, kFloat64);
  Tensor gw = empty({N, K}, kFloat64), gb = empty({N, 1}, kFloat64);
  backend_for(kCPU).gemm_bias_grad(gw, g.t(), x, gb);
  CHECK_ALLCLOSE(gw, g.t().matmul(x), 1e-12, 1e-12);
  CHECK_ALLCLOSE(gb.reshape({N}), g.sum({0}), 1e-12, 1e-12);
}

TEST_CASE("linear kernels: empty sizes", "[backend][linear]") {
  // K = 0: the product is empty, every row is the bias.
  Tensor out = empty({3, 2}, kFloat32);
  backend_for(kCPU).gemm_bias(out, empty({3, 0}, kFloat32), empty({0, 2}, kFloat32),
                              bias_of(kFloat32).expand({3, 2}));
  CHECK(values(out) == std::vector<double>{10, 20, 10, 20, 10, 20});
  // No rows (K = 0 for the gradient GEMM): the weight and bias gradients are zeros, not garbage.
  Tensor gw = full({2, 3}, 7.0, kFloat32), gb = full({2, 1}, 7.0, kFloat32);
  backend_for(kCPU).gemm_bias_grad(gw, empty({0, 2}, kFloat32).t(), empty({0, 3}, kFloat32), gb);
  CHECK(values(gw) == std::vector<double>(6, 0.0));
  CHECK(values(gb) == std::vector<double>{0, 0});
  // No input features: the weight gradient is empty, the bias gradient still the column sums.
  Tensor gw0 = empty({2, 0}, kFloat32), gb0 = empty({2, 1}, kFloat32);
  backend_for(kCPU).gemm_bias_grad(gw0, g_of(kFloat32).t(), empty({2, 0}, kFloat32), gb0);
  CHECK(values(gb0) == std::vector<double>{4, 6});
}
