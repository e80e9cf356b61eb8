// Activations, each op's forward and backward side by side: softmax, log_softmax, GELU, SiLU,
// LeakyReLU. Forward and backward are fused Backend kernels (backend/cpu/softmax.cpp,
// backend/cpu/activation.cpp); this file holds dtype and dim checks, the graph bookkeeping, and
// the differentiable forms of the backward formulas used for double backward. No device code.
//
// Note [double backward of fused kernels]: a fused backward kernel is a black box to autograd,
// so a gradient computed by it has no graph and its own derivative would silently be zero. When
// a backward runs under grad mode (create_graph = true) and its inputs require grad, it is built
// from differentiable tensor ops instead:
//   softmax      dx = y * (dy - sum(dy * y))          log_softmax  dx = dy - exp(y) * sum(dy)
//   silu         dx = dy * s * (1 + x (1 - s)), s = sigmoid(x)
//   leaky_relu   dx = where(x > 0, dy, slope * dy)
// GELU's derivative needs erf, which is no tensor op, so gelu_backward is itself an op (GeluGrad)
// whose forward is the fused kernel and whose backward uses GELU'' (plain exp/tanh algebra) and
// gelu_backward again: every order of derivative is right.
#include "tinytorch/ops/activation.h"

#include <cmath>

#include "tinytorch/ops/autocast_hook.h"
#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/reduction.h"

namespace tt {

namespace {

using autograd::SavedVariable;
using autograd::TensorList;

void check_floating(const Tensor& x, const char* op) {
  TT_CHECK_DTYPE(x.is_floating_point(), op, ": expected a floating-point input (float32, float64 or bfloat16), got ",
                 x.dtype(), "; convert it first, e.g. x.to(tt::kFloat32)");
}

void check_grad_pair(const Tensor& grad, const Tensor& t, const char* op) {
  TT_CHECK_SHAPE(grad.shape() == t.shape(), op, ": grad_out and the saved tensor must have the same shape, got ",
                 grad.shape(), " and ", t.shape());
  detail::check_same_device(op, {&grad, &t});
}

// True when a backward must be built from differentiable ops (Note [double backward of fused kernels]).
bool differentiable_backward(const Tensor& a, const Tensor& b) {
  return GradMode::is_enabled() && (a.requires_grad() || b.requires_grad());
}

// grad in the dtype of the tensor it is paired with (the kernels take one dtype).
Tensor as_dtype_of(const Tensor& grad, const Tensor& t) { return grad.dtype() == t.dtype() ? grad : grad.to(t.dtype()); }

// --- softmax / log_softmax ----------------------------------------------------------------------

Tensor softmax_grad(const Tensor& dy, const Tensor& y, int dim, bool log) {
  const char* name = log ? "log_softmax_backward" : "softmax_backward";
  check_floating(y, name);
  check_grad_pair(dy, y, name);
  if (differentiable_backward(dy, y)) {
    const Shape dims{dim};
    if (log) return dy - exp(y) * sum(dy, dims, /*keepdim=*/true);
    return y * (dy - sum(dy * y, dims, /*keepdim=*/true));
  }
  Tensor dx = empty(y.shape(), y.options());
  backend_for(y.device()).softmax_backward(dx, as_dtype_of(dy, y), y, dim, log);
  return dx;
}

template <bool kLog>
struct SoftmaxOp {
  static constexpr const char* kName = kLog ? "LogSoftmaxBackward0" : "SoftmaxBackward0";
  struct Saved {
    SavedVariable out;
    int dim = 0;
  };
  // x: [*] float -> [*], softmax along dim (already wrapped).
  static Tensor forward(const Tensor& x, int dim) {
    Tensor out = empty(x.shape(), x.options());
    backend_for(x.device()).softmax(out, x, dim, kLog);
    return out;
  }
  static TensorList backward(const Saved& s, const TensorList& g) {
    if (!g[0].defined()) return {Tensor()};
    return {softmax_grad(g[0], s.out.unpack(), s.dim, kLog)};
  }
};

template <bool kLog>
Tensor softmax_impl(const Tensor& x, int64_t dim) {
  using Op = SoftmaxOp<kLog>;
  const char* name = kLog ? "log_softmax" : "softmax";
  check_floating(x, name);
  const int d = wrap_dim(dim, x.dim(), name);
  Tensor out = Op::forward(x, d);
  if (auto node = autograd::make_node<Op>({&x})) {
    autograd::set_history(out, node);
    node->saved.out = autograd::save_output(out, *node);
    node->saved.dim = d;
  }
  return out;
}

// --- GELU, SiLU, LeakyReLU ------------------------------------------------------------------------

ActivationOp gelu_kind(const std::string& approximate, const char* op) {
  if (approximate == "none") return ActivationOp::Gelu;
  if (approximate == "tanh") return ActivationOp::GeluTanh;
  throw Error(detail::concat(op, ": approximate must be \"none\" (exact, erf) or \"tanh\", got \"",
                             approximate, "\""));
}

Tensor activation_kernel(ActivationOp op, const Tensor& x, double param) {
  Tensor out = empty(x.shape(), x.options());
  backend_for(x.device()).activation(op, out, x, param);
  return out;
}

Tensor activation_grad_kernel(ActivationOp op, const Tensor& dy, const Tensor& x, double param) {
  Tensor dx = empty(x.shape(), x.options());
  backend_for(x.device()).activation_backward(op, dx, as_dtype_of(dy, x), x, param);
  return dx;
}

// GELU''(x), from differentiable ops (see Note [double backward of fused kernels]).
//   exact: phi(x) (2 - x^2)
//   tanh:  with u = k (x + c x^3), t = tanh(u): (1 - t^2) (u' + x/2 (u'' - 2 t u'^2)),
//          u' = k (1 + 3 c x^2), u'' = 6 k c x
Tensor gelu_second_derivative(const Tensor& x, ActivationOp op) {
  constexpr double kInvSqrt2Pi = 0.39894228040143267794, k = 0.79788456080286535588, c = 0.044715;
  const Tensor x2 = x * x;
  if (op == ActivationOp::Gelu) return exp(x2 * -0.5) * kInvSqrt2Pi * (2.0 - x2);
  const Tensor t = tanh((x + x2 * x * c) * k);
  const Tensor du = (x2 * (3 * c) + 1.0) * k;
  const Tensor d2u = x * (6 * k * c);
  return (1.0 - t * t) * (du + x * 0.5 * (d2u - t * du * du * 2.0));
}

Tensor gelu_grad(const Tensor& dy, const Tensor& x, ActivationOp op);

// gelu_backward as a differentiable op: dx = dy * GELU'(x).
struct GeluGrad {
  static constexpr const char* kName = "GeluBackwardBackward0";
  struct Saved {
    SavedVariable dy, x;
    ActivationOp op = ActivationOp::Gelu;
  };
  // d/d(dy) = g * GELU'(x) (gelu_backward again), d/dx = g * dy * GELU''(x).
  static TensorList backward(const Saved& s, const TensorList& g) {
    if (!g[0].defined()) return {Tensor(), Tensor()};
    Tensor dy = s.dy.unpack(), x = s.x.unpack();
    return {gelu_grad(g[0], x, s.op), g[0] * dy * gelu_second_derivative(x, s.op)};
  }
};

Tensor gelu_grad(const Tensor& dy, const Tensor& x, ActivationOp op) {
  check_grad_pair(dy, x, "gelu_backward");
  Tensor dx = activation_grad_kernel(op, dy, x, 0.0);
  if (auto node = autograd::make_node<GeluGrad>({&dy, &x})) {
    node->saved.dy = SavedVariable(dy);
    node->saved.x = SavedVariable(x);
    node->saved.op = op;
    autograd::set_history(dx, node);
  }
  return dx;
}

struct Gelu {
  static constexpr const char* kName = "GeluBackward0";
  struct Saved {
    SavedVariable x;
    ActivationOp op = ActivationOp::Gelu;
  };
  static TensorList backward(const Saved& s, const TensorList& g) {
    if (!g[0].defined()) return {Tensor()};
    return {gelu_grad(g[0], s.x.unpack(), s.op)};
  }
};

struct Silu {
  static constexpr const char* kName = "SiluBackward0";
  struct Saved {
    SavedVariable x;
  };
  static TensorList backward(const Saved& s, const TensorList& g) {
    if (!g[0].defined()) return {Tensor()};
    Tensor x = s.x.unpack(), dy = g[0];
    check_grad_pair(dy, x, "silu_backward");
    if (differentiable_backward(dy, x)) {
      const Tensor sig = sigmoid(x);
      return {dy * sig * (x * (1.0 - sig) + 1.0)};
    }
    return {activation_grad_kernel(ActivationOp::Silu, dy, x, 0.0)};
  }
};

struct LeakyRelu {
  static constexpr const char* kName = "LeakyReluBackward0";
  struct Saved {
    SavedVariable x;
    double slope = 0.01;
  };
  static TensorList backward(const Saved& s, const TensorList& g) {
    if (!g[0].defined()) return {Tensor()};
    Tensor x = s.x.unpack(), dy = g[0];
    check_grad_pair(dy, x, "leaky_relu_backward");
    if (differentiable_backward(dy, x)) return {where(x > 0.0, dy, dy * s.slope)};
    return {activation_grad_kernel(ActivationOp::LeakyRelu, dy, x, s.slope)};
  }
};

// Records a pointwise activation whose backward needs its input x.
template <typename Op>
std::shared_ptr<autograd::OpNode<Op>> record_pointwise(const Tensor& out, const Tensor& x) {
  auto node = autograd::make_node<Op>({&x});
  if (!node) return nullptr;
  node->saved.x = SavedVariable(x);
  autograd::set_history(out, node);
  return node;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  if (auto cast = amp::autocast(AutocastOp::softmax, {x})) return softmax(cast[0], dim);
  return softmax_impl<false>(x, dim);
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  if (auto cast = amp::autocast(AutocastOp::log_softmax, {x})) return log_softmax(cast[0], dim);
  return softmax_impl<true>(x, dim);
}

Tensor softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim) {
  return softmax_grad(grad_out, out, wrap_dim(dim, out.dim(), "softmax_backward"), false);
}
Tensor log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim) {
  return softmax_grad(grad_out, out, wrap_dim(dim, out.dim(), "log_softmax_backward"), true);
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  const ActivationOp op = gelu_kind(approximate, "gelu");
  check_floating(x, "gelu");
  Tensor out = activation_kernel(op, x, 0.0);
  if (auto node = record_pointwise<Gelu>(out, x)) node->saved.op = op;
  return out;
}

Tensor gelu_backward(const Tensor& grad_out, const Tensor& x, const std::string& approximate) {
  const ActivationOp op = gelu_kind(approximate, "gelu_backward");
  check_floating(x, "gelu_backward");
  return gelu_grad(grad_out, x, op);
}

Tensor silu(const Tensor& x) {
  check_floating(x, "silu");
  Tensor out = activation_kernel(ActivationOp::Silu, x, 0.0);
  record_pointwise<Silu>(out, x);
  return out;
}

// softplus (op registry): a composite, no kernel and no node of its own. softplus(z) =
// max(z, 0) + log1p(exp(-|z|)), with both kinks chosen by one where(): exp only ever sees an
// argument <= 0 (no overflow, and no inf * 0 = NaN in backward), and z = 0 takes the z side of
// -|z|, so the derivative there is exp(0) / (1 + exp(0)) = 1/2, as PyTorch's, not the 0 that
// relu(z) + log1p(exp(-abs(z))) would give.
Tensor softplus(const Tensor& x, double beta, double threshold) {
  if (auto cast = amp::autocast(AutocastOp::softplus, {x})) return softplus(cast[0], beta, threshold);
  check_floating(x, "softplus");
  TT_CHECK(beta != 0.0 && std::isfinite(beta), "softplus: beta must be finite and non-zero, got ", beta);
  const Tensor z = mul(x, beta);
  const Tensor positive = z > 0.0;
  const Tensor smooth = add(where(positive, z, 0.0), log1p(exp(where(positive, neg(z), z))));
  return where(z > threshold, x, div(smooth, beta));
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  check_floating(x, "leaky_relu");
  Tensor out = activation_kernel(ActivationOp::LeakyRelu, x, negative_slope);
  if (auto node = record_pointwise<LeakyRelu>(out, x)) node->saved.slope = negative_slope;
  return out;
}

}  // namespace tt
