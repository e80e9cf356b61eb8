// CUDA reductions: sum, max, min, argmax, argmin over any set of dims, reading strided input in
// one pass. Twin of cpu/reduce.cpp (same plan, same first-index and NaN rules, same accumulators).
//
// Note [cuda reduction plan]: as Note [reduction plan] of the CPU, the input's dims split into
// kept dims (one output each) and reduced dims, each list coalesced: the reduced dims become the
// innermost ones of a view, no copy. Then one of two kernels:
//  * rows (reduce_rows_kernel): one block per output, its threads striding over the reduced
//    elements; chosen when the innermost reduced dim is contiguous and at least a warp long
//    (coalesced reads), or when there are too few outputs to fill a warp of columns.
//  * columns (reduce_cols_kernel): one thread column per output, a few threads (blockDim.y) per
//    output splitting the reduced elements; chosen otherwise: strided or short reduced rows
//    (sum over the batch of [B, C]: consecutive threads read consecutive columns).
// When outputs alone cannot fill the GPU the reduced range is also split over gridDim.y blocks;
// each writes a partial and reduce_partials_kernel combines them in split order. No atomics: the
// assignment of elements to threads and the combination tree are fixed, so results are the same
// from run to run.
//
// Note [cuda float sums]: as Note [float sums] of the CPU, every float32 element is added into a
// float64 accumulator by its thread; threads are combined in double and the result rounded once.
// float64 accumulates in float64; int64 in uint64, so that overflow wraps around with defined
// behaviour (Note [integer wraparound] in functors.h).
#include <algorithm>
#include <type_traits>

#include "tinytorch/backend/cuda/block_reduce.cuh"
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/scratch.cuh"
#include "tinytorch/backend/functors.h"
#include "tinytorch/backend/reduce_plan.h"
#include "tinytorch/backend/visit.h"

namespace tt::cuda {

namespace {

constexpr int kRowThreads = 256;  // threads of one reduce_rows_kernel block
constexpr int kColThreads = 512;  // threads of one reduce_cols_kernel block (x * y)
constexpr int kMaxColY = 16;      // at most this many threads split one output's elements
constexpr int kTargetBlocks = 1024;  // enough blocks to fill every SM several times


// --- the two reductions, each a state type with its thread loop and its combine -------------------

// Sum: State is the accumulator (double for floats, uint64 for int64); see Note [cuda float sums].
template <typename T>
struct SumReducer {
  using State = std::conditional_t<std::is_floating_point<T>::value, double, uint64_t>;
  __device__ static State identity() { return State(0); }
  __device__ static State combine(State a, State b) { return a + b; }
  // Elements r = begin, begin + step, ... below end, of the row starting at p.
  __device__ static State run(const T* p, const ReducePlan& plan, int64_t begin, int64_t end, int64_t step) {
    State total = 0;
    for (int64_t r = begin; r < end; r += step) total += State(p[plan.reduced_offset(r)]);
    return total;
  }
  __device__ static void write(void* out, int64_t off, State s) { static_cast<T*>(out)[off] = T(s); }
};

// Max/min and their args: the extreme value and its linear index in the reduced space; i < 0 marks
// "no element yet". The combine picks, as the CPU's sequential scan does: the first NaN if any,
// else the extreme value, ties going to the smaller index. It is a total order on (value, index),
// so any combination tree gives the same answer.
template <typename T>
struct ValIdx {
  T v;
  int64_t i;
};
template <typename T>
__device__ __forceinline__ ValIdx<T> shfl_xor(ValIdx<T> a, int mask) {
  return {tt::cuda::shfl_xor(a.v, mask), tt::cuda::shfl_xor(a.i, mask)};
}

template <typename T, bool kMax, bool kArgOut>
struct ExtremeReducer {
  using State = ValIdx<T>;
  __device__ static State identity() { return {T(0), -1}; }
  __device__ static State combine(State a, State b) {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    const bool an = functors::is_nan(a.v), bn = functors::is_nan(b.v);
    if (an || bn) {
      if (an && bn) return a.i < b.i ? a : b;
      return an ? a : b;
    }
    if (kMax ? (a.v > b.v) : (a.v < b.v)) return a;
    if (kMax ? (b.v > a.v) : (b.v < a.v)) return b;
    return a.i < b.i ? a : b;
  }
  __device__ static State run(const T* p, const ReducePlan& plan, int64_t begin, int64_t end, int64_t step) {
    State best = identity();
    for (int64_t r = begin; r < end; r += step) {
      // This thread's elements come in increasing r: strict comparisons keep the first.
      const T v = p[plan.reduced_offset(r)];
      if (best.i >= 0 && functors::is_nan(best.v)) break;
      if (best.i < 0 || functors::is_nan(v) || (kMax ? (v > best.v) : (v < best.v))) best = {v, r};
    }
    return best;
  }
  __device__ static void write(void* out, int64_t off, State s) {
    if constexpr (kArgOut) {
      static_cast<int64_t*>(out)[off] = s.i < 0 ? 0 : s.i;
    } else {
      static_cast<T*>(out)[off] = s.v;
    }
  }
};

template <typename R>
struct CombineOf {
  template <typename S> __device__ __forceinline__ S operator()(S a, S b) const { return R::combine(a, b); }
};

// The reduced range [begin, end) of split s when rlen is cut into chunks of `chunk`.
__device__ __forceinline__ void split_range(int64_t rlen, int64_t chunk, int64_t s, int64_t& begin, int64_t& end) {
  begin = s * chunk;
  end = begin + chunk < rlen ? begin + chunk : rlen;
}

// in: strided, see ReducePlan -> out (gridDim.y == 1) or partial: [outputs, gridDim.y].
// Block x (grid-stride) per output, blockIdx.y = split; kRowThreads threads stride the range.
template <typename T, typename R>
__global__ void reduce_rows_kernel(ReducePlan plan, const T* in, void* out, typename R::State* partial,
                                   int64_t chunk) {
  using State = typename R::State;
  __shared__ State smem[kWarpSize];
  const int64_t splits = gridDim.y;
  for (int64_t o = blockIdx.x; o < plan.outputs; o += gridDim.x) {
    int64_t in_off, out_off, begin, end;
    plan.offsets(o, in_off, out_off);
    split_range(plan.rlen, chunk, blockIdx.y, begin, end);
    State s = R::run(in + in_off, plan, begin + threadIdx.x, end, blockDim.x);
    s = block_reduce(s, CombineOf<R>(), R::identity(), smem);
    if (threadIdx.x == 0) {
      if (splits == 1)
        R::write(out, out_off, s);
      else
        partial[o * splits + blockIdx.y] = s;
    }
  }
}

// in: strided, see ReducePlan -> out or partial [outputs, gridDim.y]. Block (bx, by): thread x of
// block b owns output b * bx + x (grid-stride over x blocks), the by threads of a column split the
// range of blockIdx.y and are combined in y order.
template <typename T, typename R>
__global__ void __launch_bounds__(kColThreads)
reduce_cols_kernel(ReducePlan plan, const T* in, void* out, typename R::State* partial,
                                   int64_t chunk) {
  using State = typename R::State;
  __shared__ State smem[kColThreads];
  const int64_t splits = gridDim.y;
  const int bx = blockDim.x, by = blockDim.y;
  for (int64_t o0 = int64_t(blockIdx.x) * bx; o0 < plan.outputs; o0 += int64_t(gridDim.x) * bx) {
    const int64_t o = o0 + threadIdx.x;
    State s = R::identity();
    int64_t in_off = 0, out_off = 0, begin, end;
    if (o < plan.outputs) {
      plan.offsets(o, in_off, out_off);
      split_range(plan.rlen, chunk, blockIdx.y, begin, end);
      s = R::run(in + in_off, plan, begin + threadIdx.y, end, by);
    }
    __syncthreads();  // the previous iteration's readers are done with smem
    smem[threadIdx.y * bx + threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && o < plan.outputs) {
      for (int y = 1; y < by; ++y) s = R::combine(s, smem[y * bx + threadIdx.x]);
      if (splits == 1)
        R::write(out, out_off, s);
      else
        partial[o * splits + blockIdx.y] = s;
    }
  }
}

// partial: [outputs, splits] -> out. One warp per output combines its splits (fixed tree).
template <typename R>
__global__ void reduce_partials_kernel(ReducePlan plan, const typename R::State* partial, int64_t splits,
                                       void* out) {
  using State = typename R::State;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warps = blockDim.x / kWarpSize;
  for (int64_t o = blockIdx.x * warps + threadIdx.x / kWarpSize; o < plan.outputs; o += int64_t(gridDim.x) * warps) {
    State s = R::identity();
    for (int64_t k = lane; k < splits; k += kWarpSize) s = R::combine(s, partial[o * splits + k]);
    s = warp_reduce(s, CombineOf<R>());
    if (lane == 0) {
      int64_t in_off, out_off;
      plan.offsets(o, in_off, out_off);
      R::write(out, out_off, s);
    }
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Splits of the reduced range: enough blocks in all to fill the GPU, each split keeping at least
// `min_per_split` elements, at most 65535 (gridDim.y).
int64_t choose_splits(int64_t blocks_out, int64_t rlen, int64_t min_per_split) {
  const int64_t want = ceil_div(kTargetBlocks, std::max<int64_t>(1, blocks_out));
  return std::max<int64_t>(1, std::min<int64_t>({want, rlen / min_per_split, 65535}));
}

template <typename T, typename R>
void launch_reduce(const ReducePlan& plan, const Tensor& in, const Tensor& out) {
  using State = typename R::State;
  const T* src = in.data_ptr<T>();
  void* dst = out.raw_data_ptr();
  const bool rows_contiguous = plan.nr >= 1 && plan.r_in[plan.nr - 1] == 1 && plan.r_size[plan.nr - 1] >= kWarpSize;
  const bool use_rows = rows_contiguous || plan.outputs < 8;  // else columns: coalesced across outputs
  int bx = 0, by = 0;
  int64_t blocks_out, splits;
  if (use_rows) {
    blocks_out = plan.outputs;
    splits = choose_splits(blocks_out, plan.rlen, int64_t(kRowThreads) * 16);
  } else {
    by = 1;
    while (by < kMaxColY && by * 2 <= plan.rlen) by *= 2;
    bx = kColThreads / by;
    blocks_out = ceil_div(plan.outputs, bx);
    splits = choose_splits(blocks_out, plan.rlen, int64_t(by) * 64);
  }
  const int64_t chunk = std::max<int64_t>(1, ceil_div(plan.rlen, splits));
  splits = std::max<int64_t>(1, ceil_div(plan.rlen, chunk));  // no empty split
  const Scratch<State> scratch(splits > 1 ? plan.outputs * splits : 0, in.device().index);
  State* partial = splits > 1 ? scratch.data() : nullptr;
  const dim3 grid(unsigned(std::min<int64_t>(blocks_out, 1 << 30)), unsigned(splits));
  if (use_rows) {
    launch(reduce_rows_kernel<T, R>, grid, kRowThreads, 0, plan, src, dst, partial, chunk);
  } else {
    launch(reduce_cols_kernel<T, R>, grid, dim3(bx, by), 0, plan, src, dst, partial, chunk);
  }
  if (splits > 1) {
    constexpr int kThreads = 256;
    const int64_t blocks = std::min<int64_t>(ceil_div(plan.outputs, kThreads / kWarpSize), 1 << 30);
    launch(reduce_partials_kernel<R>, unsigned(blocks), kThreads, 0, plan, partial, splits, dst);
  }
}

}  // namespace

void CudaBackend::reduce(ReduceOp op, const Tensor& out, const Tensor& in) {
  DeviceGuard guard(out.device().index);
  const ReducePlan plan(out, in);
  if (plan.outputs == 0) return;
  TT_CHECK(op == ReduceOp::Sum || plan.rlen > 0, op_name(op), ": cannot reduce over an empty dimension, got shape ",
           in.shape());
  TT_DISPATCH_ALL(in.dtype(), op_name(op), [&] {
    if constexpr (std::is_same<scalar_t, bool>::value) {
      throw DtypeError(tt::detail::concat(op_name(op), ": not supported for bool tensors here"));
    } else {
      visit_reduce(op, [&](auto traits) {
        using R = decltype(traits);
        if constexpr (R::kKind == ReduceKind::Sum)
          launch_reduce<scalar_t, SumReducer<scalar_t>>(plan, in, out);
        else
          launch_reduce<scalar_t, ExtremeReducer<scalar_t, R::kMax, R::kArg>>(plan, in, out);
      });
    }
  });
}

}  // namespace tt::cuda
