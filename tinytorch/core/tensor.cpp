// Tensor's methods that read or set the handle itself: sizes, strides, contiguity, the data
// pointer, the gradient. The methods that compute (each forwards to the op of the same name),
// item(), backward() and the operators are in ops/tensor_methods.cpp, above ops/ and autograd/,
// which they call.
#include "tinytorch/core/tensor.h"

#include <mutex>

namespace tt {

int64_t Tensor::size(int64_t d) const { return shape()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

// An empty tensor is contiguous whatever its strides (it has no element out of place), as PyTorch's.
bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  const TensorImpl& t = impl();
  for (int64_t s : t.shape)
    if (s == 0) return true;
  for (int d = t.shape.size() - 1; d >= 0; --d) {
    if (t.shape[d] == 1) continue;
    if (t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

void* Tensor::raw_data_ptr() const {
  const TensorImpl& t = impl();
  if (t.storage->data == nullptr) return nullptr;
  return static_cast<char*>(t.storage->data) + t.offset * int64_t(tt::element_size(t.dtype));
}

Tensor Tensor::grad() const {
  const TensorImpl& t = impl();
  std::lock_guard<std::recursive_mutex> lock(t.autograd_mutex);
  return t.grad ? Tensor(t.grad) : Tensor();
}

// Checked here, where the wrong gradient comes in, rather than at the optimizer step or the next
// backward that would trip over it.
void Tensor::set_grad(const Tensor& g) const {
  if (g.defined()) {
    TT_CHECK(!g.is_same(*this), "set_grad: a tensor cannot be its own gradient");
    TT_CHECK_SHAPE(g.shape() == shape(), "set_grad: assigned grad has a different shape: expected ", shape(),
                   " (the tensor's shape), got ", g.shape());
    TT_CHECK_DTYPE(g.dtype() == dtype(), "set_grad: assigned grad has a different dtype: expected ", dtype(),
                   " (the tensor's dtype), got ", g.dtype());
    TT_CHECK_DEVICE(g.device() == device(), "set_grad: assigned grad is on a different device: expected ",
                    device(), " (the tensor's device), got ", g.device());
  }
  TensorImpl& t = impl();
  std::lock_guard<std::recursive_mutex> lock(t.autograd_mutex);
  t.grad = g.defined() ? g.impl_ptr() : nullptr;
}

}  // namespace tt
