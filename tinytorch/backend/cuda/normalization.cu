// CUDA LayerNorm and RMSNorm, forward and backward; twin of cpu/normalization.cpp (same two-pass
// variance with correction, same split mean, same float64 mean/rstd, same float64 pass for rows
// whose statistics overflow, same fixed row blocks for the weight gradients). Not here: reshaping
// to [R, C], checks, derivative bookkeeping (ops/normalization.cpp).
//
// Note [cuda normalization rows]: x, y, dy, dx are contiguous [R, C]. A warp owns a row of up to
// 1024 elements, a block a longer one (Note [group reductions] in block_reduce.cuh); each thread
// sums its elements in float runs folded into a double (FoldSum) and the group combines in double,
// as Note [normalization rows] of the CPU.
//
// Note [cuda weight gradients]: dweight and dbias are sums over rows, taken as on the CPU (Note
// [deterministic weight gradients]): rows are grouped into fixed blocks of kRowBlock, one thread
// per (row block, column) adds its block's rows in order into a [blocks, C] scratch tensor, and a
// second kernel adds the partials of each column in block order, in double. No atomics: results
// are the same from run to run and match the CPU's grouping.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "tinytorch/backend/cuda/block_reduce.cuh"
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/scratch.cuh"

namespace tt::cuda {

namespace {

constexpr int64_t kRowBlock = 64;  // rows per partial of dweight / dbias, as on the CPU
constexpr int kColThreads = 256;   // columns per block of the weight-gradient kernels

// Two sums reduced together (one barrier pair instead of two).
struct Sum2 {
  double a, b;
};
__device__ __forceinline__ Sum2 shfl_xor(Sum2 v, int mask) {
  return {tt::cuda::shfl_xor(v.a, mask), tt::cuda::shfl_xor(v.b, mask)};
}
struct Sum2Combine {
  __device__ __forceinline__ Sum2 operator()(Sum2 x, Sum2 y) const { return {x.a + y.a, x.b + y.b}; }
};

template <typename T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// Note [huge rows] of the CPU: e with 2^e <= max|x| < 2^(e+1) over the group's row, the same in
// every thread of the group; false when a value is inf or NaN or all are 0.
template <typename T, Group G>
__device__ bool group_scale_exponent(const T* xr, int64_t C, int& e, double* smem) {
  const int rank = group_rank<G>(), gsize = group_size<G>();
  double amax = 0;
  for (int64_t i = rank; i < C; i += gsize) {
    const double a = fabs(double(xr[i]));
    amax = fmax(amax, a <= DBL_MAX ? a : HUGE_VAL);  // inf or NaN -> inf
  }
  amax = group_reduce<G>(amax, MaxCombine(), 0.0, smem);
  if (!(amax <= DBL_MAX) || amax == 0) return false;
  e = ilogb(amax);
  return true;
}

// The float64 pass of layer_norm on x 2^-e for a row whose statistics overflowed (Note [huge
// rows] of the CPU, same formulas). Returns false, writing nothing, when the row is not finite.
template <typename T, Group G>
__device__ bool layer_norm_row_scaled(T* yr, double* mean_out, double* rstd_out, const T* xr, const T* w, const T* b,
                                      int64_t C, double eps, double* smem, Sum2* smem2) {
  const int rank = group_rank<G>(), gsize = group_size<G>();
  int e = 0;
  if (!group_scale_exponent<T, G>(xr, C, e, smem)) return false;
  const double scale = ldexp(1.0, -e);
  double s = 0;
  for (int64_t i = rank; i < C; i += gsize) s += double(xr[i]) * scale;
  const double m0 = group_reduce<G>(s, SumCombine(), 0.0, smem) / double(C);
  Sum2 part{0, 0};
  for (int64_t i = rank; i < C; i += gsize) {
    const double d = double(xr[i]) * scale - m0;
    part.a += d;
    part.b += d * d;
  }
  const Sum2 t = group_reduce<G>(part, Sum2Combine(), Sum2{0, 0}, smem2);
  const double var = fmax(0.0, (t.b - t.a * t.a / double(C)) / double(C));
  const double mean = m0 + t.a / double(C);
  const double den = var + ldexp(eps, -2 * e);
  const double r = den > 0 ? 1.0 / sqrt(den) : 0.0;
  if (rank == 0) {
    *mean_out = ldexp(mean, e);
    *rstd_out = den > 0 ? ldexp(r, -e) : 1.0 / sqrt(eps);
  }
  for (int64_t i = rank; i < C; i += gsize) {
    double v = (double(xr[i]) * scale - mean) * r;
    if (w) v *= double(w[i]);
    if (b) v += double(b[i]);
    yr[i] = T(v);
  }
  return true;
}

// The float64 pass of rms_norm on x 2^-e (Note [huge rows] of the CPU).
template <typename T, Group G>
__device__ bool rms_norm_row_scaled(T* yr, double* rstd_out, const T* xr, const T* w, int64_t C, double eps,
                                    double* smem) {
  const int rank = group_rank<G>(), gsize = group_size<G>();
  int e = 0;
  if (!group_scale_exponent<T, G>(xr, C, e, smem)) return false;
  const double scale = ldexp(1.0, -e);
  double s = 0;
  for (int64_t i = rank; i < C; i += gsize) s += (double(xr[i]) * scale) * (double(xr[i]) * scale);
  const double ss = group_reduce<G>(s, SumCombine(), 0.0, smem);
  const double r = 1.0 / sqrt(ss / double(C) + ldexp(eps, -2 * e));  // ss >= 1: no 0
  if (rank == 0) *rstd_out = ldexp(r, -e);
  for (int64_t i = rank; i < C; i += gsize) {
    double v = double(xr[i]) * scale * r;
    if (w) v *= double(w[i]);
    yr[i] = T(v);
  }
  return true;
}

// x, y: [R, C] contiguous; w, b: [C] or null -> y, mean, rstd: [R] float64. One group per row.
template <typename T, Group G>
__global__ void __launch_bounds__(1024)
layer_norm_kernel(T* y, double* mean_out, double* rstd_out, const T* x, const T* w, const T* b,
                                  int64_t R, int64_t C, double eps) {
  __shared__ double smem[kWarpSize];
  __shared__ Sum2 smem2[kWarpSize];
  const int rank = group_rank<G>(), gsize = group_size<G>();
  for (int64_t row = group_first_row<G>(); row < R; row += group_row_step<G>()) {
    if (C == 0) {
      if (rank == 0) {
        mean_out[row] = 0;
        rstd_out[row] = 1.0 / sqrt(eps);
      }
      continue;
    }
    const T* xr = x + row * C;
    T* yr = y + row * C;
    FoldSum<T> s;
    for (int64_t i = rank; i < C; i += gsize) s.add(xr[i]);
    const T m0 = T(group_reduce<G>(s.value(), SumCombine(), 0.0, smem) / double(C));
    FoldSum<T> sd, sd2;  // Note [stable variance] of the CPU
    for (int64_t i = rank; i < C; i += gsize) {
      const T d = xr[i] - m0;
      sd.add(d);
      sd2.add(d * d);
    }
    const Sum2 t = group_reduce<G>(Sum2{sd.value(), sd2.value()}, Sum2Combine(), Sum2{0, 0}, smem2);
    // Note [huge rows] of the CPU; m0 and t are the same in every thread of the group.
    if ((!isfinite(double(m0)) || !isfinite(t.b)) &&
        layer_norm_row_scaled<T, G>(yr, mean_out + row, rstd_out + row, xr, w, b, C, eps, smem, smem2))
      continue;
    const double var = fmax(0.0, (t.b - t.a * t.a / double(C)) / double(C));
    const double mean = double(m0) + t.a / double(C), rstd = 1.0 / sqrt(var + eps);
    if (rank == 0) {
      mean_out[row] = mean;
      rstd_out[row] = rstd;
    }
    const T hi = T(mean), lo = T(mean - double(hi)), r = T(rstd);  // Note [split mean] of the CPU
    for (int64_t i = rank; i < C; i += gsize) {
      T v = ((xr[i] - hi) - lo) * r;
      if (w) v = v * w[i];
      if (b) v = v + b[i];
      yr[i] = v;
    }
  }
}

// dy, x: [R, C]; mean, rstd: [R]; w: [C] or null -> dx: [R, C]. One group per row:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w.
template <typename T, Group G>
__global__ void __launch_bounds__(1024)
layer_norm_backward_kernel(T* dx, const T* dy, const T* x, const double* mean, const double* rstd,
                                           const T* w, int64_t R, int64_t C) {
  __shared__ Sum2 smem2[kWarpSize];
  const int rank = group_rank<G>(), gsize = group_size<G>();
  for (int64_t row = group_first_row<G>(); row < R; row += group_row_step<G>()) {
    const T* xr = x + row * C;
    const T* dyr = dy + row * C;
    const T hi = T(mean[row]), lo = T(mean[row] - double(hi)), r = T(rstd[row]);
    FoldSum<T> sg, sgx;
    for (int64_t i = rank; i < C; i += gsize) {
      const T xh = ((xr[i] - hi) - lo) * r;
      const T g = w ? dyr[i] * w[i] : dyr[i];
      sg.add(g);
      sgx.add(g * xh);
    }
    const Sum2 t = group_reduce<G>(Sum2{sg.value(), sgx.value()}, Sum2Combine(), Sum2{0, 0}, smem2);
    const T a = T(t.a / double(C)), c = T(t.b / double(C));
    T* dxr = dx + row * C;
    for (int64_t i = rank; i < C; i += gsize) {
      const T g = w ? dyr[i] * w[i] : dyr[i];
      dxr[i] = r * (g - a - ((xr[i] - hi) - lo) * r * c);
    }
  }
}

// x, y: [R, C]; w: [C] or null -> y, rstd: [R] float64. One group per row.
template <typename T, Group G>
__global__ void __launch_bounds__(1024)
rms_norm_kernel(T* y, double* rstd_out, const T* x, const T* w, int64_t R, int64_t C, double eps) {
  __shared__ double smem[kWarpSize];
  const int rank = group_rank<G>(), gsize = group_size<G>();
  for (int64_t row = group_first_row<G>(); row < R; row += group_row_step<G>()) {
    const T* xr = x + row * C;
    T* yr = y + row * C;
    FoldSum<T> s;
    for (int64_t i = rank; i < C; i += gsize) s.add(xr[i] * xr[i]);
    const double total = group_reduce<G>(s.value(), SumCombine(), 0.0, smem);
    if (!isfinite(total) && rms_norm_row_scaled<T, G>(yr, rstd_out + row, xr, w, C, eps, smem))
      continue;  // Note [huge rows] of the CPU
    const double rstd = 1.0 / sqrt((C == 0 ? 0.0 : total / double(C)) + eps);
    if (rank == 0) rstd_out[row] = rstd;
    const T r = T(rstd);
    for (int64_t i = rank; i < C; i += gsize) yr[i] = w ? xr[i] * r * w[i] : xr[i] * r;
  }
}

// dy, x: [R, C]; rstd: [R]; w: [C] or null -> dx: [R, C]. One group per row:
//   dx = rstd * (g - xhat * mean(g * xhat)), xhat = x * rstd, g = dy * w.
template <typename T, Group G>
__global__ void __launch_bounds__(1024)
rms_norm_backward_kernel(T* dx, const T* dy, const T* x, const double* rstd, const T* w, int64_t R,
                                         int64_t C) {
  __shared__ double smem[kWarpSize];
  const int rank = group_rank<G>(), gsize = group_size<G>();
  for (int64_t row = group_first_row<G>(); row < R; row += group_row_step<G>()) {
    const T* xr = x + row * C;
    const T* dyr = dy + row * C;
    const T r = T(rstd[row]);
    FoldSum<T> s;
    for (int64_t i = rank; i < C; i += gsize) s.add(w ? dyr[i] * w[i] * (xr[i] * r) : dyr[i] * (xr[i] * r));
    const T c = T(group_reduce<G>(s.value(), SumCombine(), 0.0, smem) / double(C));
    T* dxr = dx + row * C;
    for (int64_t i = rank; i < C; i += gsize)
      dxr[i] = w ? r * (dyr[i] * w[i] - xr[i] * r * c) : r * (dyr[i] - xr[i] * r * c);
  }
}

// dy, x: [R, C]; mean (null for RMSNorm), rstd: [R] -> dw_part, db_part: [blocks, C] (either may be
// null): the sums of dy * xhat and dy over the rows of each kRowBlock block (Note [cuda weight
// gradients]). Thread per (block of rows on grid x, column on grid y * kColThreads + thread).
template <typename T>
__global__ void norm_weight_partials_kernel(T* dw_part, T* db_part, const T* dy, const T* x, const double* mean,
                                            const double* rstd, int64_t R, int64_t C, int64_t blocks) {
  const int64_t col_blocks = (C + kColThreads - 1) / kColThreads;
  for (int64_t rb = blockIdx.x; rb < blocks; rb += gridDim.x) {
    for (int64_t cb = blockIdx.y; cb < col_blocks; cb += gridDim.y) {
      const int64_t c = cb * kColThreads + threadIdx.x;
      if (c >= C) continue;
      const int64_t r1 = (rb + 1) * kRowBlock < R ? (rb + 1) * kRowBlock : R;
      T aw = 0, ab = 0;
      for (int64_t row = rb * kRowBlock; row < r1; ++row) {
        const T r = T(rstd[row]);
        const T xv = x[row * C + c], g = dy[row * C + c];
        T xh;
        if (mean) {
          const T hi = T(mean[row]), lo = T(mean[row] - double(hi));
          xh = ((xv - hi) - lo) * r;
        } else {
          xh = xv * r;
        }
        aw += g * xh;
        ab += g;
      }
      if (dw_part) dw_part[rb * C + c] = aw;
      if (db_part) db_part[rb * C + c] = ab;
    }
  }
}

// part: [blocks, C] -> out: [C], each column's partials added in block order in double.
template <typename T>
__global__ void sum_partials_kernel(T* out, const T* part, int64_t blocks, int64_t C) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < C; c += int64_t(gridDim.x) * blockDim.x) {
    double acc = 0;
    for (int64_t b = 0; b < blocks; ++b) acc += double(part[b * C + c]);
    out[c] = T(acc);
  }
}

// dweight and dbias (either may be undefined) from [R, C] dy and x (Note [cuda weight gradients]).
template <typename T>
void weight_gradients(const Tensor& dweight, const Tensor& dbias, const T* dy, const T* x, const double* mean,
                      const double* rstd, int64_t R, int64_t C, const Device& device) {
  const bool want_w = dweight.defined(), want_b = dbias.defined();
  if ((!want_w && !want_b) || C == 0) return;
  const int64_t blocks = (R + kRowBlock - 1) / kRowBlock;
  const Scratch<T> pw(want_w ? blocks * C : 0, device.index), pb(want_b ? blocks * C : 0, device.index);
  T* pwp = want_w ? pw.data() : nullptr;
  T* pbp = want_b ? pb.data() : nullptr;
  const int64_t col_blocks = (C + kColThreads - 1) / kColThreads;
  if (blocks > 0) {
    const dim3 grid(unsigned(std::min<int64_t>(blocks, 1 << 30)), unsigned(std::min<int64_t>(col_blocks, 65535)));
    launch(norm_weight_partials_kernel<T>, grid, kColThreads, 0, pwp, pbp, dy, x, mean, rstd, R, C, blocks);
  }
  const unsigned grid = unsigned(std::min<int64_t>(col_blocks, 1 << 30));
  if (want_w) {
    launch(sum_partials_kernel<T>, grid, kColThreads, 0, dweight.data_ptr<T>(), pwp, blocks, C);
  }
  if (want_b) {
    launch(sum_partials_kernel<T>, grid, kColThreads, 0, dbias.data_ptr<T>(), pbp, blocks, C);
  }
}

// Launches kernel<T, G> over R rows of C elements with the row group C calls for.
#define TT_LAUNCH_ROWS(kernel, T, R, C, ...)                                                  \
  do {                                                                                        \
    const Group g_ = group_for_len(C);                                                        \
    const int threads_ = group_threads(g_, C);                                                \
    const unsigned grid_ = group_grid(g_, threads_, R);                                       \
    if (g_ == Group::Warp)                                                                    \
      launch(kernel<T, Group::Warp>, grid_, threads_, 0, __VA_ARGS__);  \
    else                                                                                      \
      launch(kernel<T, Group::Block>, grid_, threads_, 0, __VA_ARGS__);  \
  } while (0)

template <typename T>
void layer_norm_typed(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                      const Tensor& bias, double eps) {
  const int64_t R = x.size(0), C = x.size(1);
  if (R == 0) return;
  TT_LAUNCH_ROWS(layer_norm_kernel, T, R, C, y.data_ptr<T>(), mean.data_ptr<double>(), rstd.data_ptr<double>(),
                 x.data_ptr<T>(), ptr_or_null<T>(weight), ptr_or_null<T>(bias), R, C, eps);
}

template <typename T>
void layer_norm_backward_typed(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                               const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  const int64_t R = x.size(0), C = x.size(1);
  const T* pdy = dy.data_ptr<T>();
  const T* px = x.data_ptr<T>();
  const double* pm = mean.data_ptr<double>();
  const double* pr = rstd.data_ptr<double>();
  if (dx.defined() && R > 0 && C > 0)
    TT_LAUNCH_ROWS(layer_norm_backward_kernel, T, R, C, dx.data_ptr<T>(), pdy, px, pm, pr, ptr_or_null<T>(weight), R,
                   C);
  weight_gradients<T>(dweight, dbias, pdy, px, pm, pr, R, C, x.device());
}

template <typename T>
void rms_norm_typed(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& weight, double eps) {
  const int64_t R = x.size(0), C = x.size(1);
  if (R == 0) return;
  TT_LAUNCH_ROWS(rms_norm_kernel, T, R, C, y.data_ptr<T>(), rstd.data_ptr<double>(), x.data_ptr<T>(),
                 ptr_or_null<T>(weight), R, C, eps);
}

template <typename T>
void rms_norm_backward_typed(const Tensor& dx, const Tensor& dweight, const Tensor& dy, const Tensor& x,
                             const Tensor& rstd, const Tensor& weight) {
  const int64_t R = x.size(0), C = x.size(1);
  const T* pdy = dy.data_ptr<T>();
  const T* px = x.data_ptr<T>();
  const double* pr = rstd.data_ptr<double>();
  if (dx.defined() && R > 0 && C > 0)
    TT_LAUNCH_ROWS(rms_norm_backward_kernel, T, R, C, dx.data_ptr<T>(), pdy, px, pr, ptr_or_null<T>(weight), R, C);
  weight_gradients<T>(dweight, Tensor(), pdy, px, nullptr, pr, R, C, x.device());
}

}  // namespace

void CudaBackend::layer_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                             const Tensor& weight, const Tensor& bias, double eps) {
  DeviceGuard guard(x.device().index);
  TT_DISPATCH_FLOATING(x.dtype(), "layer_norm",
                       [&] { layer_norm_typed<scalar_t>(y, mean, rstd, x, weight, bias, eps); });
}

void CudaBackend::layer_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                                      const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  DeviceGuard guard(x.device().index);
  TT_DISPATCH_FLOATING(x.dtype(), "layer_norm_backward",
                       [&] { layer_norm_backward_typed<scalar_t>(dx, dweight, dbias, dy, x, mean, rstd, weight); });
}

void CudaBackend::rms_norm(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& weight, double eps) {
  DeviceGuard guard(x.device().index);
  TT_DISPATCH_FLOATING(x.dtype(), "rms_norm", [&] { rms_norm_typed<scalar_t>(y, rstd, x, weight, eps); });
}

void CudaBackend::rms_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dy, const Tensor& x,
                                    const Tensor& rstd, const Tensor& weight) {
  DeviceGuard guard(x.device().index);
  TT_DISPATCH_FLOATING(x.dtype(), "rms_norm_backward",
                       [&] { rms_norm_backward_typed<scalar_t>(dx, dweight, dy, x, rstd, weight); });
}

}  // namespace tt::cuda
