// Storage allocation and release through the device's allocator.
#include "tinytorch/core/storage.h"

#include "tinytorch/core/allocator.h"

namespace tt {

StorageImpl::StorageImpl(size_t n, Device dev) : nbytes(n), device(dev) {
  allocator_ = &allocator_for(dev);
  data = allocator_->allocate(n);
}

StorageImpl::StorageImpl(void* d, size_t n, Device dev, std::function<void(void*)> deleter)
    : data(d), nbytes(n), device(dev), deleter_(std::move(deleter)) {}

StorageImpl::~StorageImpl() {
  if (allocator_ != nullptr) {
    allocator_->deallocate(data, nbytes);
  } else if (deleter_) {
    deleter_(data);
  }
}

}  // namespace tt
