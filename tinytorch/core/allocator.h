// Allocator: the per-device seam every tensor's bytes come from, and the memory statistics
// (current, peak, number of allocations) the attention lessons read to show O(N²) vs O(N).
// The CPU allocator is a caching allocator: freed blocks go back to a free list keyed by their
// (64-byte rounded) size and are handed out again, so a training loop stops calling malloc after
// its first step. Blocks are 64-byte aligned.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tinytorch/core/device.h"

namespace tt {

struct MemoryStats {
  int64_t allocated_bytes = 0;       // bytes held by live tensors now
  int64_t peak_allocated_bytes = 0;  // high-water mark of allocated_bytes since the last reset
  int64_t reserved_bytes = 0;        // allocated + cached (held from the system)
  int64_t num_allocs = 0;            // allocate() calls served (from cache or system)
  int64_t num_system_allocs = 0;     // of those, the ones that reached malloc / cudaMalloc
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;  // nbytes == 0 gives nullptr
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  virtual MemoryStats stats() const = 0;
  virtual void reset_peak_stats() = 0;
  virtual void empty_cache() = 0;  // returns cached, unused blocks to the system
};

// The allocator of a device. Throws DeviceError for a device this build cannot use. Defined at
// the device seam (backend/backend.cpp), beside backend_for: core/ knows no device but the CPU.
Allocator& allocator_for(const Device& device);
// The CPU's caching allocator (what allocator_for(kCPU) returns).
Allocator& cpu_allocator();

namespace memory {
MemoryStats stats(const Device& device = kCPU);
void reset_peak_stats(const Device& device = kCPU);
void empty_cache(const Device& device = kCPU);
}  // namespace memory

}  // namespace tt
