// Datasets: the Dataset interface (indexed examples), collation of examples into a batch, and
// TensorDataset (rows of in-memory tensors).
//
//   auto ds = std::make_shared<tt::data::TensorDataset>(x, y);   // x: [N, F], y: [N]
//   tt::data::Example e = ds->get(3);                             // e.data: [F], e.target: []
//   tt::data::Batch b = ds->get_batch({0, 5, 7});                 // b.data: [3, F], b.target: [3]
//
// Shapes: N examples in a dataset, B examples in a batch. Data stays where the dataset keeps
// it (on its device); nothing here copies to another device, pins memory or runs workers.
// Deliberately left out: streaming (iterable) datasets, samplers as objects, transforms chains.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "tinytorch/core/tensor.h"

namespace tt::data {

// One example, or a batch of them (Batch): `data` is the input, `target` what the model should
// predict. `target` may be undefined (an unlabelled dataset); then batches have no target either.
struct Example {
  Tensor data;
  Tensor target;
};
// A batch is an Example whose tensors have a leading batch dim: data [B, ...], target [B, ...].
using Batch = Example;

// Stacks examples along a new dim 0: data [...] -> [B, ...], target [...] -> [B, ...] (so 0-d
// targets become [B]). Every example must have the same data shape and dtype, and the same
// target shape and dtype (or every target undefined); otherwise a ShapeError / DtypeError names
// the two positions that differ. Throws tt::Error on an empty list.
Batch collate(const std::vector<Example>& examples);

// The interface: a fixed number of examples, fetched by index.
class Dataset {
 public:
  virtual ~Dataset() = default;
  // Number of examples.
  virtual size_t size() const = 0;
  // Example `index`, 0 <= index < size() (tt::IndexError otherwise).
  virtual Example get(size_t index) const = 0;
  // The examples at `indices`, collated into one batch. The default calls get() for each index
  // and collate()s the results; override it when a whole batch can be fetched at once (as
  // TensorDataset does with one index_select per tensor). Throws tt::IndexError for an index
  // outside [0, size()) and tt::Error for an empty list.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const;
};

// Rows of tensors that share their first dim: example i is (data[i], targets[i]). get() returns
// views (they share storage with the dataset's tensors); get_batch() copies the rows it picks.
class TensorDataset : public Dataset {
 public:
  // data: [N, ...]; targets: [N, ...] (often [N] class indices) or undefined for unlabelled data.
  // Throws ShapeError when data is 0-d or the first dims differ (the message shows both shapes).
  TensorDataset(Tensor data, Tensor targets);
  explicit TensorDataset(Tensor data) : TensorDataset(std::move(data), Tensor()) {}

  size_t size() const override;
  Example get(size_t index) const override;
  // One index_select per tensor: data [B, ...], target [B, ...]. An empty list gives B = 0.
  Batch get_batch(const std::vector<int64_t>& indices) const override;

  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_;     // [N, ...]
  Tensor targets_;  // [N, ...] or undefined
};

}  // namespace tt::data
