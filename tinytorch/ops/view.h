// View ops: new shapes and strides over the same storage, no data copied. view() fails where
// the strides cannot express the new shape; reshape() copies only then.
#pragma once

#include "tinytorch/core/tensor.h"

namespace tt {

Tensor view(const Tensor& t, const Shape& shape);  // one size may be -1
Tensor reshape(const Tensor& t, const Shape& shape);
Tensor flatten(const Tensor& t, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1);
Tensor permute(const Tensor& t, const Shape& dims);
Tensor unsqueeze(const Tensor& t, int64_t dim);
Tensor squeeze(const Tensor& t);
Tensor squeeze(const Tensor& t, int64_t dim);
Tensor expand(const Tensor& t, const Shape& shape);  // -1 keeps a size
Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor select(const Tensor& t, int64_t dim, int64_t index);
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length);
// Sentinel for "to the end" in slice(): t.slice(0, 2, tt::kEnd).
constexpr int64_t kEnd = INT64_MAX;

}  // namespace tt
