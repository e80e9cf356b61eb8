// Joining and splitting: cat, stack, split, chunk. Splits are views; joins copy.
#pragma once

#include <vector>

#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// The declarations: the rows of TT_OPS_JOIN (core/op_registry.h), in core/op_declarations.h.

}  // namespace tt
