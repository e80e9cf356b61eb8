// Activations: softmax and log_softmax over any dim (fused, numerically stable), GELU (exact and
// tanh), SiLU and LeakyReLU, each differentiable with a fused backward kernel. ReLU, sigmoid and
// tanh are elementwise ops (ops/elementwise.h); the layer classes are in nn/activation.h.
//
// Every op here takes floating-point tensors only: integer and bool inputs throw DtypeError, as
// PyTorch's CPU kernels do ("softmax_lastdim_kernel_impl" not implemented for 'Long').
#pragma once

#include <cstdint>
#include <string>

#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// softmax(x)_i = exp(x_i) / sum_j exp(x_j) along `dim` (negative counts from the end), computed
// as exp(x_i - max) / sum_j exp(x_j - max), so inputs of +-1e4 neither overflow nor underflow to
// 0/0. log_softmax(x)_i = x_i - max - log(sum_j exp(x_j - max)), more accurate than log(softmax).
//
// Fully masked rows (every element -inf, what masked_fill(mask, -inf) leaves in an attention row
// that may attend nowhere): softmax gives a row of ZEROS and log_softmax a row of -inf, and both
// gradients are finite (softmax's is zero there). PyTorch gives NaN for such rows; zeros keep one
// empty row from poisoning a whole batch, as the "safe softmax" of attention kernels does.
// A row with some -inf entries is ordinary: those entries get probability 0. NaN inputs give NaN
// rows, +inf inputs NaN (inf - inf), as in PyTorch.

// GELU(x) = x * Phi(x), Phi the standard normal CDF (approximate = "none", the erf form), or
// x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (approximate = "tanh"). Any other string throws
// tt::Error. float32 uses a vectorized erf accurate to ~1e-7 (see activation_functors.h).
// SiLU (swish): x * sigmoid(x).
// LeakyReLU: x > 0 ? x : negative_slope * x. The derivative at 0 is negative_slope (as PyTorch).

// --- backward kernels ---------------------------------------------------------------------------
// The gradient of each op from its output (softmax) or its input (GELU), for ops that fuse an
// activation into their own backward (attention). They are differentiable: under grad mode they
// are built from differentiable ops, so double backward works through them.
// softmax_backward:     grad_out, out: [*] -> out * (grad_out - sum(grad_out * out, dim))
// log_softmax_backward: grad_out, out: [*] -> grad_out - exp(out) * sum(grad_out, dim)
// gelu_backward:        grad_out, x: [*]   -> grad_out * GELU'(x)

// The declarations: the rows of TT_OPS_ACTIVATION (core/op_registry.h), in core/op_declarations.h.

}  // namespace tt
