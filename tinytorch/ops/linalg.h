// Matrix products with PyTorch's matmul rules (1-D, 2-D, batched, broadcast batch dims).
#pragma once

#include "tinytorch/core/tensor.h"

namespace tt {

Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);   // [M, K] @ [K, N]
Tensor bmm(const Tensor& a, const Tensor& b);  // [B, M, K] @ [B, K, N]
// Fully connected: x: [*, in], w: [out, in], b: [out] (optional) -> [*, out]. All leading dims
// go through one GEMM with the bias fused into it (Backend::gemm_bias); the backward makes the
// weight and bias gradients in one call (Backend::gemm_bias_grad, Note [fused linear backward]).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = Tensor());
Tensor dot(const Tensor& a, const Tensor& b);  // [K] . [K] -> []

}  // namespace tt
