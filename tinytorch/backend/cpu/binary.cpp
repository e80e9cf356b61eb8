// CPU binary kernels, twin of cuda/binary.cu: out = op(a, b) for the binary ops of op_table.h
// (arithmetic and comparisons), with broadcasting. The loop is binary_loop.h's; this file
// instantiates it for the floating dtypes and binary_integral.cpp for the others, so that the two
// halves of the longest kernel file compile side by side.
#include "tinytorch/backend/cpu/binary_loop.h"

namespace tt::cpu {

namespace detail {
template void binary_typed<float>(BinaryOp, const Tensor&, const Tensor&, const Tensor&);
template void binary_typed<double>(BinaryOp, const Tensor&, const Tensor&, const Tensor&);
// Compiled in binary_integral.cpp.
extern template void binary_typed<int64_t>(BinaryOp, const Tensor&, const Tensor&, const Tensor&);
extern template void binary_typed<bool>(BinaryOp, const Tensor&, const Tensor&, const Tensor&);
}  // namespace detail

void CpuBackend::binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  TT_DISPATCH_ALL(a.dtype(), op_name(op), [&] { detail::binary_typed<scalar_t>(op, out, a, b); });
}

}  // namespace tt::cpu
