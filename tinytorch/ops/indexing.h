// Indexing: index_select, gather, scatter_add, masked_fill. Index tensors are int64 and every
// index is range-checked before any kernel runs.
#pragma once

#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// masked_fill(t, mask, value): mask is bool, broadcastable to t; where it is true, value.
// The declarations: the rows of TT_OPS_INDEXING (core/op_registry.h), in core/op_declarations.h.

}  // namespace tt
