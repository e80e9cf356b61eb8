// The plan of an elementwise walk shared by both backends' engines (cpu/loop.h, cuda/loop.cuh):
// N operands (out first) over out's shape with byte strides, broadcast operands at stride 0,
// size-1 dims dropped and neighbouring dims merged when every operand is contiguous across them.
#pragma once

#include <cstdint>

#include "tinytorch/core/tensor.h"

namespace tt {

template <int N>
struct StridedPlan {
  int ndim = 0;
  int64_t shape[kMaxDims];         // innermost last
  int64_t strides[N][kMaxDims];    // bytes
  char* base[N];
  int64_t numel = 1;

  StridedPlan() = default;
  // ops[0] is the output; the others are broadcast to its shape (a 0-d operand included).
  explicit StridedPlan(const Tensor* const (&ops)[N]) {
    const Shape& out_shape = ops[0]->shape();
    for (int k = 0; k < N; ++k) base[k] = static_cast<char*>(ops[k]->raw_data_ptr());
    if (ops[0]->numel() == 0) {  // nothing to walk; an empty tensor's byte strides may not even fit
      numel = 0;                  // in int64 ([0, 2^62] has stride 2^62: Note [checked sizes])
      shape[0] = 0;
      for (int k = 0; k < N; ++k) strides[k][0] = 0;
      ndim = 1;
      return;
    }
    int64_t st[N][kMaxDims];
    for (int k = 0; k < N; ++k) {
      const Tensor& t = *ops[k];
      const int off = out_shape.size() - t.dim();
      const int64_t esize = static_cast<int64_t>(t.element_size());
      for (int i = 0; i < out_shape.size(); ++i) {
        const int j = i - off;
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
    if (ndim == 0) {  // a single element
      shape[0] = 1;
      for (int k = 0; k < N; ++k) strides[k][0] = 0;
      ndim = 1;
    }
  }
};

}  // namespace tt
