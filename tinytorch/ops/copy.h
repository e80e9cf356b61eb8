// Copies and conversions: to(dtype/device), contiguous, clone, copy_, fill_.
#pragma once

#include "tinytorch/core/tensor.h"

namespace tt {

Tensor to_dtype(const Tensor& t, ScalarType dtype, bool copy = false);
Tensor to_device(const Tensor& t, const Device& device, bool copy = false);
Tensor contiguous(const Tensor& t);
Tensor clone(const Tensor& t);
// Copies src into dst (broadcasting src, converting dtype, across devices); bumps dst's version.
Tensor& copy_(Tensor& dst, const Tensor& src);
Tensor& fill_(Tensor& t, Scalar value);

namespace detail {
// Throws unless writing to every element of t touches distinct memory (no expanded dims).
void check_writable(const Tensor& t, const char* op);
}  // namespace detail

}  // namespace tt
