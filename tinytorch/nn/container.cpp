// Sequential's chain and the bounds-checked item access of both containers.
#include "tinytorch/nn/container.h"

namespace tt::nn {

namespace {

int64_t wrap_index(int64_t i, size_t size, const char* who) {
  int64_t n = int64_t(size);
  TT_CHECK_INDEX(i >= -n && i < n, who, ": index ", i, " is out of range for ", n, " items");
  return i < 0 ? i + n : i;
}

}  // namespace

Tensor Sequential::forward(const Tensor& x) const {
  Tensor y = x;
  for (const Item& item : items_) y = item.forward(y);
  return y;
}

std::shared_ptr<Module> Sequential::operator[](int64_t i) const {
  return items_[size_t(wrap_index(i, items_.size(), "Sequential"))].module;
}

std::shared_ptr<Module> ModuleList::operator[](int64_t i) const {
  return items_[size_t(wrap_index(i, items_.size(), "ModuleList"))];
}

}  // namespace tt::nn
