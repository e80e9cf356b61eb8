// BlasSingleThread (OpenBLAS single-threaded for a scope) and tile_gemm (a row-major GEMM call),
// for kernels whose OpenMP threads each call BLAS on their own tiles (cpu/attention.cpp,
// cpu/flash_attention.cpp).
#pragma once

#include <cblas.h>

#include <cstdint>

#include "tinytorch/backend/cpu/blas_info.h"
#include "tinytorch/backend/threads.h"

namespace tt::cpu {

// Keeps the BLAS on the calling thread while our OpenMP threads each call it on their own tiles
// (Note [threading policy] in backend/threads.cpp). An OpenMP build of the BLAS already does that
// inside a parallel region, so then this does nothing: setting its count would also set
// OpenMP's for this thread (OpenBLAS's openblas_set_num_threads calls omp_set_num_threads) and
// run the region itself on one thread. A pthreads BLAS is set to one thread for the scope and
// restored after; the setting is process-wide, so a BLAS call from another user thread meanwhile
// may run single-threaded too (slower, never wrong).
class BlasSingleThread {
 public:
  BlasSingleThread() {
    detail::apply_num_threads();  // the first op sets the BLAS's count: not inside this scope
    if (!blas_nests_in_openmp()) {
      saved_ = blas_get_num_threads();
      if (saved_ != 1) blas_set_num_threads(1);
    }
  }
  ~BlasSingleThread() {
    if (saved_ > 1) blas_set_num_threads(saved_);
  }
  BlasSingleThread(const BlasSingleThread&) = delete;
  BlasSingleThread& operator=(const BlasSingleThread&) = delete;

 private:
  int saved_ = 1;
};

// c[M, N] = alpha * op(a) op(b) + beta * c, row-major with the given leading dimensions; op
// transposes when ta / tb.
inline void tile_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const float* a, int64_t lda,
                      const float* b, int64_t ldb, double beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(N), int(K),
              float(alpha), a, int(lda), b, int(ldb), float(beta), c, int(ldc));
}
inline void tile_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* a, int64_t lda,
                      const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(N), int(K),
              alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

}  // namespace tt::cpu
