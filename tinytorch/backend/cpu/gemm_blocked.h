// gemm_blocked: the cache-blocked matmul loop that module 02 teaches, on plain row-major buffers, so
// that a learner can write it (exercise mode) and time it against OpenBLAS (walkthrough 02). matmul
// itself does not call it: float products go to the BLAS, int64 to the textbook loop (cpu/gemm.cpp).
#pragma once

#include <cstdint>

namespace tt::cpu {

// c = a @ b for contiguous row-major a [M, K], b [K, N] and c [M, N]; c is overwritten, never read.
// The loops run over tiles of `block` columns of c by `block` steps of K, so that one
// [block, block] tile of b stays in cache while every row of a passes over it; the rows of c are
// split across tinytorch's threads (tt::get_num_threads()). With block >= max(N, K) it is the plain
// i-k-j loop. float, double and int64 (exact, no overflow check). Throws tt::Error when a size is
// negative or block < 1.
template <typename T>
void gemm_blocked(const T* a, const T* b, T* c, int64_t M, int64_t N, int64_t K, int64_t block = 64);

extern template void gemm_blocked<float>(const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);
extern template void gemm_blocked<double>(const double*, const double*, double*, int64_t, int64_t, int64_t,
                                          int64_t);
extern template void gemm_blocked<int64_t>(const int64_t*, const int64_t*, int64_t*, int64_t, int64_t, int64_t,
                                           int64_t);

}  // namespace tt::cpu
