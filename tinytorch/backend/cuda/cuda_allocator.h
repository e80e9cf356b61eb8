// The CUDA caching allocator's BlockPool of one device (backend/cuda/allocator.cu), for the CUDA
// graph's private pools (backend/cuda/graph.cu). Internal to the CUDA backend.
#pragma once

#include "tinytorch/core/block_pool.h"

namespace tt::cuda {

// The pool behind allocator_for(Device(kCUDA, index)), created on first use.
BlockPool& block_pool(int index);

}  // namespace tt::cuda
