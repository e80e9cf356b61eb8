// BlasSingleThread (OpenBLAS single-threaded for a scope) and tile_gemm (a row-major GEMM call),
// for kernels whose OpenMP threads each call BLAS on their own tiles (cpu/attention.cpp,
// cpu/flash_attention.cpp).
#pragma once

#include <cblas.h>

#include <cstdint>

namespace tt::cpu {

// Note [fused attention on the CPU] in cpu/attention.cpp says why. The setting is process-wide
// (OpenBLAS has no per-thread one in Debian 12's 0.3.21): a BLAS call from another user thread
// meanwhile may run single-threaded too. OpenBLAS does not promise that changing the count while
// another thread is inside BLAS is safe; tinytorch runs its ops from one thread at a time.
class BlasSingleThread {
 public:
  BlasSingleThread() : saved_(openblas_get_num_threads()) {
    if (saved_ != 1) openblas_set_num_threads(1);
  }
  ~BlasSingleThread() {
    if (saved_ != 1) openblas_set_num_threads(saved_);
  }
  BlasSingleThread(const BlasSingleThread&) = delete;
  BlasSingleThread& operator=(const BlasSingleThread&) = delete;

 private:
  int saved_;
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
