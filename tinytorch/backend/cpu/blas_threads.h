// BlasSingleThread: OpenBLAS single-threaded for a scope, for kernels whose OpenMP threads each
// call BLAS on their own tiles (cpu/attention.cpp, cpu/flash_attention.cpp).
#pragma once

#include <cblas.h>

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

}  // namespace tt::cpu
