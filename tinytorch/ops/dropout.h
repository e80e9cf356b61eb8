// Dropout: during training, zero each element with probability p and scale the survivors by
// 1 / (1 - p) ("inverted" dropout), so the expected value is unchanged and evaluation needs no
// rescaling. Seeded by the global generator (tt::manual_seed) or `gen`: the same seed drops the
// same elements. The gradient flows through the same mask.
#pragma once

#include "tinytorch/core/generator.h"
#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// x: [*] -> [*]. train = false (or p = 0) returns x itself; p = 1 gives zeros.
// The declarations: the rows of TT_OPS_DROPOUT (core/op_registry.h), in core/op_declarations.h.

}  // namespace tt
