// Tensor's methods and operators that compute: each forwards to the op of the same name in
// tinytorch/ops (or, for backward(), to the autograd engine). They live in ops/, not core/, because
// core/ sits below ops/ and autograd/ (docs/architecture.md, "Layers"); core/tensor.cpp keeps the
// methods that only read or set the handle.
#include <algorithm>

#include "tinytorch/autograd/engine.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/core/cuda_graph.h"
#include "tinytorch/core/tensor.h"
#include "tinytorch/ops/ops.h"

namespace tt {

Scalar Tensor::item() const {
  TT_CHECK_SHAPE(numel() == 1, "item: a tensor with ", numel(), " elements cannot be converted to a scalar, shape ", shape());
  TT_CHECK(!is_cuda() || !cuda::is_capturing(device().index), "item: reading a ", device(), " tensor cannot "
           "synchronize with the host while a CUDA graph is being captured; read it after replay() "
           "(docs/cuda_graphs.md)");
  Tensor c = device().is_cpu() ? *this : cpu();
  Scalar out;
  TT_DISPATCH_STORAGE(dtype(), "item", [&] { out = Scalar(*c.data_ptr<scalar_t>()); });
  return out;
}

Tensor& Tensor::requires_grad_(bool r) {
  TT_CHECK_DTYPE(!r || is_floating_point(), "requires_grad_: only tensors of floating-point dtype can "
                 "require gradients, got ", dtype());
  TT_CHECK(is_leaf(), "requires_grad_: you can only change the requires_grad flag of leaf tensors; "
           "this one was produced by ", impl().grad_fn->name(), ", use detach() to get a leaf");
  impl().requires_grad = r;
  return *this;
}

void Tensor::set_data(const Tensor& new_data) const {
  TT_CHECK(new_data.defined(), "set_data: the new data is undefined");
  TT_CHECK(is_leaf(), "set_data: only leaf tensors can take new data, this one was produced by ",
           impl().grad_fn->name());
  TT_CHECK_DTYPE(!requires_grad() || new_data.is_floating_point(), "set_data: a tensor that requires grad needs "
                 "floating-point data, got ", new_data.dtype());
  if (new_data.is_same(*this)) return;
  TensorImpl& self = impl();
  const TensorImpl& src = new_data.impl();
  const uint64_t old_version = self.storage->version.load();
  bool same_kind = self.dtype == src.dtype && self.storage->device == src.storage->device && self.shape == src.shape;
  self.storage = src.storage;
  self.offset = src.offset;
  self.shape = src.shape;
  self.strides = src.strides;
  self.dtype = src.dtype;
  // A backward that saved this tensor before the swap must notice: the new data's version is
  // moved past the old one, so SavedVariable's check fails instead of reading replaced values.
  self.storage->version.store(std::max(self.storage->version.load(), old_version + 1));
  if (!same_kind) {
    std::lock_guard<std::recursive_mutex> lock(self.autograd_mutex);
    self.grad = nullptr;
  }
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph);
}

Tensor Tensor::detach() const {
  return detail::make_tensor(storage(), storage_offset(), shape(), strides(), dtype());
}

// to(dtype) is the registry row `to` (Own: declared from core/op_registry.h, defined here).
Tensor Tensor::to(ScalarType t, bool copy) const { return to_dtype(*this, t, copy); }
Tensor Tensor::to(Device d, bool copy) const { return to_device(*this, d, copy); }
Tensor Tensor::to(const TensorOptions& o, bool copy) const {
  Tensor r = to_device(*this, o.device(), copy);
  return to_dtype(r, o.dtype(), copy && r.is_same(*this));
}
// Every Method / MethodMut / MethodF row of core/op_registry.h: tt::name(*this, args...).
TT_OPS(TT_DEFINE_METHOD)


// The in-place arithmetic: the OwnMut rows of core/op_registry.h, each one kernel of the op tables
// run in place (ops/elementwise.cpp, detail::binary_inplace and unary_inplace).
Tensor& Tensor::add_(const Tensor& o, Scalar alpha) {
  if (alpha.to<double>() == 1.0) return detail::binary_inplace(BinaryOp::Add, *this, o);
  return detail::binary_inplace(BinaryOp::Add, *this, tt::mul(o, alpha));
}
Tensor& Tensor::add_(Scalar o) { return detail::binary_inplace(BinaryOp::Add, *this, o); }
Tensor& Tensor::sub_(const Tensor& o, Scalar alpha) {
  detail::check_sub_dtypes(dtype(), o.dtype());
  if (alpha.to<double>() == 1.0) return detail::binary_inplace(BinaryOp::Sub, *this, o);
  return detail::binary_inplace(BinaryOp::Sub, *this, tt::mul(o, alpha));
}
Tensor& Tensor::sub_(Scalar o) { return detail::binary_inplace(BinaryOp::Sub, *this, o); }
Tensor& Tensor::mul_(const Tensor& o) { return detail::binary_inplace(BinaryOp::Mul, *this, o); }
Tensor& Tensor::mul_(Scalar o) { return detail::binary_inplace(BinaryOp::Mul, *this, o); }
Tensor& Tensor::div_(const Tensor& o) { return detail::binary_inplace(BinaryOp::Div, *this, o); }
Tensor& Tensor::div_(Scalar o) { return detail::binary_inplace(BinaryOp::Div, *this, o); }
Tensor& Tensor::neg_() { return detail::unary_inplace(UnaryOp::Neg, *this); }
Tensor& Tensor::exp_() { return detail::unary_inplace(UnaryOp::Exp, *this); }
Tensor& Tensor::relu_() { return detail::unary_inplace(UnaryOp::Relu, *this); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, Scalar b) { return add(a, b); }
Tensor operator-(const Tensor& a, Scalar b) { return sub(a, b); }
Tensor operator*(const Tensor& a, Scalar b) { return mul(a, b); }
Tensor operator/(const Tensor& a, Scalar b) { return div(a, b); }
Tensor operator+(Scalar a, const Tensor& b) { return add(b, a); }
Tensor operator-(Scalar a, const Tensor& b) {
  detail::check_sub_dtypes(a.kind(), b.dtype());
  return add(neg(b), a);
}
Tensor operator*(Scalar a, const Tensor& b) { return mul(b, a); }
Tensor operator/(Scalar a, const Tensor& b) {
  return div(full({}, a, b.options().dtype(result_type(b, a))), b);
}
Tensor operator-(const Tensor& a) { return neg(a); }

namespace {
Tensor scalar_like(const Tensor& t, Scalar s) {
  return full({}, s, TensorOptions(result_type(t, s)).device(t.device()));
}
}  // namespace
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, Scalar b) { return eq(a, scalar_like(a, b)); }
Tensor operator!=(const Tensor& a, Scalar b) { return ne(a, scalar_like(a, b)); }
Tensor operator<(const Tensor& a, Scalar b) { return lt(a, scalar_like(a, b)); }
Tensor operator<=(const Tensor& a, Scalar b) { return le(a, scalar_like(a, b)); }
Tensor operator>(const Tensor& a, Scalar b) { return gt(a, scalar_like(a, b)); }
Tensor operator>=(const Tensor& a, Scalar b) { return ge(a, scalar_like(a, b)); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
Tensor& operator+=(Tensor& a, Scalar b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, Scalar b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, Scalar b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, Scalar b) { return a.div_(b); }

}  // namespace tt
