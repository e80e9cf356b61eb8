// The rows of a softmax shared by both backends (cpu/softmax.cpp, cuda/softmax.cu; Note [softmax
// rows] in the CPU file): N same-shaped tensors split into rows along `dim`, the other dims
// coalesced with each tensor's element strides, and each tensor's stride along `dim`. A plain
// struct, passed to CUDA kernels by value.
#pragma once

#include <cstdint>

#include "tinytorch/core/host_device.h"
#include "tinytorch/core/tensor.h"

namespace tt {

template <int N>
struct RowPlan {
  int nk = 0;
  int64_t size[kMaxDims];
  int64_t stride[N][kMaxDims];
  int64_t rows = 1, len = 1;
  int64_t step[N];  // element stride along dim
  bool direct = true;  // every tensor has stride 1 along dim: rows are used in place

  RowPlan(const Tensor* const (&ts)[N], int dim) {
    const Tensor& t0 = *ts[0];
    const int ndim = t0.dim();
    len = ndim == 0 ? 1 : t0.size(dim);
    for (int k = 0; k < N; ++k) {
      step[k] = (ndim == 0 || len == 1) ? 1 : ts[k]->stride(dim);
      direct = direct && step[k] == 1;
    }
    for (int d = 0; d < ndim; ++d) {
      const int64_t n = t0.size(d);
      if (d == dim || n == 1) continue;
      rows *= n;
      bool mergeable = nk > 0;
      for (int k = 0; k < N && mergeable; ++k) mergeable = stride[k][nk - 1] == ts[k]->stride(d) * n;
      if (mergeable) {
        size[nk - 1] *= n;
        for (int k = 0; k < N; ++k) stride[k][nk - 1] = ts[k]->stride(d);
      } else {
        size[nk] = n;
        for (int k = 0; k < N; ++k) stride[k][nk] = ts[k]->stride(d);
        ++nk;
      }
    }
  }

  // True when neighbouring rows are neighbours in memory for every tensor.
  bool rows_adjacent() const {
    if (nk == 0) return false;
    for (int k = 0; k < N; ++k)
      if (stride[k][nk - 1] != 1) return false;
    return true;
  }

  // offs[k]: row r's first element in tensor k.
  TT_HOST_DEVICE void offsets(int64_t r, int64_t (&offs)[N]) const {
    for (int k = 0; k < N; ++k) offs[k] = 0;
    for (int d = nk - 1; d >= 0; --d) {
      const int64_t i = r % size[d];
      r /= size[d];
      for (int k = 0; k < N; ++k) offs[k] += i * stride[k][d];
    }
  }

  // Calls f(offsets) for rows [begin, end), offsets[k] being row r's first element in tensor k.
  template <typename F>
  void for_rows(int64_t begin, int64_t end, F&& f) const {
    int64_t idx[kMaxDims];
    int64_t off[N] = {};
    int64_t rem = begin;
    for (int d = nk - 1; d >= 0; --d) {
      idx[d] = rem % size[d];
      rem /= size[d];
      for (int k = 0; k < N; ++k) off[k] += idx[d] * stride[k][d];
    }
    for (int64_t r = begin; r < end; ++r) {
      f(static_cast<const int64_t*>(off));
      for (int d = nk - 1; d >= 0; --d) {  // odometer step to the next row
        for (int k = 0; k < N; ++k) off[k] += stride[k][d];
        if (++idx[d] < size[d]) break;
        for (int k = 0; k < N; ++k) off[k] -= stride[k][d] * size[d];
        idx[d] = 0;
      }
    }
  }
};

}  // namespace tt
