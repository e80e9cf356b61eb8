// CUDA elementwise kernels, twin of cpu/elementwise.cpp: copy (with dtype conversion), fill,
// unary, where, arange and transfer. The scalar math is functors.h's, shared with the CPU; every
// map runs through launch_map (loop.cuh): one vectorized kernel for contiguous same-shaped
// operands (Note [contiguous fast path]), the strided engine for views and broadcasts. Not here:
// binary ops (binary.cu), activations (activation.cu), random numbers (random.cu).
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/error_flag.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/loop.cuh"
#include "tinytorch/backend/visit.h"
#include "tinytorch/core/cuda_graph.h"

namespace tt::cuda {

namespace {

// static_cast to out_t: copy's dtype conversion, the same rule as the CPU (bool <-> numbers).
template <typename out_t>
struct CastTo {
  template <typename T>
  TT_HOST_DEVICE out_t operator()(T v) const { return static_cast<out_t>(v); }
};

// fill's value, fixed on the host.
template <typename T>
struct Constant {
  T value;
  TT_HOST_DEVICE T operator()() const { return value; }
};

// where: cond ? a : b.
struct Select {
  template <typename T>
  TT_HOST_DEVICE T operator()(bool cond, T a, T b) const { return cond ? a : b; }
};

// out = f(in). out, in: T, same shape, any strides.
template <typename T, typename F>
void unary_typed(const Tensor& out, const Tensor& in, const F& f) {
  launch_map<T>(out, f, map_arg<T>(in));
}

template <typename out_t, typename in_t>
void copy_typed(const Tensor& out, const Tensor& src) {
  launch_map<out_t>(out, CastTo<out_t>{}, map_arg<in_t>(src));
}

template <typename T>
void fill_typed(const Tensor& out, T value) {
  launch_map<T>(out, Constant<T>{value});
}

template <typename T>
void where_typed(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  launch_map<T>(out, Select{}, map_arg<bool>(cond), map_arg<T>(a), map_arg<T>(b));
}

// out: [n] contiguous. start + i * step rounded as the CPU does (no fused multiply-add).
template <typename T>
__global__ void arange_kernel(T* out, int64_t n, double start, double step) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    out[i] = static_cast<T>(__dadd_rn(start, __dmul_rn(double(i), step)));
}

template <typename T>
void arange_typed(const Tensor& out, double start, double step) {
  const int64_t n = out.numel();
  if (n == 0) return;
  launch(arange_kernel<T>, blocks_for(n), kThreads, 0, out.data_ptr<T>(), n, start, step);
}

}  // namespace

void CudaBackend::copy(const Tensor& out, const Tensor& src) {
  DeviceGuard guard(out.device().index);
  TT_DISPATCH_STORAGE(out.dtype(), "copy", [&] {
    using out_t = scalar_t;
    TT_DISPATCH_STORAGE(src.dtype(), "copy", [&] { copy_typed<out_t, scalar_t>(out, src); });
  });
}

void CudaBackend::fill(const Tensor& out, Scalar value) {
  DeviceGuard guard(out.device().index);
  TT_DISPATCH_STORAGE(out.dtype(), "fill_", [&] { fill_typed<scalar_t>(out, value.to<scalar_t>()); });
}

void CudaBackend::unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  DeviceGuard guard(out.device().index);
  TT_DISPATCH_ALL(in.dtype(), op_name(op), [&] {
    const bool ran = visit_unary<scalar_t>(op, [&](auto f) { unary_typed<scalar_t>(out, in, f); });
    TT_CHECK_DTYPE(ran, op_name(op), ": the kernel takes no ", in.dtype(), " tensors (ops/ converts or refuses them first)");
  });
}

void CudaBackend::where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  DeviceGuard guard(out.device().index);
  TT_DISPATCH_STORAGE(out.dtype(), "where", [&] { where_typed<scalar_t>(out, cond, a, b); });
}

void CudaBackend::arange(const Tensor& out, double start, double step) {
  DeviceGuard guard(out.device().index);
  TT_DISPATCH_NUMERIC(out.dtype(), "arange", [&] { arange_typed<scalar_t>(out, start, step); });
}

// Copies queued on the stream of the device involved (the destination's between two GPUs), after
// the kernels queued before them. A copy from or to the host, or between two GPUs, waits for itself
// (host memory may be reused or read on return; the source GPU's block may go back to its pool and
// be overwritten by that GPU's next kernel); a copy within one GPU does not block the host.
void CudaBackend::transfer(const Tensor& out, const Tensor& src) {
  const size_t bytes = size_t(src.numel()) * src.element_size();
  TT_CHECK(out.dtype() == src.dtype() && out.numel() == src.numel(),
           "transfer: out and src must have the same dtype and numel, got ", out.dtype(), " ", out.shape(), " and ",
           src.dtype(), " ", src.shape());
  TT_CHECK(out.is_contiguous() && src.is_contiguous(), "transfer: out and src must be contiguous, got strides ",
           out.strides(), " and ", src.strides());
  if (bytes == 0) return;
  // A copy to or from the host, or between GPUs, waits for the device: not while a graph captures.
  if (out.device() != src.device()) {
    const int d = out.is_cuda() ? out.device().index : src.device().index;
    TT_CHECK(!is_capturing(d) && !(out.is_cuda() && src.is_cuda() && is_capturing(src.device().index)),
             "transfer: copying from ", src.device(), " to ", out.device(), " cannot synchronize with the host while "
             "a CUDA graph is being captured (item(), .cpu(), .to() to another device); copy before capture_begin "
             "or read results after replay() (docs/cuda_graphs.md)");
  }
  void* dst = out.raw_data_ptr();
  const void* from = src.raw_data_ptr();
  if (out.is_cuda() && src.is_cuda()) {
    DeviceGuard guard(out.device().index);
    if (out.device().index == src.device().index) {
      TT_CUDA_CHECK(cudaMemcpyAsync(dst, from, bytes, cudaMemcpyDeviceToDevice, current_stream()));
    } else {
      // The source's stream must have finished writing it, and the copy must be done reading it before
      // the source's stream (which knows nothing of ours) can reuse its memory.
      TT_CUDA_CHECK(cudaStreamSynchronize(stream(src.device().index)));
      TT_CUDA_CHECK(cudaMemcpyPeerAsync(dst, out.device().index, from, src.device().index, bytes, current_stream()));
      TT_CUDA_CHECK(cudaStreamSynchronize(current_stream()));
    }
  } else if (out.is_cuda()) {
    DeviceGuard guard(out.device().index);
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, from, bytes, cudaMemcpyHostToDevice, current_stream()));
    queue_error_readback(out.device().index);  // Note [device error flag]: the host waits here
    TT_CUDA_CHECK(cudaStreamSynchronize(current_stream()));
    raise_device_error(out.device().index);
  } else {
    TT_CHECK_DEVICE(src.is_cuda(), "transfer: one of out and src must be on a CUDA device, got ", out.device(),
                    " and ", src.device());
    DeviceGuard guard(src.device().index);
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, from, bytes, cudaMemcpyDeviceToHost, current_stream()));
    queue_error_readback(src.device().index);  // Note [device error flag]: the host waits here
    TT_CUDA_CHECK(cudaStreamSynchronize(current_stream()));
    raise_device_error(src.device().index);
  }
}

}  // namespace tt::cuda
