// CPU softmax and log-softmax over one dim, forward and backward, fused: one pass for the max,
// one for the sum of exponentials, one to write, all on a row that stays in cache. Not here: the
// derivative bookkeeping (ops/activation.cpp) and the choice for fully masked rows, which is
// documented in ops/activation.h.
//
// Note [softmax rows]: a tensor is seen as rows along `dim`, one row per index of the other dims
// (coalesced like the reduction plan). Rows with stride 1 along `dim` (softmax over the last dim
// of a contiguous tensor: attention scores, logits) are computed in place; any other row is
// gathered into a small per-thread buffer, computed there, and scattered back, so one vectorized
// row kernel serves every layout. Threads split the rows.
//
// Note [stable softmax]: exp(x - max) is at most 1, so inputs of +-1e4 never overflow, and the
// largest element contributes exactly 1 to the sum, so the sum is >= 1 and its log and inverse
// are finite. The one row without a finite max is a row that is all -inf (every score masked):
// there softmax writes zeros and log_softmax -inf instead of the 0/0 = NaN the formula gives.
// A NaN anywhere in a row makes the whole row NaN, as in PyTorch.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tinytorch/backend/activation_functors.h"
#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/row_plan.h"
#include "tinytorch/backend/cpu/loop.h"

namespace tt::cpu {

namespace {

// Note [vectorized row passes]: `omp simd reduction` lets the compiler reorder a row's max and
// sums into vector lanes (without it, float addition order pins the loop to one element at a
// time). (normalization.cpp's row_sum folds float lanes into a double every kRowSumBlock elements.)
//
// Note [softmax sums in double]: softmax's three row sums (of the exponentials, of dy, of dy * y)
// add every float term in a double, here and in the CUDA twin, so each is within a few double
// roundings of the exact sum and both devices round it to the same float (but on a tie). A float
// sum is not enough for log_softmax's backward dx = dy - exp(y) * sum(dy): sum(dy) over a row of
// 1000 N(0, 1) values is ~30, and float lanes of ~60 terms leave it ~1e-5 off; where dy is close to
// exp(y) * sum(dy), dx is near 0 and that 1e-5 (times exp(y) ~ 0.1 to 1) was the whole error,
// 200x over the bound below, and different on each device (issue 17: the CUDA parity case of
// rows of 1000 failed). With u = 2^-24, the float64 sum rounded once (u |s|), exp_f32 (<= 1.02 ulp
// over [-87, 0], exhaustively checked: <= 2.04 u), the product (u) and the difference (u |dx|):
//   |dx - exact(dy, y)| <= 4.04 u |exp(y) s| + u |dx|,
// which tests/ops/test_activation.cpp checks against a float64 reference. The terms are made in
// chunks of kSumChunk in T (the float loop, exp included, vectorizes as before), then added to
// double lanes (a convert and a double add per element): one loop doing both, f(i) converted
// on the fly, did not vectorize the exponential and made softmax_fb 2.5x slower on the CPU.
constexpr int64_t kSumChunk = 64;

template <typename T, typename F>
double row_sum_f64(int64_t n, F f) {
  double s = 0;
  T terms[kSumChunk];
  for (int64_t start = 0; start < n; start += kSumChunk) {
    const int64_t len = std::min(kSumChunk, n - start);
#pragma omp simd
    for (int64_t j = 0; j < len; ++j) terms[j] = f(start + j);
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < len; ++j) s += double(terms[j]);
  }
  return s;
}

// The largest element of a row, ignoring NaN; -inf for an empty row.
template <typename T>
T row_max(const T* x, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

template <typename T>
bool has_nan(const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (x[i] != x[i]) return true;
  return false;
}

// y = softmax(x) (or log_softmax) over one contiguous row of n elements. See Note [stable softmax].
template <typename T>
void softmax_row(T* __restrict y, const T* __restrict x, int64_t n, bool log) {
  // TT_EXERCISE_BEGIN(03, 1)
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const T m = row_max(x, n);
  if (m == kNegInf && !has_nan(x, n)) {  // every element is -inf: a fully masked row
    const T fill = log ? kNegInf : T(0);
    for (int64_t i = 0; i < n; ++i) y[i] = fill;
    return;
  }
  if (log) {
    const T logsum = T(std::log(row_sum_f64<T>(n, [&](int64_t i) { return functors::exp_any(x[i] - m); })));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - logsum;
  } else {
    // Write the exponentials while summing them, then scale: x is read once. (A NaN in x makes
    // the sum, and so the whole row, NaN.)
    const double sum = row_sum_f64<T>(n, [&](int64_t i) { return y[i] = functors::exp_any(x[i] - m); });
    const T inv = T(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
  // TT_EXERCISE_END
}

// dx from dy and the forward's output y over one contiguous row.
template <typename T>
void softmax_backward_row(T* __restrict dx, const T* __restrict dy, const T* __restrict y, int64_t n, bool log) {
  // TT_EXERCISE_BEGIN(03, 2)
  if (log) {  // dx = dy - exp(y) * sum(dy)
    const T sum = T(row_sum_f64<T>(n, [&](int64_t i) { return dy[i]; }));
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] - functors::exp_any(y[i]) * sum;
  } else {  // dx = y * (dy - sum(dy * y))
    const T dot = T(row_sum_f64<T>(n, [&](int64_t i) { return dy[i] * y[i]; }));
    for (int64_t i = 0; i < n; ++i) dx[i] = y[i] * (dy[i] - dot);
  }
  // TT_EXERCISE_END
}

template <typename T>
void gather(T* dst, const T* src, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i * stride];
}
template <typename T>
void scatter(T* dst, int64_t stride, const T* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i * stride] = src[i];
}

// Rows per thread chunk: enough elements that a thread's share outweighs waking it.
int64_t row_grain(int64_t len) { return std::max<int64_t>(1, (kParallelGrain / 4) / std::max<int64_t>(1, len)); }

template <typename T>
void softmax_typed(const Tensor& out, const Tensor& in, int dim, bool log) {
  const Tensor* ts[2] = {&out, &in};
  const RowPlan<2> plan(ts, dim);
  if (plan.rows == 0 || plan.len == 0) return;
  T* y = out.data_ptr<T>();
  const T* x = in.data_ptr<T>();
  const int64_t len = plan.len;
  parallel_for(plan.rows, row_grain(len), [&](int64_t begin, int64_t end) {
    std::vector<T> buf(plan.direct ? 0 : size_t(2 * len));
    plan.for_rows(begin, end, [&](const int64_t* off) {
      if (plan.direct) return softmax_row(y + off[0], x + off[1], len, log);
      gather(buf.data(), x + off[1], len, plan.step[1]);
      softmax_row(buf.data() + len, buf.data(), len, log);
      scatter(y + off[0], plan.step[0], buf.data() + len, len);
    });
  });
}

template <typename T>
void softmax_backward_typed(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int dim, bool log) {
  const Tensor* ts[3] = {&grad_in, &grad_out, &out};
  const RowPlan<3> plan(ts, dim);
  if (plan.rows == 0 || plan.len == 0) return;
  T* dx = grad_in.data_ptr<T>();
  const T* dy = grad_out.data_ptr<T>();
  const T* y = out.data_ptr<T>();
  const int64_t len = plan.len;
  parallel_for(plan.rows, row_grain(len), [&](int64_t begin, int64_t end) {
    std::vector<T> buf(plan.direct ? 0 : size_t(3 * len));
    plan.for_rows(begin, end, [&](const int64_t* off) {
      if (plan.direct) return softmax_backward_row(dx + off[0], dy + off[1], y + off[2], len, log);
      T* bdy = buf.data();
      T* by = bdy + len;
      T* bdx = by + len;
      gather(bdy, dy + off[1], len, plan.step[1]);
      gather(by, y + off[2], len, plan.step[2]);
      softmax_backward_row(bdx, bdy, by, len, log);
      scatter(dx + off[0], plan.step[0], bdx, len);
    });
  });
}

}  // namespace

void CpuBackend::softmax(const Tensor& out, const Tensor& in, int dim, bool log) {
  TT_DISPATCH_FLOATING(in.dtype(), log ? "log_softmax" : "softmax",
                       [&] { softmax_typed<scalar_t>(out, in, dim, log); });
}

void CpuBackend::softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int dim,
                                  bool log) {
  TT_DISPATCH_FLOATING(out.dtype(), log ? "log_softmax_backward" : "softmax_backward",
                       [&] { softmax_backward_typed<scalar_t>(grad_in, grad_out, out, dim, log); });
}

}  // namespace tt::cpu
