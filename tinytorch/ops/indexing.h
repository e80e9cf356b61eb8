// Indexing: index_select, gather, scatter_add, masked_fill. Index tensors are int64 and every
// index is range-checked before any kernel runs.
#pragma once

#include "tinytorch/core/tensor.h"

namespace tt {

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_add_(Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
// mask: bool, broadcastable to t. Where mask is true, value.
Tensor masked_fill(const Tensor& t, const Tensor& mask, Scalar value);
Tensor& masked_fill_(Tensor& t, const Tensor& mask, Scalar value);

}  // namespace tt
