// embedding: a lookup table read by integer indices, as torch.nn.functional.embedding. The
// forward gathers rows of the table; the backward scatter-adds the upstream gradient into the
// rows that were read (a row read twice gets both gradients). Not here: max_norm renormalization,
// sparse gradients, scale_grad_by_freq.
#pragma once

#include <optional>

#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// weight: [V, E], indices: int64 [*] (any shape, 0-d included) -> [*, E]; out[i..] = weight[indices[i..]].
// padding_idx (PyTorch's meaning): the row that index reads still comes out as it is, but gets
// no gradient; a negative value counts from the end (-1 is row V - 1), out of [-V, V) is an error.
// Every index must be in [0, V): an IndexError names the first bad index, its position and V.
// Cost: V·E memory for the weight gradient (dense), N·E reads and writes for N indices.
// The declarations: the rows of TT_OPS_EMBEDDING (core/op_registry.h), in core/op_declarations.h.

}  // namespace tt
