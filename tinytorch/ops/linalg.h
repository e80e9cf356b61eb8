// Matrix products with PyTorch's matmul rules (1-D, 2-D, batched, broadcast batch dims).
#pragma once

#include "tinytorch/core/tensor.h"

namespace tt {

Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);   // [M, K] @ [K, N]
Tensor bmm(const Tensor& a, const Tensor& b);  // [B, M, K] @ [B, K, N]
Tensor dot(const Tensor& a, const Tensor& b);  // [K] . [K] -> []

}  // namespace tt
