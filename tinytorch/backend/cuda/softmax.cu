// CUDA softmax and log-softmax over one dim, forward and backward, fused; twin of cpu/softmax.cpp
// (same row plan, same exp, same fully-masked-row rule). Not here: the derivative bookkeeping
// (ops/activation.cpp).
//
// Note [cuda softmax rows]: the tensors are seen as rows along `dim` (coalesced like the CPU's
// RowPlan), rows of any length and any stride. One group of threads owns a row (Note [group
// reductions] in block_reduce.cuh): a warp for rows up to 1024 elements, a block for longer ones,
// or one thread per row when rows are strided along `dim` but neighbouring rows are adjacent in
// memory (softmax over dim 0 of a contiguous [N, C]: consecutive threads then read consecutive
// addresses). The group makes three passes over its row (max, sum of exponentials, write); the
// later passes mostly hit the cache. The max propagates NaN: a NaN anywhere makes the row NaN, as
// on the CPU. A row whose max is -inf (all -inf) gets zeros (softmax) or -inf (log_softmax),
// Note [stable softmax] of the CPU.
#include <algorithm>
#include <limits>

#include "tinytorch/backend/activation_functors.h"
#include "tinytorch/backend/cuda/block_reduce.cuh"
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/launch.cuh"
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
    FoldSum<T> sum;
    for (int64_t i = rank; i < len; i += gsize) {
      const T e = functors::exp_any(xr[i * sx] - m);
      if (!kLog) yr[i * sy] = e;  // exponentials written while summed, scaled below (as the CPU)
      sum.add(e);
    }
    const double total = group_reduce<G>(sum.value(), SumCombine(), 0.0, smem_d);
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
__global__ void __launch_bounds__(1024) softmax_backward_kernel(RowPlan<3> plan, T* dx, const T* dy, const T* y) {
  __shared__ double smem_d[kWarpSize];
  const int64_t len = plan.len, s0 = plan.step[0], s1 = plan.step[1], s2 = plan.step[2];
  const int rank = group_rank<G>(), gsize = group_size<G>();
  for (int64_t row = group_first_row<G>(); row < plan.rows; row += group_row_step<G>()) {
    int64_t offs[3];
    plan.offsets(row, offs);
    T* dxr = dx + offs[0];
    const T* dyr = dy + offs[1];
    const T* yr = y + offs[2];
    FoldSum<T> sum;
    for (int64_t i = rank; i < len; i += gsize) sum.add(kLog ? dyr[i * s1] : dyr[i * s1] * yr[i * s2]);
    const T s = T(group_reduce<G>(sum.value(), SumCombine(), 0.0, smem_d));
    for (int64_t i = rank; i < len; i += gsize) {
      const T g = dyr[i * s1], o = yr[i * s2];
      dxr[i * s0] = kLog ? g - functors::exp_any(o) * s : o * (g - s);
    }
  }
}

template <typename T, bool kLog>
void launch_softmax(const RowPlan<2>& plan, T* y, const T* x) {
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
