// CUDA indexing kernels: index_select, gather, scatter_add; twin of cpu/index.cpp. ops/ does not
// read CUDA indices on the host (Note [device error flag] in backend/device_error.h): these kernels
// check every index themselves, never touch memory outside a tensor for a bad one (a gathered
// element reads as 0, a scattered one is dropped) and record the first bad one in the device's
// error flag, as the op the caller named (detail::DeviceErrorScope), for the next sync to report.
// Every operand may be a strided view: each thread turns its linear position into a multi-index
// (IndexGeom). scatter_add adds with atomics, so float sums with repeated indices may differ in
// their last bits from run to run.
#include <algorithm>
#include <type_traits>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/error_flag.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/loop.cuh"

namespace tt::cuda {

namespace {

// A walked shape and, per dim, the element strides of the walked side (`plain`), of the side
// whose `dim` coordinate is replaced by the index value (`indexed`, its stride at `dim` kept apart
// in `indexed_dim_stride`), and of the index tensor (`ix`). Passed to kernels by value.
struct IndexGeom {
  int ndim = 0;
  int64_t numel = 1;
  int64_t dim_size = 1;  // the indexed side's size along dim: valid indices are [0, dim_size)
  int64_t indexed_dim_stride = 0;
  int64_t shape[kMaxDims];
  int64_t plain[kMaxDims], indexed[kMaxDims], ix[kMaxDims];

  // walked: the shape walked; plain_t: the tensor read or written at the walked position;
  // indexed_t: the tensor addressed with `dim` replaced; ix_strides: the index's strides per dim.
  IndexGeom(const Shape& walked, const Tensor& plain_t, const Tensor& indexed_t, int dim,
            const int64_t (&ix_strides)[kMaxDims]) {
    ndim = walked.size();
    for (int d = 0; d < ndim; ++d) {
      shape[d] = walked[d];
      numel *= walked[d];
      plain[d] = plain_t.stride(d);
      indexed[d] = d == dim ? 0 : indexed_t.stride(d);
      ix[d] = ix_strides[d];
    }
    if (ndim > 0) {
      dim_size = indexed_t.size(dim);
      indexed_dim_stride = indexed_t.stride(dim);
    }
  }

  // Offsets of linear position e: in the plain tensor, in the indexed one without its `dim` term,
  // and in the index tensor.
  __device__ __forceinline__ void offsets(int64_t e, int64_t& p, int64_t& q, int64_t& k) const {
    p = q = k = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = e % shape[d];
      e /= shape[d];
      p += i * plain[d];
      q += i * indexed[d];
      k += i * ix[d];
    }
  }
};

// out: the walked tensor (plain side), in: the indexed side -> out[pos] = in[pos with dim = index].
// Serves gather (index strides per dim) and the strided index_select (index stride only at dim).
template <typename T>
__global__ void gather_kernel(IndexGeom g, T* out, const T* in, const int64_t* index, DeviceErrorRecord* err,
                              DeviceErrorOp op) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < g.numel; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t p, q, k;
    g.offsets(e, p, q, k);
    const int64_t j = index[k];
    const bool ok = j >= 0 && j < g.dim_size;
    if (!ok) record_device_error(err, op, j, 0, g.dim_size);
    out[p] = ok ? in[q + j * g.indexed_dim_stride] : T(0);
  }
}

// in: contiguous [outer, src_n, inner], index: [n] (stride ixs) -> out: contiguous [outer, n, inner].
template <typename T>
__global__ void index_select_contiguous_kernel(T* out, const T* in, const int64_t* index, int64_t ixs, int64_t outer,
                                               int64_t n, int64_t src_n, int64_t inner, DeviceErrorRecord* err,
                                               DeviceErrorOp op) {
  const int64_t total = outer * n * inner;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = e % inner, t = e / inner;
    const int64_t i = t % n, o = t / n;
    const int64_t j = index[i * ixs];
    const bool ok = j >= 0 && j < src_n;
    if (!ok && c == 0) record_device_error(err, op, j, 0, src_n);
    out[e] = ok ? in[(o * src_n + j) * inner + c] : T(0);
  }
}

template <typename T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same<T, int64_t>::value) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else {
    atomicAdd(p, v);
  }
}

// src, index: the walked shape (src the plain side) -> out[pos with dim = index[pos]] += src[pos].
template <typename T>
__global__ void scatter_add_kernel(IndexGeom g, T* out, const T* src, const int64_t* index, DeviceErrorRecord* err,
                                   DeviceErrorOp op) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < g.numel; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t p, q, k;
    g.offsets(e, p, q, k);
    const int64_t j = index[k];
    if (j >= 0 && j < g.dim_size)
      atomic_add(out + q + j * g.indexed_dim_stride, src[p]);
    else
      record_device_error(err, op, j, 0, g.dim_size);
  }
}

// src: [N, E] (row stride src_ld, unit column stride), index: row i's id at i * ixs ->
// out[index[i], :] += src[i, :] (row stride out_ld, out_rows rows). Block x per source row
// (grid-stride), threads across the E columns: the embedding / index_select gradient.
template <typename T>
__global__ void scatter_add_rows_kernel(T* out, int64_t out_ld, int64_t out_rows, const T* src, int64_t src_ld,
                                        const int64_t* index, int64_t ixs, int64_t N, int64_t E, DeviceErrorRecord* err,
                                        DeviceErrorOp op) {
  for (int64_t i = blockIdx.x; i < N; i += gridDim.x) {
    const int64_t j = index[i * ixs];
    if (j < 0 || j >= out_rows) {
      if (threadIdx.x == 0) record_device_error(err, op, j, 0, out_rows);
      continue;
    }
    T* dst = out + j * out_ld;
    const T* from = src + i * src_ld;
    for (int64_t c = threadIdx.x; c < E; c += blockDim.x) atomic_add(dst + c, from[c]);
  }
}

// The index's strides as an array of kMaxDims (0 beyond its dims).
void strides_of(const Tensor& t, int64_t (&s)[kMaxDims]) {
  for (int d = 0; d < kMaxDims; ++d) s[d] = d < t.dim() ? t.stride(d) : 0;
}

}  // namespace

void CudaBackend::index_select(const Tensor& out, const Tensor& in, int dim, const Tensor& index) {
  DeviceGuard guard(out.device().index);
  if (out.numel() == 0) return;
  const int64_t* ix = index.data_ptr<int64_t>();
  const int64_t ixs = index.dim() == 0 ? 0 : index.stride(0);
  DeviceErrorRecord* err = device_error_record(out.device().index);
  const DeviceErrorOp op = tt::detail::device_error_op(DeviceErrorOp::kIndexSelect);
  TT_DISPATCH_STORAGE(in.dtype(), "index_select", [&] {
    scalar_t* dst = static_cast<scalar_t*>(out.raw_data_ptr());
    const scalar_t* src = static_cast<const scalar_t*>(in.raw_data_ptr());
    if (in.is_contiguous() && out.is_contiguous()) {
      int64_t outer = 1, inner = 1;
      for (int d = 0; d < dim; ++d) outer *= in.size(d);
      for (int d = dim + 1; d < in.dim(); ++d) inner *= in.size(d);
      const int64_t n = out.dim() == 0 ? 1 : out.size(dim), src_n = in.dim() == 0 ? 1 : in.size(dim);
      launch(index_select_contiguous_kernel<scalar_t>, blocks_for(outer * n * inner), kThreads, 0, dst, src, ix, ixs,
             outer, n, src_n, inner, err, op);
    } else {
      int64_t ix_strides[kMaxDims] = {};
      if (out.dim() > 0) ix_strides[dim] = ixs;
      const IndexGeom g(out.shape(), out, in, dim, ix_strides);
      launch(gather_kernel<scalar_t>, blocks_for(g.numel), kThreads, 0, g, dst, src, ix, err, op);
    }
  });
}

void CudaBackend::gather(const Tensor& out, const Tensor& in, int dim, const Tensor& index) {
  DeviceGuard guard(out.device().index);
  if (out.numel() == 0) return;
  int64_t ix_strides[kMaxDims];
  strides_of(index, ix_strides);
  const IndexGeom g(out.shape(), out, in, dim, ix_strides);
  DeviceErrorRecord* err = device_error_record(out.device().index);
  const DeviceErrorOp op = tt::detail::device_error_op(DeviceErrorOp::kGather);
  TT_DISPATCH_STORAGE(in.dtype(), "gather", [&] {
    launch(gather_kernel<scalar_t>, blocks_for(g.numel), kThreads, 0, g, static_cast<scalar_t*>(out.raw_data_ptr()),
           static_cast<const scalar_t*>(in.raw_data_ptr()), index.data_ptr<int64_t>(), err, op);
  });
}

void CudaBackend::scatter_add(const Tensor& out, int dim, const Tensor& index, const Tensor& src) {
  DeviceGuard guard(out.device().index);
  if (index.numel() == 0) return;
  const int64_t* ix = index.data_ptr<int64_t>();
  // Whole rows, as the CPU's fast path: a [N, E] index repeating one row id along its columns.
  const bool rows = dim == 0 && out.dim() == 2 && index.stride(1) == 0 && out.stride(1) == 1 && src.stride(1) == 1 &&
                    index.size(1) == out.size(1);
  DeviceErrorRecord* err = device_error_record(out.device().index);
  const DeviceErrorOp op = tt::detail::device_error_op(DeviceErrorOp::kScatterAdd);
  TT_DISPATCH_NUMERIC(out.dtype(), "scatter_add_", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    const scalar_t* s = src.data_ptr<scalar_t>();
    if (rows) {
      const int64_t N = index.size(0), E = index.size(1);
      const int threads = E >= 256 ? 256 : (E >= 128 ? 128 : (E >= 64 ? 64 : 32));
      const unsigned grid = unsigned(std::min<int64_t>(N, 1 << 30));
      launch(scatter_add_rows_kernel<scalar_t>, grid, threads, 0, o, out.stride(0), out.size(0), s, src.stride(0), ix,
             index.stride(0), N, E, err, op);
    } else {
      int64_t ix_strides[kMaxDims];
      strides_of(index, ix_strides);
      const IndexGeom g(index.shape(), src, out, dim, ix_strides);
      launch(scatter_add_kernel<scalar_t>, blocks_for(g.numel), kThreads, 0, g, o, s, ix, err, op);
    }
  });
}

}  // namespace tt::cuda
