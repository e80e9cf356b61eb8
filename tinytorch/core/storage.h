// Storage: one allocation of bytes on one device, shared by a tensor and all of its views.
// It also carries the version counter: every in-place write to any view bumps it, which is how
// autograd notices that a tensor saved for backward was modified. The counter is atomic: threads
// writing disjoint views of one storage each count (Note [threads] in autograd/node.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "tinytorch/core/device.h"

namespace tt {

class Allocator;

struct StorageImpl {
  // Owned storage: bytes from `allocator`.
  StorageImpl(size_t nbytes, Device device);
  // Borrowed storage (from_blob): `deleter` (may be empty) runs when the last user goes.
  StorageImpl(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  // Relaxed order is enough: the counter only has to count; what makes another thread's writes
  // visible is whatever synchronization hands the tensor over (a join, a lock).
  std::atomic<uint64_t> version{0};

 private:
  Allocator* allocator_ = nullptr;
  std::function<void(void*)> deleter_;
};

using Storage = std::shared_ptr<StorageImpl>;

}  // namespace tt
