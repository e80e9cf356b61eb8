// Factories: tensors made from nothing (empty, zeros, arange, rand, ...) or from user data
// (tensor, from_blob). Random factories draw from tt::default_generator() unless given one.
#pragma once

#include <functional>
#include <initializer_list>
#include <vector>

#include "tinytorch/core/generator.h"
#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// empty, zeros, ones, full (shape, ..., options = {}); empty_like, zeros_like, ones_like,
// full_like, rand_like, randn_like; scalar_tensor(value, options).
// arange: [start, end) by step. With integer arguments and no options given, the result is int64
// (as in PyTorch); pass TensorOptions to choose. linspace(start, end, steps, options) and eye(n[, m]).
// rand, randn (shape, options, gen); randint(low, high, shape, options = kInt64, gen): integers
// uniformly in [low, high), int64 unless options says otherwise.
// The declarations: the rows of TT_OPS_FACTORY (core/op_registry.h), in core/op_declarations.h.

// From values: 0-d, 1-d and 2-d literals, or flat data with a shape.
// Floating literals give float32, integer literals int64, bool literals bool (as torch::tensor).
Tensor tensor(std::initializer_list<double> values, const TensorOptions& opts = {});
Tensor tensor(std::initializer_list<int> values, const TensorOptions& opts = kInt64);
Tensor tensor(std::initializer_list<int64_t> values, const TensorOptions& opts = kInt64);
Tensor tensor(std::initializer_list<bool> values, const TensorOptions& opts = kBool);
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, const TensorOptions& opts = {});
Tensor tensor(std::initializer_list<std::initializer_list<int>> rows, const TensorOptions& opts = kInt64);
template <typename T>
Tensor tensor(const std::vector<T>& values, const Shape& shape, const TensorOptions& opts = dtype_of<T>::value);
template <typename T>
Tensor tensor(const std::vector<T>& values) {
  return tensor(values, Shape{int64_t(values.size())}, dtype_of<T>::value);
}

// Wraps memory the caller owns (CPU unless opts says otherwise): no copy. The caller keeps the
// memory alive until the last view is gone, or passes a deleter to run then.
Tensor from_blob(void* data, const Shape& shape, const TensorOptions& opts = {});
Tensor from_blob(void* data, const Shape& shape, const Shape& strides, const TensorOptions& opts = {});
Tensor from_blob(void* data, const Shape& shape, std::function<void(void*)> deleter,
                 const TensorOptions& opts = {});

namespace detail {
// A new tensor viewing `storage` (used by views and factories). Every tensor is made here, so its
// layout is checked here once (Note [checked sizes]): sizes >= 0, numel inside int64, strides >= 0,
// and offset + extent inside the storage. `op` names the caller in the ShapeError.
Tensor make_tensor(Storage storage, int64_t offset, const Shape& shape, const Shape& strides, ScalarType dtype,
                   const char* op = "make_tensor");
// empty() with `op` named in its errors: the factories built on it say which one failed.
Tensor empty(const Shape& shape, const TensorOptions& opts, const char* op);
}  // namespace detail

}  // namespace tt
