// Warp and block reductions shared by the CUDA row kernels (reduce.cu, softmax.cu,
// normalization.cu): butterfly shuffles, so every lane (and every thread of a block) ends with the
// same result, combined in a fixed tree, so results do not change from run to run. Not here: what
// is reduced (each kernel brings its combine functor and identity).
//
// Note [group reductions]: a row kernel runs one thread per row (many strided rows whose
// neighbours are adjacent in memory: consecutive threads read consecutive addresses), one warp per
// row (short rows: no shared memory, no barrier) or one block per row (long rows). group_reduce<G>
// picks the version at compile time, so one kernel body serves all three. Blocks are one-
// dimensional, a whole number of warps, at most 1024 threads; every thread of a group calls each
// reduction (so no thread may leave a block's row loop early).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace tt::cuda {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;

__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(kFullMask, v, mask); }
__device__ __forceinline__ double shfl_xor(double v, int mask) { return __shfl_xor_sync(kFullMask, v, mask); }
__device__ __forceinline__ int shfl_xor(int v, int mask) { return __shfl_xor_sync(kFullMask, v, mask); }
__device__ __forceinline__ int64_t shfl_xor(int64_t v, int mask) {
  return static_cast<int64_t>(__shfl_xor_sync(kFullMask, static_cast<long long>(v), mask));
}
__device__ __forceinline__ uint64_t shfl_xor(uint64_t v, int mask) {
  return static_cast<uint64_t>(__shfl_xor_sync(kFullMask, static_cast<unsigned long long>(v), mask));
}

struct SumCombine {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
// Max that ignores NaN (a NaN never wins a comparison), as the CPU's row max does.
struct MaxCombine {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return b > a ? b : a; }
};

// Every lane of the warp gets the combination of all 32 lanes' values. A user type V needs a
// shfl_xor(V, int) overload found by argument-dependent lookup.
template <typename V, typename F>
__device__ __forceinline__ V warp_reduce(V v, F f) {
  for (int mask = kWarpSize / 2; mask > 0; mask >>= 1) v = f(v, shfl_xor(v, mask));
  return v;
}

// Every thread of the block gets the combination of all threads' values. smem: kWarpSize V of
// shared scratch; it may be reused by the next call (the leading barrier protects it).
template <typename V, typename F>
__device__ __forceinline__ V block_reduce(V v, F f, V identity, V* smem) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  v = warp_reduce(v, f);
  __syncthreads();  // an earlier call's readers are done with smem
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = lane < warps ? smem[lane] : identity;
  return warp_reduce(v, f);
}

// The threads that own one row (Note [group reductions]).
enum class Group { Thread, Warp, Block };

// Note [group reductions].
template <Group G, typename V, typename F>
__device__ __forceinline__ V group_reduce(V v, F f, V identity, V* smem) {
  if constexpr (G == Group::Thread) {
    return v;
  } else if constexpr (G == Group::Warp) {
    return warp_reduce(v, f);
  } else {
    return block_reduce(v, f, identity, smem);
  }
}

// The thread's rank within its row group and the group's size.
template <Group G>
__device__ __forceinline__ int group_rank() {
  return G == Group::Thread ? 0 : G == Group::Warp ? int(threadIdx.x % kWarpSize) : int(threadIdx.x);
}
template <Group G>
__device__ __forceinline__ int group_size() {
  return G == Group::Thread ? 1 : G == Group::Warp ? kWarpSize : int(blockDim.x);
}
// The first row of this group and the step between its rows in a grid-stride loop.
template <Group G>
__device__ __forceinline__ int64_t group_first_row() {
  const int per_block = G == Group::Thread ? int(blockDim.x) : G == Group::Warp ? int(blockDim.x) / kWarpSize : 1;
  const int in_block = G == Group::Thread ? int(threadIdx.x) : G == Group::Warp ? int(threadIdx.x) / kWarpSize : 0;
  return int64_t(blockIdx.x) * per_block + in_block;
}
template <Group G>
__device__ __forceinline__ int64_t group_row_step() {
  const int per_block = G == Group::Thread ? int(blockDim.x) : G == Group::Warp ? int(blockDim.x) / kWarpSize : 1;
  return int64_t(gridDim.x) * per_block;
}
// Rows per block for a launch of `threads` threads.
inline int rows_per_block(Group g, int threads) {
  return g == Group::Thread ? threads : g == Group::Warp ? threads / kWarpSize : 1;
}
// Rows of `len` elements: a warp each up to 1024 elements (32 per lane), else a block.
inline Group group_for_len(int64_t len) { return len <= 1024 ? Group::Warp : Group::Block; }
// Threads per block: 4 warps (4 rows, or 128 thread-rows) unless a block owns a row.
inline int group_threads(Group g, int64_t len) {
  if (g != Group::Block) return 128;
  return len <= 4096 ? 256 : (len <= 16384 ? 512 : 1024);
}
// Blocks of a grid-stride launch over `rows` rows.
inline unsigned group_grid(Group g, int threads, int64_t rows) {
  const int64_t per = rows_per_block(g, threads);
  return unsigned(std::max<int64_t>(1, std::min<int64_t>((rows + per - 1) / per, 1 << 30)));
}

// A float sum that a thread keeps over many elements: runs of 64 added in T, folded into a
// double (as Note [float sums] of cpu/reduce.cpp).
template <typename T>
struct FoldSum {
  double total = 0;
  T run = 0;
  int count = 0;
  __device__ __forceinline__ void add(T v) {
    run += v;
    if (++count == 64) {
      total += double(run);
      run = 0;
      count = 0;
    }
  }
  __device__ __forceinline__ double value() const { return total + double(run); }
};
}  // namespace tt::cuda
