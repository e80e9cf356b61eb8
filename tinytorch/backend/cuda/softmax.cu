// CUDA softmax and log-softmax over one dim, forward and backward, fused; twin of cpu/softmax.cpp
// (same exp, same sums in double, same fully-masked-row rule). Not here: the derivative
// bookkeeping (ops/activation.cpp).
//
// Note [cuda softmax rows]: the tensors are seen as rows along `dim` (coalesced like the CPU's
// RowPlan). Rows contiguous along `dim` of up to 8192 floats (4096 doubles), the usual case
// (attention scores, logits), are held in registers (Note [rows in registers] in row_io.cuh): a
// warp per row up to 1024 floats, a block per row above, 16-byte loads where the rows are aligned.
// The forward reads each element once and writes it once: the max, then the sum of exponentials
// from registers, then the write; the backward reads dy and y once and writes dx once. Any other
// row (strided along `dim`, or longer) takes the general kernels: one group of threads per row,
// or one thread per row when rows are strided along `dim` but neighbouring rows are adjacent in
// memory (softmax over dim 0 of a contiguous [N, C]: consecutive threads then read consecutive
// addresses); they make three passes over the row, the later ones mostly from the cache.
//
// Both paths follow the CPU: the max propagates NaN (a NaN anywhere makes the row NaN); a row whose
// max is -inf (all -inf) gets zeros (softmax) or -inf (log_softmax), Note [stable softmax]; every
// row sum adds its float terms in a double (Note [softmax sums in double]), so both devices round
// the same sum to the same float and log_softmax's backward stays within the bound derived there.
#include <algorithm>
#include <limits>

#include "tinytorch/backend/activation_functors.h"
#include "tinytorch/backend/cuda/block_reduce.cuh"
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/row_io.cuh"
#include "tinytorch/backend/row_plan.h"

namespace tt::cuda {

namespace {

// The group that owns a row (Note [cuda softmax rows]) and its launch.
template <int N>
Group pick_group(const RowPlan<N>& plan) {
  if (!plan.direct && plan.rows_adjacent() && plan.rows >= 4096) return Group::Thread;
  return group_for_len(plan.len);
}

// y, x: rows along dim, see RowPlan<2> (0: y, 1: x) -> y = softmax(x) or log_softmax(x) per row.
template <typename T, Group G, bool kLog>
__global__ void __launch_bounds__(1024) softmax_kernel(RowPlan<2> plan, T* y, const T* x) {
  __shared__ T smem_t[kWarpSize];
  __shared__ double smem_d[kWarpSize];
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t len = plan.len, sy = plan.step[0], sx = plan.step[1];
  const int rank = group_rank<G>(), gsize = group_size<G>();
  for (int64_t row = group_first_row<G>(); row < plan.rows; row += group_row_step<G>()) {
    int64_t offs[2];
    plan.offsets(row, offs);
    T* yr = y + offs[0];
    const T* xr = x + offs[1];
    T m = kNegInf;
    for (int64_t i = rank; i < len; i += gsize) m = functors::Maximum()(m, xr[i * sx]);
    m = group_reduce<G>(m, functors::Maximum(), kNegInf, smem_t);
    if (m == kNegInf) {  // every element is -inf: a fully masked row
      for (int64_t i = rank; i < len; i += gsize) yr[i * sy] = kLog ? kNegInf : T(0);
      continue;
    }
    double sum = 0;  // Note [softmax sums in double] of the CPU
    for (int64_t i = rank; i < len; i += gsize) {
      const T e = functors::exp_any(xr[i * sx] - m);
      if (!kLog) yr[i * sy] = e;  // exponentials written while summed, scaled below (as the CPU)
      sum += double(e);
    }
    const double total = group_reduce<G>(sum, SumCombine(), 0.0, smem_d);
    if (kLog) {
      const T logsum = T(log(total));
      for (int64_t i = rank; i < len; i += gsize) yr[i * sy] = (xr[i * sx] - m) - logsum;
    } else {
      const T inv = T(1.0 / total);
      for (int64_t i = rank; i < len; i += gsize) yr[i * sy] *= inv;  // this thread's own writes
    }
  }
}

// dx, dy, y: rows along dim, see RowPlan<3> (0: dx, 1: dy, 2: y) -> dx per row:
//   softmax: dx = y * (dy - sum(dy * y)),  log_softmax: dx = dy - exp(y) * sum(dy).
template <typename T, Group G, bool kLog>
__global__ void __launch_bounds__(1024)
softmax_backward_kernel(RowPlan<3> plan, T* dx, const T* dy, const T* y) {
  __shared__ double smem_d[kWarpSize];
  const int64_t len = plan.len, s0 = plan.step[0], s1 = plan.step[1], s2 = plan.step[2];
  const int rank = group_rank<G>(), gsize = group_size<G>();
  for (int64_t row = group_first_row<G>(); row < plan.rows; row += group_row_step<G>()) {
    int64_t offs[3];
    plan.offsets(row, offs);
    T* dxr = dx + offs[0];
    const T* dyr = dy + offs[1];
    const T* yr = y + offs[2];
    double sum = 0;  // Note [softmax sums in double] of the CPU; a product is rounded to T first, as there
    for (int64_t i = rank; i < len; i += gsize) sum += double(kLog ? dyr[i * s1] : T(dyr[i * s1] * yr[i * s2]));
    const T s = T(group_reduce<G>(sum, SumCombine(), 0.0, smem_d));
    for (int64_t i = rank; i < len; i += gsize) {
      const T g = dyr[i * s1], o = yr[i * s2];
      dxr[i * s0] = kLog ? g - functors::exp_any(o) * s : o * (g - s);
    }
  }
}

// --- rows in registers (Note [cuda softmax rows]) ------------------------------------------------

// True when every row of every tensor of the plan starts 16-byte aligned and holds whole packs, so
// that the register kernels may move 16 bytes at a time.
template <typename T, int N>
bool plan_vectorizable(const RowPlan<N>& plan, const void* const (&ptrs)[N]) {
  if (!plan.direct || plan.len % kPack<T> != 0) return false;
  for (int k = 0; k < N; ++k) {
    if (!aligned16(ptrs[k])) return false;
    for (int d = 0; d < plan.nk; ++d)
      if ((plan.stride[k][d] * int64_t(sizeof(T))) % 16 != 0) return false;
  }
  return true;
}

// y, x: rows along dim with stride 1 (plan.direct), see RowPlan<2> (0: y, 1: x) -> y = softmax(x)
// or log_softmax(x) per row, each row held in its group's registers.
template <typename T, Group G, int kChunks, bool kLog>
__global__ void __launch_bounds__(kRowLaunchBound<G>)
softmax_regs_kernel(RowPlan<2> plan, T* y, const T* x, bool vec) {
  __shared__ T smem_t[kWarpSize];
  __shared__ double smem_d[kWarpSize];
  constexpr int kN = kChunks * kPack<T>;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t len = plan.len;
  const int rank = group_rank<G>(), gsize = group_size<G>();
  for (int64_t row = group_first_row<G>(); row < plan.rows; row += group_row_step<G>()) {
    int64_t offs[2];
    plan.offsets(row, offs);
    T v[kN];
    load_row<T, kChunks>(v, x + offs[1], len, rank, gsize, vec, kNegInf);  // -inf past the end: exp gives 0
    T m = kNegInf;
#pragma unroll
    for (int i = 0; i < kN; ++i) m = functors::Maximum()(m, v[i]);
    m = group_reduce<G>(m, functors::Maximum(), kNegInf, smem_t);
    if (m == kNegInf) {  // every element is -inf: a fully masked row
#pragma unroll
      for (int i = 0; i < kN; ++i) v[i] = kLog ? kNegInf : T(0);
    } else {
      double sum = 0;
#pragma unroll
      for (int i = 0; i < kN; ++i) {
        const T e = functors::exp_any(v[i] - m);
        if (!kLog) v[i] = e;
        sum += double(e);
      }
      const double total = group_reduce<G>(sum, SumCombine(), 0.0, smem_d);
      if (kLog) {
        const T logsum = T(log(total));
#pragma unroll
        for (int i = 0; i < kN; ++i) v[i] = (v[i] - m) - logsum;
      } else {
        const T inv = T(1.0 / total);
#pragma unroll
        for (int i = 0; i < kN; ++i) v[i] *= inv;
      }
    }
    store_row<T, kChunks>(y + offs[0], v, len, rank, gsize, vec);
  }
}

// dx, dy, y: rows along dim with stride 1, see RowPlan<3> (0: dx, 1: dy, 2: y) -> dx per row:
//   softmax: dx = y * (dy - sum(dy * y)),  log_softmax: dx = dy - exp(y) * sum(dy).
template <typename T, Group G, int kChunks, bool kLog>
__global__ void __launch_bounds__(kRowLaunchBound<G>)
softmax_backward_regs_kernel(RowPlan<3> plan, T* dx, const T* dy, const T* y, bool vec) {
  __shared__ double smem_d[kWarpSize];
  constexpr int kN = kChunks * kPack<T>;
  const int64_t len = plan.len;
  const int rank = group_rank<G>(), gsize = group_size<G>();
  for (int64_t row = group_first_row<G>(); row < plan.rows; row += group_row_step<G>()) {
    int64_t offs[3];
    plan.offsets(row, offs);
    T g[kN], o[kN];
    load_row<T, kChunks>(g, dy + offs[1], len, rank, gsize, vec, T(0));  // zeros past the end add nothing
    load_row<T, kChunks>(o, y + offs[2], len, rank, gsize, vec, T(0));
    double sum = 0;
#pragma unroll
    for (int i = 0; i < kN; ++i) sum += double(kLog ? g[i] : T(g[i] * o[i]));
    const T s = T(group_reduce<G>(sum, SumCombine(), 0.0, smem_d));
#pragma unroll
    for (int i = 0; i < kN; ++i) g[i] = kLog ? g[i] - functors::exp_any(o[i]) * s : o[i] * (g[i] - s);
    store_row<T, kChunks>(dx + offs[0], g, len, rank, gsize, vec);
  }
}

template <typename T, bool kLog>
void launch_softmax(const RowPlan<2>& plan, T* y, const T* x) {
  const RowShape shape = row_shape<T>(plan.len);
  if (plan.direct && shape.ok) {
    const void* const ptrs[2] = {y, x};
    const bool vec = plan_vectorizable<T>(plan, ptrs);
    with_shape(shape, [&](auto g, auto chunks) {
      constexpr Group G = decltype(g)::value;
      const unsigned grid = group_grid(G, shape.threads, plan.rows);
      launch(softmax_regs_kernel<T, G, decltype(chunks)::value, kLog>, grid, shape.threads, 0, plan, y, x, vec);
    });
    return;
  }
  const Group g = pick_group(plan);
  const int threads = group_threads(g, plan.len);
  const unsigned grid = group_grid(g, threads, plan.rows);
  switch (g) {
    case Group::Thread: launch(softmax_kernel<T, Group::Thread, kLog>, grid, threads, 0, plan, y, x); break;
    case Group::Warp: launch(softmax_kernel<T, Group::Warp, kLog>, grid, threads, 0, plan, y, x); break;
    default: launch(softmax_kernel<T, Group::Block, kLog>, grid, threads, 0, plan, y, x); break;
  }
}

template <typename T, bool kLog>
void launch_softmax_backward(const RowPlan<3>& plan, T* dx, const T* dy, const T* y) {
  const RowShape shape = row_shape<T>(plan.len);
  if (plan.direct && shape.ok) {
    const void* const ptrs[3] = {dx, dy, y};
    const bool vec = plan_vectorizable<T>(plan, ptrs);
    with_shape(shape, [&](auto g, auto chunks) {
      constexpr Group G = decltype(g)::value;
      const unsigned grid = group_grid(G, shape.threads, plan.rows);
      launch(softmax_backward_regs_kernel<T, G, decltype(chunks)::value, kLog>, grid, shape.threads, 0, plan, dx, dy,
             y, vec);
    });
    return;
  }
  const Group g = pick_group(plan);
  const int threads = group_threads(g, plan.len);
  const unsigned grid = group_grid(g, threads, plan.rows);
  switch (g) {
    case Group::Thread:
      launch(softmax_backward_kernel<T, Group::Thread, kLog>, grid, threads, 0, plan, dx, dy, y);
      break;
    case Group::Warp:
      launch(softmax_backward_kernel<T, Group::Warp, kLog>, grid, threads, 0, plan, dx, dy, y);
      break;
    default:
      launch(softmax_backward_kernel<T, Group::Block, kLog>, grid, threads, 0, plan, dx, dy, y);
      break;
  }
}

}  // namespace

void CudaBackend::softmax(const Tensor& out, const Tensor& in, int dim, bool log) {
  DeviceGuard guard(out.device().index);
  const Tensor* ts[2] = {&out, &in};
  const RowPlan<2> plan(ts, dim);
  if (plan.rows == 0 || plan.len == 0) return;
  TT_DISPATCH_FLOATING(in.dtype(), log ? "log_softmax" : "softmax", [&] {
    if (log)
      launch_softmax<scalar_t, true>(plan, out.data_ptr<scalar_t>(), in.data_ptr<scalar_t>());
    else
      launch_softmax<scalar_t, false>(plan, out.data_ptr<scalar_t>(), in.data_ptr<scalar_t>());
  });
}

void CudaBackend::softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int dim,
                                   bool log) {
  DeviceGuard guard(grad_in.device().index);
  const Tensor* ts[3] = {&grad_in, &grad_out, &out};
  const RowPlan<3> plan(ts, dim);
  if (plan.rows == 0 || plan.len == 0) return;
  TT_DISPATCH_FLOATING(out.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&] {
    scalar_t* dx = grad_in.data_ptr<scalar_t>();
    const scalar_t* dy = grad_out.data_ptr<scalar_t>();
    const scalar_t* y = out.data_ptr<scalar_t>();
    if (log)
      launch_softmax_backward<scalar_t, true>(plan, dx, dy, y);
    else
      launch_softmax_backward<scalar_t, false>(plan, dx, dy, y);
  });
}

}  // namespace tt::cuda
