// CPU twin of cuda/linear.cu: the GEMMs of a linear layer with its bias folded in. The forward
// starts each output row as the bias and lets the GEMM accumulate onto it (beta = 1): the same sum,
// rounded once, as cuBLASLt's bias epilogue. The weight gradient's GEMM and the bias gradient's
// row sums run one after the other here (one pass each); CUDA fuses them into one call.
// Not here: shape checks and autograd (ops/linalg.cpp), the GEMM itself (gemm.cpp).
#include "tinytorch/backend/cpu/cpu_backend.h"

namespace tt::cpu {

// out: [M, N] = a [M, K] @ b [K, N] + bias (bias broadcast to out's shape).
void CpuBackend::gemm_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  copy(out, bias);
  gemm(out, a, b, 1.0);
}

// out: [M, N] = a [M, K] @ b [K, N]; grad_bias: [M, 1] = sum over k of a[:, k].
void CpuBackend::gemm_bias_grad(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& grad_bias) {
  gemm(out, a, b, 0.0);
  // Through backend_for(), not this backend directly: a bf16 `a` is summed in float32 and rounded
  // once by Bf16Compute (Note [bf16 compute]), as the CUDA epilogue does.
  backend_for(out.device()).reduce(ReduceOp::Sum, grad_bias, a);
}

}  // namespace tt::cpu
