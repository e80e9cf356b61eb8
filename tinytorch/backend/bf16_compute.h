// Bf16Compute: the bf16 path of every kernel that computes. It wraps a device's backend; kernels
// that only move elements (copy, fill, where, indexing) and GEMM take bf16 natively, and every
// other kernel is run in float32 on float32 copies of its bf16 operands, whose results are rounded
// back to bf16 once (Note [bf16 compute]).
#pragma once

#include "tinytorch/backend/backend.h"

namespace tt {

// Note [bf16 compute]
// ~~~~~~~~~~~~~~~~~~~
// A bf16 tensor is a storage format; arithmetic happens in float32 (Note [bfloat16] in
// core/bfloat16.h). PyTorch's CPU and CUDA kernels load bf16, compute in float ("opmath") and
// round once at the store. Bf16Compute gives every backend the same semantics without a bf16
// twin of each kernel: for a kernel called with a bf16 operand it
//   1. makes a float32 copy of each bf16 input (and of each bf16 output the kernel also reads:
//      an optimizer's parameter, gemm's `out` when beta != 0, scatter_add's target),
//   2. runs the backend's float32 kernel on the copies (bf16 * bf16 is exact in float32, so a dot
//      product or a sum sees exactly the bf16 values, accumulated in float32),
//   3. rounds each float32 result into its bf16 output, once.
// The results are those of PyTorch's bf16 kernels (one rounding per op, float32 inside); the
// price is memory traffic: a unary op on bf16 reads 2 bytes and writes 4, then reads 4 and writes
// 2 more than a native kernel would. The kernels that matter for speed take bf16 natively, and
// come first in bf16_compute.cpp: GEMM (the tensor cores on a GPU, AVX512-BF16
// on a CPU: backend/cpu/gemm_bf16.cpp), the kernels that only move elements, and flash attention
// on a GPU (cuda/flash_mma_bf16_*.cu: float32 softmax and sums, but P and dS rounded to bf16 for
// their tensor-core products, as FlashAttention-2 and PyTorch's bf16 kernels do).
class Bf16Compute final : public Backend {
 public:
  explicit Bf16Compute(Backend& inner) : inner_(inner) {}

  // Every kernel of the registry (backend/kernels.h); a missing body fails the link.
  TT_KERNELS(TT_KERNEL_OVERRIDE)

 private:
  Backend& inner_;
};

}  // namespace tt
