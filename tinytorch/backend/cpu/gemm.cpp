// CPU GEMM: float32/float64 through OpenBLAS (cblas_sgemm / cblas_dgemm), bf16 through our own
// AVX512-BF16 kernel (cpu/gemm_bf16.cpp; Debian's OpenBLAS has no sbgemm), int64 by a plain loop.
// Transposed views are passed to BLAS as transpose flags with their own leading dimension, so a
// `b.t()` costs nothing; batches (with broadcast, stride-0 batch dims) loop over pointer offsets
// without allocating. Also gemm_blocked (gemm_blocked.h), the cache-blocked loop module 02 teaches.
//
// Note [GEMM reproducibility]: what a CPU GEMM promises about its bits.
//   - Our own kernels (the AVX512_BF16 GEMM of gemm_bf16.cpp, gemm_blocked, the int64 loop) sum each
//     element's products in one fixed order: the same bits for the same inputs on any thread count.
//   - A GEMM the BLAS computes (float32 and float64 here, and the bf16 fallback, which widens to
//     float32 and calls cblas_sgemm) gives the same bits for the same inputs, thread count and BLAS
//     kernel set, run after run; and results within the float32 (float64) rounding bound of the
//     exact sum on any thread count. Not the same bits on one thread and on two: OpenBLAS splits C
//     between its threads, and some kernel sets (OPENBLAS_CORETYPE=Haswell on an AVX-512 machine,
//     the setting some of our machines run with) then sum an element's products in another order
//     (an edge tile takes another micro-kernel), which changed 4 of 12 checks by an ulp or so.
//     OpenBLAS does not promise more, nor does PyTorch for its CPU matmul.
// Tests check exactly that (tests/backend/test_gemm_bf16.cpp, "... thread count"): bit-equality across
// thread counts for our kernels only, and for BLAS paths a repeat at the same thread count plus the
// accuracy bound, so the suite passes under whichever kernel set a machine picks.
#include <cblas.h>

#include <algorithm>

#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/cpu/gemm_bf16.h"
#include "tinytorch/backend/cpu/gemm_blocked.h"
#include "tinytorch/backend/cpu/loop.h"
#include "tinytorch/backend/threads.h"

namespace tt::cpu {

namespace {

// How BLAS should read one [rows, cols] matrix with strides (sr, sc); see blas_compatible().
struct BlasLayout {
  CBLAS_TRANSPOSE trans;
  int64_t ld;
};
BlasLayout blas_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
  if ((sc == 1 || cols == 1) && (sr >= std::max<int64_t>(1, cols) || rows == 1))
    return {CblasNoTrans, rows == 1 ? std::max<int64_t>(1, cols) : sr};
  return {CblasTrans, cols == 1 ? std::max<int64_t>(1, rows) : sc};
}

void gemm_call(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K, BlasLayout la,
               BlasLayout lb, int64_t ldc, double beta) {
  cblas_sgemm(CblasRowMajor, la.trans, lb.trans, int(M), int(N), int(K), 1.0f, a, int(la.ld), b,
              int(lb.ld), float(beta), c, int(ldc));
}
void gemm_call(const double* a, const double* b, double* c, int64_t M, int64_t N, int64_t K,
               BlasLayout la, BlasLayout lb, int64_t ldc, double beta) {
  cblas_dgemm(CblasRowMajor, la.trans, lb.trans, int(M), int(N), int(K), 1.0, a, int(la.ld), b,
              int(lb.ld), beta, c, int(ldc));
}

// a: [M, K], b: [K, N], c: [M, N]; strides in elements. The textbook triple loop, used for
// int64 (BLAS has no integer GEMM) and as the reference the module 02 lesson starts from.
template <typename T>
void gemm_naive(const T* a, const T* b, T* c, int64_t M, int64_t N, int64_t K, int64_t sa0,
                int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta) {
  // TT_EXERCISE_BEGIN(02, 1)
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      T acc = beta != 0.0 ? T(beta) * c[i * ldc + j] : T(0);
      for (int64_t k = 0; k < K; ++k) acc += a[i * sa0 + k * sa1] * b[k * sb0 + j * sb1];
      c[i * ldc + j] = acc;
    }
  // TT_EXERCISE_END
}

// Rows [i0, i1) of c = a @ b, all contiguous row-major (a [M, K], b [K, N], c [M, N]), in tiles:
// for each tile of `block` columns of c and each tile of `block` steps of K, every row passes over
// the same [block, block] tile of b, which stays in cache meanwhile (Note [blocked loop]).
template <typename T>
void gemm_blocked_rows(const T* a, const T* b, T* c, int64_t i0, int64_t i1, int64_t N, int64_t K, int64_t block) {
  // TT_EXERCISE_BEGIN(02, 2)
  for (int64_t i = i0; i < i1; ++i) std::fill(c + i * N, c + (i + 1) * N, T(0));
  for (int64_t j0 = 0; j0 < N; j0 += block) {
    const int64_t j1 = std::min(N, j0 + block);
    for (int64_t k0 = 0; k0 < K; k0 += block) {
      const int64_t k1 = std::min(K, k0 + block);
      for (int64_t i = i0; i < i1; ++i) {
        T* crow = c + i * N;
        for (int64_t k = k0; k < k1; ++k) {  // i-k-j inside the tile: the inner loop walks rows
          const T aik = a[i * K + k];
          const T* brow = b + k * N;
          for (int64_t j = j0; j < j1; ++j) crow[j] += aik * brow[j];
        }
      }
    }
  }
  // TT_EXERCISE_END
}

// One [M, K] @ [K, N] product: BLAS for floating types, the loop for integers.
template <typename T>
void gemm_one(const T* a, const T* b, T* c, int64_t M, int64_t N, int64_t K, int64_t sa0, int64_t sa1,
              int64_t sb0, int64_t sb1, int64_t ldc, double beta) {
  if constexpr (std::is_same<T, BFloat16>::value) {
    gemm_bf16(a, b, c, M, N, K, sa0, sa1, sb0, sb1, ldc, beta);
  } else if constexpr (std::is_floating_point<T>::value) {
    if (K == 0) {  // an empty inner dim: c = beta * c
      for (int64_t r = 0; r < M; ++r)
        for (int64_t j = 0; j < N; ++j) c[r * ldc + j] = beta == 0.0 ? T(0) : T(beta) * c[r * ldc + j];
      return;
    }
    gemm_call(a, b, c, M, N, K, blas_layout(M, K, sa0, sa1), blas_layout(K, N, sb0, sb1), ldc, beta);
  } else {
    gemm_naive(a, b, c, M, N, K, sa0, sa1, sb0, sb1, ldc, beta);
  }
}

}  // namespace

// Note [blocked loop]: the i-k-j loop reads all of b for every row of c: 4 K N bytes for 2 K N
// FLOPs, an arithmetic intensity near 1/2 once b no longer fits in cache. Cut the columns of c and
// the steps of K into tiles of `block`: then a [block, block] tile of b is read from memory once
// and used by every row, while each row reads `block` numbers of a and reads and writes `block`
// of c per tile. Per tile pair that is 2 M block^2 FLOPs for about 4 (block^2 + 3 M block) bytes:
// an intensity near block / 6 as long as the tile stays in cache (64: 10.7 FLOPs/byte). That is
// the first of the tricks a BLAS plays; the others (registers, packing, SIMD FMA) it keeps.
template <typename T>
void gemm_blocked(const T* a, const T* b, T* c, int64_t M, int64_t N, int64_t K, int64_t block) {
  TT_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm_blocked: sizes must be >= 0, got M = ", M, ", N = ", N, ", K = ", K);
  TT_CHECK(block >= 1, "gemm_blocked: block must be >= 1, got ", block);
  tt::detail::apply_num_threads();
  // Rows split across threads when the product has more than ~1M multiply-adds.
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(1, N * K));
  parallel_for(M, grain, [&](int64_t begin, int64_t end) { gemm_blocked_rows(a, b, c, begin, end, N, K, block); });
}
template void gemm_blocked<float>(const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);
template void gemm_blocked<double>(const double*, const double*, double*, int64_t, int64_t, int64_t, int64_t);
template void gemm_blocked<int64_t>(const int64_t*, const int64_t*, int64_t*, int64_t, int64_t, int64_t, int64_t);

// out: [B.., M, N] (last dim contiguous); a: [B.., M, K]; b: [B.., K, N] (batch dims of a and
// b already broadcast to out's, stride 0 allowed; both blas_compatible for float dtypes).
void CpuBackend::gemm(const Tensor& out, const Tensor& a, const Tensor& b, double beta) {
  tt::detail::apply_num_threads();  // the BLAS gets tinytorch's thread count before its first GEMM
  const int nd = out.dim();
  const int64_t M = out.size(nd - 2), N = out.size(nd - 1), K = a.size(nd - 1);
  if (M == 0 || N == 0) return;
  const int64_t ldc = std::max<int64_t>(out.stride(nd - 2), std::max<int64_t>(1, N));
  int64_t batch = 1;
  for (int d = 0; d < nd - 2; ++d) batch *= out.size(d);

  // Note [folding batches]: [B.., M, K] @ [K, N] with b broadcast over the batch (all its batch
  // strides 0) is one [B..·M, K] @ [K, N] product when a's and out's batch dims and rows form one
  // evenly strided run of rows; then a single, much larger GEMM replaces B small ones.
  if (batch > 1 && M > 0) {
    bool fold = true;
    for (int d = 0; d < nd - 2; ++d)
      if (b.stride(d) != 0 && out.size(d) != 1) fold = false;
    auto rows_fold = [&](const Tensor& t) {
      int64_t expect = t.stride(nd - 2) * t.size(nd - 2);
      for (int d = nd - 3; d >= 0; --d) {
        if (t.size(d) == 1) continue;
        if (t.stride(d) != expect) return false;
        expect *= t.size(d);
      }
      return M > 1;  // with one row, its stride says nothing about the next batch
    };
    if (fold && rows_fold(a) && rows_fold(out) && a.stride(nd - 1) == 1) {
      TT_DISPATCH_NUMERIC_BF16(out.dtype(), "matmul", [&] {
        gemm_one(a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), batch * M, N, K,
                 a.stride(nd - 2), a.stride(nd - 1), b.stride(nd - 2), b.stride(nd - 1), ldc, beta);
      });
      return;
    }
  }

  // Element offsets of batch number i in a, b and out.
  auto batch_offsets = [&](int64_t i, int64_t& oa, int64_t& ob, int64_t& oc) {
    oa = ob = oc = 0;
    for (int d = nd - 3; d >= 0; --d) {
      int64_t idx = i % out.size(d);
      i /= out.size(d);
      oa += idx * a.stride(d);
      ob += idx * b.stride(d);
      oc += idx * out.stride(d);
    }
  };

  TT_DISPATCH_NUMERIC_BF16(out.dtype(), "matmul", [&] {
    const scalar_t* pa = a.data_ptr<scalar_t>();
    const scalar_t* pb = b.data_ptr<scalar_t>();
    scalar_t* pc = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < batch; ++i) {
      int64_t oa, ob, oc;
      batch_offsets(i, oa, ob, oc);
      gemm_one(pa + oa, pb + ob, pc + oc, M, N, K, a.stride(nd - 2), a.stride(nd - 1),
               b.stride(nd - 2), b.stride(nd - 1), ldc, beta);
    }
  });
}

}  // namespace tt::cpu
