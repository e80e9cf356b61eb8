// Reductions over all dims, one dim, or several: sum, mean, max, min, amax, amin, argmax, argmin,
// var, std. A list of dims is a DimList: {0, 2}, a Shape, or one int64_t (x.sum(1)).
#pragma once

#include <tuple>

#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// sum of bool and int64 gives int64; float stays float (see Note [float sums]). argmax(t) and
// argmin(t) index into the flattened tensor.
// The largest (smallest) value over `dims` (every dim when empty), as torch.amax / amin: unlike
// max(dim) it takes several dims and returns no indices, and its gradient is shared equally by
// the elements that tie for the extreme.
// Two-pass variance: mean first, then the mean of squared deviations, divided by
// (n - correction). correction = 1 is the unbiased estimator, PyTorch's default. An empty
// dims list means every dim. (No var(t, correction) overload: var(t, {1}) would pick it.)
// The declarations: the rows of TT_OPS_REDUCTION (core/op_registry.h), in core/op_declarations.h.

}  // namespace tt
