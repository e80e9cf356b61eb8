// CPU indexing kernels: index_select, gather, scatter_add. Index values were range-checked by
// ops/ before these run. Each walks the output (or source) shape with a multi-index counter, so
// every operand may be a strided view; index_select on contiguous tensors copies whole slices.
#include <cstring>

#include "tinytorch/backend/cpu/cpu_backend.h"

namespace tt::cpu {

namespace {

// Calls f(idx) for every multi-index of `shape` in row-major order.
template <typename F>
void for_each_index(const Shape& shape, F&& f) {
  int64_t n = numel_of(shape);
  if (n == 0) return;
  int64_t idx[kMaxDims] = {};
  const int nd = shape.size();
  for (int64_t k = 0; k < n; ++k) {
    f(static_cast<const int64_t*>(idx));
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t offset_of(const int64_t* idx, const Shape& strides, int skip_dim = -1, int64_t repl = 0) {
  int64_t off = 0;
  for (int d = 0; d < strides.size(); ++d) off += (d == skip_dim ? repl : idx[d]) * strides[d];
  return off;
}

// out[ix[i]] += src[i] for rows of E contiguous elements (Note in CpuBackend::scatter_add).
template <typename T>
void scatter_add_rows(T* out, int64_t out_ld, const T* src, int64_t src_ld, const int64_t* ix, int64_t ix_step,
                      int64_t N, int64_t E) {
  for (int64_t i = 0; i < N; ++i) {
    T* __restrict dst = out + ix[i * ix_step] * out_ld;
    const T* __restrict from = src + i * src_ld;
#pragma omp simd
    for (int64_t c = 0; c < E; ++c) dst[c] += from[c];
  }
}

}  // namespace

// out: in's shape with out.size(dim) = index.numel(); index: int64 [n].
void CpuBackend::index_select(const Tensor& out, const Tensor& in, int dim, const Tensor& index) {
  const int64_t* ix = index.data_ptr<int64_t>();
  const int64_t ixs = index.dim() == 0 ? 0 : index.stride(0);
  const size_t es = in.element_size();
  const char* src = static_cast<const char*>(in.raw_data_ptr());
  char* dst = static_cast<char*>(out.raw_data_ptr());
  if (in.is_contiguous() && out.is_contiguous()) {
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < dim; ++d) outer *= in.size(d);
    for (int d = dim + 1; d < in.dim(); ++d) inner *= in.size(d);
    const int64_t n = out.dim() == 0 ? 1 : out.size(dim), src_n = in.dim() == 0 ? 1 : in.size(dim);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j)
        std::memcpy(dst + ((o * n + j) * inner) * es, src + ((o * src_n + ix[j * ixs]) * inner) * es,
                    size_t(inner) * es);
    return;
  }
  for_each_index(out.shape(), [&](const int64_t* idx) {
    int64_t so = offset_of(idx, in.strides(), dim, ix[idx[dim] * ixs]);
    int64_t oo = offset_of(idx, out.strides());
    std::memcpy(dst + oo * int64_t(es), src + so * int64_t(es), es);
  });
}

// out, index: same shape; out[i] = in[i with i[dim] = index[i]].
void CpuBackend::gather(const Tensor& out, const Tensor& in, int dim, const Tensor& index) {
  const int64_t* ix = index.data_ptr<int64_t>();
  const size_t es = in.element_size();
  const char* src = static_cast<const char*>(in.raw_data_ptr());
  char* dst = static_cast<char*>(out.raw_data_ptr());
  for_each_index(out.shape(), [&](const int64_t* idx) {
    int64_t j = ix[offset_of(idx, index.strides())];
    int64_t so = offset_of(idx, in.strides(), dim, j);
    std::memcpy(dst + offset_of(idx, out.strides()) * int64_t(es), src + so * int64_t(es), es);
  });
}

// index, src: same shape; out[i with i[dim] = index[i]] += src[i].
void CpuBackend::scatter_add(const Tensor& out, int dim, const Tensor& index, const Tensor& src) {
  const int64_t* ix = index.data_ptr<int64_t>();
  // Whole rows: a [N, E] index that repeats one row id along its columns (stride 0, as the
  // gradients of embedding and index_select build it) adds row i of src into row ix[i] of out,
  // one vectorized loop per row instead of an index lookup per element.
  const bool rows = dim == 0 && out.dim() == 2 && index.stride(1) == 0 && out.stride(1) == 1 && src.stride(1) == 1 &&
                    index.size(1) == out.size(1);
  TT_DISPATCH_NUMERIC(out.dtype(), "scatter_add_", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    const scalar_t* s = src.data_ptr<scalar_t>();
    if (rows) {
      scatter_add_rows(o, out.stride(0), s, src.stride(0), ix, index.stride(0), index.size(0), index.size(1));
      return;
    }
    for_each_index(index.shape(), [&](const int64_t* idx) {
      int64_t j = ix[offset_of(idx, index.strides())];
      o[offset_of(idx, out.strides(), dim, j)] += s[offset_of(idx, src.strides())];
    });
  });
}

}  // namespace tt::cpu
