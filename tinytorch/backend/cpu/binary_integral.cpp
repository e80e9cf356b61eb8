// CPU binary kernels for the integral dtypes (int64, bool): binary_loop.h instantiated here, beside
// binary.cpp's floating half, so that the two compile side by side (binary_loop.h says why).
#include "tinytorch/backend/cpu/binary_loop.h"

namespace tt::cpu::detail {

template void binary_typed<int64_t>(BinaryOp, const Tensor&, const Tensor&, const Tensor&);
template void binary_typed<bool>(BinaryOp, const Tensor&, const Tensor&, const Tensor&);

}  // namespace tt::cpu::detail
