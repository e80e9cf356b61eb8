// Elementwise ops: type promotion, broadcasting and dispatch to Backend::unary/binary/where, and
// each op's derivative beside it. The loops live in backend/cpu/elementwise.cpp (and its CUDA
// twin). A scalar operand (t * 2.5) is a wrapped 0-d tensor that never requires grad, so the
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

// A one-element CPU tensor holding a scalar operand (see Backend::binary).
Tensor wrapped_scalar(Scalar s, ScalarType dtype) { return full({}, s, TensorOptions(dtype)); }

Tensor binary_kernel(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = op_name(op);
  bool a_scalar = a.dim() == 0 && a.device().is_cpu() && b.device() != a.device();
  bool b_scalar = b.dim() == 0 && b.device().is_cpu() && a.device() != b.device();
  if (!a_scalar && !b_scalar) detail::check_same_device(name, {&a, &b});
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

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b);

Tensor binary_scalar(BinaryOp op, const Tensor& a, Scalar b) {
  if (op == BinaryOp::Sub) detail::check_sub_dtypes(a.dtype(), b.kind());
  ScalarType common = result_type(a, b);
  if (op == BinaryOp::Div && !is_floating_point(common)) common = kFloat32;
  TT_CHECK_DTYPE(!(op == BinaryOp::Pow && !is_floating_point(common) && !b.is_floating_point() &&
                   b.to<int64_t>() < 0),
                 "pow: integers to negative integer powers are not allowed, got a ", a.dtype(),
                 " tensor and exponent ", b.to<int64_t>(), "; convert the tensor to a floating-point dtype first");
  return binary_op(op, a, wrapped_scalar(b, common));
}

bool is_float_only(UnaryOp op) {
  return op != UnaryOp::Neg && op != UnaryOp::Abs && op != UnaryOp::Relu;
}

Tensor unary_kernel(UnaryOp op, const Tensor& a) {
  TT_CHECK_DTYPE(!(op == UnaryOp::Neg && a.dtype() == kBool), "neg: negation, the `-` operator, "
                 "on a bool tensor is not supported; use logical_not instead");
  TT_CHECK_DTYPE(!((op == UnaryOp::Abs || op == UnaryOp::Relu) && a.dtype() == kBool), op_name(op),
                 ": not supported for bool tensors");
  Tensor in = (is_float_only(op) && !a.is_floating_point()) ? to_dtype(a, kFloat32) : a;
  Tensor out = empty(in.shape(), in.options());
  backend_for(in.device()).unary(op, out, in);
  return out;
}

// --- derivatives ------------------------------------------------------------------------------
// g: the gradient of the output; results are reduced to each input's shape and dtype.
using autograd::SavedVariable;
using autograd::TensorList;
using autograd::reduce_grad;

struct BinarySaved {
  SavedVariable a, b, out;
  Shape a_shape, b_shape;
  ScalarType a_dtype = kFloat32, b_dtype = kFloat32;
  bool need_a = false, need_b = false;  // which inputs want a gradient
  // The gradient for each input, reduced to its shape and dtype; skipped where not needed.
  TensorList grads(const std::function<Tensor()>& ga, const std::function<Tensor()>& gb) const {
    return {need_a ? reduce_grad(ga(), a_shape, a_dtype) : Tensor(),
            need_b ? reduce_grad(gb(), b_shape, b_dtype) : Tensor()};
  }
};

struct Add {
  static constexpr const char* kName = "AddBackward0";
  using Saved = BinarySaved;
  static TensorList backward(const Saved& s, const TensorList& g) {
    return s.grads([&] { return g[0]; }, [&] { return g[0]; });
  }
};
struct Sub {
  static constexpr const char* kName = "SubBackward0";
  using Saved = BinarySaved;
  static TensorList backward(const Saved& s, const TensorList& g) {
    return s.grads([&] { return g[0]; }, [&] { return neg(g[0]); });
  }
};
struct Mul {
  static constexpr const char* kName = "MulBackward0";
  using Saved = BinarySaved;
  static TensorList backward(const Saved& s, const TensorList& g) {
    // TT_EXERCISE_BEGIN(04)
    return s.grads([&] { return mul(g[0], s.b.unpack()); }, [&] { return mul(g[0], s.a.unpack()); });
    // TT_EXERCISE_END
  }
};
struct Div {  // d(a/b) = da/b - a db/b²
  static constexpr const char* kName = "DivBackward0";
  using Saved = BinarySaved;
  static TensorList backward(const Saved& s, const TensorList& g) {
    Tensor b = s.b.unpack();
    Tensor ga = div(g[0], b);
    return s.grads([&] { return ga; }, [&] { return neg(div(mul(ga, s.a.unpack()), b)); });
  }
};
struct Pow {  // d(a^b) = b a^(b-1) da + a^b log(a) db, with the db term 0 where a == 0 (as PyTorch)
  static constexpr const char* kName = "PowBackward0";
  using Saved = BinarySaved;
  static TensorList backward(const Saved& s, const TensorList& g) {
    Tensor a = s.a.unpack(), b = s.b.unpack();
    return s.grads([&] { return mul(g[0], mul(b, pow(a, sub(b, 1)))); },
                   [&] {
                     Tensor out = s.out.unpack();
                     Tensor zero = scalar_tensor(0, out.options());
                     return where(eq(a, scalar_tensor(0, a.options())), zero, mul(g[0], mul(out, log(a))));
                   });
  }
};
// maximum/minimum: the gradient goes to the larger (smaller) input; ties split it in half.
template <bool kMax>
TensorList extremum_backward(const BinarySaved& s, const TensorList& g) {
  Tensor a = s.a.unpack(), b = s.b.unpack();
  Tensor half = where(eq(a, b), div(g[0], 2), g[0]);
  Tensor zero = scalar_tensor(0, half.options());
  return s.grads([&] { return where(kMax ? lt(a, b) : gt(a, b), zero, half); },
                 [&] { return where(kMax ? gt(a, b) : lt(a, b), zero, half); });
}
struct Maximum {
  static constexpr const char* kName = "MaximumBackward0";
  using Saved = BinarySaved;
  static TensorList backward(const Saved& s, const TensorList& g) { return extremum_backward<true>(s, g); }
};
struct Minimum {
  static constexpr const char* kName = "MinimumBackward0";
  using Saved = BinarySaved;
  static TensorList backward(const Saved& s, const TensorList& g) { return extremum_backward<false>(s, g); }
};

template <typename Op>
void record_binary(const Tensor& out, const Tensor& a, const Tensor& b, bool save_a, bool save_b, bool save_out) {
  auto node = autograd::make_node<Op>({&a, &b});
  if (!node) return;
  BinarySaved& s = node->saved;
  autograd::set_history(out, node);  // first: a saved output must see its grad_fn (no cycle)
  if (save_a) s.a = SavedVariable(a);
  if (save_b) s.b = SavedVariable(b);
  if (save_out) s.out = SavedVariable(out);
  s.a_shape = a.shape();
  s.b_shape = b.shape();
  s.a_dtype = a.dtype();
  s.b_dtype = b.dtype();
  s.need_a = a.requires_grad();
  s.need_b = b.requires_grad();
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel(op, a, b);
  if (!GradMode::is_enabled() || !(a.requires_grad() || b.requires_grad()) || !out.is_floating_point())
    return out;
  switch (op) {
    case BinaryOp::Add: record_binary<Add>(out, a, b, false, false, false); break;
    case BinaryOp::Sub: record_binary<Sub>(out, a, b, false, false, false); break;
    case BinaryOp::Mul: record_binary<Mul>(out, a, b, b.requires_grad(), a.requires_grad(), false); break;
    case BinaryOp::Div: record_binary<Div>(out, a, b, b.requires_grad(), true, false); break;
    case BinaryOp::Pow: record_binary<Pow>(out, a, b, true, true, b.requires_grad()); break;
    case BinaryOp::Maximum: record_binary<Maximum>(out, a, b, true, true, false); break;
    case BinaryOp::Minimum: record_binary<Minimum>(out, a, b, true, true, false); break;
    default: break;  // comparisons have no gradient
  }
  return out;
}

struct UnarySaved {
  SavedVariable in, out;
};
#define TT_UNARY_OP(Name, kname, formula)                                      \
  struct Name {                                                                \
    static constexpr const char* kName = kname;                                \
    using Saved = UnarySaved;                                                  \
    static TensorList backward(const Saved& s, const TensorList& grads) {      \
      const Tensor& g = grads[0];                                              \
      Tensor in = s.in.unpack(), out = s.out.unpack();                         \
      (void)in;                                                                \
      (void)out;                                                               \
      return {formula};                                                        \
    }                                                                          \
  };
TT_UNARY_OP(Neg, "NegBackward0", neg(g))
TT_UNARY_OP(Exp, "ExpBackward0", mul(g, out))                                        // e^x
TT_UNARY_OP(Log, "LogBackward0", div(g, in))                                         // 1/x
TT_UNARY_OP(Sqrt, "SqrtBackward0", div(g, mul(out, 2)))                              // 1/(2√x)
TT_UNARY_OP(Rsqrt, "RsqrtBackward0", mul(g, mul(pow(out, 3), -0.5)))                 // -x^(-3/2)/2
TT_UNARY_OP(Abs, "AbsBackward0", where(in > 0, g, where(in < 0, neg(g), zeros_like(g))))  // sign(x)
TT_UNARY_OP(Sin, "SinBackward0", mul(g, cos(in)))
TT_UNARY_OP(Cos, "CosBackward0", neg(mul(g, sin(in))))
TT_UNARY_OP(Tanh, "TanhBackward0", mul(g, sub(scalar_tensor(1, out.options()), mul(out, out))))  // 1 - tanh²
TT_UNARY_OP(Sigmoid, "SigmoidBackward0", mul(g, mul(out, sub(scalar_tensor(1, out.options()), out))))  // σ(1-σ)
TT_UNARY_OP(Relu, "ReluBackward0", where(out > 0, g, zeros_like(g)))
#undef TT_UNARY_OP

template <typename Op>
void record_unary(const Tensor& out, const Tensor& in, bool save_in, bool save_out) {
  auto node = autograd::make_node<Op>({&in});
  if (!node) return;
  autograd::set_history(out, node);  // first: a saved output must see its grad_fn (no cycle)
  if (save_in) node->saved.in = SavedVariable(in);
  if (save_out) node->saved.out = SavedVariable(out);
}

Tensor unary_op(UnaryOp op, const Tensor& a) {
  Tensor out = unary_kernel(op, a);
  if (!GradMode::is_enabled() || !a.requires_grad()) return out;
  switch (op) {
    case UnaryOp::Neg: record_unary<Neg>(out, a, false, false); break;
    case UnaryOp::Exp: record_unary<Exp>(out, a, false, true); break;
    case UnaryOp::Log: record_unary<Log>(out, a, true, false); break;
    case UnaryOp::Sqrt: record_unary<Sqrt>(out, a, false, true); break;
    case UnaryOp::Rsqrt: record_unary<Rsqrt>(out, a, false, true); break;
    case UnaryOp::Abs: record_unary<Abs>(out, a, true, false); break;
    case UnaryOp::Sin: record_unary<Sin>(out, a, true, false); break;
    case UnaryOp::Cos: record_unary<Cos>(out, a, true, false); break;
    case UnaryOp::Tanh: record_unary<Tanh>(out, a, false, true); break;
    case UnaryOp::Sigmoid: record_unary<Sigmoid>(out, a, false, true); break;
    case UnaryOp::Relu: record_unary<Relu>(out, a, false, true); break;
    default: break;
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
  if (op == BinaryOp::Div && !is_floating_point(rt)) rt = kFloat32;
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
  TT_CHECK_DTYPE(!is_float_only(op) || self.is_floating_point(), op_name(op),
                 "_: result type float32 can't be cast to the desired output type ", self.dtype());
  check_writable(self, op_name(op));
  if (inplace_needs_history(self, {}))  // Note [in-place ops and autograd]
    return adopt_result(self, unary_op(op, clone(self)), detail::concat(op_name(op), "_").c_str());
  backend_for(self.device()).unary(op, self, self);
  self.bump_version();
  return self;
}
}  // namespace detail

}  // namespace tt
