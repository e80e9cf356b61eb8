// Collation, the default Dataset::get_batch, and TensorDataset: checks here, the copying is
// done by ops (stack, index_select).
#include "tinytorch/data/dataset.h"

#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/indexing.h"
#include "tinytorch/ops/join.h"

namespace tt::data {

namespace {

// Throws IndexError unless every index is in [0, size).
void check_indices(const std::vector<int64_t>& indices, size_t size, const char* op) {
  for (size_t k = 0; k < indices.size(); ++k)
    TT_CHECK_INDEX(indices[k] >= 0 && uint64_t(indices[k]) < size, op, ": index ", indices[k],
                   " (batch position ", k, ") is out of range for a dataset of size ", size);
}

// One field (data or target) of every example, stacked. `field` names it in messages.
Tensor stack_field(const std::vector<Example>& examples, Tensor Example::*member, const char* field) {
  const Tensor& first = examples[0].*member;
  std::vector<Tensor> parts;
  parts.reserve(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    const Tensor& t = examples[i].*member;
    TT_CHECK(t.defined() == first.defined(), "collate: every example's ", field, " must be defined or "
             "every one undefined, but example 0's is ", (first.defined() ? "defined" : "undefined"),
             " and example ", i, "'s is not");
    if (!t.defined()) continue;
    TT_CHECK_SHAPE(t.shape() == first.shape(), "collate: every example's ", field, " must have the same "
                   "shape, got ", first.shape(), " at batch position 0 and ", t.shape(), " at position ", i);
    TT_CHECK_DTYPE(t.dtype() == first.dtype(), "collate: every example's ", field, " must have the same "
                   "dtype, got ", first.dtype(), " at batch position 0 and ", t.dtype(), " at position ", i);
    parts.push_back(t);
  }
  if (!first.defined()) return Tensor();
  return stack(parts, 0);
}

}  // namespace

Batch collate(const std::vector<Example>& examples) {
  TT_CHECK(!examples.empty(), "collate: expected at least one example, got an empty list");
  // TT_EXERCISE_BEGIN(08, 1)
  TT_CHECK(examples[0].data.defined(), "collate: example 0 has undefined data");
  Batch batch;
  batch.data = stack_field(examples, &Example::data, "data");
  batch.target = stack_field(examples, &Example::target, "target");
  return batch;
  // TT_EXERCISE_END
}

Batch Dataset::get_batch(const std::vector<int64_t>& indices) const {
  TT_CHECK(!indices.empty(), "Dataset::get_batch: expected at least one index, got an empty list");
  check_indices(indices, size(), "Dataset::get_batch");
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (int64_t i : indices) examples.push_back(get(size_t(i)));
  return collate(examples);
}

TensorDataset::TensorDataset(Tensor data, Tensor targets) : data_(std::move(data)), targets_(std::move(targets)) {
  TT_CHECK(data_.defined(), "TensorDataset: data is undefined");
  TT_CHECK_SHAPE(data_.dim() >= 1, "TensorDataset: data must have a first (example) dim, got shape ",
                 data_.shape());
  if (targets_.defined()) {
    TT_CHECK_SHAPE(targets_.dim() >= 1 && targets_.size(0) == data_.size(0), "TensorDataset: data and "
                   "targets must have the same size in dim 0, got data ", data_.shape(), " and targets ",
                   targets_.shape());
  }
}

size_t TensorDataset::size() const { return size_t(data_.size(0)); }

Example TensorDataset::get(size_t index) const {
  TT_CHECK_INDEX(index < size(), "TensorDataset::get: index ", index, " is out of range for a dataset of size ",
                 size());
  Example e;
  e.data = data_.select(0, int64_t(index));
  if (targets_.defined()) e.target = targets_.select(0, int64_t(index));
  return e;
}

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  check_indices(indices, size(), "TensorDataset::get_batch");
  Tensor index = tensor(indices, Shape{int64_t(indices.size())}, kInt64);
  Batch b;
  b.data = index_select(data_, 0, index.to(data_.device()));
  if (targets_.defined()) b.target = index_select(targets_, 0, index.to(targets_.device()));
  return b;
}

}  // namespace tt::data
