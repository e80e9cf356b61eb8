// Reductions over all dims, one dim, or several: sum, mean, max, min, amax, amin, argmax, argmin,
// var, std. A list of dims is a DimList: {0, 2}, a Shape, or one int64_t (x.sum(1)).
#pragma once

#include <tuple>

#include "tinytorch/core/tensor.h"

namespace tt {

// sum of bool and int64 gives int64; float stays float (see Note [float sums]).
Tensor sum(const Tensor& t);
Tensor sum(const Tensor& t, DimList dims, bool keepdim = false);
Tensor mean(const Tensor& t);
Tensor mean(const Tensor& t, DimList dims, bool keepdim = false);
Tensor max(const Tensor& t);
std::tuple<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& t);
std::tuple<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& t);  // index into the flattened tensor
Tensor argmax(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& t);
Tensor argmin(const Tensor& t, int64_t dim, bool keepdim = false);
// The largest (smallest) value over `dims` (every dim when empty), as torch.amax / amin: unlike
// max(dim) it takes several dims and returns no indices, and its gradient is shared equally by
// the elements that tie for the extreme.
Tensor amax(const Tensor& t, DimList dims = {}, bool keepdim = false);
Tensor amin(const Tensor& t, DimList dims = {}, bool keepdim = false);
// Two-pass variance: mean first, then the mean of squared deviations, divided by
// (n - correction). correction = 1 is the unbiased estimator, PyTorch's default. An empty
// dims list means every dim. (No var(t, correction) overload: var(t, {1}) would pick it.)
Tensor var(const Tensor& t);
Tensor var(const Tensor& t, DimList dims, int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& t);
Tensor std(const Tensor& t, DimList dims, int64_t correction = 1, bool keepdim = false);

}  // namespace tt
