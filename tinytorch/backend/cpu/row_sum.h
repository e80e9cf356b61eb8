// row_sum: the vectorized, accurate sum shared by the CPU row kernels (softmax.cpp,
// normalization.cpp). See Note [vectorized row passes] in softmax.cpp.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tt::cpu {

// Float lanes are folded into a double this often, so a 50,000-wide row still sums accurately.
constexpr int64_t kRowSumBlock = 1024;

// Sum of f(i) over [0, n): blocks of kRowSumBlock summed in T with `omp simd` (vector lanes), the
// block sums added in double.
template <typename T, typename F>
double row_sum(int64_t n, F f) {
  double total = 0;
  for (int64_t start = 0; start < n; start += kRowSumBlock) {
    const int64_t end = std::min(start + kRowSumBlock, n);
    T s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = start; i < end; ++i) s += f(i);
    total += double(s);
  }
  return total;
}

}  // namespace tt::cpu
