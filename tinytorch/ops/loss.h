// Loss functions: mse_loss, l1_loss, cross_entropy (fused log-softmax + NLL, class-index or
// class-probability targets, ignore_index, label smoothing, class weights), nll_loss,
// binary_cross_entropy and binary_cross_entropy_with_logits, with PyTorch's shapes, reductions
// and defaults. The layer classes and the F:: spellings with options structs are in nn/loss.h.
// Not here: losses PyTorch has beyond these (smooth L1, KL divergence, CTC, margin losses).
//
// Shape legend: N batch (rows), C classes, d1.. extra ("spatial") dims, * any shape.
//
// Rules shared by every loss here (PyTorch's, except where marked DIFFERS):
//  * input is float32 or float64; a floating target must have the input's dtype and device.
//    DIFFERS: PyTorch promotes mixed float32/float64 operands in some losses (mse_loss, probability
//    targets); tinytorch throws DtypeError and asks for target.to(input.dtype()).
//  * Reduction::Mean divides by the number of elements; cross_entropy and nll_loss divide by the
//    number of rows (N * d1 * ..) with probability targets, and with class-index targets by the
//    sum of the weights of the rows that count. A mean over nothing (empty input, every row
//    ignored) is NaN, as in PyTorch, and its gradient is zero.
//  * weight / pos_weight are constants: no gradient flows to them, and one that requires grad
//    (with grad mode on) is refused, as PyTorch refuses it.
#pragma once

#include <cstdint>
#include <ostream>

#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// Reduction (kNone, kMean, kSum: how the per-element losses are combined) and
// kDefaultIgnoreIndex are defined with the op registry (core/op_registry.h), whose rows name them.
// "none", "mean", "sum" (PyTorch's strings).
const char* reduction_name(Reduction r);
std::ostream& operator<<(std::ostream& os, Reduction r);

// Mean squared error (x - y)^2 and mean absolute error |x - y|, elementwise.
// input: [*], target: [*] (same shape) -> [] (mean, sum) or [*] (none).
// DIFFERS: PyTorch broadcasts a target of another shape with a warning ("This will likely lead
// to incorrect results"); tinytorch requires equal shapes and throws ShapeError, because
// input [N, 1] against target [N] silently becomes an [N, N] loss. l1_loss's gradient at x == y
// is 0 (sign(0)), as PyTorch's.

// Cross-entropy of unnormalized logits, log-softmax and NLL fused into one op
// (Note [fused cross-entropy] in loss.cpp). The class dim is dim 1, or dim 0 for an unbatched
// input, exactly as PyTorch:
//   input: [C],            target: []              -> []
//   input: [N, C],         target: [N]             -> [N] (none) or []
//   input: [N, C, d1, ..], target: [N, d1, ..]     -> [N, d1, ..] (none) or []
// Logits of a sequence model, [B, T, V], take the classes in dim 1: flatten them to [B*T, V]
// (targets [B*T]) or move the classes with logits.transpose(1, 2); the error says so.
//
// Class-index targets are int64 in [0, C), or ignore_index: an ignored row has loss 0, no
// gradient, and leaves the mean's denominator. Anything else in range throws IndexError naming
// the value and C; another integer dtype, bool, or a float target of the wrong shape throws
// DtypeError / ShapeError.
// Class-probability targets: a float target with the input's shape (each row a distribution
// over the C classes); ignore_index is not allowed with them (as PyTorch), and Mean divides by
// the number of rows (N * d1 * ..), not by weights.
//
// label_smoothing ε in [0, 1] mixes the target with the uniform distribution, PyTorch's way
// (DIFFERS: PyTorch 1.13 also accepts ε < 0, which is no distribution; tinytorch throws):
//   loss_row = (1 - ε) * NLL(row) + ε / C * sum_c w_c * (-log p_c)
// weight: [C], one rescaling factor per class (w_c above; 1 when undefined). With class-index
// targets the rows count w_target each in the mean's denominator, as in PyTorch.

// Negative log-likelihood of log-probabilities (log_softmax output): loss_row = -w_t * input[t].
// Same shapes, targets, ignore_index, weight and mean denominator as class-index cross_entropy.

// Binary cross-entropy of probabilities x in [0, 1] against targets y:
//   loss = -w * (y * log(x) + (1 - y) * log(1 - x)),
// each log clamped at -100 so that x = 0 or 1 gives a finite loss, as PyTorch. An x outside
// [0, 1] (or NaN) throws tt::Error; y is not checked (soft targets in [0, 1] are the intent, as
// PyTorch). The gradient for x is PyTorch's: w * (x - y) / max(x (1 - x), 1e-12); for y it is
// w * (log(1 - x) - log(x)) with both logs clamped at -100. DIFFERS: PyTorch's gradient for y is
// -w * logit(x) unclamped, infinite at x = 0 or 1; tinytorch's is the derivative of the clamped
// loss it computes, finite (100 w at the edges), and equal to PyTorch's everywhere else.
// input: [*], target: [*] (same shape), weight: broadcastable to [*] -> [] or [*] (none)

// Binary cross-entropy of logits x (sigmoid folded in), computed in the stable form
//   loss = (1 - y) * x + l * softplus(-x),   l = 1 + (pos_weight - 1) * y,
//   softplus(-x) = max(-x, 0) + log(exp(-max(-x, 0)) + exp(-x - max(-x, 0)))
// (= max(x, 0) - x y + log(1 + exp(-|x|)) without pos_weight), finite for any |x|. pos_weight
// multiplies the positive term, one factor per class along the last dim; weight rescales each
// element. The gradient for x is w * ((1 - y) - l * sigmoid(-x)).
// input: [*], target: [*] (same shape), weight, pos_weight: broadcastable to [*] -> [] or [*]

// The declarations: the rows of TT_OPS_LOSS (core/op_registry.h), in core/op_declarations.h.

}  // namespace tt
