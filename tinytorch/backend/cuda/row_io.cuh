// Rows held in registers by the CUDA row kernels (softmax.cu, normalization.cu): the layout of a
// thread's share of a row, its 16-byte loads and stores, and the choice of group and share size
// for a row length. Not here: what the kernels compute (each kernel file) or the reductions
// (block_reduce.cuh).
//
// Note [rows in registers]: a group of threads (a warp, or a whole block for longer rows; Note
// [group reductions]) owns a row of `len` contiguous elements. Each thread holds kChunks packs of
// kPack<T> elements (16 bytes: 4 floats or 2 doubles); pack j of the thread ranked `rank` in a
// group of `gsize` covers elements [(j * gsize + rank) * kPack, + kPack), so the group's loads of
// one pack index are consecutive 16-byte words: fully coalesced. The row is read from memory once
// and written once; every pass over it (max, sum, write) runs on registers. When every row start
// is 16-byte aligned and len is a whole number of packs (`vec`), a pack is one 16-byte load or
// store; otherwise the same layout is filled element by element (still one read per element).
// Elements past the row's end hold a fill value chosen by the kernel and are never stored.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tinytorch/backend/cuda/block_reduce.cuh"

namespace tt::cuda {

// Elements of T in 16 bytes.
template <typename T>
constexpr int kPack = int(16 / sizeof(T));

template <typename T>
struct alignas(16) Pack16 {
  T v[kPack<T>];
};

// The first element of pack j of a thread (Note [rows in registers]).
template <typename T>
__device__ __forceinline__ int64_t pack_start(int j, int rank, int gsize) {
  return (int64_t(j) * gsize + rank) * kPack<T>;
}

// dst[0, kPack) = row[i0, i0 + kPack), `fill` past len.
template <typename T>
__device__ __forceinline__ void load_pack(T* dst, const T* row, int64_t i0, int64_t len, bool vec, T fill) {
  if (vec) {
    if (i0 < len) {
      const Pack16<T> p = *reinterpret_cast<const Pack16<T>*>(row + i0);
#pragma unroll
      for (int k = 0; k < kPack<T>; ++k) dst[k] = p.v[k];
    } else {
#pragma unroll
      for (int k = 0; k < kPack<T>; ++k) dst[k] = fill;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kPack<T>; ++k) dst[k] = i0 + k < len ? row[i0 + k] : fill;
  }
}

// row[i0, i0 + kPack) = src[0, kPack), nothing past len.
template <typename T>
__device__ __forceinline__ void store_pack(T* row, const T* src, int64_t i0, int64_t len, bool vec) {
  if (vec) {
    if (i0 < len) {
      Pack16<T> p;
#pragma unroll
      for (int k = 0; k < kPack<T>; ++k) p.v[k] = src[k];
      *reinterpret_cast<Pack16<T>*>(row + i0) = p;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kPack<T>; ++k)
      if (i0 + k < len) row[i0 + k] = src[k];
  }
}

// The thread's whole share: v[j * kPack + k] = row[pack_start(j) + k].
template <typename T, int kChunks>
__device__ __forceinline__ void load_row(T (&v)[kChunks * kPack<T>], const T* row, int64_t len, int rank, int gsize,
                                         bool vec, T fill) {
#pragma unroll
  for (int j = 0; j < kChunks; ++j) load_pack(v + j * kPack<T>, row, pack_start<T>(j, rank, gsize), len, vec, fill);
}
template <typename T, int kChunks>
__device__ __forceinline__ void store_row(T* row, const T (&v)[kChunks * kPack<T>], int64_t len, int rank, int gsize,
                                          bool vec) {
#pragma unroll
  for (int j = 0; j < kChunks; ++j) store_pack(row, v + j * kPack<T>, pack_start<T>(j, rank, gsize), len, vec);
}

// How a row of `len` elements is held (Note [rows in registers]): a warp with 1, 2, 4, 6 or 8
// packs per lane (float: up to 128, 256, 512, 768, 1024 elements; 6 fits GPT widths of 768
// exactly), else a block of `threads` (a multiple of 32, at most kMaxRowThreads) with 4 packs per
// thread (float: up to 8192 elements, double 4096). ok = false past that: the kernels' general
// paths take over. The register kernels declare __launch_bounds__(kRowLaunchBound<G>): a block of
// at most 512 threads leaves 128 registers a thread, a warp kernel (blocks of at most 256) 255, so
// that a share of 32 floats and its temporaries fit without spilling.
struct RowShape {
  bool ok = false;
  Group group = Group::Warp;
  int chunks = 0;
  int threads = 0;
};
constexpr int kBlockChunks = 4;
constexpr int kMaxRowThreads = 512;
template <Group G>
constexpr int kRowLaunchBound = G == Group::Block ? kMaxRowThreads : 256;

template <typename T>
RowShape row_shape(int64_t len) {
  RowShape s;
  const int64_t lane_elems = int64_t(kWarpSize) * kPack<T>;  // one pack per lane
  for (int c : {1, 2, 4, 6, 8}) {
    if (len <= c * lane_elems) {
      s.ok = true;
      s.group = Group::Warp;
      s.chunks = c;
      s.threads = 128;  // 4 rows per block
      return s;
    }
  }
  const int64_t per_thread = int64_t(kBlockChunks) * kPack<T>;
  const int64_t threads = (len + per_thread - 1) / per_thread;
  if (threads > kMaxRowThreads) return s;
  s.ok = true;
  s.group = Group::Block;
  s.chunks = kBlockChunks;
  s.threads = int((threads + kWarpSize - 1) / kWarpSize * kWarpSize);
  return s;
}

// True when p is 16-byte aligned.
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Calls f(std::integral_constant<Group, G>(), std::integral_constant<int, kChunks>()) for the
// shape's group and pack count: the warp counts of row_shape, or a block with kBlockChunks.
template <typename F>
void with_shape(const RowShape& s, F&& f) {
  using W = std::integral_constant<Group, Group::Warp>;
  if (s.group == Group::Block) {
    f(std::integral_constant<Group, Group::Block>(), std::integral_constant<int, kBlockChunks>());
    return;
  }
  switch (s.chunks) {
    case 1: f(W(), std::integral_constant<int, 1>()); break;
    case 2: f(W(), std::integral_constant<int, 2>()); break;
    case 4: f(W(), std::integral_constant<int, 4>()); break;
    case 6: f(W(), std::integral_constant<int, 6>()); break;
    default: f(W(), std::integral_constant<int, 8>()); break;
  }
}

}  // namespace tt::cuda
