// Elementwise ops: type promotion, broadcasting and dispatch to Backend::unary/binary/where.
// The loops themselves live in backend/cpu/elementwise.cpp (and its CUDA twin).
#include "tinytorch/ops/elementwise.h"

#include "tinytorch/backend/backend.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/factory.h"

namespace tt {

namespace {

int category(ScalarType t) { return t == kBool ? 0 : (t == kInt64 ? 1 : 2); }

// PyTorch's rule: dimensioned tensors decide; a 0-d tensor or a scalar widens the result only
// when it is of a higher category (bool < integer < floating).
ScalarType combine(ScalarType dim_type, ScalarType other, bool other_is_scalar_value) {
  if (category(other) <= category(dim_type)) return dim_type;
  if (other_is_scalar_value && category(other) == 2) return kFloat32;  // default dtype
  return promote_types(dim_type, other);
}

// A one-element CPU tensor holding a scalar operand (see Backend::binary).
Tensor wrapped_scalar(Scalar s, ScalarType dtype) { return full({}, s, TensorOptions(dtype)); }

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  TT_CHECK_DEVICE(a.device() == b.device(), op,
                  ": expected all tensors to be on the same device, but found at least two devices, ",
                  a.device(), " and ", b.device());
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = op_name(op);
  bool a_scalar = a.dim() == 0 && a.device().is_cpu() && b.device() != a.device();
  bool b_scalar = b.dim() == 0 && b.device().is_cpu() && a.device() != b.device();
  if (!a_scalar && !b_scalar) check_same_device(a, b, name);
  if (op == BinaryOp::Sub) detail::check_sub_dtypes(a.dtype(), b.dtype());
  ScalarType common = result_type(a, b);
  if (op == BinaryOp::Div && !is_floating_point(common)) common = kFloat32;
  Tensor ac = to_dtype(a, common), bc = to_dtype(b, common);
  Shape shape = a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape(), name);
  Device dev = a_scalar ? b.device() : a.device();
  Tensor out = empty(shape, TensorOptions(is_comparison(op) ? kBool : common).device(dev));
  if (a_scalar) ac = to_device(ac, dev);  // only the second operand may stay a CPU scalar
  backend_for(dev).binary(op, out, ac, bc);
  return out;
}

Tensor binary_scalar(BinaryOp op, const Tensor& a, Scalar b) {
  if (op == BinaryOp::Sub) detail::check_sub_dtypes(a.dtype(), b.kind());
  ScalarType common = result_type(a, b);
  if (op == BinaryOp::Div && !is_floating_point(common)) common = kFloat32;
  TT_CHECK_DTYPE(!(op == BinaryOp::Pow && !is_floating_point(common) && !b.is_floating_point() &&
                   b.to<int64_t>() < 0),
                 "pow: integers to negative integer powers are not allowed, got a ", a.dtype(),
                 " tensor and exponent ", b.to<int64_t>(), "; convert the tensor to a floating-point dtype first");
  Tensor ac = to_dtype(a, common);
  Tensor out = empty(a.shape(), TensorOptions(is_comparison(op) ? kBool : common).device(a.device()));
  backend_for(a.device()).binary(op, out, ac, wrapped_scalar(b, common));
  return out;
}

bool is_float_only(UnaryOp op) {
  return op != UnaryOp::Neg && op != UnaryOp::Abs && op != UnaryOp::Relu;
}

Tensor unary_op(UnaryOp op, const Tensor& a) {
  TT_CHECK_DTYPE(!(op == UnaryOp::Neg && a.dtype() == kBool), "neg: negation, the `-` operator, "
                 "on a bool tensor is not supported; use logical_not instead");
  TT_CHECK_DTYPE(!((op == UnaryOp::Abs || op == UnaryOp::Relu) && a.dtype() == kBool), op_name(op),
                 ": not supported for bool tensors");
  Tensor in = (is_float_only(op) && !a.is_floating_point()) ? to_dtype(a, kFloat32) : a;
  Tensor out = empty(in.shape(), in.options());
  backend_for(in.device()).unary(op, out, in);
  return out;
}

}  // namespace

ScalarType result_type(const Tensor& a, const Tensor& b) {
  if (a.dtype() == b.dtype()) return a.dtype();
  bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote_types(a.dtype(), b.dtype());
  return a0 ? combine(b.dtype(), a.dtype(), false) : combine(a.dtype(), b.dtype(), false);
}

ScalarType result_type(const Tensor& a, Scalar b) {
  return combine(a.dtype(), b.kind(), true);
}

namespace {
void check_alpha(const Tensor& a, const Tensor& b, Scalar alpha, const char* op) {
  TT_CHECK_DTYPE(!alpha.is_floating_point() || is_floating_point(result_type(a, b)), op,
                 ": for integral input tensors, argument alpha must not be a floating point number, got ",
                 alpha.to<double>());
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
  check_alpha(a, b, alpha, "add");
  if (alpha.to<double>() == 1.0) return binary_op(BinaryOp::Add, a, b);
  return binary_op(BinaryOp::Add, a, mul(b, alpha));
}
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha) {
  detail::check_sub_dtypes(a.dtype(), b.dtype());
  check_alpha(a, b, alpha, "sub");
  if (alpha.to<double>() == 1.0) return binary_op(BinaryOp::Sub, a, b);
  return binary_op(BinaryOp::Sub, a, mul(b, alpha));
}
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Pow, a, b); }
Tensor pow(const Tensor& a, Scalar b) { return binary_scalar(BinaryOp::Pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Minimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Ge, a, b); }
Tensor add(const Tensor& a, Scalar b) { return binary_scalar(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, Scalar b) { return binary_scalar(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, Scalar b) { return binary_scalar(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, Scalar b) { return binary_scalar(BinaryOp::Div, a, b); }

Tensor neg(const Tensor& a) { return unary_op(UnaryOp::Neg, a); }
Tensor exp(const Tensor& a) { return unary_op(UnaryOp::Exp, a); }
Tensor log(const Tensor& a) { return unary_op(UnaryOp::Log, a); }
Tensor sqrt(const Tensor& a) { return unary_op(UnaryOp::Sqrt, a); }
Tensor rsqrt(const Tensor& a) { return unary_op(UnaryOp::Rsqrt, a); }
Tensor abs(const Tensor& a) { return unary_op(UnaryOp::Abs, a); }
Tensor sin(const Tensor& a) { return unary_op(UnaryOp::Sin, a); }
Tensor cos(const Tensor& a) { return unary_op(UnaryOp::Cos, a); }
Tensor tanh(const Tensor& a) { return unary_op(UnaryOp::Tanh, a); }
Tensor sigmoid(const Tensor& a) { return unary_op(UnaryOp::Sigmoid, a); }
Tensor relu(const Tensor& a) { return unary_op(UnaryOp::Relu, a); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  TT_CHECK_DTYPE(cond.dtype() == kBool, "where: expected condition to be a bool tensor, got dtype ",
                 cond.dtype());
  check_same_device(cond, a, "where");
  check_same_device(a, b, "where");
  ScalarType common = result_type(a, b);
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = empty(shape, a.options().dtype(common));
  backend_for(out.device()).where(out, cond, to_dtype(a, common), to_dtype(b, common));
  return out;
}
Tensor where(const Tensor& cond, const Tensor& a, Scalar b) {
  return where(cond, a, full({}, b, a.options().dtype(result_type(a, b))));
}
Tensor where(const Tensor& cond, Scalar a, const Tensor& b) {
  return where(cond, full({}, a, b.options().dtype(result_type(b, a))), b);
}

// --- in-place forms, shared by Tensor::add_ and friends --------------------------------------
namespace detail {
bool can_cast(ScalarType from, ScalarType to) { return category(from) <= category(to); }

void check_sub_dtypes(ScalarType a, ScalarType b) {
  TT_CHECK_DTYPE(a != kBool && b != kBool, "sub: subtraction, the `-` operator, with a bool tensor "
                 "is not supported, got ", a, " and ", b, "; to invert a mask use logical_not");
}

Tensor& binary_inplace(BinaryOp op, Tensor& self, const Tensor& other) {
  const char* name = op_name(op);
  if (op == BinaryOp::Sub) check_sub_dtypes(self.dtype(), other.dtype());
  ScalarType rt = result_type(self, other);
  if (op == BinaryOp::Div && !is_floating_point(rt)) rt = kFloat32;
  TT_CHECK_DTYPE(can_cast(rt, self.dtype()), name, "_: result type ", rt,
                 " can't be cast to the desired output type ", self.dtype());
  bool other_scalar = other.dim() == 0 && other.device().is_cpu();
  if (!other_scalar) check_same_device(self, other, name);
  TT_CHECK_SHAPE(broadcast_shapes(self.shape(), other.shape(), name) == self.shape(), name,
                 "_: output with shape ", self.shape(), " doesn't match the broadcast shape of ",
                 self.shape(), " and ", other.shape());
  check_writable(self, name);
  // Note [overlapping in-place operands]
  backend_for(self.device()).binary(op, self, self, unaliased(to_dtype(other, self.dtype()), self));
  self.bump_version();
  return self;
}

Tensor& binary_inplace(BinaryOp op, Tensor& self, Scalar other) {
  if (op == BinaryOp::Sub) check_sub_dtypes(self.dtype(), other.kind());
  ScalarType rt = result_type(self, other);
  if (op == BinaryOp::Div && !is_floating_point(rt)) rt = kFloat32;
  TT_CHECK_DTYPE(can_cast(rt, self.dtype()), op_name(op), "_: result type ", rt,
                 " can't be cast to the desired output type ", self.dtype());
  check_writable(self, op_name(op));
  backend_for(self.device()).binary(op, self, self, wrapped_scalar(other, self.dtype()));
  self.bump_version();
  return self;
}

Tensor& unary_inplace(UnaryOp op, Tensor& self) {
  TT_CHECK_DTYPE(!is_float_only(op) || self.is_floating_point(), op_name(op),
                 "_: result type float32 can't be cast to the desired output type ", self.dtype());
  check_writable(self, op_name(op));
  backend_for(self.device()).unary(op, self, self);
  self.bump_version();
  return self;
}
}  // namespace detail

}  // namespace tt
