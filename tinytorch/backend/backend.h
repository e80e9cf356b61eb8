// The device seam: the Backend interface, one virtual per kernel of the registry (backend/
// kernels.h, Note [kernel registry]), and backend_for(device). ops/ calls the kernels through
// backend_for(device) and never touches raw memory itself; a backend knows nothing about
// autograd. Kernels read data, shapes and strides from the tensors they are given and write
// into `out` tensors that the op has already allocated with the right shape and dtype.
#pragma once

#include <cstdint>
#include <vector>

#include "tinytorch/backend/kernels.h"
#include "tinytorch/core/device.h"
#include "tinytorch/core/scalar.h"
#include "tinytorch/core/tensor.h"

namespace tt {

class Backend {
 public:
  virtual ~Backend() = default;

  // One pure virtual per kernel of the registry, with its documentation there (backend/kernels.h).
#define TT_KERNEL_VIRTUAL(name, bf16, ...) virtual void name(TT_KERNEL_PARAMS(__VA_ARGS__)) = 0;
  TT_KERNELS(TT_KERNEL_VIRTUAL)
#undef TT_KERNEL_VIRTUAL
};

// True when the last two dims of `m` can be handed to a BLAS GEMM as they are: one of them has
// stride 1 and the other a leading dimension large enough (plain or transposed layout). ops/
// makes a matrix contiguous first only when this is false.
bool blas_compatible(const Tensor& m);

// The backend of a device. Throws DeviceError when the build or the machine cannot use it.
Backend& backend_for(const Device& device);

}  // namespace tt
