// Reductions over all dims, one dim, or several: sum, mean, max, min, argmax, argmin, var, std.
#pragma once

#include <tuple>

#include "tinytorch/core/tensor.h"

namespace tt {

// sum of bool and int64 gives int64; float stays float (see Note [float sums]).
Tensor sum(const Tensor& t);
Tensor sum(const Tensor& t, const Shape& dims, bool keepdim = false);
Tensor mean(const Tensor& t);
Tensor mean(const Tensor& t, const Shape& dims, bool keepdim = false);
Tensor max(const Tensor& t);
std::tuple<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& t);
std::tuple<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& t);  // index into the flattened tensor
Tensor argmax(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& t);
Tensor argmin(const Tensor& t, int64_t dim, bool keepdim = false);
// Two-pass variance: mean first, then the mean of squared deviations, divided by
// (n - correction). correction = 1 is the unbiased estimator, PyTorch's default. An empty
// dims list means every dim. (No var(t, correction) overload: var(t, {1}) would pick it.)
Tensor var(const Tensor& t);
Tensor var(const Tensor& t, const Shape& dims, int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& t);
Tensor std(const Tensor& t, const Shape& dims, int64_t correction = 1, bool keepdim = false);

}  // namespace tt
