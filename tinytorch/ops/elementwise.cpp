// Elementwise ops: type promotion, broadcasting and dispatch to Backend::unary/binary/where, and
// each op's derivative beside it. The loops live in backend/cpu/elementwise.cpp and binary.cpp
// (and their CUDA twins). A scalar operand (t * 2.5) is a wrapped 0-d tensor that never requires grad, so the
// tensor and scalar forms share one struct per op.
#include "tinytorch/ops/elementwise.h"

#include <functional>

#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/inplace.h"

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

// A one-element CPU tensor holding a scalar operand (see Backend::binary). Unlike full(), no range
// check: `t + 1e40` on a float32 tensor gives inf, as in PyTorch; an integer dtype here only ever
// receives an integer or bool scalar (result_type and can_cast see to that).
Tensor wrapped_scalar(Scalar s, ScalarType dtype) {
  Tensor t = empty({}, TensorOptions(dtype));
  backend_for(kCPU).fill(t, s);
  return t;
}

Tensor binary_kernel(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = op_name(op);
  bool a_scalar = a.dim() == 0 && a.device().is_cpu() && b.device() != a.device();
  bool b_scalar = b.dim() == 0 && b.device().is_cpu() && a.device() != b.device();
  if (!a_scalar && !b_scalar) detail::check_same_device(name, {&a, &b});
  if (op == BinaryOp::Sub) detail::check_sub_dtypes(a.dtype(), b.dtype());
  ScalarType common = result_type(a, b);
  if (binary_info(op).kind == BinaryKind::TrueDiv && !is_floating_point(common)) common = kFloat32;
  Tensor ac = to_dtype(a, common), bc = to_dtype(b, common);
  Shape shape = a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape(), name);
  Device dev = a_scalar ? b.device() : a.device();
  Tensor out = empty(shape, TensorOptions(is_comparison(op) ? kBool : common).device(dev));
  if (a_scalar) ac = to_device(ac, dev);  // only the second operand may stay a CPU scalar
  backend_for(dev).binary(op, out, ac, bc);
  return out;
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b);

Tensor binary_scalar(BinaryOp op, const Tensor& a, Scalar b) {
  if (op == BinaryOp::Sub) detail::check_sub_dtypes(a.dtype(), b.kind());
  ScalarType common = result_type(a, b);
  if (binary_info(op).kind == BinaryKind::TrueDiv && !is_floating_point(common)) common = kFloat32;
  TT_CHECK_DTYPE(!(op == BinaryOp::Pow && !is_floating_point(common) && !b.is_floating_point() &&
                   b.to<int64_t>() < 0),
                 "pow: integers to negative integer powers are not allowed, got a ", a.dtype(),
                 " tensor and exponent ", b.to<int64_t>(), "; convert the tensor to a floating-point dtype first");
  return binary_op(op, a, wrapped_scalar(b, common));
}

// Applies the op's dtype rule (core/op_table.h): Floating ops turn integer and bool inputs
// into float32, NoBool ops refuse bool.
Tensor unary_input(UnaryOp op, const Tensor& a) {
  const UnaryInfo& info = unary_info(op);
  switch (info.dtypes) {
    case DtypeRule::Floating: return a.is_floating_point() ? a : to_dtype(a, kFloat32);
    case DtypeRule::NoBool:
      TT_CHECK_DTYPE(a.dtype() != kBool, info.name, ": not supported for bool tensors", info.bool_hint);
      return a;
  }
  return a;
}

Tensor unary_kernel(UnaryOp op, const Tensor& a) {
  Tensor in = unary_input(op, a);
  Tensor out = empty(in.shape(), in.options());
  backend_for(in.device()).unary(op, out, in);
  return out;
}

// --- derivatives ------------------------------------------------------------------------------
// One autograd node per row of TT_UNARY_OPS and TT_BINARY_OPS (core/op_table.h), generated
// from the row: its name, what it saves and its derivative formula. The formulas read g (the
// output's gradient) and the saved in/out (unary) or a/b/out (binary); binary gradients are then
// summed back to each input's shape and dtype (broadcasting).
//
// Note [save policy]: a node saves a tensor only when a gradient it will compute reads it: the
// table gives, per gradient, the tensors its formula reads (saves_for_a, saves_for_b), and an
// input's gradient is computed only when that input requires grad. mul saves b only when a
// requires grad, so a frozen weight times an activation keeps no activation alive.
using autograd::SavedVariable;
using autograd::TensorList;
using autograd::reduce_grad;

// Helpers the table's derivative formulas call.
Tensor one_minus(const Tensor& t) { return sub(scalar_tensor(1, t.options()), t); }
// d(a*b)/da = b and d(a*b)/db = a: the gradient of one factor is g times the other.
Tensor mul_grad(const Tensor& g, const Tensor& other) {
  // TT_EXERCISE_BEGIN(04, 4)
  return mul(g, other);
  // TT_EXERCISE_END
}
// d(a^b)/da = b a^(b-1), and 0 where b == 0: a^0 is the constant 1, while the formula would give
// 0 * 0^-1 = 0 * inf = NaN at a = 0 (PyTorch's rule too).
Tensor pow_grad_base(const Tensor& g, const Tensor& a, const Tensor& b) {
  Tensor grad = mul(g, mul(b, pow(a, sub(b, 1))));
  return where(eq(b, scalar_tensor(0, b.options())), scalar_tensor(0, grad.options()), grad);
}
// d(a^b)/db = a^b log(a). Where a == 0 and b >= 0, a^b is 0 (or 1 at b = 0) on a neighbourhood of
// b and the gradient is 0, not 0 * -inf = NaN; where a == 0 and b < 0 it is inf * -inf = -inf.
// Both as PyTorch 1.13.
Tensor pow_grad_exponent(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out) {
  Tensor grad = mul(g, mul(out, log(a)));
  Tensor zero = scalar_tensor(0, grad.options());
  return where(eq(a, scalar_tensor(0, a.options())), where(ge(b, scalar_tensor(0, b.options())), zero, grad), grad);
}
// maximum/minimum: the gradient of x against the other operand y goes to x where x wins; ties
// split it in half.
Tensor extremum_grad(const Tensor& g, const Tensor& x, const Tensor& y, bool is_max) {
  Tensor half = where(eq(x, y), div(g, 2), g);
  return where(is_max ? lt(x, y) : gt(x, y), scalar_tensor(0, half.options()), half);
}

struct UnarySaved {
  SavedVariable in, out;
};

#define TT_UNARY_NODE(Enum, fn, node, dtypes, domain, saves, hint, ...)   \
  struct Enum##Backward {                                                 \
    static constexpr const char* kName = node;                            \
    using Saved = UnarySaved;                                             \
    static TensorList backward(const Saved& s, const TensorList& grads) { \
      const Tensor& g = grads[0];                                         \
      [[maybe_unused]] const Tensor in = s.in.unpack();                   \
      [[maybe_unused]] const Tensor out = s.out.unpack();                 \
      return {__VA_ARGS__};                                               \
    }                                                                     \
  };
TT_UNARY_OPS(TT_UNARY_NODE)
#undef TT_UNARY_NODE

template <typename Node>
void record_unary(const Tensor& out, const Tensor& in, uint8_t saves) {
  auto node = autograd::make_node<Node>({&in});
  if (!node) return;
  autograd::set_history(out, node);
  if (saves & kSaveIn) node->saved.in = SavedVariable(in);
  if (saves & kSaveOut) node->saved.out = autograd::save_output(out, *node);
}

Tensor unary_op(UnaryOp op, const Tensor& a) {
  Tensor out = unary_kernel(op, a);
  if (!GradMode::is_enabled() || !a.requires_grad()) return out;
  switch (op) {
#define TT_UNARY_RECORD(Enum, fn, node, dtypes, domain, saves, ...) \
  case UnaryOp::Enum: return record_unary<Enum##Backward>(out, a, saves), out;
    TT_UNARY_OPS(TT_UNARY_RECORD)
#undef TT_UNARY_RECORD
  }
  return out;
}

struct BinarySaved {
  SavedVariable a, b, out;
  Shape a_shape, b_shape;
  ScalarType a_dtype = kFloat32, b_dtype = kFloat32;
  bool need_a = false, need_b = false;  // which inputs want a gradient
};

#define TT_BINARY_NODE(Enum, fn, node, kind, saves_a, saves_b, grad_a, grad_b)                 \
  struct Enum##Backward {                                                                      \
    static constexpr const char* kName = node;                                                 \
    using Saved = BinarySaved;                                                                 \
    static TensorList backward(const Saved& s, const TensorList& grads) {                      \
      [[maybe_unused]] const Tensor& g = grads[0];                                             \
      [[maybe_unused]] const Tensor a = s.a.unpack();                                          \
      [[maybe_unused]] const Tensor b = s.b.unpack();                                          \
      [[maybe_unused]] const Tensor out = s.out.unpack();                                      \
      return {s.need_a ? reduce_grad(grad_a, s.a_shape, s.a_dtype) : Tensor(),                 \
              s.need_b ? reduce_grad(grad_b, s.b_shape, s.b_dtype) : Tensor()};                \
    }                                                                                          \
  };
TT_BINARY_OPS(TT_BINARY_NODE)
#undef TT_BINARY_NODE

// Records a differentiable binary op, saving what its gradients read (Note [save policy]).
template <typename Node>
void record_binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  auto node = autograd::make_node<Node>({&a, &b});
  if (!node) return;
  autograd::set_history(out, node);
  BinarySaved& s = node->saved;
  s.need_a = a.requires_grad();
  s.need_b = b.requires_grad();
  const BinaryInfo& info = binary_info(op);
  const uint8_t saves = (s.need_a ? info.saves_for_a : 0) | (s.need_b ? info.saves_for_b : 0);
  if (saves & kSaveA) s.a = SavedVariable(a);
  if (saves & kSaveB) s.b = SavedVariable(b);
  if (saves & kSaveOut) s.out = autograd::save_output(out, *node);
  s.a_shape = a.shape();
  s.b_shape = b.shape();
  s.a_dtype = a.dtype();
  s.b_dtype = b.dtype();
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel(op, a, b);
  if (!GradMode::is_enabled() || !(a.requires_grad() || b.requires_grad()) || !out.is_floating_point() ||
      is_comparison(op))
    return out;
  switch (op) {
#define TT_BINARY_RECORD(Enum, ...) \
  case BinaryOp::Enum: return record_binary<Enum##Backward>(op, out, a, b), out;
    TT_BINARY_OPS(TT_BINARY_RECORD)
#undef TT_BINARY_RECORD
  }
  return out;
}

struct Where {  // cond ? a : b
  static constexpr const char* kName = "WhereBackward0";
  struct Saved {
    SavedVariable cond;
    Shape a_shape, b_shape;
    ScalarType a_dtype = kFloat32, b_dtype = kFloat32;
    bool need_a = false, need_b = false;
  };
  static TensorList backward(const Saved& s, const TensorList& g) {
    Tensor cond = s.cond.unpack(), zero = scalar_tensor(0, g[0].options());
    return {Tensor(), s.need_a ? reduce_grad(where(cond, g[0], zero), s.a_shape, s.a_dtype) : Tensor(),
            s.need_b ? reduce_grad(where(cond, zero, g[0]), s.b_shape, s.b_dtype) : Tensor()};
  }
};

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

#define TT_UNARY_FUNCTION(Enum, fn, ...) \
  Tensor fn(const Tensor& a) { return unary_op(UnaryOp::Enum, a); }
TT_UNARY_OPS(TT_UNARY_FUNCTION)
#undef TT_UNARY_FUNCTION

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  TT_CHECK_DTYPE(cond.dtype() == kBool, "where: expected condition to be a bool tensor, got dtype ",
                 cond.dtype());
  detail::check_same_device("where", {&cond, &a, &b});
  ScalarType common = result_type(a, b);
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = empty(shape, a.options().dtype(common));
  backend_for(out.device()).where(out, cond, to_dtype(a, common), to_dtype(b, common));
  if (auto node = autograd::make_node<Where>({&cond, &a, &b})) {
    node->saved = {SavedVariable(cond), a.shape(), b.shape(), a.dtype(), b.dtype(), a.requires_grad(), b.requires_grad()};
    autograd::set_history(out, node);
  }
  return out;
}
namespace {
// cond, a: any shapes; s: a number -> a 0-d tensor of `common` on a's device. The number is an
// operand, not a fill: it is made in its own kind (float64, int64 or bool) and then cast, so that
// 1e300 beside a float32 tensor becomes inf as in PyTorch, where full's overflow check (meant for a
// value the caller asked to store) would refuse it with a message about a `full` nobody called.
Tensor where_scalar_operand(Scalar s, const Tensor& like, ScalarType common) {
  const ScalarType own = s.is_floating_point() ? kFloat64 : s.kind();
  return to_dtype(full({}, s, like.options().dtype(own)), common);
}
}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, Scalar b) {
  return where(cond, a, where_scalar_operand(b, a, result_type(a, b)));
}
Tensor where(const Tensor& cond, Scalar a, const Tensor& b) {
  return where(cond, where_scalar_operand(a, b, result_type(b, a)), b);
}

// --- in-place forms, shared by Tensor::add_ and friends --------------------------------------
namespace detail {
Tensor unary(UnaryOp op, const Tensor& a) { return unary_op(op, a); }
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) { return binary_op(op, a, b); }

bool can_cast(ScalarType from, ScalarType to) { return category(from) <= category(to); }

void check_sub_dtypes(ScalarType a, ScalarType b) {
  TT_CHECK_DTYPE(a != kBool && b != kBool, "sub: subtraction, the `-` operator, with a bool tensor "
                 "is not supported, got ", a, " and ", b, "; to invert a mask use logical_not");
}

Tensor& binary_inplace(BinaryOp op, Tensor& self, const Tensor& other) {
  const char* name = op_name(op);
  if (op == BinaryOp::Sub) check_sub_dtypes(self.dtype(), other.dtype());
  ScalarType rt = result_type(self, other);
  if (binary_info(op).kind == BinaryKind::TrueDiv && !is_floating_point(rt)) rt = kFloat32;
  TT_CHECK_DTYPE(can_cast(rt, self.dtype()), name, "_: result type ", rt,
                 " can't be cast to the desired output type ", self.dtype());
  bool other_scalar = other.dim() == 0 && other.device().is_cpu();
  if (!other_scalar) check_same_device(name, {&self, &other});
  TT_CHECK_SHAPE(broadcast_shapes(self.shape(), other.shape(), name) == self.shape(), name,
                 "_: output with shape ", self.shape(), " doesn't match the broadcast shape of ",
                 self.shape(), " and ", other.shape());
  check_writable(self, name);
  if (inplace_needs_history(self, {&other}))  // Note [in-place ops and autograd]
    return adopt_result(self, binary_op(op, clone(self), other), detail::concat(name, "_").c_str());
  // Note [overlapping in-place operands]
  backend_for(self.device()).binary(op, self, self, unaliased(to_dtype(other, self.dtype()), self));
  self.bump_version();
  return self;
}

Tensor& binary_inplace(BinaryOp op, Tensor& self, Scalar other) {
  if (op == BinaryOp::Sub) check_sub_dtypes(self.dtype(), other.kind());
  ScalarType rt = result_type(self, other);
  if (binary_info(op).kind == BinaryKind::TrueDiv && !is_floating_point(rt)) rt = kFloat32;
  TT_CHECK_DTYPE(can_cast(rt, self.dtype()), op_name(op), "_: result type ", rt,
                 " can't be cast to the desired output type ", self.dtype());
  check_writable(self, op_name(op));
  if (inplace_needs_history(self, {}))  // Note [in-place ops and autograd]
    return adopt_result(self, binary_op(op, clone(self), wrapped_scalar(other, self.dtype())),
                        detail::concat(op_name(op), "_").c_str());
  backend_for(self.device()).binary(op, self, self, wrapped_scalar(other, self.dtype()));
  self.bump_version();
  return self;
}

Tensor& unary_inplace(UnaryOp op, Tensor& self) {
  const UnaryInfo& info = unary_info(op);
  TT_CHECK_DTYPE(info.dtypes != DtypeRule::Floating || self.is_floating_point(), info.name,
                 "_: result type float32 can't be cast to the desired output type ", self.dtype());
  TT_CHECK_DTYPE(info.dtypes != DtypeRule::NoBool || self.dtype() != kBool, info.name,
                 "_: not supported for bool tensors", info.bool_hint);
  check_writable(self, op_name(op));
  if (inplace_needs_history(self, {}))  // Note [in-place ops and autograd]
    return adopt_result(self, unary_op(op, clone(self)), detail::concat(op_name(op), "_").c_str());
  backend_for(self.device()).unary(op, self, self);
  self.bump_version();
  return self;
}
}  // namespace detail

}  // namespace tt
