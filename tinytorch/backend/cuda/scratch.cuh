// Scratch: a kernel's temporary device buffer drawn from the CUDA caching allocator, twin of
// cpu/scratch.h, so that tt::memory::stats(kCUDA) counts it and the .cu files need no tensor
// factory (ops/) to get one. Freed at the end of its scope: the kernels that use it are queued on
// the device's default stream before the free, and the allocator hands the block out again only
// to work queued after them on that same stream.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tinytorch/core/allocator.h"
#include "tinytorch/core/device.h"

namespace tt::cuda {

// n elements of T on CUDA device `device`.
template <typename T>
class Scratch {
 public:
  Scratch(int64_t n, int device)
      : bytes_(size_t(n) * sizeof(T)),
        device_(device),
        p_(static_cast<T*>(allocator_for(Device(kCUDA, device)).allocate(bytes_))) {}
  ~Scratch() { allocator_for(Device(kCUDA, device_)).deallocate(p_, bytes_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* data() const { return p_; }

 private:
  size_t bytes_;
  int device_;
  T* p_;
};
}  // namespace tt::cuda
