// The plan of a reduction shared by both backends (cpu/reduce.cpp, cuda/reduce.cu): `in`'s dims
// split into kept dims (out.size(d) != 1) and reduced dims, each group coalesced where the strides
// allow, with element strides; size-1 dims dropped. A plain struct, passed to CUDA kernels by value.
#pragma once

#include <cstdint>

#include "tinytorch/core/host_device.h"
#include "tinytorch/core/tensor.h"

namespace tt {

struct ReducePlan {
  int nk = 0, nr = 0;
  int64_t k_size[kMaxDims], k_in[kMaxDims], k_out[kMaxDims];
  int64_t r_size[kMaxDims], r_in[kMaxDims];
  int64_t outputs = 1, rlen = 1;

  ReducePlan(const Tensor& out, const Tensor& in) {
    for (int d = 0; d < in.dim(); ++d) {
      int64_t n = in.size(d);
      if (n == 1) continue;
      if (out.size(d) == 1) {  // reduced
        rlen *= n;
        if (nr > 0 && r_in[nr - 1] == in.stride(d) * n) {
          r_size[nr - 1] *= n;
          r_in[nr - 1] = in.stride(d);
        } else {
          r_size[nr] = n;
          r_in[nr] = in.stride(d);
          ++nr;
        }
      } else {
        outputs *= n;
        if (nk > 0 && k_in[nk - 1] == in.stride(d) * n && k_out[nk - 1] == out.stride(d) * n) {
          k_size[nk - 1] *= n;
          k_in[nk - 1] = in.stride(d);
          k_out[nk - 1] = out.stride(d);
        } else {
          k_size[nk] = n;
          k_in[nk] = in.stride(d);
          k_out[nk] = out.stride(d);
          ++nk;
        }
      }
    }
    if (in.numel() == 0) {  // reducing an empty dim: every output sees zero elements
      rlen = 0;
      outputs = out.numel();
    }
  }

  // Input and output element offsets of output number o.
  TT_HOST_DEVICE void offsets(int64_t o, int64_t& in_off, int64_t& out_off) const {
    in_off = out_off = 0;
    for (int d = nk - 1; d >= 0; --d) {
      int64_t i = o % k_size[d];
      o /= k_size[d];
      in_off += i * k_in[d];
      out_off += i * k_out[d];
    }
  }

  // Input element offset of reduced element r (row-major over the reduced dims).
  TT_HOST_DEVICE int64_t reduced_offset(int64_t r) const {
    if (nr == 1) return r * r_in[0];
    int64_t off = 0;
    for (int d = nr - 1; d >= 0; --d) {
      off += (r % r_size[d]) * r_in[d];
      r /= r_size[d];
    }
    return off;
  }

  // Calls row(first_element_offset, linear_index_of_first, n, stride) for each row of the
  // reduced space of one output, in row-major order.
  template <typename F>
  void for_each_row(F&& row) const {
    if (nr == 0) {
      row(int64_t(0), int64_t(0), int64_t(1), int64_t(1));
      return;
    }
    int64_t inner = r_size[nr - 1], rows = rlen / inner;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t off = 0, rem = r;
      for (int d = nr - 2; d >= 0; --d) {
        off += (rem % r_size[d]) * r_in[d];
        rem /= r_size[d];
      }
      row(off, r * inner, inner, r_in[nr - 1]);
    }
  }
};

}  // namespace tt
