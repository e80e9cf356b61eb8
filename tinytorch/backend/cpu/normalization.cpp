// CPU LayerNorm and RMSNorm, forward and backward, fused: each row of C elements is read once per
// pass while it sits in L1, and the backward computes dx and the weight/bias gradients in the same
// sweep. Not here: the reshaping of any input to [R, C], the checks and the derivative bookkeeping
// (ops/normalization.cpp).
//
// Note [normalization rows]: the ops hand over contiguous [R, C] tensors (x normalized over its
// last C elements). Threads split the rows. Row statistics are accumulated in float lanes
// (`omp simd reduction`, vectorized) folded into a double every kBlock elements, as in
// Note [vectorized row passes] of softmax.cpp, and finished in double.
//
// Note [stable variance]: the variance is two-pass with a correction: m = sum(x)/C, then with
// d = x - m, var = (sum(d^2) - sum(d)^2/C) / C, which is exact up to rounding even when m itself
// is off by a rounding error. A row of 1e4 + small noise keeps its small variance, where the
// one-pass E[x^2] - E[x]^2 cancels to 0 or below in float32.
//
// Note [split mean]: mean and rstd are kept in float64. A float32 row subtracts the mean as two
// floats, hi = float(mean) and lo = float(mean - hi): (x - hi) is exact when x is near the mean
// (Sterbenz), so x - mean keeps its small digits even at x = 1e4 + noise, where rounding the mean
// to one float (ulp 1e-3 there) would shift every output by up to 0.5e-3 / std.
//
// Note [huge rows]: the fast passes keep partial sums in T, so d^2 overflows once |x - mean|
// passes 1.8e19 in float32 (1.3e154 in float64), and a row's sum near 3.4e38; the statistics come
// out inf and every y would be 0 (rstd = 0). When they are not finite although the row is, the row
// is done again in float64 on x scaled by 2^-e, 2^e <= max|x| < 2^(e+1): a power-of-two scaling
// is exact, nothing of the scaled row can overflow, and the statistics are scaled back
// (mean 2^e, rstd 2^-e) for the backward. [3e38, -3e38] gives [1, -1], as float64 does. A row
// holding an inf or NaN keeps the fast pass's NaN (as PyTorch); only overflowing rows pay for
// the second pass. The backward is not rescaled: its float32 x - mean overflows past 1.7e38.
//
// Note [deterministic weight gradients]: dweight and dbias are sums over rows. Rows are grouped
// into fixed blocks of kRowBlock; each block sums its rows into its own partial row of a
// [blocks, C] scratch buffer, and the partials are then added in block order, in double. The
// grouping depends only on R, never on the thread count, so results are bit-identical however
// many threads run.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/cpu/row_sum.h"
#include "tinytorch/backend/cpu/loop.h"

namespace tt::cpu {

namespace {

constexpr int64_t kBlock = kRowSumBlock;
constexpr int64_t kRowBlock = 64;   // rows per partial of dweight / dbias

// e with 2^e <= max|x_i| < 2^(e+1) over a row of C elements; false when one is inf or NaN or all
// are 0 (Note [huge rows]).
template <typename T>
bool row_scale_exponent(const T* x, int64_t C, int& e) {
  double amax = 0;
  for (int64_t i = 0; i < C; ++i) {
    const double a = std::fabs(double(x[i]));
    if (!(a <= std::numeric_limits<double>::max())) return false;  // inf or NaN
    amax = std::max(amax, a);
  }
  if (amax == 0) return false;
  e = std::ilogb(amax);
  return true;
}

// layer_norm of one row in float64 on x 2^-e (Note [huge rows]); same outputs as layer_norm_row.
// Returns false, writing nothing, when the row is not finite.
template <typename T>
bool layer_norm_row_scaled(T* y, double& mean_out, double& rstd_out, const T* x, const T* w, const T* b, int64_t C,
                           double eps) {
  int e = 0;
  if (!row_scale_exponent(x, C, e)) return false;
  const double scale = std::ldexp(1.0, -e);
  double sum = 0;
  for (int64_t i = 0; i < C; ++i) sum += double(x[i]) * scale;
  const double m0 = sum / double(C);
  double sd = 0, sd2 = 0;  // Note [stable variance]
  for (int64_t i = 0; i < C; ++i) {
    const double d = double(x[i]) * scale - m0;
    sd += d;
    sd2 += d * d;
  }
  const double var = std::max(0.0, (sd2 - sd * sd / double(C)) / double(C));
  const double mean = m0 + sd / double(C);
  // eps 2^-2e can underflow to 0 in float64; a constant row (var 0) then has y = bias.
  const double den = var + std::ldexp(eps, -2 * e);
  const double r = den > 0 ? 1.0 / std::sqrt(den) : 0.0;
  mean_out = std::ldexp(mean, e);
  rstd_out = den > 0 ? std::ldexp(r, -e) : 1.0 / std::sqrt(eps);
  for (int64_t i = 0; i < C; ++i) {
    double v = (double(x[i]) * scale - mean) * r;
    if (w) v *= double(w[i]);
    if (b) v += double(b[i]);
    y[i] = T(v);
  }
  return true;
}

// rms_norm of one row in float64 on x 2^-e (Note [huge rows]); false when the row is not finite.
template <typename T>
bool rms_norm_row_scaled(T* y, double& rstd_out, const T* x, const T* w, int64_t C, double eps) {
  int e = 0;
  if (!row_scale_exponent(x, C, e)) return false;
  const double scale = std::ldexp(1.0, -e);
  double ss = 0;
  for (int64_t i = 0; i < C; ++i) ss += (double(x[i]) * scale) * (double(x[i]) * scale);
  const double r = 1.0 / std::sqrt(ss / double(C) + std::ldexp(eps, -2 * e));  // ss >= 1: no 0
  rstd_out = std::ldexp(r, -e);
  for (int64_t i = 0; i < C; ++i) {
    double v = double(x[i]) * scale * r;
    if (w) v *= double(w[i]);
    y[i] = T(v);
  }
  return true;
}

// One row of layer_norm: writes y and returns (mean, rstd). w, b may be null.
template <typename T>
void layer_norm_row(T* __restrict y, double& mean_out, double& rstd_out, const T* __restrict x, const T* __restrict w,
                    const T* __restrict b, int64_t C, double eps) {
  // TT_EXERCISE_BEGIN(11, 1)
  if (C == 0) {
    mean_out = 0;
    rstd_out = 1.0 / std::sqrt(eps);
    return;
  }
  const T m0 = T(row_sum<T>(C, [&](int64_t i) { return x[i]; }) / double(C));
  double sd = 0, sd2 = 0;  // Note [stable variance]
  for (int64_t start = 0; start < C; start += kBlock) {
    const int64_t end = std::min(start + kBlock, C);
    T a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
    for (int64_t i = start; i < end; ++i) {
      const T d = x[i] - m0;
      a += d;
      b += d * d;
    }
    sd += double(a);
    sd2 += double(b);
  }
  if (!std::isfinite(double(m0)) || !std::isfinite(sd2)) {  // Note [huge rows]
    if (layer_norm_row_scaled(y, mean_out, rstd_out, x, w, b, C, eps)) return;
  }
  const double var = std::max(0.0, (sd2 - sd * sd / double(C)) / double(C));
  const double mean = double(m0) + sd / double(C), rstd = 1.0 / std::sqrt(var + eps);
  mean_out = mean;
  rstd_out = rstd;
  const T hi = T(mean), lo = T(mean - double(hi)), r = T(rstd);  // Note [split mean]
  if (w && b) {
#pragma omp simd
    for (int64_t i = 0; i < C; ++i) y[i] = ((x[i] - hi) - lo) * r * w[i] + b[i];
  } else if (w) {
#pragma omp simd
    for (int64_t i = 0; i < C; ++i) y[i] = ((x[i] - hi) - lo) * r * w[i];
  } else if (b) {
#pragma omp simd
    for (int64_t i = 0; i < C; ++i) y[i] = ((x[i] - hi) - lo) * r + b[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < C; ++i) y[i] = ((x[i] - hi) - lo) * r;
  }
  // TT_EXERCISE_END
}

// One row of layer_norm's backward: dx (may be null) and, with kDW / kDB, adds this row's
// dy * xhat and dy to dw_part / db_part, in the same pass as the row sums. kW: w is given. The
// flags are template parameters so that every variant is a branch-free, vectorized loop.
template <typename T, bool kW, bool kDW, bool kDB>
void layer_norm_backward_row(T* __restrict dx, T* __restrict dw_part, T* __restrict db_part, const T* __restrict dy,
                             const T* __restrict x, double mean, double rstd, const T* __restrict w, int64_t C) {
  // TT_EXERCISE_BEGIN(11, 2)
  const T hi = T(mean), lo = T(mean - double(hi)), r = T(rstd);  // Note [split mean]
  double sg = 0, sgx = 0;  // sum(g), sum(g * xhat), g = dy * w
  for (int64_t start = 0; start < C; start += kBlock) {
    const int64_t end = std::min(start + kBlock, C);
    T a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
    for (int64_t i = start; i < end; ++i) {
      const T xh = ((x[i] - hi) - lo) * r;
      T g = dy[i];
      if constexpr (kW) g *= w[i];
      a += g;
      b += g * xh;
      if constexpr (kDW) dw_part[i] += dy[i] * xh;
      if constexpr (kDB) db_part[i] += dy[i];
    }
    sg += double(a);
    sgx += double(b);
  }
  if (!dx || C == 0) return;
  const T a = T(sg / double(C)), c = T(sgx / double(C));
#pragma omp simd
  for (int64_t i = 0; i < C; ++i) {
    T g = dy[i];
    if constexpr (kW) g *= w[i];
    dx[i] = r * (g - a - ((x[i] - hi) - lo) * r * c);
  }
  // TT_EXERCISE_END
}

// One row of rms_norm: writes y, returns rstd. w may be null.
template <typename T>
void rms_norm_row(T* __restrict y, double& rstd_out, const T* __restrict x, const T* __restrict w, int64_t C,
                  double eps) {
  // TT_EXERCISE_BEGIN(11, 4)
  const double ms = C == 0 ? 0.0 : row_sum<T>(C, [&](int64_t i) { return x[i] * x[i]; }) / double(C);
  if (!std::isfinite(ms) && rms_norm_row_scaled(y, rstd_out, x, w, C, eps)) return;  // Note [huge rows]
  rstd_out = 1.0 / std::sqrt(ms + eps);
  const T r = T(rstd_out);
  if (w) {
#pragma omp simd
    for (int64_t i = 0; i < C; ++i) y[i] = x[i] * r * w[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < C; ++i) y[i] = x[i] * r;
  }
  // TT_EXERCISE_END
}

// One row of rms_norm's backward: dx (may be null), and dy * xhat added to dw_part when not null.
template <typename T>
void rms_norm_backward_row(T* __restrict dx, T* __restrict dw_part, const T* __restrict dy, const T* __restrict x,
                           double rstd, const T* __restrict w, int64_t C) {
  // TT_EXERCISE_BEGIN(11, 5)
  const T r = T(rstd);
  if (dw_part) {
#pragma omp simd
    for (int64_t i = 0; i < C; ++i) dw_part[i] += dy[i] * (x[i] * r);
  }
  if (!dx || C == 0) return;
  const double sgx = w ? row_sum<T>(C, [&](int64_t i) { return dy[i] * w[i] * (x[i] * r); })
                       : row_sum<T>(C, [&](int64_t i) { return dy[i] * (x[i] * r); });
  const T c = T(sgx / double(C));
  if (w) {
#pragma omp simd
    for (int64_t i = 0; i < C; ++i) dx[i] = r * (dy[i] * w[i] - x[i] * r * c);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < C; ++i) dx[i] = r * (dy[i] - x[i] * r * c);
  }
  // TT_EXERCISE_END
}

template <typename T>
T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// Rows per thread chunk: enough elements that a thread's share outweighs waking it.
int64_t row_grain(int64_t C) { return std::max<int64_t>(1, (kParallelGrain / 4) / std::max<int64_t>(1, C)); }

// Adds the [blocks, C] partials in block order into out [C] (Note [deterministic weight gradients]).
template <typename T>
void reduce_partials(const Tensor& out, const std::vector<T>& part, int64_t blocks, int64_t C) {
  // blocks x C is small next to the rows (1/kRowBlock of them): one thread, no region to wake.
  T* o = out.data_ptr<T>();
  std::vector<double> acc(size_t(C), 0.0);
  for (int64_t b = 0; b < blocks; ++b) {
    const T* p = part.data() + b * C;
#pragma omp simd
    for (int64_t i = 0; i < C; ++i) acc[size_t(i)] += double(p[i]);
  }
  for (int64_t i = 0; i < C; ++i) o[i] = T(acc[size_t(i)]);
}

template <typename T>
void layer_norm_typed(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                      const Tensor& bias, double eps) {
  const int64_t R = x.size(0), C = x.size(1);
  T* py = y.data_ptr<T>();
  double* pm = mean.data_ptr<double>();
  double* pr = rstd.data_ptr<double>();
  const T* px = x.data_ptr<T>();
  const T* pw = ptr_or_null<T>(weight);
  const T* pb = ptr_or_null<T>(bias);
  parallel_for(R, row_grain(C), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) layer_norm_row(py + r * C, pm[r], pr[r], px + r * C, pw, pb, C, eps);
  });
}

template <typename T>
void layer_norm_backward_typed(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                               const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  const int64_t R = x.size(0), C = x.size(1);
  const int64_t blocks = (R + kRowBlock - 1) / kRowBlock;
  const bool want_w = dweight.defined(), want_b = dbias.defined();
  std::vector<T> pw_part(want_w ? size_t(blocks * C) : 0, T(0)), pb_part(want_b ? size_t(blocks * C) : 0, T(0));
  T* pdx = ptr_or_null<T>(dx);
  const T* pdy = dy.data_ptr<T>();
  const T* px = x.data_ptr<T>();
  const double* pm = mean.data_ptr<double>();
  const double* pr = rstd.data_ptr<double>();
  const T* pw = ptr_or_null<T>(weight);
  const int64_t grain = std::max<int64_t>(1, row_grain(C) / kRowBlock);
  auto run = [&](auto row) {
    parallel_for(blocks, grain, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        T* dwp = want_w ? pw_part.data() + b * C : nullptr;
        T* dbp = want_b ? pb_part.data() + b * C : nullptr;
        const int64_t r1 = std::min(R, (b + 1) * kRowBlock);
        for (int64_t r = b * kRowBlock; r < r1; ++r)
          row(pdx ? pdx + r * C : nullptr, dwp, dbp, pdy + r * C, px + r * C, pm[r], pr[r], pw, C);
      }
    });
  };
  const int variant = (pw ? 4 : 0) + (want_w ? 2 : 0) + (want_b ? 1 : 0);
  switch (variant) {
    case 0: run(layer_norm_backward_row<T, false, false, false>); break;
    case 1: run(layer_norm_backward_row<T, false, false, true>); break;
    case 2: run(layer_norm_backward_row<T, false, true, false>); break;
    case 3: run(layer_norm_backward_row<T, false, true, true>); break;
    case 4: run(layer_norm_backward_row<T, true, false, false>); break;
    case 5: run(layer_norm_backward_row<T, true, false, true>); break;
    case 6: run(layer_norm_backward_row<T, true, true, false>); break;
    default: run(layer_norm_backward_row<T, true, true, true>); break;
  }
  if (want_w) reduce_partials(dweight, pw_part, blocks, C);
  if (want_b) reduce_partials(dbias, pb_part, blocks, C);
}

template <typename T>
void rms_norm_typed(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& weight, double eps) {
  const int64_t R = x.size(0), C = x.size(1);
  T* py = y.data_ptr<T>();
  double* pr = rstd.data_ptr<double>();
  const T* px = x.data_ptr<T>();
  const T* pw = ptr_or_null<T>(weight);
  parallel_for(R, row_grain(C), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) rms_norm_row(py + r * C, pr[r], px + r * C, pw, C, eps);
  });
}

template <typename T>
void rms_norm_backward_typed(const Tensor& dx, const Tensor& dweight, const Tensor& dy, const Tensor& x,
                             const Tensor& rstd, const Tensor& weight) {
  const int64_t R = x.size(0), C = x.size(1);
  const int64_t blocks = (R + kRowBlock - 1) / kRowBlock;
  const bool want_w = dweight.defined();
  std::vector<T> pw_part(want_w ? size_t(blocks * C) : 0, T(0));
  T* pdx = ptr_or_null<T>(dx);
  const T* pdy = dy.data_ptr<T>();
  const T* px = x.data_ptr<T>();
  const double* pr = rstd.data_ptr<double>();
  const T* pw = ptr_or_null<T>(weight);
  const int64_t grain = std::max<int64_t>(1, row_grain(C) / kRowBlock);
  parallel_for(blocks, grain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      T* dwp = want_w ? pw_part.data() + b * C : nullptr;
      const int64_t r1 = std::min(R, (b + 1) * kRowBlock);
      for (int64_t r = b * kRowBlock; r < r1; ++r)
        rms_norm_backward_row(pdx ? pdx + r * C : nullptr, dwp, pdy + r * C, px + r * C, pr[r], pw, C);
    }
  });
  if (want_w) reduce_partials(dweight, pw_part, blocks, C);
}

}  // namespace

void CpuBackend::layer_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                            const Tensor& weight, const Tensor& bias, double eps) {
  TT_DISPATCH_FLOATING(x.dtype(), "layer_norm", [&] { layer_norm_typed<scalar_t>(y, mean, rstd, x, weight, bias, eps); });
}

void CpuBackend::layer_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                                     const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  TT_DISPATCH_FLOATING(x.dtype(), "layer_norm_backward",
                       [&] { layer_norm_backward_typed<scalar_t>(dx, dweight, dbias, dy, x, mean, rstd, weight); });
}

void CpuBackend::rms_norm(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& weight, double eps) {
  TT_DISPATCH_FLOATING(x.dtype(), "rms_norm", [&] { rms_norm_typed<scalar_t>(y, rstd, x, weight, eps); });
}

void CpuBackend::rms_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dy, const Tensor& x,
                                   const Tensor& rstd, const Tensor& weight) {
  TT_DISPATCH_FLOATING(x.dtype(), "rms_norm_backward",
                       [&] { rms_norm_backward_typed<scalar_t>(dx, dweight, dy, x, rstd, weight); });
}

}  // namespace tt::cpu
