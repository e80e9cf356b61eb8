// Matrix products with PyTorch's matmul rules (1-D, 2-D, batched, broadcast batch dims).
#pragma once

#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// mm: [M, K] @ [K, N]. bmm: [B, M, K] @ [B, K, N]. dot: [K] . [K] -> [].
// linear (fully connected): x: [*, in], w: [out, in], b: [out] (optional) -> [*, out]. All leading dims
// go through one GEMM with the bias fused into it (Backend::gemm_bias); the backward makes the
// weight and bias gradients in one call (Backend::gemm_bias_grad, Note [fused linear backward]).
// The declarations: the rows of TT_OPS_LINALG (core/op_registry.h), in core/op_declarations.h.

}  // namespace tt
