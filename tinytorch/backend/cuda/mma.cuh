// PTX wrappers of the tensor-core flash kernels (flash_mma_forward.cu, flash_mma_backward.cu):
// TF32 rounding (cvt.rna) and the 3xTF32 split, mma.sync m16n8k8 TF32, 16-byte cp.async with its
// commit/wait groups, and the XOR swizzle of [rows][D] float tiles in shared memory. sm_80 and up.
//
// Note [m16n8k8 TF32 fragments]: per warp, lane = 4 * g + t (g = lane / 4 in 0..7, t = lane % 4):
//   A (16 x 8, row):  a0 = A[g][t], a1 = A[g + 8][t], a2 = A[g][t + 4], a3 = A[g + 8][t + 4]
//   B (8 x 8, col):   b0 = B[t][g], b1 = B[t + 4][g]
//   C (16 x 8, f32):  c0 = C[g][2t], c1 = C[g][2t + 1], c2 = C[g + 8][2t], c3 = C[g + 8][2t + 1]
// A C tile cannot be fed back as an A tile as it is (columns 2t, 2t + 1 against t, t + 4), but the
// k index of a product is only summed over: reading the k slot c of the next product as the
// original index perm(c) (perm(t) = 2t, perm(t + 4) = 2t + 1) for A and B alike changes nothing in
// the sum. So a C tile becomes the A tile {c0, c2, c1, c3} when B's rows are read as B[2t], B[2t + 1]
// instead of B[t], B[t + 4]: P and dS never leave the registers for that reason.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tt::cuda::mma {

// x rounded to TF32 (10 mantissa bits, to nearest, ties away from zero: cvt.rna), as float bits
// with the low 13 bits cleared. The CPU twin is tinytorch/backend/tf32.h's tf32_round.
__device__ __forceinline__ uint32_t to_tf32(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r & 0xffffe000u;
#else
  return __float_as_uint(x) & 0xffffe000u;  // never runs: the host picks these kernels on sm_80+ only
#endif
}

// The 3xTF32 split: big = tf32(x), small = tf32(x - big) (x - big is exact in float32). Where big
// is infinite (x is, or rounds up past FLT_MAX) small is 0, so that inf stays inf as on the exact
// path instead of inf - inf = NaN in the cross terms.
__device__ __forceinline__ void split(float x, uint32_t& big, uint32_t& small) {
  big = to_tf32(x);
  const float b = __uint_as_float(big);
  small = isinf(b) ? 0u : to_tf32(x - b);
}

// c += a * b on one m16n8k8 TF32 tile (Note [m16n8k8 TF32 fragments]), float32 accumulate.
__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// An A (4 values) or B (2 values) operand in its TF32 parts: small is unused (and not computed)
// when Split is false, the 1xTF32 mode.
template <int N, bool Split>
struct Operand {
  uint32_t big[N], small[N];
  __device__ __forceinline__ void set(int e, float x) {
    if constexpr (Split) {
      split(x, big[e], small[e]);
    } else {
      big[e] = to_tf32(x);
    }
  }
};

// c += a * b with the split products: 3xTF32 adds the two cross terms first (the small ones),
// then big * big; 1xTF32 only big * big. The small * small term (2^-22 relative) is dropped.
template <bool Split>
__device__ __forceinline__ void mma(float (&c)[4], const Operand<4, Split>& a, const Operand<2, Split>& b) {
  if constexpr (Split) {
    mma_tf32(c, a.small, b.big);
    mma_tf32(c, a.big, b.small);
  }
  mma_tf32(c, a.big, b.big);
}

// 16 bytes global -> shared, bypassing L1; zero-filled (and gmem not read) when !valid.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(gmem), "r"(bytes) : "memory");
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

// Offset of element (r, c) in a [rows][D] float tile whose 16-byte chunks are XOR-swizzled by
// the row: chunk c / 4 of row r sits at chunk (c / 4) ^ (r % 8). D a multiple of 32 (8 chunks or
// more per row). Both reads of the kernels are then free of bank conflicts: 8 rows x 4 adjacent
// columns (K as B of S = Q K^T, A tiles), and 4 rows 2t x 8 adjacent columns (V as B of O += P V,
// read as rows 2t, 2t + 1 by Note [m16n8k8 TF32 fragments]).
template <int D>
__device__ __forceinline__ int swz(int r, int c) {
  static_assert(D % 32 == 0, "the swizzle needs 8 chunks of 4 floats per row");
  return r * D + ((((c >> 2) ^ (r & 7))) << 2) + (c & 3);
}

// Copies rows [r0, r0 + R) of a [T, D] float matrix (row stride ld, 16-byte aligned rows) into
// the swizzled tile dst [R][D] with cp.async, rows past T zero-filled; nthreads threads share it.
template <int R, int D, int NThreads>
__device__ __forceinline__ void load_tile_async(float* dst, const float* src, int64_t ld, int r0, int T) {
  constexpr int kChunks = D / 4;
  for (int idx = threadIdx.x; idx < R * kChunks; idx += NThreads) {
    const int r = idx / kChunks, c = 4 * (idx % kChunks);
    const bool ok = r0 + r < T;
    cp_async16(dst + swz<D>(r, c), src + (ok ? int64_t(r0 + r) * ld + c : 0), ok);
  }
}

}  // namespace tt::cuda::mma
