// gemm_bf16: a bfloat16 GEMM for the CPU with float32 accumulation (tt::cpu::gemm_bf16), an
// AVX512_BF16 kernel of our own (vdpbf16ps) and a fallback through cblas_sgemm elsewhere.
//
// Note [bf16 GEMM]: OpenBLAS as Debian builds it has no cblas_sbgemm, so this is ours. On a CPU
// with AVX512_BF16 both operands are packed into panels of k-pairs (vdpbf16ps multiplies the two
// adjacent-k bf16 values of each 32-bit lane and adds both products to a float32 lane) and a
// register-blocked micro-kernel computes MR x NR tiles of c. Anywhere else, or with
// TT_BF16_GEMM=fallback in the environment, blocks of a and b are widened to float32 and handed
// to cblas_sgemm: the product of two bf16 values is exact in float32, so that is the same math.
// The native path sums each element's k-products in one fixed order whatever the thread count, so
// its bits do not depend on tt::set_num_threads; the fallback's are those of the BLAS, the same at
// a given thread count but not always across counts (Note [GEMM reproducibility] in
// backend/cpu/gemm.cpp). Note that vdpbf16ps treats denormal bf16 inputs as zero (as oneDNN's
// kernels do); the fallback does not.
#pragma once

#include <cstdint>

#include "tinytorch/core/bfloat16.h"

namespace tt::cpu {

// c: [M, N] (row stride ldc, unit column stride); a: [M, K] read as a[i*sa0 + k*sa1]; b: [K, N]
// read as b[k*sb0 + j*sb1] (any element strides: row-major, transposed, ...).
// c[i*ldc + j] = sum_k a[i, k] * b[k, j] + beta * c[i*ldc + j], accumulated in float32. beta == 0
// never reads c (it may hold NaN); K == 0 gives beta * c.
void gemm_bf16(const BFloat16* a, const BFloat16* b, float* c, int64_t M, int64_t N, int64_t K, int64_t sa0,
               int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta);
// The same with a bf16 c: accumulated in float32, rounded once (to nearest, ties to even) at the store.
void gemm_bf16(const BFloat16* a, const BFloat16* b, BFloat16* c, int64_t M, int64_t N, int64_t K,
               int64_t sa0, int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta);

// () -> true when gemm_bf16 runs the AVX512_BF16 kernel on this CPU now (the CPU has it and
// TT_BF16_GEMM is not "fallback").
bool gemm_bf16_native();

namespace detail {

enum class Bf16GemmPath { kAuto, kNative, kFallback };

// gemm_bf16 on a chosen path, for tests and benchmarks: kAuto decides as gemm_bf16 does; kNative
// on a CPU without AVX512_BF16 runs the fallback. Shapes as gemm_bf16.
void gemm_bf16_path(Bf16GemmPath path, const BFloat16* a, const BFloat16* b, float* c, int64_t M, int64_t N,
                    int64_t K, int64_t sa0, int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta);
void gemm_bf16_path(Bf16GemmPath path, const BFloat16* a, const BFloat16* b, BFloat16* c, int64_t M, int64_t N,
                    int64_t K, int64_t sa0, int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta);

}  // namespace detail

}  // namespace tt::cpu
