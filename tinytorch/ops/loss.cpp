// Loss functions (ops/loss.h): the shape, dtype and target checks, the fused cross-entropy and
// NLL ops and binary cross-entropy (forward and backward side by side), and the losses that are
// plain compositions of differentiable ops (mse, l1, BCE with logits). No device code: the
// log-softmax is the Backend's fused kernel, everything else is tensor ops, so every loss runs
// on any device and its backward can itself be differentiated.
//
// Note [fused cross-entropy]: cross_entropy is one op, CrossEntropy below. With class-index
// targets t, label smoothing ε, class weights w (1 when absent) and a validity mask v (t is not
// ignore_index), every row loses
//   loss_row = -sum_c w_c q_c log p_c,   q = (1 - ε) onehot(t) + ε / C   (0 for ignored rows)
//            = (1 - ε) w_t (-log p_t) + ε / C sum_c w_c (-log p_c)       (PyTorch's definition)
// and a class-probability target is the same formula with q = (1 - ε) target + ε / C. With
// p = softmax(x), the gradient of a row is
//   d loss_row / d x_c = p_c sum_k w_k q_k - w_c q_c       (= p - q without weights),
// so the op saves its input x, not the [N, C] log-probabilities, and recomputes p with the
// softmax kernel in backward: one softmax pass more, no second [N, C] tensor held between
// forward and backward, and through softmax's differentiable form (create_graph) the backward
// has a backward of its own. The op returns the per-row losses; the reduction is ordinary ops
// (sum, and division by a constant denominator for Mean), so the backward sees g per row.
// Ignored rows get a zero gradient even when g is not finite (Mean with every row ignored
// divides 0 by 0: the loss is NaN, as PyTorch's, and its gradient is zero, as PyTorch's).
#include "tinytorch/ops/loss.h"

#include <vector>

#include "tinytorch/ops/autocast_hook.h"
#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/backend/device_error.h"
#include "tinytorch/ops/activation.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/indexing.h"
#include "tinytorch/ops/reduction.h"
#include "tinytorch/ops/view.h"

namespace tt {

namespace {

using autograd::SavedVariable;
using autograd::TensorList;

constexpr const char* kReductionNames[] = {"none", "mean", "sum"};
static_assert(sizeof(kReductionNames) / sizeof(kReductionNames[0]) == size_t(Reduction::NumReductions),
              "every Reduction needs a name");

// --- checks ------------------------------------------------------------------------------------

void check_input(const Tensor& input, const char* op) {
  TT_CHECK(input.defined(), op, ": input is an undefined tensor");
  TT_CHECK_DTYPE(input.is_floating_point(), op,
                 ": expected a floating-point input (float32, float64 or bfloat16), got ",
                 input.dtype());
}

// A float tensor paired with the input (a target, a weight): same dtype and device.
void check_float_operand(const Tensor& t, const Tensor& input, const char* op, const char* what) {
  detail::check_same_device(op, {&input, &t});
  TT_CHECK_DTYPE(t.dtype() == input.dtype(), op, ": ", what, " must have the input's dtype ", input.dtype(), ", got ",
                 t.dtype(), "; convert it with .to(", input.dtype(), ")");
}

void check_same_shape_target(const Tensor& input, const Tensor& target, const char* op) {
  TT_CHECK(target.defined(), op, ": target is an undefined tensor");
  TT_CHECK_SHAPE(target.shape() == input.shape(), op, ": target must have the input's shape, got input ",
                 input.shape(), " and target ", target.shape(),
                 "; reshape one of them (broadcasting a loss target is almost always a bug)");
  check_float_operand(target, input, op, "target");
}

// weight / pos_weight: a constant, so it may not ask for a gradient.
void check_constant(const Tensor& w, const char* op, const char* what) {
  TT_CHECK(!(GradMode::is_enabled() && w.requires_grad()), op, ": ", what,
           " must not require grad: loss weights are constants, no gradient flows to them (as in PyTorch); "
           "pass ", what, ".detach()");
}

// An elementwise weight that broadcasts to the input's shape.
void check_elementwise_weight(const Tensor& w, const Tensor& input, const char* op, const char* what) {
  if (!w.defined()) return;
  check_float_operand(w, input, op, what);
  check_constant(w, op, what);
  bool ok = w.dim() <= input.dim();
  for (int i = 1; ok && i <= w.dim(); ++i) {
    const int64_t ws = w.size(-i);
    ok = ws == 1 || ws == input.size(-i);
  }
  TT_CHECK_SHAPE(ok, op, ": ", what, " must broadcast to the input's shape ", input.shape(), ", got ", w.shape());
}

void check_reduction(Reduction reduction, const char* op) {
  TT_CHECK(reduction < Reduction::NumReductions, op, ": reduction must be kNone, kMean or kSum, got ", int(reduction));
}

Tensor reduce(const Tensor& loss, Reduction reduction) {
  if (reduction == Reduction::Mean) return mean(loss);
  return reduction == Reduction::Sum ? sum(loss) : loss;
}

// input: [C] | [N, C] | [N, C, d1, ..]  ->  target [] | [N] | [N, d1, ..] (class-index targets).
Shape class_index_target_shape(const Tensor& input) {
  Shape s = input.shape();
  s.erase(input.dim() == 1 ? 0 : 1);
  return s;
}

// The shapes and dtypes of class-index targets (cross_entropy, nll_loss).
void check_class_index_target(const Tensor& input, const Tensor& target, const char* op) {
  detail::check_same_device(op, {&input, &target});
  TT_CHECK_DTYPE(target.dtype() == kInt64, op, ": class-index targets must be int64, got ", target.dtype(),
                 " of shape ", target.shape(), " for input ", input.shape(),
                 (target.is_floating_point() ? "; a float target is read as class probabilities only when it has "
                                               "the input's shape"
                                             : "; convert with target.to(tt::kInt64)"));
  const Shape expected = class_index_target_shape(input);
  if (target.shape() == expected) return;
  // The transformer mistake: logits [B, T, V] with targets [B, T] (classes last, not in dim 1).
  Shape but_last = input.shape();
  but_last.erase(input.dim() - 1);
  const bool classes_last = input.dim() >= 3 && target.shape() == but_last;
  throw ShapeError(detail::concat(
      op, ": expected target of shape ", expected, " for input ", input.shape(),
      " (classes in dim 1; input [C] takes a 0-d target), got target ", target.shape(),
      classes_last ? "; logits [B, T, V] with targets [B, T]? the classes must be in dim 1: flatten to [B*T, V] "
                     "and [B*T] (logits.reshape({-1, V}), target.reshape({-1})), or move classes to dim 1 "
                     "(logits.transpose(1, 2))"
                   : ""));
}

// Every class index in [0, C) or equal to ignore_index (two reductions, read on the host). On a
// GPU nothing is read here: the gather that reads the targets checks them and reports a bad one at
// the next synchronization, as the op that the caller's DeviceErrorScope names (Note [device error
// flag] in backend/device_error.h); ignore_index never reaches it (index_target replaces it by 0).
void check_class_range(const Tensor& target, int64_t C, int64_t ignore_index, const char* op) {
  if (target.numel() == 0 || !target.device().is_cpu()) return;
  NoGradGuard no_grad;
  Tensor kept = where(target == ignore_index, Scalar(int64_t(0)), target);
  const int64_t lo = min(kept).item<int64_t>(), hi = max(kept).item<int64_t>();
  TT_CHECK_INDEX(lo >= 0 && hi < C, op, ": target ", (lo < 0 ? lo : hi),
                 " is out of bounds: class indices must be in [0, ", C, ") for ", C,
                 " classes, or equal ignore_index (", ignore_index, ")");
}

void check_class_weight(const Tensor& weight, const Tensor& input, int64_t C, const char* op) {
  if (!weight.defined()) return;
  check_float_operand(weight, input, op, "weight");
  check_constant(weight, op, "weight");
  TT_CHECK_SHAPE(weight.dim() == 1 && weight.size(0) == C, op, ": weight must have shape [C] = [", C,
                 "], one factor per class, got ", weight.shape());
}

// weight: [C] -> [1, C, 1, ..] against an input of `ndim` dims with the classes in dim 1.
Tensor class_weight_view(const Tensor& weight, int ndim) {
  if (!weight.defined()) return weight;
  Shape s = Shape::filled(ndim, 1);
  s[1] = weight.size(0);
  return reshape(weight, s);
}

// --- class-index targets, shared by cross_entropy and nll_loss -------------------------------

// Targets [N, d..] seen as [N, 1, d..] beside an input [N, C, d..].
struct IndexTarget {
  Tensor index;  // int64 [N, 1, d..]: the target, 0 on ignored rows (a valid index to gather at)
  Tensor valid;  // bool [N, 1, d..]: not ignore_index
  Tensor row_w;  // float [N, 1, d..]: w_t on valid rows, 0 on ignored ones
  Tensor denom;  // float []: sum of row_w, Mean's denominator
};

IndexTarget index_target(const Tensor& target, const Tensor& weight, int64_t ignore_index, const TensorOptions& opts) {
  NoGradGuard no_grad;
  IndexTarget it;
  Tensor t = unsqueeze(target, 1);
  it.valid = t != ignore_index;
  it.index = where(it.valid, t, Scalar(int64_t(0)));
  it.row_w = it.valid.to(opts.dtype());
  if (weight.defined()) it.row_w = it.row_w * reshape(index_select(weight, 0, reshape(it.index, {-1})), t.shape());
  it.denom = sum(it.row_w);
  return it;
}

// The upstream gradient of the per-row losses, [N, d..] -> [N, 1, d..], zero on ignored rows.
Tensor row_grad(const Tensor& g, const Tensor& valid) { return where(valid, unsqueeze(g, 1), 0.0); }

// Sum or Mean (over the weights of the valid rows) of per-row losses, or the rows themselves.
Tensor reduce_rows(const Tensor& rows, Reduction reduction, const Tensor& denom) {
  return reduction == Reduction::Mean ? sum(rows) / denom : reduce(rows, reduction);
}

// --- cross_entropy: log-softmax + NLL + label smoothing, fused (Note [fused cross-entropy]) ----

struct CrossEntropy {
  static constexpr const char* kName = "CrossEntropyLossBackward0";
  struct Saved {
    SavedVariable x, probs;  // the logits; the probability target (when the target is one)
    IndexTarget it;          // class-index targets
    Tensor weight;           // [1, C, 1, ..] or undefined
    double eps = 0.0;
    bool need_x = false, need_probs = false;  // which inputs want a gradient
  };
  // x: [N, C, d..]; target: int64 [N, d..] (it) or float probabilities [N, C, d..] -> [N, d..]
  static Tensor forward(const Tensor& x, const Saved& s, const Tensor& probs) {
    // TT_EXERCISE_BEGIN(06, 2)
    const int64_t C = x.size(1);
    Tensor logp = empty(x.shape(), x.options());
    backend_for(x.device()).softmax(logp, x, 1, /*log=*/true);
    Tensor wlogp = s.weight.defined() ? logp * s.weight : logp;  // w_c log p_c
    if (probs.defined()) {
      Tensor q = s.eps > 0.0 ? probs * (1.0 - s.eps) + s.eps / double(C) : probs;
      return neg(sum(wlogp * q, {1}));
    }
    Tensor loss = neg(gather(logp, 1, s.it.index)) * s.it.row_w * (1.0 - s.eps);  // (1 - ε) w_t (-log p_t)
    if (s.eps > 0.0) loss = loss - sum(wlogp, {1}, /*keepdim=*/true) * (s.eps / double(C));
    return squeeze(where(s.it.valid, loss, 0.0), 1);  // where, not *: a -inf log p times 0 is NaN
    // TT_EXERCISE_END
  }
  // g: [N, d..] -> dx = (p sum_k w_k q_k - w q) g (per row); dprobs = -(1 - ε) w log p g
  static TensorList backward(const Saved& s, const TensorList& g) {
    // TT_EXERCISE_BEGIN(06, 3)
    Tensor x = s.x.unpack(), probs = s.probs.unpack(), dx, dprobs;
    const int64_t C = x.size(1);
    if (probs.defined()) {
      Tensor gr = unsqueeze(g[0], 1);
      Tensor q = s.eps > 0.0 ? probs * (1.0 - s.eps) + s.eps / double(C) : probs;
      Tensor wq = s.weight.defined() ? q * s.weight : q;
      if (s.need_x) dx = (softmax(x, 1) * sum(wq, {1}, /*keepdim=*/true) - wq) * gr;
      if (s.need_probs) {
        Tensor lp = s.weight.defined() ? log_softmax(x, 1) * s.weight : log_softmax(x, 1);
        dprobs = lp * gr * -(1.0 - s.eps);
      }
      return {dx, dprobs};
    }
    Tensor p = softmax(x, 1), gr = row_grad(g[0], s.it.valid);
    // sum_k w_k q_k = (1 - ε) w_t + ε / C sum_k w_k
    Tensor wq_sum = s.it.row_w * (1.0 - s.eps);
    if (s.eps > 0.0) wq_sum = s.weight.defined() ? wq_sum + sum(s.weight) * (s.eps / double(C)) : wq_sum + s.eps;
    dx = p * (wq_sum * gr);
    if (s.eps > 0.0) dx = dx - (s.weight.defined() ? s.weight * gr : gr) * (s.eps / double(C));
    if (s.eps < 1.0) dx = scatter_add(dx, 1, s.it.index, s.it.row_w * gr * -(1.0 - s.eps));
    return {dx, Tensor()};
    // TT_EXERCISE_END
  }
};

// --- nll_loss: pick -w_t input[t] -----------------------------------------------------------------

struct NllLoss {
  static constexpr const char* kName = "NllLossBackward0";
  struct Saved {
    IndexTarget it;
    Shape x_shape;
  };
  // x: [N, C, d..] log-probabilities -> [N, d..]
  static Tensor forward(const Tensor& x, const IndexTarget& it) {
    return squeeze(where(it.valid, neg(gather(x, 1, it.index)) * it.row_w, 0.0), 1);
  }
  // dx = -w_t g at the target class of each row, 0 elsewhere
  static TensorList backward(const Saved& s, const TensorList& g) {
    Tensor gr = row_grad(g[0], s.it.valid);
    return {scatter_add(zeros(s.x_shape, gr.options()), 1, s.it.index, neg(s.it.row_w * gr))};
  }
};

// input [C] (unbatched) is handled as [1, C] with target [1]; the result loses the batch dim again.
struct Unbatched {
  Tensor input, target;
  bool unbatched = false;
};
Unbatched batch_view(const Tensor& input, const Tensor& target, bool probs) {
  if (input.dim() != 1) return {input, target, false};
  Tensor target2 = probs ? reshape(target, {1, target.numel()}) : reshape(target, {1});
  return {reshape(input, {1, input.size(0)}), target2, true};
}
Tensor unbatch(const Tensor& rows, const Unbatched& b, Reduction reduction) {
  return (b.unbatched && reduction == Reduction::None) ? reshape(rows, {}) : rows;
}

void check_class_input(const Tensor& input, const char* op) {
  check_input(input, op);
  TT_CHECK_SHAPE(input.dim() >= 1, op, ": expected input of shape [C], [N, C] or [N, C, d1, ...], got a 0-d tensor");
}

// --- binary_cross_entropy -----------------------------------------------------------------------

struct BinaryCrossEntropy {
  static constexpr const char* kName = "BinaryCrossEntropyBackward0";
  struct Saved {
    SavedVariable x, y;
    Tensor w;
    bool need_x = false, need_y = false;
  };
  // max(log(v), -100): PyTorch's clamp, so that x = 0 or 1 costs 100, not infinity.
  static Tensor clamped_log(const Tensor& v) { return maximum(log(v), full({}, -100.0, v.options())); }
  // x, y: [*] -> -w (y log x + (1 - y) log(1 - x))
  static Tensor forward(const Tensor& x, const Tensor& y, const Tensor& w) {
    // TT_EXERCISE_BEGIN(06, 4)
    Tensor loss = neg(y * clamped_log(x) + (1.0 - y) * clamped_log(1.0 - x));
    return w.defined() ? loss * w : loss;
    // TT_EXERCISE_END
  }
  // dx = g w (x - y) / max(x (1 - x), 1e-12); dy = g w (log(1 - x) - log x), logs clamped
  static TensorList backward(const Saved& s, const TensorList& g) {
    // TT_EXERCISE_BEGIN(06, 5)
    Tensor x = s.x.unpack(), y = s.y.unpack();
    Tensor gw = s.w.defined() ? g[0] * s.w : g[0];
    Tensor dx, dy;
    // PyTorch's EPSILON is the float 1e-12f (9.99999996e-13), kept so that the gradients agree at x = 0, 1
    if (s.need_x) dx = gw * (x - y) / maximum(x * (1.0 - x), full({}, double(1e-12f), x.options()));
    if (s.need_y) dy = gw * (clamped_log(1.0 - x) - clamped_log(x));
    return {dx, dy};
    // TT_EXERCISE_END
  }
};

void check_probabilities(const Tensor& x, const char* op) {
  if (x.numel() == 0) return;
  NoGradGuard no_grad;
  const int64_t inside = sum((x >= 0.0).to(kInt64) * (x <= 1.0).to(kInt64)).item<int64_t>();
  if (inside == x.numel()) return;
  for (double v : x.to_vector<double>()) {  // the error path only: name the first offender
    if (!(v >= 0.0 && v <= 1.0))
      throw Error(detail::concat(op, ": all elements of input must be probabilities in [0, 1], got ", v,
                                 "; for logits use binary_cross_entropy_with_logits"));
  }
}

// --- compositions of differentiable ops (their backward is the ops' own) ---------------------

// x, y: [*] -> (x - y)^2
Tensor squared_error(const Tensor& x, const Tensor& y) {
  // TT_EXERCISE_BEGIN(06, 1)
  Tensor d = x - y;
  return d * d;
  // TT_EXERCISE_END
}

// x, y: [*] logits and targets -> (1 - y) x + (1 + (pos_weight - 1) y) softplus(-x)
Tensor bce_with_logits(const Tensor& x, const Tensor& y, const Tensor& pos_weight) {
  // TT_EXERCISE_BEGIN(06, 6)
  // softplus(-x) = log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|)): no exp overflows, and log1p
  // keeps the tail exact (log(1 + 1e-9) is 0 in float32, log1p(1e-9) is 1e-9). -|x| is spelled
  // where(x >= 0, -x, x) so that its gradient at 0 is -1, not abs's 0: the sum's gradient at
  // x = 0 is then -1/2, as it must be.
  Tensor softplus_neg = relu(neg(x)) + log1p(exp(where(x >= 0.0, neg(x), x)));
  Tensor positive = pos_weight.defined() ? ((pos_weight - 1.0) * y + 1.0) * softplus_neg : softplus_neg;
  return (1.0 - y) * x + positive;
  // TT_EXERCISE_END
}

}  // namespace

const char* reduction_name(Reduction r) {
  return r < Reduction::NumReductions ? kReductionNames[int(r)] : "?";
}
std::ostream& operator<<(std::ostream& os, Reduction r) { return os << reduction_name(r); }

// input: [*], target: [*] -> [] or [*]
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (auto cast = amp::autocast(AutocastOp::mse_loss, {input, target})) return mse_loss(cast[0], cast[1], reduction);
  check_input(input, "mse_loss");
  check_same_shape_target(input, target, "mse_loss");
  check_reduction(reduction, "mse_loss");
  return reduce(squared_error(input, target), reduction);
}

// input: [*], target: [*] -> [] or [*]
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_input(input, "l1_loss");
  check_same_shape_target(input, target, "l1_loss");
  check_reduction(reduction, "l1_loss");
  return reduce(abs(input - target), reduction);
}

// input: [C] | [N, C] | [N, C, d..]; target: [] | [N] | [N, d..] int64, or the input's shape
// (probabilities) -> [] (mean, sum) or the target's shape without the class dim (none)
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction,
                     int64_t ignore_index, double label_smoothing) {
  if (auto cast = amp::autocast(AutocastOp::cross_entropy, {input, target, weight}))
    return cross_entropy(cast[0], cast[1], cast[2], reduction, ignore_index, label_smoothing);
  const char* op = "cross_entropy";
  check_class_input(input, op);
  TT_CHECK(target.defined(), op, ": target is an undefined tensor");
  TT_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, op, ": label_smoothing must be in [0, 1], got ",
           label_smoothing);
  check_reduction(reduction, op);
  const int cdim = input.dim() == 1 ? 0 : 1;
  const int64_t C = input.size(cdim);
  check_class_weight(weight, input, C, op);
  const bool probs = target.shape() == input.shape();
  if (probs) {
    TT_CHECK_DTYPE(target.is_floating_point(), op, ": a target with the input's shape ", input.shape(),
                   " holds class probabilities and must be float, got ", target.dtype(),
                   "; class indices have the input's shape without the class dim, ", class_index_target_shape(input));
    check_float_operand(target, input, op, "a probability target");
    TT_CHECK(ignore_index < 0, op, ": ignore_index is not supported with class-probability targets, got ",
             ignore_index);
  } else {
    check_class_index_target(input, target, op);
    check_class_range(target, C, ignore_index, op);
  }
  detail::DeviceErrorScope device_errors(DeviceErrorOp::kCrossEntropy);  // bad targets on a GPU

  const Unbatched b = batch_view(input, target, probs);
  const Tensor& x = b.input;
  CrossEntropy::Saved s;
  s.weight = class_weight_view(weight, x.dim());
  s.eps = label_smoothing;
  if (!probs) s.it = index_target(b.target, weight, ignore_index, x.options());
  Tensor rows;
  {
    NoGradGuard no_grad;
    rows = CrossEntropy::forward(x, s, probs ? b.target : Tensor());
  }
  if (auto node = autograd::make_node<CrossEntropy>({&x, &b.target})) {
    autograd::set_history(rows, node);
    node->saved = s;
    node->saved.x = SavedVariable(x);
    if (probs) node->saved.probs = SavedVariable(b.target);
    node->saved.need_x = x.requires_grad();
    node->saved.need_probs = probs && b.target.requires_grad();
  }
  rows = unbatch(rows, b, reduction);
  if (probs) {
    // Mean over rows: N * d1 * .. (input.numel() / C), NaN for an empty input, as PyTorch.
    return reduction == Reduction::Mean ? sum(rows) / double(C > 0 ? input.numel() / C : 0) : reduce(rows, reduction);
  }
  return reduce_rows(rows, reduction, s.it.denom);
}

// input: [C] | [N, C] | [N, C, d..] log-probabilities; target: [] | [N] | [N, d..] int64 -> [] or target's shape
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction,
                int64_t ignore_index) {
  if (auto cast = amp::autocast(AutocastOp::nll_loss, {input, target, weight}))
    return nll_loss(cast[0], cast[1], cast[2], reduction, ignore_index);
  const char* op = "nll_loss";
  check_class_input(input, op);
  TT_CHECK(target.defined(), op, ": target is an undefined tensor");
  check_reduction(reduction, op);
  const int64_t C = input.size(input.dim() == 1 ? 0 : 1);
  check_class_weight(weight, input, C, op);
  check_class_index_target(input, target, op);
  check_class_range(target, C, ignore_index, op);
  detail::DeviceErrorScope device_errors(DeviceErrorOp::kNllLoss);  // bad targets on a GPU

  const Unbatched b = batch_view(input, target, false);
  const IndexTarget it = index_target(b.target, weight, ignore_index, b.input.options());
  Tensor rows;
  {
    NoGradGuard no_grad;
    rows = NllLoss::forward(b.input, it);
  }
  if (auto node = autograd::make_node<NllLoss>({&b.input})) {
    autograd::set_history(rows, node);
    node->saved.it = it;
    node->saved.x_shape = b.input.shape();
  }
  return reduce_rows(unbatch(rows, b, reduction), reduction, it.denom);
}

// input: [*] probabilities, target: [*], weight: broadcastable -> [] or [*]
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction) {
  if (auto cast = amp::autocast(AutocastOp::binary_cross_entropy, {input, target, weight}))
    return binary_cross_entropy(cast[0], cast[1], cast[2], reduction);
  const char* op = "binary_cross_entropy";
  check_input(input, op);
  check_same_shape_target(input, target, op);
  check_elementwise_weight(weight, input, op, "weight");
  check_reduction(reduction, op);
  check_probabilities(input, op);
  Tensor loss;
  {
    NoGradGuard no_grad;
    loss = BinaryCrossEntropy::forward(input, target, weight);
  }
  if (auto node = autograd::make_node<BinaryCrossEntropy>({&input, &target})) {
    autograd::set_history(loss, node);
    node->saved.x = SavedVariable(input);
    node->saved.y = SavedVariable(target);
    node->saved.w = weight;
    node->saved.need_x = input.requires_grad();
    node->saved.need_y = target.requires_grad();
  }
  return reduce(loss, reduction);
}

// input: [*] logits, target: [*], weight, pos_weight: broadcastable -> [] or [*]
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, Reduction reduction) {
  if (auto cast = amp::autocast(AutocastOp::binary_cross_entropy_with_logits, {input, target, weight, pos_weight}))
    return binary_cross_entropy_with_logits(cast[0], cast[1], cast[2], cast[3], reduction);
  const char* op = "binary_cross_entropy_with_logits";
  check_input(input, op);
  check_same_shape_target(input, target, op);
  check_elementwise_weight(weight, input, op, "weight");
  check_elementwise_weight(pos_weight, input, op, "pos_weight");
  check_reduction(reduction, op);
  Tensor loss = bce_with_logits(input, target, pos_weight);
  return reduce(weight.defined() ? loss * weight : loss, reduction);
}

}  // namespace tt
