// The CUDA elementwise engine, twin of cpu/loop.h: N operands (out first) walked over one shape
// with arbitrary byte strides, so broadcast and transposed views are read in place.
//
// The host builds a StridedOffsets<N> (dims coalesced exactly as on the CPU) and passes it to a
// kernel by value; each thread turns its linear index into N byte offsets. launch_elementwise()
// runs a grid-stride loop with one element per thread per step.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/core/tensor.h"

namespace tt::cuda {

constexpr int kThreads = 256;  // threads per block of the elementwise kernels

// Blocks for n elements at kThreads each, capped so a grid-stride loop covers the rest.
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(b, 65535LL * 8)));
}

template <int N>
struct StridedOffsets {
  int ndim = 0;
  int64_t shape[kMaxDims];       // innermost last
  int64_t strides[N][kMaxDims];  // bytes
  char* base[N];
  int64_t numel = 1;

  StridedOffsets() = default;
  // ops[0] is the output; the others are broadcast to its shape. A 0-d operand is broadcast.
  explicit StridedOffsets(const Tensor* const (&ops)[N]) {
    const Shape& out_shape = ops[0]->shape();
    for (int k = 0; k < N; ++k) base[k] = static_cast<char*>(ops[k]->raw_data_ptr());
    int64_t st[N][kMaxDims];
    for (int k = 0; k < N; ++k) {
      const Tensor& t = *ops[k];
      int off = out_shape.size() - t.dim();
      int64_t esize = static_cast<int64_t>(t.element_size());
      for (int i = 0; i < out_shape.size(); ++i) {
        int j = i - off;
        st[k][i] = (j < 0 || t.shape()[j] == 1) ? 0 : t.strides()[j] * esize;
      }
    }
    for (int i = 0; i < out_shape.size(); ++i) {
      numel *= out_shape[i];
      if (out_shape[i] == 1) continue;
      if (ndim > 0) {
        bool mergeable = true;
        for (int k = 0; k < N; ++k)
          if (strides[k][ndim - 1] != st[k][i] * out_shape[i]) mergeable = false;
        if (mergeable) {
          shape[ndim - 1] *= out_shape[i];
          for (int k = 0; k < N; ++k) strides[k][ndim - 1] = st[k][i];
          continue;
        }
      }
      shape[ndim] = out_shape[i];
      for (int k = 0; k < N; ++k) strides[k][ndim] = st[k][i];
      ++ndim;
    }
    if (ndim == 0) {
      shape[0] = 1;
      for (int k = 0; k < N; ++k) strides[k][0] = 0;
      ndim = 1;
    }
  }

  // True when every operand walks its bytes densely in order (one dim, stride = element size).
  bool contiguous(const int64_t (&element_sizes)[N]) const {
    if (ndim != 1) return false;
    for (int k = 0; k < N; ++k)
      if (strides[k][0] != element_sizes[k] && shape[0] != 1) return false;
    return true;
  }

  // The N operand addresses of linear element i.
  __device__ __forceinline__ void pointers(int64_t i, char* (&ptrs)[N]) const {
    for (int k = 0; k < N; ++k) ptrs[k] = base[k];
    for (int d = ndim - 1; d >= 0; --d) {
      int64_t idx = i % shape[d];
      i /= shape[d];
      for (int k = 0; k < N; ++k) ptrs[k] += idx * strides[k][d];
    }
  }
};

// Grid-stride loop: f(ptrs) for every element, ptrs[0] the output's address.
template <int N, typename F>
__global__ void strided_kernel(StridedOffsets<N> offs, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < offs.numel;
       i += int64_t(blockDim.x) * gridDim.x) {
    char* ptrs[N];
    offs.pointers(i, ptrs);
    f(ptrs);
  }
}

// Runs f(char* (&ptrs)[N]) on the device over every element of ops[0]'s shape.
template <int N, typename F>
void launch_elementwise(const Tensor* const (&ops)[N], F f) {
  StridedOffsets<N> offs(ops);
  if (offs.numel == 0) return;
  strided_kernel<N><<<blocks_for(offs.numel), kThreads>>>(offs, f);
  TT_CUDA_CHECK_LAUNCH();
}

}  // namespace tt::cuda
