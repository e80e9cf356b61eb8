// train_test_split and Normalize, composed of ops (index_select, mean, var, where).
#include "tinytorch/data/preprocess.h"

#include <cmath>
#include <vector>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/data/random.h"
#include "tinytorch/ops/ops.h"

namespace tt::data {

TrainTestSplit train_test_split(const TensorDataset& dataset, double test_fraction, uint64_t seed) {
  TT_CHECK(test_fraction > 0 && test_fraction < 1, "train_test_split: test_fraction must be in (0, 1), got ",
           test_fraction);
  int64_t n = int64_t(dataset.size());
  int64_t n_test = int64_t(std::llround(test_fraction * double(n)));
  std::vector<int64_t> order = permutation(n, seed);
  std::vector<int64_t> test_rows(order.begin(), order.begin() + n_test);
  std::vector<int64_t> train_rows(order.begin() + n_test, order.end());
  // get_batch copies the rows (index_select), so the parts share nothing with `dataset`.
  Batch test = dataset.get_batch(test_rows), train = dataset.get_batch(train_rows);
  return {std::make_shared<TensorDataset>(train.data, train.target),
          std::make_shared<TensorDataset>(test.data, test.target)};
}

Normalize::Normalize(Tensor mean_, Tensor stddev_) : mean(std::move(mean_)), stddev(std::move(stddev_)) {
  TT_CHECK(mean.defined() && stddev.defined(), "Normalize: mean and stddev must be defined");
  TT_CHECK_SHAPE(mean.shape() == stddev.shape(), "Normalize: mean and stddev must have the same shape, got ",
                 mean.shape(), " and ", stddev.shape());
}

Normalize Normalize::fit(const Tensor& data) {
  TT_CHECK_SHAPE(data.dim() >= 1 && data.size(0) > 0, "Normalize::fit: expected data [N, ...] with N > 0, got shape ",
                 data.shape());
  TT_CHECK_DTYPE(data.is_floating_point(), "Normalize::fit: expected floating-point data, got ", data.dtype());
  NoGradGuard no_grad;
  Tensor mean = data.mean({0});
  Tensor stddev = data.var({0}, /*correction=*/0).sqrt();
  stddev = where(stddev < 1e-12, 1.0, stddev);
  return Normalize(mean, stddev);
}

Tensor Normalize::operator()(const Tensor& x) const {
  TT_CHECK_SHAPE(x.dim() >= mean.dim(), "Normalize: expected data [B, ...] or [...] matching the fitted example "
                 "shape ", mean.shape(), ", got ", x.shape());
  for (int d = 1; d <= mean.dim(); ++d)
    TT_CHECK_SHAPE(x.size(-d) == mean.size(-d), "Normalize: expected data [B, ...] or [...] matching the fitted "
                   "example shape ", mean.shape(), ", got ", x.shape());
  return (x - mean) / stddev;
}

std::shared_ptr<TensorDataset> Normalize::operator()(const TensorDataset& dataset) const {
  TT_CHECK_SHAPE(dataset.data().dim() == mean.dim() + 1, "Normalize: expected dataset data [N, ...] matching the "
                 "fitted example shape ", mean.shape(), ", got ", dataset.data().shape());
  return std::make_shared<TensorDataset>((*this)(dataset.data()), dataset.targets());
}

}  // namespace tt::data
