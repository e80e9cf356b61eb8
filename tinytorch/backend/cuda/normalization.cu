// CUDA LayerNorm and RMSNorm, forward and backward; twin of cpu/normalization.cpp (same two-pass
// variance with correction, same split mean, same float64 mean/rstd, same float64 pass for rows
// whose statistics overflow, partial weight gradients over fixed groups of rows added in double).
// Not here: reshaping to [R, C], checks, derivative bookkeeping (ops/normalization.cpp).
//
// Note [cuda normalization rows]: x, y, dy, dx are contiguous [R, C]. Rows of up to 8192 floats
// (4096 doubles) are held in registers (Note [rows in registers] in row_io.cuh): a warp per row
// up to 1024 floats, a block per row above, 16-byte loads and stores where the rows are aligned.
// The forward reads x once and writes y once (sum, centred sums, write, all from registers); each
// thread sums its share in float and the group combines in double, as Note [normalization rows]
// of the CPU. Longer rows (and C = 0) take the general kernels, which re-read the row per pass.
//
// Note [cuda weight gradients]: dweight and dbias are sums over rows. The backward is two
// launches: one kernel writes dx and, for each group of kRowsPerCta rows (one block's), the
// partial sums of dy * xhat and dy over those rows, accumulated in the registers of the thread
// that owns each column (the same columns in every row) and combined across the block's warps in
// shared memory in a fixed order; a second kernel adds each column's partials in double. dy and x
// are read once; no atomics, no zero-fill (the reduction writes zeros when there are no rows), and
// results are the same from run to run. The general path (rows past the register limit) keeps
// a separate weight-partials kernel: three launches.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <initializer_list>

#include "tinytorch/backend/cuda/block_reduce.cuh"
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/row_io.cuh"
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

// part0, part1: [nparts, C] (part1 used when gridDim.y is 2) -> out0, out1: [C], each column's
// partials added in double: 32 columns per block on the lanes, its 32 warps each summing every
// 32nd partial row, the warps' sums then added in warp order. The order depends on nparts only.
template <typename T>
__global__ void __launch_bounds__(1024)
sum_partials_kernel(T* out0, const T* part0, T* out1, const T* part1, int64_t nparts, int64_t C) {
  __shared__ double sums[kWarpSize][kWarpSize + 1];
  T* out = blockIdx.y == 0 ? out0 : out1;
  const T* part = blockIdx.y == 0 ? part0 : part1;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  for (int64_t c0 = int64_t(blockIdx.x) * kWarpSize; c0 < C; c0 += int64_t(gridDim.x) * kWarpSize) {
    const int64_t c = c0 + lane;
    double acc = 0;
    if (c < C)
      for (int64_t p = warp; p < nparts; p += kWarpSize) acc += double(part[p * C + c]);
    __syncthreads();  // the previous columns' readers are done with `sums`
    sums[warp][lane] = acc;
    __syncthreads();
    if (warp == 0 && c < C) {
      double s = 0;
      for (int w = 0; w < kWarpSize; ++w) s += sums[w][lane];
      out[c] = T(s);
    }
  }
}

// dweight and dbias (either may be null) from the [nparts, C] partials: one launch.
template <typename T>
void reduce_partials(T* dweight, const T* pw, T* dbias, const T* pb, int64_t nparts, int64_t C) {
  if (!dweight && !dbias) return;
  T* out0 = dweight ? dweight : dbias;
  const T* part0 = dweight ? pw : pb;
  const unsigned outs = dweight && dbias ? 2 : 1;
  const dim3 grid(unsigned(std::min<int64_t>((C + kWarpSize - 1) / kWarpSize, 1 << 30)), outs);
  launch(sum_partials_kernel<T>, grid, 1024, 0, out0, part0, dbias, pb, nparts, C);
}

// dweight and dbias (either may be undefined) from [R, C] dy and x on the general path (Note
// [cuda weight gradients]): partials over kRowBlock rows, then their sum.
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
  reduce_partials<T>(want_w ? dweight.data_ptr<T>() : nullptr, pwp, want_b ? dbias.data_ptr<T>() : nullptr, pbp,
                     blocks, C);
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

// --- rows in registers (Note [cuda normalization rows], Note [cuda weight gradients]) -------------

constexpr int kBackwardWarps = 8;              // warps of a warp-per-row backward block
constexpr int64_t kWarpRowsPerCta = 32;        // rows per block (and per partial) with a warp per row
constexpr int64_t kBlockRowsPerCta = 16;       // rows per block (and per partial) with a block per row

// x, y: [R, C] contiguous, 1 <= C; w, b: [C] or null -> y, rstd and (LayerNorm) mean: [R] float64.
// One group per row, the row in registers: kRms: y = x rstd w, rstd = 1/sqrt(mean(x^2) + eps);
// else y = (x - mean) rstd w + b with the CPU's two-pass variance and split mean.
template <typename T, Group G, int kChunks, bool kRms>
__global__ void __launch_bounds__(kRowLaunchBound<G>)
norm_regs_kernel(T* y, double* mean_out, double* rstd_out, const T* x, const T* w, const T* b, int64_t R, int64_t C,
                 double eps, bool vec) {
  __shared__ double smem[kWarpSize];
  __shared__ Sum2 smem2[kWarpSize];
  constexpr int kP = kPack<T>, kN = kChunks * kP;
  const int rank = group_rank<G>(), gsize = group_size<G>();
  for (int64_t row = group_first_row<G>(); row < R; row += group_row_step<G>()) {
    const T* xr = x + row * C;
    T* yr = y + row * C;
    T v[kN];
    load_row<T, kChunks>(v, xr, C, rank, gsize, vec, T(0));  // zeros past the end: they add nothing
    T hi = 0, lo = 0, r;
    if constexpr (kRms) {
      T s = 0;
#pragma unroll
      for (int i = 0; i < kN; ++i) s += v[i] * v[i];
      const double total = group_reduce<G>(double(s), SumCombine(), 0.0, smem);
      if (!isfinite(total) && rms_norm_row_scaled<T, G>(yr, rstd_out + row, xr, w, C, eps, smem))
        continue;  // Note [huge rows] of the CPU
      const double rstd = 1.0 / sqrt(total / double(C) + eps);
      if (rank == 0) rstd_out[row] = rstd;
      r = T(rstd);
    } else {
      T s = 0;
#pragma unroll
      for (int i = 0; i < kN; ++i) s += v[i];
      const T m0 = T(group_reduce<G>(double(s), SumCombine(), 0.0, smem) / double(C));
      T sd = 0, sd2 = 0;  // Note [stable variance] of the CPU, over the row's own elements only
#pragma unroll
      for (int j = 0; j < kChunks; ++j) {
#pragma unroll
        for (int k = 0; k < kP; ++k) {
          const T d = pack_start<T>(j, rank, gsize) + k < C ? v[j * kP + k] - m0 : T(0);
          sd += d;
          sd2 += d * d;
        }
      }
      const Sum2 t = group_reduce<G>(Sum2{double(sd), double(sd2)}, Sum2Combine(), Sum2{0, 0}, smem2);
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
      hi = T(mean);  // Note [split mean] of the CPU
      lo = T(mean - double(hi));
      r = T(rstd);
    }
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int64_t i0 = pack_start<T>(j, rank, gsize);
      T wp[kP], bp[kP];
      if (w) load_pack(wp, w, i0, C, vec, T(1));
      if (b) load_pack(bp, b, i0, C, vec, T(0));
#pragma unroll
      for (int k = 0; k < kP; ++k) {
        T o = kRms ? v[j * kP + k] * r : ((v[j * kP + k] - hi) - lo) * r;
        if (w) o = o * wp[k];
        if (!kRms && b) o = o + bp[k];
        v[j * kP + k] = o;
      }
    }
    store_row<T, kChunks>(yr, v, C, rank, gsize, vec);
  }
}

// dy, x: [R, C] contiguous, 1 <= C; mean (LayerNorm), rstd: [R]; w: [C] or null -> dx: [R, C] (or
// null), and per block of `rows_per_cta` rows the partial sums of dy * xhat and dy over its rows
// into row blockIdx of dw_part, db_part: [ceil(R / rows_per_cta), C] (either may be null). Note
// [cuda weight gradients]. With g = dy w and means over the row:
//   LayerNorm: xhat = (x - mean) rstd, dx = rstd (g - mean(g) - xhat mean(g xhat));
//   RMSNorm:   xhat = x rstd,          dx = rstd (g - xhat mean(g xhat)).
template <typename T, Group G, int kChunks, bool kRms>
__global__ void __launch_bounds__(kRowLaunchBound<G>)
norm_backward_regs_kernel(T* dx, T* dw_part, T* db_part, const T* dy, const T* x, const double* mean,
                          const double* rstd, const T* w, int64_t R, int64_t C, int64_t rows_per_cta, bool vec) {
  constexpr int kP = kPack<T>, kN = kChunks * kP;
  constexpr int kShared = G == Group::Warp ? kWarpSize * kN : 1;  // a warp's longest row
  __shared__ Sum2 smem2[kWarpSize];
  __shared__ T acc_w[kShared], acc_b[kShared];
  const int rank = group_rank<G>(), gsize = group_size<G>();
  const int groups = G == Group::Warp ? int(blockDim.x) / kWarpSize : 1;
  const int gi = G == Group::Warp ? int(threadIdx.x) / kWarpSize : 0;
  const int64_t ctas = (R + rows_per_cta - 1) / rows_per_cta;
  for (int64_t cta = blockIdx.x; cta < ctas; cta += gridDim.x) {
    T aw[kN], ab[kN];
#pragma unroll
    for (int i = 0; i < kN; ++i) aw[i] = ab[i] = T(0);
    const int64_t r1 = (cta + 1) * rows_per_cta < R ? (cta + 1) * rows_per_cta : R;
    for (int64_t row = cta * rows_per_cta + gi; row < r1; row += groups) {
      T xh[kN], g[kN];
      load_row<T, kChunks>(xh, x + row * C, C, rank, gsize, vec, T(0));
      load_row<T, kChunks>(g, dy + row * C, C, rank, gsize, vec, T(0));  // zeros past the end add nothing
      const T r = T(rstd[row]);
      if constexpr (kRms) {
#pragma unroll
        for (int i = 0; i < kN; ++i) xh[i] = xh[i] * r;
      } else {
        const T hi = T(mean[row]), lo = T(mean[row] - double(hi));  // Note [split mean] of the CPU
#pragma unroll
        for (int i = 0; i < kN; ++i) xh[i] = ((xh[i] - hi) - lo) * r;
      }
#pragma unroll
      for (int i = 0; i < kN; ++i) {
        if (dw_part) aw[i] += g[i] * xh[i];
        if (db_part) ab[i] += g[i];
      }
      if (!dx) continue;
      if (w) {
#pragma unroll
        for (int j = 0; j < kChunks; ++j) {
          T wp[kP];
          load_pack(wp, w, pack_start<T>(j, rank, gsize), C, vec, T(0));
#pragma unroll
          for (int k = 0; k < kP; ++k) g[j * kP + k] = g[j * kP + k] * wp[k];
        }
      }
      T sg = 0, sgx = 0;
#pragma unroll
      for (int i = 0; i < kN; ++i) {
        sg += g[i];
        sgx += g[i] * xh[i];
      }
      const Sum2 t = group_reduce<G>(Sum2{double(sg), double(sgx)}, Sum2Combine(), Sum2{0, 0}, smem2);
      const T a = T(t.a / double(C)), c = T(t.b / double(C));
#pragma unroll
      for (int i = 0; i < kN; ++i) g[i] = kRms ? r * (g[i] - xh[i] * c) : r * (g[i] - a - xh[i] * c);
      store_row<T, kChunks>(dx + row * C, g, C, rank, gsize, vec);
    }
    if (!dw_part && !db_part) continue;
    if constexpr (G == Group::Block) {  // each column has one owner: its partials go straight out
      if (dw_part) store_row<T, kChunks>(dw_part + cta * C, aw, C, rank, gsize, vec);
      if (db_part) store_row<T, kChunks>(db_part + cta * C, ab, C, rank, gsize, vec);
    } else {  // the warps' partials added in shared memory in warp order, then written out
      for (int wi = 0; wi < groups; ++wi) {
        __syncthreads();  // the previous warp's (or block's) use of acc_w / acc_b is done
        if (gi != wi) continue;
#pragma unroll
        for (int j = 0; j < kChunks; ++j) {
#pragma unroll
          for (int k = 0; k < kP; ++k) {
            const int64_t col = pack_start<T>(j, rank, gsize) + k;
            if (col >= C) continue;
            acc_w[col] = wi == 0 ? aw[j * kP + k] : acc_w[col] + aw[j * kP + k];
            acc_b[col] = wi == 0 ? ab[j * kP + k] : acc_b[col] + ab[j * kP + k];
          }
        }
      }
      __syncthreads();
      for (int64_t col = threadIdx.x; col < C; col += blockDim.x) {
        if (dw_part) dw_part[cta * C + col] = acc_w[col];
        if (db_part) db_part[cta * C + col] = acc_b[col];
      }
    }
  }
}

// True when every pointer given (null ones skipped) is 16-byte aligned and rows of C elements of T
// keep that alignment: the register kernels may move 16 bytes at a time.
template <typename T>
bool rows_vectorizable(int64_t C, std::initializer_list<const void*> ptrs) {
  if (C % kPack<T> != 0) return false;
  for (const void* p : ptrs)
    if (p && !aligned16(p)) return false;
  return true;
}

// The forward of both norms (mean null for RMSNorm): registers where the row fits, else the
// general kernels.
template <typename T, bool kRms>
void norm_forward(T* y, double* mean, double* rstd, const T* x, const T* w, const T* b, int64_t R, int64_t C,
                  double eps) {
  if (R == 0) return;
  const RowShape shape = row_shape<T>(C);
  if (C > 0 && shape.ok) {
    const bool vec = rows_vectorizable<T>(C, {y, x, w, b});
    with_shape(shape, [&](auto g, auto chunks) {
      constexpr Group G = decltype(g)::value;
      launch(norm_regs_kernel<T, G, decltype(chunks)::value, kRms>, group_grid(G, shape.threads, R), shape.threads, 0,
             y, mean, rstd, x, w, b, R, C, eps, vec);
    });
    return;
  }
  if constexpr (kRms)
    TT_LAUNCH_ROWS(rms_norm_kernel, T, R, C, y, rstd, x, w, R, C, eps);
  else
    TT_LAUNCH_ROWS(layer_norm_kernel, T, R, C, y, mean, rstd, x, w, b, R, C, eps);
}

// The backward of both norms (mean null for RMSNorm, dbias undefined there): at most two launches
// (Note [cuda weight gradients]); the general path for rows past the register limit.
template <typename T, bool kRms>
void norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy, const Tensor& x,
                   const double* mean, const double* rstd, const Tensor& weight) {
  const int64_t R = x.size(0), C = x.size(1);
  if (C == 0) return;
  const T* pdy = dy.data_ptr<T>();
  const T* px = x.data_ptr<T>();
  const T* pw = ptr_or_null<T>(weight);
  T* pdx = dx.defined() ? dx.data_ptr<T>() : nullptr;
  T* dwp = dweight.defined() ? dweight.data_ptr<T>() : nullptr;
  T* dbp = dbias.defined() ? dbias.data_ptr<T>() : nullptr;
  const RowShape shape = row_shape<T>(C);
  if (!shape.ok) {
    if (pdx && R > 0) {
      if constexpr (kRms)
        TT_LAUNCH_ROWS(rms_norm_backward_kernel, T, R, C, pdx, pdy, px, rstd, pw, R, C);
      else
        TT_LAUNCH_ROWS(layer_norm_backward_kernel, T, R, C, pdx, pdy, px, mean, rstd, pw, R, C);
    }
    weight_gradients<T>(dweight, dbias, pdy, px, mean, rstd, R, C, x.device());
    return;
  }
  const bool warp = shape.group == Group::Warp;
  const int threads = warp ? kBackwardWarps * kWarpSize : shape.threads;
  const int64_t rows_per_cta = warp ? kWarpRowsPerCta : kBlockRowsPerCta;
  const int64_t ctas = (R + rows_per_cta - 1) / rows_per_cta;
  const int device = x.device().index;
  const Scratch<T> pw_part(dwp ? ctas * C : 0, device), pb_part(dbp ? ctas * C : 0, device);
  T* pwp = dwp ? pw_part.data() : nullptr;
  T* pbp = dbp ? pb_part.data() : nullptr;
  if (ctas > 0 && (pdx || pwp || pbp)) {
    const bool vec = rows_vectorizable<T>(C, {pdx, pdy, px, pw, pwp, pbp});
    const unsigned grid = unsigned(std::min<int64_t>(ctas, 1 << 30));
    with_shape(shape, [&](auto g, auto chunks) {
      launch(norm_backward_regs_kernel<T, decltype(g)::value, decltype(chunks)::value, kRms>, grid, threads, 0, pdx,
             pwp, pbp, pdy, px, mean, rstd, pw, R, C, rows_per_cta, vec);
    });
  }
  reduce_partials<T>(dwp, pwp, dbp, pbp, ctas, C);
}

template <typename T>
void layer_norm_typed(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                      const Tensor& bias, double eps) {
  norm_forward<T, false>(y.data_ptr<T>(), mean.data_ptr<double>(), rstd.data_ptr<double>(), x.data_ptr<T>(),
                         ptr_or_null<T>(weight), ptr_or_null<T>(bias), x.size(0), x.size(1), eps);
}

template <typename T>
void layer_norm_backward_typed(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                               const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  norm_backward<T, false>(dx, dweight, dbias, dy, x, mean.data_ptr<double>(), rstd.data_ptr<double>(), weight);
}

template <typename T>
void rms_norm_typed(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& weight, double eps) {
  norm_forward<T, true>(y.data_ptr<T>(), nullptr, rstd.data_ptr<double>(), x.data_ptr<T>(), ptr_or_null<T>(weight),
                        nullptr, x.size(0), x.size(1), eps);
}

template <typename T>
void rms_norm_backward_typed(const Tensor& dx, const Tensor& dweight, const Tensor& dy, const Tensor& x,
                             const Tensor& rstd, const Tensor& weight) {
  norm_backward<T, true>(dx, dweight, Tensor(), dy, x, nullptr, rstd.data_ptr<double>(), weight);
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
