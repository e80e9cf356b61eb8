// online_softmax_update: one query row's step of the online softmax, the piece of the CPU flash
// kernel (cpu/flash_attention.cpp, Note [online softmax]) that can be called and tested on its own.
// Defined there for float and double; module 13's suite streams rows through it.
#pragma once

#include <cstdint>

namespace tt::cpu {

// Folds a block of one row's scores s [cols] into its running max m, running sum l (of exp(s - m))
// and unnormalized output acc [Dv]: m' = max(m, max s), alpha = exp(m - m'), l = alpha l +
// sum exp(s - m'), acc = alpha acc, m = m', and s is overwritten with exp(s - m'), the block's
// weights before normalization, which the caller multiplies by the block's values and adds to acc.
// Start a row with m = -inf, l = 0, acc = 0; at the end out = acc / l (0 when l = 0) and the row's
// logsumexp is m + log l. A block seen while nothing finite has been (all masked) leaves m, l and
// acc alone and s all 0 (a NaN among its scores sets l to NaN).
template <typename T>
void online_softmax_update(T* s, int64_t cols, T& m, T& l, T* acc, int64_t Dv);

extern template void online_softmax_update<float>(float*, int64_t, float&, float&, float*, int64_t);
extern template void online_softmax_update<double>(double*, int64_t, double&, double&, double*, int64_t);

}  // namespace tt::cpu
