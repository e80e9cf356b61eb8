// CUDA binary kernels, twin of cpu/binary.cpp: out = op(a, b) for the binary ops of op_table.h
// (arithmetic and comparisons), with broadcasting. The scalar math is functors.h's, shared with the
// CPU; every map runs through launch_map (loop.cuh), as elementwise.cu's do.
#include <utility>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/loop.cuh"
#include "tinytorch/backend/visit.h"

namespace tt::cuda {

namespace {

// out = op(a, b). a, b: T, bcast to out; out: T, or bool for comparisons: the functor's own result
// type, so each op instantiates only the kernel it launches (as cpu/binary.cpp does).
template <typename T>
void binary_typed(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  const MapArg<T> x = map_arg<T>(a), y = map_arg<T>(b);
  visit_binary(op, [&](auto f) {
    using out_t = decltype(f(std::declval<T>(), std::declval<T>()));
    launch_map<out_t>(out, f, x, y);
  });
}

}  // namespace

void CudaBackend::binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  DeviceGuard guard(out.device().index);
  TT_DISPATCH_ALL(a.dtype(), op_name(op), [&] { binary_typed<scalar_t>(op, out, a, b); });
}

}  // namespace tt::cuda
