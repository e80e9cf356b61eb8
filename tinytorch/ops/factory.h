// Factories: tensors made from nothing (empty, zeros, arange, rand, ...) or from user data
// (tensor, from_blob). Random factories draw from tt::default_generator() unless given one.
#pragma once

#include <functional>
#include <initializer_list>
#include <vector>

#include "tinytorch/core/generator.h"
#include "tinytorch/core/tensor.h"

namespace tt {

Tensor empty(const Shape& shape, const TensorOptions& opts = {});
Tensor zeros(const Shape& shape, const TensorOptions& opts = {});
Tensor ones(const Shape& shape, const TensorOptions& opts = {});
Tensor full(const Shape& shape, Scalar value, const TensorOptions& opts = {});
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, Scalar value);
Tensor rand_like(const Tensor& t);
Tensor randn_like(const Tensor& t);

// [start, end) by step. With integer arguments and no dtype given, the result is int64 (as in
// PyTorch); pass TensorOptions to choose.
Tensor arange(Scalar end, const TensorOptions& opts);
Tensor arange(Scalar start, Scalar end, Scalar step, const TensorOptions& opts);
Tensor arange(Scalar end);
Tensor arange(Scalar start, Scalar end, Scalar step = 1);
Tensor linspace(double start, double end, int64_t steps, const TensorOptions& opts = {});
Tensor eye(int64_t n, const TensorOptions& opts = {});
Tensor eye(int64_t n, int64_t m, const TensorOptions& opts = {});

Tensor rand(const Shape& shape, const TensorOptions& opts = {}, Generator* gen = nullptr);
Tensor randn(const Shape& shape, const TensorOptions& opts = {}, Generator* gen = nullptr);
// Integers uniformly in [low, high). int64 unless opts says otherwise.
Tensor randint(int64_t low, int64_t high, const Shape& shape, const TensorOptions& opts = kInt64,
               Generator* gen = nullptr);
Tensor randint(int64_t high, const Shape& shape, const TensorOptions& opts = kInt64,
               Generator* gen = nullptr);

// From values: 0-d, 1-d and 2-d literals, or flat data with a shape.
// Floating literals give float32, integer literals int64, bool literals bool (as torch::tensor).
Tensor scalar_tensor(Scalar value, const TensorOptions& opts = {});
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
