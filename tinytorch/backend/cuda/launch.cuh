// launch(kernel, grid, block, shared_bytes, args...): every kernel of the backend starts here. It
// queues the kernel on the current device's stream and checks the launch; an empty grid (a problem
// with no elements) launches nothing, so no op depends on a kernel tolerating gridDim 0.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/stream.h"

namespace tt::cuda {

// kernel: a __global__ function, every template argument given (kernel<T, V>); args convert to its
// parameters as in a call.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, Args&&... args) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
  kernel<<<grid, block, shared_bytes, current_stream()>>>(static_cast<Params>(std::forward<Args>(args))...);
  TT_CUDA_CHECK_LAUNCH();
}

}  // namespace tt::cuda
