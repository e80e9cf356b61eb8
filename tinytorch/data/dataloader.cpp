// DataLoader: epoch orders and batch fetching (the batches themselves come from the dataset).
#include "tinytorch/data/dataloader.h"

#include <algorithm>
#include <utility>

#include "tinytorch/data/random.h"

namespace tt::data {

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, const DataLoaderOptions& options,
                       std::shared_ptr<DistributedSampler> sampler)
    : dataset_(std::move(dataset)), options_(options), sampler_(std::move(sampler)) {
  TT_CHECK(dataset_ != nullptr, "DataLoader: dataset is null");
  TT_CHECK(options_.batch_size() > 0, "DataLoader: batch_size must be positive, got ", options_.batch_size());
  if (sampler_) {
    TT_CHECK(!options_.shuffle(),
             "DataLoader: sampler option is mutually exclusive with shuffle (the sampler shuffles: set "
             "DistributedSamplerOptions().shuffle(true) and leave the loader's shuffle false)");
    TT_CHECK(sampler_->dataset_size() == int64_t(dataset_->size()), "DataLoader: the sampler was built for ",
             sampler_->dataset_size(), " examples but the dataset has ", dataset_->size());
  }
}

size_t DataLoader::size() const {
  size_t n = sampler_ ? size_t(sampler_->num_samples()) : dataset_->size(), b = size_t(options_.batch_size());
  return options_.drop_last() ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> DataLoader::order(uint64_t epoch) const {
  if (sampler_) return sampler_->indices(epoch);
  int64_t n = int64_t(dataset_->size());
  if (options_.shuffle()) return permutation(n, options_.seed(), epoch);
  std::vector<int64_t> identity(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) identity[size_t(i)] = i;
  return identity;
}

DataLoader::Iterator DataLoader::begin() {
  auto epoch = std::make_shared<Iterator::Epoch>();
  epoch->dataset = dataset_;
  epoch->order = order(this->epoch());
  epoch->batch_size = options_.batch_size();
  epoch->num_batches = size();
  if (!sampler_) ++epoch_;  // with a sampler, its set_epoch decides (as in PyTorch)
  return Iterator(std::move(epoch), 0);
}

DataLoader::Iterator DataLoader::end() const { return Iterator(nullptr, size()); }

DataLoader::Iterator::Iterator(std::shared_ptr<const Epoch> epoch, size_t position)
    : epoch_(std::move(epoch)), position_(position) {
  if (epoch_) fetch();
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  TT_CHECK(epoch_ && position_ < epoch_->num_batches, "DataLoader::Iterator: cannot advance past the end");
  ++position_;
  fetch();
  return *this;
}

// Loads batch `position_` (or clears the batch at the end).
void DataLoader::Iterator::fetch() {
  batch_ = Batch();
  if (position_ >= epoch_->num_batches) return;
  size_t b = size_t(epoch_->batch_size);
  size_t start = position_ * b, stop = std::min(start + b, epoch_->order.size());
  std::vector<int64_t> indices(epoch_->order.begin() + std::ptrdiff_t(start),
                               epoch_->order.begin() + std::ptrdiff_t(stop));
  batch_ = epoch_->dataset->get_batch(indices);
}

}  // namespace tt::data
