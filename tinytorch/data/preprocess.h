// Preparing a dataset for training: a seeded train/test split and per-feature standardization.
// Both compose ops and return new TensorDatasets; the input dataset is never modified.
#pragma once

#include <cstdint>
#include <memory>

#include "tinytorch/data/dataset.h"

namespace tt::data {

// Splits a dataset's rows into a random training part and a test part of round(test_fraction * N)
// rows (0 < test_fraction < 1), using permutation(N, seed). Both parts are new tensors (copies),
// in the permuted order; targets follow their rows (an unlabelled dataset gives unlabelled parts).
struct TrainTestSplit {
  std::shared_ptr<TensorDataset> train;
  std::shared_ptr<TensorDataset> test;
};
TrainTestSplit train_test_split(const TensorDataset& dataset, double test_fraction, uint64_t seed = 0);

// Per-feature standardization: y = (x - mean) / stddev, with mean and stddev taken over dim 0.
//
//   auto norm = tt::data::Normalize::fit(train->data());   // statistics of the training set only
//   auto train_n = norm(*train), test_n = norm(*test);
struct Normalize {
  Normalize(Tensor mean, Tensor stddev);
  // mean and population std over dim 0 of data [N, ...] (float); a feature with std below 1e-12
  // (constant) gets stddev 1, so it maps to 0 rather than to NaN. N must be > 0.
  static Normalize fit(const Tensor& data);
  // x: [B, ...] or [...] (one example) -> the same shape, standardized.
  Tensor operator()(const Tensor& x) const;
  // A new dataset with standardized data and the same targets.
  std::shared_ptr<TensorDataset> operator()(const TensorDataset& dataset) const;

  Tensor mean;    // [...]: the shape of one example
  Tensor stddev;  // [...]
};

}  // namespace tt::data
