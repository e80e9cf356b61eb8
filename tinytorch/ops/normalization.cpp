// layer_norm and rms_norm, each op's forward and backward side by side. Forward and first-order
// backward are fused Backend kernels (backend/cpu/normalization.cpp); this file holds the checks,
// the flattening to rows, the graph bookkeeping and the differentiable form of each backward.
// No device code.
//
// Note [normalization as rows]: x: [*, normalized_shape] is seen as [R, C], C the product of the
// normalized dims, through reshape (differentiable, a view when x's layout allows), and weight
// and bias as [C]. The op structs below work on those 2-D views only; the public functions
// reshape the result back, so autograd routes the gradients through the reshapes as usual.
//
// Note [double backward of normalization]: the fused backward is a black box to autograd (see
// Note [double backward of fused kernels] in activation.cpp). When a backward runs under grad mode
// (create_graph = true) and dy, x or weight requires grad, it is built from tensor ops instead,
// recomputing the row statistics from x so that they too are differentiated:
//   layer_norm  xhat = (x - mean) * rstd, g = dy * w,
//               dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), dw = sum_rows(dy * xhat),
//               db = sum_rows(dy)
//   rms_norm    xhat = x * rstd, dx = rstd * (g - xhat * mean(g * xhat)), dw = sum_rows(dy * xhat)
// (means over the row). First-order gradients always come from the fused kernel.
#include "tinytorch/ops/normalization.h"

#include <limits>

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

// The rows of x for `normalized_shape` (Note [normalization as rows]), after checking every input.
struct Rows {
  int64_t R = 1, C = 1;
};

Rows check_inputs(const char* op, const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  TT_CHECK_DTYPE(x.is_floating_point(), op, ": expected a floating-point input (float32, float64 or bfloat16), got ",
                 x.dtype(), "; convert it first, e.g. x.to(tt::kFloat32)");
  const int k = normalized_shape.size(), nd = x.dim();
  TT_CHECK_SHAPE(k >= 1, op, ": normalized_shape must have at least one dim, got ", normalized_shape);
  bool match = nd >= k;
  for (int i = 0; i < k && match; ++i) match = x.size(nd - k + i) == normalized_shape[i];
  TT_CHECK_SHAPE(match, op, ": normalized_shape must equal the last ", k, " dims of the input, got normalized_shape ",
                 normalized_shape, " and input of shape ", x.shape());
  detail::check_same_device(op, {&x, &weight, &bias});
  for (const Tensor* p : {&weight, &bias}) {
    if (!p->defined()) continue;
    const char* what = p == &weight ? "weight" : "bias";
    TT_CHECK_SHAPE(p->shape() == normalized_shape, op, ": ", what, " must have shape normalized_shape ",
                   normalized_shape, ", got ", p->shape());
    TT_CHECK_DTYPE(p->dtype() == x.dtype(), op, ": ", what, " must have the input's dtype ", x.dtype(), ", got ",
                   p->dtype());
  }
  TT_CHECK(eps >= 0, op, ": eps must be >= 0, got ", eps);
  Rows rows;
  for (int d = 0; d < nd - k; ++d) rows.R *= x.size(d);
  for (int i = 0; i < k; ++i) rows.C *= normalized_shape[i];
  return rows;
}

// t as `shape`, without a reshape node when it already has that shape.
Tensor as_shape(const Tensor& t, const Shape& shape) {
  return !t.defined() || t.shape() == shape ? t : t.reshape(shape);
}

Tensor as_dtype_of(const Tensor& grad, const Tensor& t) { return grad.dtype() == t.dtype() ? grad : grad.to(t.dtype()); }

// True when a backward must be built from tensor ops (Note [double backward of normalization]).
bool differentiable_backward(const Tensor& dy, const Tensor& x, const Tensor& w) {
  return GradMode::is_enabled() && (dy.requires_grad() || x.requires_grad() || (w.defined() && w.requires_grad()));
}

// --- layer_norm -----------------------------------------------------------------------------------

// The composite backward of layer_norm (Note [double backward of normalization]).
// dy, x: [R, C]; w: [C] or undefined -> {dx, dw, db}.
TensorList layer_norm_grad_composite(const Tensor& dy, const Tensor& x, const Tensor& w, double eps) {
  // TT_EXERCISE_BEGIN(11, 3)
  const Shape row{1}, rows{0};
  const Tensor xc = x - mean(x, row, /*keepdim=*/true);
  const Tensor rstd = rsqrt(mean(xc * xc, row, true) + eps);
  const Tensor xhat = xc * rstd;
  const Tensor g = w.defined() ? dy * w : dy;
  const Tensor dx = rstd * (g - mean(g, row, true) - xhat * mean(g * xhat, row, true));
  return {dx, sum(dy * xhat, rows), sum(dy, rows)};
  // TT_EXERCISE_END
}

struct LayerNormOp {
  static constexpr const char* kName = "NativeLayerNormBackward0";
  struct Saved {
    SavedVariable x, weight, mean, rstd;
    double eps = 0;
    bool needs_x = false, needs_weight = false, needs_bias = false;
  };
  // x: [R, C], weight, bias: [C] or undefined -> y: [R, C], mean, rstd: [R] float64.
  static Tensor forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& mean,
                        Tensor& rstd) {
    const Tensor xc = x.detach().contiguous();
    Tensor y = empty(x.shape(), x.options());
    mean = empty({x.size(0)}, x.options().dtype(kFloat64));
    rstd = empty({x.size(0)}, x.options().dtype(kFloat64));
    backend_for(x.device())
        .layer_norm(y, mean, rstd, xc, weight.defined() ? weight.detach().contiguous() : Tensor(),
                    bias.defined() ? bias.detach().contiguous() : Tensor(), eps);
    return y;
  }
  static TensorList backward(const Saved& s, const TensorList& g) {
    if (!g[0].defined()) return {Tensor(), Tensor(), Tensor()};
    const Tensor x = s.x.unpack(), w = s.weight.unpack();
    const Tensor dy = as_dtype_of(g[0], x);
    TT_CHECK_SHAPE(dy.shape() == x.shape(), "layer_norm_backward: grad_out must have the input's shape ", x.shape(),
                   ", got ", dy.shape());
    if (differentiable_backward(dy, x, w)) {
      TensorList r = layer_norm_grad_composite(dy, x, w, s.eps);
      return {s.needs_x ? r[0] : Tensor(), s.needs_weight ? r[1] : Tensor(), s.needs_bias ? r[2] : Tensor()};
    }
    const int64_t C = x.size(1);
    Tensor dx = s.needs_x ? empty(x.shape(), x.options()) : Tensor();
    Tensor dw = s.needs_weight ? empty({C}, x.options()) : Tensor();
    Tensor db = s.needs_bias ? empty({C}, x.options()) : Tensor();
    backend_for(x.device())
        .layer_norm_backward(dx, dw, db, dy.contiguous(), x.contiguous(), s.mean.unpack(), s.rstd.unpack(),
                             w.defined() ? w.contiguous() : Tensor());
    return {dx, dw, db};
  }
};

// --- rms_norm -------------------------------------------------------------------------------------

// The composite backward of rms_norm (Note [double backward of normalization]). -> {dx, dw}.
TensorList rms_norm_grad_composite(const Tensor& dy, const Tensor& x, const Tensor& w, double eps) {
  // TT_EXERCISE_BEGIN(11, 6)
  const Shape row{1}, rows{0};
  const Tensor rstd = rsqrt(mean(x * x, row, /*keepdim=*/true) + eps);
  const Tensor xhat = x * rstd;
  const Tensor g = w.defined() ? dy * w : dy;
  return {rstd * (g - xhat * mean(g * xhat, row, true)), sum(dy * xhat, rows)};
  // TT_EXERCISE_END
}

struct RMSNormOp {
  static constexpr const char* kName = "RmsNormBackward0";
  struct Saved {
    SavedVariable x, weight, rstd;
    double eps = 0;
    bool needs_x = false, needs_weight = false;
  };
  // x: [R, C], weight: [C] or undefined -> y: [R, C], rstd: [R] float64.
  static Tensor forward(const Tensor& x, const Tensor& weight, double eps, Tensor& rstd) {
    const Tensor xc = x.detach().contiguous();
    Tensor y = empty(x.shape(), x.options());
    rstd = empty({x.size(0)}, x.options().dtype(kFloat64));
    backend_for(x.device()).rms_norm(y, rstd, xc, weight.defined() ? weight.detach().contiguous() : Tensor(), eps);
    return y;
  }
  static TensorList backward(const Saved& s, const TensorList& g) {
    if (!g[0].defined()) return {Tensor(), Tensor()};
    const Tensor x = s.x.unpack(), w = s.weight.unpack();
    const Tensor dy = as_dtype_of(g[0], x);
    TT_CHECK_SHAPE(dy.shape() == x.shape(), "rms_norm_backward: grad_out must have the input's shape ", x.shape(),
                   ", got ", dy.shape());
    if (differentiable_backward(dy, x, w)) {
      TensorList r = rms_norm_grad_composite(dy, x, w, s.eps);
      return {s.needs_x ? r[0] : Tensor(), s.needs_weight ? r[1] : Tensor()};
    }
    Tensor dx = s.needs_x ? empty(x.shape(), x.options()) : Tensor();
    Tensor dw = s.needs_weight ? empty({x.size(1)}, x.options()) : Tensor();
    backend_for(x.device())
        .rms_norm_backward(dx, dw, dy.contiguous(), x.contiguous(), s.rstd.unpack(),
                           w.defined() ? w.contiguous() : Tensor());
    return {dx, dw};
  }
};

bool requires(const Tensor& t) { return t.defined() && t.requires_grad(); }

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (auto cast = amp::autocast(AutocastOp::layer_norm, {x, weight, bias}))
    return layer_norm(cast[0], normalized_shape, cast[1], cast[2], eps);
  const Rows rc = check_inputs("layer_norm", x, normalized_shape, weight, bias, eps);
  const Tensor x2 = as_shape(x, {rc.R, rc.C});
  const Tensor w2 = as_shape(weight, {rc.C}), b2 = as_shape(bias, {rc.C});
  Tensor mean_, rstd;
  Tensor y = LayerNormOp::forward(x2, w2, b2, eps, mean_, rstd);
  if (auto node = autograd::make_node<LayerNormOp>({&x2, &w2, &b2})) {
    node->saved.x = SavedVariable(x2);
    node->saved.weight = SavedVariable(w2);
    node->saved.mean = SavedVariable(mean_);
    node->saved.rstd = SavedVariable(rstd);
    node->saved.eps = eps;
    node->saved.needs_x = requires(x2);
    node->saved.needs_weight = requires(w2);
    node->saved.needs_bias = requires(b2);
    autograd::set_history(y, node);
  }
  return as_shape(y, x.shape());
}

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps) {
  if (auto cast = amp::autocast(AutocastOp::rms_norm, {x, weight}))
    return rms_norm(cast[0], normalized_shape, cast[1], eps);
  if (x.is_floating_point() && !eps) {  // the machine epsilon of x's dtype, as torch.finfo(x.dtype).eps
    eps = x.dtype() == kFloat64    ? std::numeric_limits<double>::epsilon()
          : x.dtype() == kBFloat16 ? 0.0078125  // 2^-7: bf16 keeps 7 fraction bits
                                   : double(std::numeric_limits<float>::epsilon());
  }
  const Rows rc = check_inputs("rms_norm", x, normalized_shape, weight, Tensor(), eps.value_or(0.0));
  const Tensor x2 = as_shape(x, {rc.R, rc.C});
  const Tensor w2 = as_shape(weight, {rc.C});
  Tensor rstd;
  Tensor y = RMSNormOp::forward(x2, w2, *eps, rstd);
  if (auto node = autograd::make_node<RMSNormOp>({&x2, &w2})) {
    node->saved.x = SavedVariable(x2);
    node->saved.weight = SavedVariable(w2);
    node->saved.rstd = SavedVariable(rstd);
    node->saved.eps = *eps;
    node->saved.needs_x = requires(x2);
    node->saved.needs_weight = requires(w2);
    autograd::set_history(y, node);
  }
  return as_shape(y, x.shape());
}

}  // namespace tt
