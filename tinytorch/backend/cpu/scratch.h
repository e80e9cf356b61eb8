// Scratch: a kernel's temporary buffer drawn from the CPU allocator, so that tt::memory::stats
// counts it (the attention lessons measure the kernels' memory with those stats).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tinytorch/core/allocator.h"

namespace tt::cpu {

template <typename T>
class Scratch {
 public:
  explicit Scratch(int64_t n)
      : bytes_(size_t(n) * sizeof(T)), p_(static_cast<T*>(allocator_for(kCPU).allocate(bytes_))) {}
  ~Scratch() { allocator_for(kCPU).deallocate(p_, bytes_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* data() const { return p_; }

 private:
  size_t bytes_;
  T* p_;
};

// The grain for parallel_for over attention tasks: tasks whose total work (multiply-adds) is
// below ~1M run on the calling thread; waking a second thread costs more than it saves there.
inline int64_t attention_grain(int64_t tasks, double work) { return work < double(1 << 20) ? tasks + 1 : 1; }

}  // namespace tt::cpu
