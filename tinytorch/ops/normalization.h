// Normalization over the trailing dims: layer_norm and rms_norm, each one fused Backend kernel
// forward and one fused kernel backward (dx, dweight and dbias in one sweep over the rows). The
// layer classes are nn::LayerNorm and nn::RMSNorm (nn/normalization.h). Not here: batch norm and
// group norm.
//
// Both take PyTorch's `normalized_shape`: the last k dims of x, which are flattened into one
// row of C = prod(normalized_shape) elements; x: [*, normalized_shape] -> same shape. weight and
// bias, when given, have exactly the shape normalized_shape (elementwise affine). Inputs must be
// float32 or float64 (DtypeError otherwise); weight and bias must share x's dtype and device.
#pragma once

#include <optional>

#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// y = (x - mean) / sqrt(var + eps) * weight + bias, mean and the biased variance (divide by C)
// taken over the normalized dims of each row (torch.nn.functional.layer_norm). The variance is
// computed stably (x = 1e4 + small noise keeps its small variance). eps must be >= 0.
// Differentiable in x, weight and bias, to any order (first order by the fused kernel; see
// Note [double backward of normalization] in normalization.cpp).

// y = x / sqrt(mean(x^2) + eps) * weight, the mean over the normalized dims of each row
// (torch.nn.functional.rms_norm of PyTorch 2.4). eps defaults, as there, to the machine epsilon
// of x's dtype (1.19e-07 for float32, 2.22e-16 for float64); given, it must be >= 0.

// The declarations: the rows of TT_OPS_NORMALIZATION (core/op_registry.h), in core/op_declarations.h.

}  // namespace tt
