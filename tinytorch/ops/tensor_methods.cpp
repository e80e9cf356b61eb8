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

Tensor Tensor::to(ScalarType t, bool copy) const { return to_dtype(*this, t, copy); }
Tensor Tensor::to(Device d, bool copy) const { return to_device(*this, d, copy); }
Tensor Tensor::to(const TensorOptions& o, bool copy) const {
  Tensor r = to_device(*this, o.device(), copy);
  return to_dtype(r, o.dtype(), copy && r.is_same(*this));
}
Tensor Tensor::contiguous() const { return tt::contiguous(*this); }
Tensor Tensor::clone() const { return tt::clone(*this); }
Tensor& Tensor::copy_(const Tensor& src) { return tt::copy_(*this, src); }
Tensor& Tensor::fill_(Scalar v) { return tt::fill_(*this, v); }

Tensor Tensor::view(const Shape& s) const { return tt::view(*this, s); }
Tensor Tensor::reshape(const Shape& s) const { return tt::reshape(*this, s); }
Tensor Tensor::flatten(int64_t s, int64_t e) const { return tt::flatten(*this, s, e); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return tt::transpose(*this, a, b); }
Tensor Tensor::t() const {
  TT_CHECK_SHAPE(dim() <= 2, "t: expects a tensor with <= 2 dimensions, got ", dim(), "-d shape ", shape());
  return dim() < 2 ? tt::transpose(*this, 0, 0) : tt::transpose(*this, 0, 1);
}
Tensor Tensor::permute(const Shape& d) const { return tt::permute(*this, d); }
Tensor Tensor::unsqueeze(int64_t d) const { return tt::unsqueeze(*this, d); }
Tensor Tensor::squeeze() const { return tt::squeeze(*this); }
Tensor Tensor::squeeze(int64_t d) const { return tt::squeeze(*this, d); }
Tensor Tensor::expand(const Shape& s) const { return tt::expand(*this, s); }
Tensor Tensor::slice(int64_t d, int64_t s, int64_t e, int64_t st) const { return tt::slice(*this, d, s, e, st); }
Tensor Tensor::select(int64_t d, int64_t i) const { return tt::select(*this, d, i); }
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l) const { return tt::narrow(*this, d, s, l); }

std::vector<Tensor> Tensor::split(int64_t s, int64_t d) const { return tt::split(*this, s, d); }
std::vector<Tensor> Tensor::chunk(int64_t c, int64_t d) const { return tt::chunk(*this, c, d); }

Tensor Tensor::index_select(int64_t d, const Tensor& i) const { return tt::index_select(*this, d, i); }
Tensor Tensor::gather(int64_t d, const Tensor& i) const { return tt::gather(*this, d, i); }
Tensor Tensor::scatter_add(int64_t d, const Tensor& i, const Tensor& s) const { return tt::scatter_add(*this, d, i, s); }
Tensor& Tensor::scatter_add_(int64_t d, const Tensor& i, const Tensor& s) { return tt::scatter_add_(*this, d, i, s); }
Tensor Tensor::masked_fill(const Tensor& m, Scalar v) const { return tt::masked_fill(*this, m, v); }
Tensor& Tensor::masked_fill_(const Tensor& m, Scalar v) { return tt::masked_fill_(*this, m, v); }

Tensor Tensor::neg() const { return tt::neg(*this); }
Tensor Tensor::exp() const { return tt::exp(*this); }
Tensor Tensor::log() const { return tt::log(*this); }
Tensor Tensor::log1p() const { return tt::log1p(*this); }
Tensor Tensor::expm1() const { return tt::expm1(*this); }
Tensor Tensor::sqrt() const { return tt::sqrt(*this); }
Tensor Tensor::rsqrt() const { return tt::rsqrt(*this); }
Tensor Tensor::abs() const { return tt::abs(*this); }
Tensor Tensor::sin() const { return tt::sin(*this); }
Tensor Tensor::cos() const { return tt::cos(*this); }
Tensor Tensor::tanh() const { return tt::tanh(*this); }
Tensor Tensor::sigmoid() const { return tt::sigmoid(*this); }
Tensor Tensor::relu() const { return tt::relu(*this); }
Tensor Tensor::pow(const Tensor& e) const { return tt::pow(*this, e); }
Tensor Tensor::pow(Scalar e) const { return tt::pow(*this, e); }
Tensor Tensor::maximum(const Tensor& o) const { return tt::maximum(*this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return tt::minimum(*this, o); }
Tensor Tensor::add(const Tensor& o, Scalar alpha) const { return tt::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, Scalar alpha) const { return tt::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return tt::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return tt::div(*this, o); }
Tensor Tensor::eq(const Tensor& o) const { return tt::eq(*this, o); }
Tensor Tensor::ne(const Tensor& o) const { return tt::ne(*this, o); }
Tensor Tensor::lt(const Tensor& o) const { return tt::lt(*this, o); }
Tensor Tensor::le(const Tensor& o) const { return tt::le(*this, o); }
Tensor Tensor::gt(const Tensor& o) const { return tt::gt(*this, o); }
Tensor Tensor::ge(const Tensor& o) const { return tt::ge(*this, o); }

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

Tensor Tensor::sum() const { return tt::sum(*this); }
Tensor Tensor::sum(DimList d, bool k) const { return tt::sum(*this, d, k); }
Tensor Tensor::mean() const { return tt::mean(*this); }
Tensor Tensor::mean(DimList d, bool k) const { return tt::mean(*this, d, k); }
Tensor Tensor::max() const { return tt::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t d, bool k) const { return tt::max(*this, d, k); }
Tensor Tensor::min() const { return tt::min(*this); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t d, bool k) const { return tt::min(*this, d, k); }
Tensor Tensor::argmax() const { return tt::argmax(*this); }
Tensor Tensor::argmax(int64_t d, bool k) const { return tt::argmax(*this, d, k); }
Tensor Tensor::argmin() const { return tt::argmin(*this); }
Tensor Tensor::argmin(int64_t d, bool k) const { return tt::argmin(*this, d, k); }
Tensor Tensor::amax(DimList d, bool k) const { return tt::amax(*this, d, k); }
Tensor Tensor::amin(DimList d, bool k) const { return tt::amin(*this, d, k); }
Tensor Tensor::var() const { return tt::var(*this); }
Tensor Tensor::var(DimList d, int64_t c, bool k) const { return tt::var(*this, d, c, k); }
Tensor Tensor::std() const { return tt::std(*this); }
Tensor Tensor::std(DimList d, int64_t c, bool k) const { return tt::std(*this, d, c, k); }

Tensor Tensor::matmul(const Tensor& o) const { return tt::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return tt::mm(*this, o); }
Tensor Tensor::bmm(const Tensor& o) const { return tt::bmm(*this, o); }

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
