// PTX wrappers for the bfloat16 flash kernels (flash_mma_bf16_forward.cu, _backward.cu): the
// m16n8k16 bf16 tensor-core product with float32 accumulation, ldmatrix (plain and transposed),
// 16-byte cp.async with zero fill and its commit/wait, bf16x2 packing, and the XOR swizzle of a
// shared tile with 32, 64 or 128 bf16 per row, and the tile load through it. sm_80 and newer.
//
// Note [m16n8k16 fragments]: for a warp, lane l = 4 g + t (g = l / 4 the "group", t = l % 4):
//   A (16 x 16, row-major), 4 registers of 2 bf16 each: a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1],
//     a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9]  (the lower column in the low half)
//   B (16 x 8, "col": indexed B[k][n]), 2 registers: b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g]
//   C, D (16 x 8 float): c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1]
// so the accumulators of two adjacent 8-column blocks of a product are, packed in pairs, exactly
// the A fragment of one 16-wide k step of the next product (P stays in registers).
// ldmatrix.x4 loads four 8 x 8 bf16 matrices; lanes 8i .. 8i + 7 give the addresses of matrix i's
// rows, and register i of lane l receives matrix i's row l / 4, columns 2 (l % 4) and + 1 (with
// .trans: column l / 4, rows 2 (l % 4) and + 1). A 16-byte chunk per row address.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace tt::cuda::mma_bf16 {

// d += a * b: A 16 x 16, B 16 x 8 bf16, float32 accumulators (Note [m16n8k16 fragments]).
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // never runs: the host picks these kernels on sm_80+ only (tensor_core_kernel_fits)
#endif
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8 x 8 bf16 matrices; p: this lane's row address (16 bytes, 16-byte aligned).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
#else
  __trap();
#endif
}

// As ldmatrix_x4, each matrix transposed on the way.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
#else
  __trap();
#endif
}

// 16 bytes global -> shared, asynchronously (L2 only); zeros instead when !valid (src is then
// not read, but must still be a valid address).
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  const int bytes = valid ? 16 : 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes)
               : "memory");
#else
  __trap();
#endif
}
// The "memory" clobbers keep the compiler from moving shared-memory reads across these.
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// Two floats -> one register of two bf16 (round to nearest even), lo in the low half.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// 2^x by the special function unit (MUFU.EX2, about 2 ulp; subnormal results flushed to 0):
// -inf -> 0, NaN -> NaN. exp2f without fast math adds range fix-ups around the same instruction.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Element offset of (row, col) in a shared tile of rows of D bf16 (D = 32, 64 or 128), its 16-byte
// chunks XOR-swizzled by the row so that the 8 rows one ldmatrix reads at one logical chunk fall in
// 8 different 16-byte bank groups: with rows of 128 or 256 bytes (D 64, 128) chunk c of row r sits
// at chunk c ^ (r % 8) (unswizzled, the 8 rows would all hit the same 4 banks); with rows of 64
// bytes (D 32: 4 chunks, two rows per 128 bytes) at c ^ (r / 2 % 4). col: a multiple of 8 for a
// chunk address.
template <int D>
__device__ __forceinline__ int swz(int row, int col) {
  static_assert(D == 32 || D == 64 || D == 128, "swizzle: rows of 32, 64 or 128 bf16");
  const int key = D == 32 ? (row >> 1) & 3 : row & 7;
  return row * D + (((col >> 3) ^ key) << 3) + (col & 7);
}

// Rows [r0, r0 + R) of a [T, D] bf16 matrix (row stride ld elements) into a swizzled shared tile
// [R][D] with 16-byte cp.async by NT threads, zeros past T. Not committed here.
template <int R, int D, int NT>
__device__ __forceinline__ void load_tile(uint16_t* dst, const uint16_t* src, int64_t ld, int r0, int T) {
  constexpr int kChunks = D / 8;
  for (int idx = threadIdx.x; idx < R * kChunks; idx += NT) {
    const int r = idx / kChunks, c = idx % kChunks;
    const bool valid = r0 + r < T;
    const uint16_t* s = valid ? src + int64_t(r0 + r) * ld + c * 8 : src;
    cp_async_16(dst + swz<D>(r, c * 8), s, valid);
  }
}

}  // namespace tt::cuda::mma_bf16
