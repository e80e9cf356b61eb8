// DataLoader: batches of a Dataset, one epoch per range-for loop, shuffled reproducibly.
//
//   auto ds = std::make_shared<tt::data::TensorDataset>(x, y);
//   tt::data::DataLoader loader(ds, tt::data::DataLoaderOptions().batch_size(64).shuffle(true).seed(0));
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (const tt::data::Batch& b : loader) { ... b.data: [B, ...], b.target: [B, ...] ... }
//
// Each range-for (each begin()) is a new epoch: epoch e visits every example exactly once, in
// the order permutation(N, seed, e) (data/random.h) when shuffling, else 0..N-1. The order
// depends only on (seed, epoch), never on the platform or on how many loaders exist.
// Batches come from Dataset::get_batch, so they live on the dataset's device. There are no
// worker threads, no prefetching and no pinned memory: a batch is fetched when the iterator
// reaches it.
//
// Data-parallel training gives the loader a DistributedSampler (data/distributed_sampler.h): the
// loader then batches only that rank's indices, in the sampler's order for the sampler's epoch,
// and the sampler owns the epoch number (call sampler->set_epoch(e) before each epoch, as in
// PyTorch; loops do not advance it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "tinytorch/data/dataset.h"
#include "tinytorch/data/distributed_sampler.h"

namespace tt::data {

struct DataLoaderOptions {
  DataLoaderOptions() = default;
  explicit DataLoaderOptions(int64_t batch_size) : batch_size_(batch_size) {}
  // Examples per batch (> 0; checked by DataLoader).
  DataLoaderOptions& batch_size(int64_t v) {
    batch_size_ = v;
    return *this;
  }
  // Visit the examples in a new random order each epoch.
  DataLoaderOptions& shuffle(bool v) {
    shuffle_ = v;
    return *this;
  }
  // Seed of the shuffle (with the epoch number).
  DataLoaderOptions& seed(uint64_t v) {
    seed_ = v;
    return *this;
  }
  // Skip the last batch when it would be smaller than batch_size.
  DataLoaderOptions& drop_last(bool v) {
    drop_last_ = v;
    return *this;
  }
  int64_t batch_size() const { return batch_size_; }
  bool shuffle() const { return shuffle_; }
  uint64_t seed() const { return seed_; }
  bool drop_last() const { return drop_last_; }

 private:
  int64_t batch_size_ = 1;  // PyTorch's defaults
  bool shuffle_ = false;
  uint64_t seed_ = 0;
  bool drop_last_ = false;
};

class DataLoader {
 public:
  // Throws tt::Error when dataset is null or batch_size <= 0. With a sampler (null means none) the
  // loader visits sampler->indices() each epoch; options.shuffle() must then be false (the sampler
  // shuffles) and the sampler must be built for dataset->size() examples, else tt::Error.
  explicit DataLoader(std::shared_ptr<Dataset> dataset, const DataLoaderOptions& options = {},
                      std::shared_ptr<DistributedSampler> sampler = nullptr);

  // An input iterator over one epoch's batches. It keeps the dataset alive and holds the epoch's
  // order (copies share it), so it stays valid if the loader goes away. The batch is fetched
  // when the iterator arrives at it (begin() fetches the first).
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;

    Iterator() = default;
    const Batch& operator*() const { return batch_; }
    const Batch* operator->() const { return &batch_; }
    Iterator& operator++();
    bool operator==(const Iterator& o) const { return position_ == o.position_; }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    friend class DataLoader;
    struct Epoch {
      std::shared_ptr<Dataset> dataset;
      std::vector<int64_t> order;  // the visiting order: all N indices, or the sampler's
      int64_t batch_size = 1;
      size_t num_batches = 0;
    };
    Iterator(std::shared_ptr<const Epoch> epoch, size_t position);
    void fetch();

    std::shared_ptr<const Epoch> epoch_;
    size_t position_ = 0;  // batch number; num_batches at the end
    Batch batch_;
  };

  // Starts the next epoch (numbered epoch(), which then advances by one) and returns its first
  // batch. Calling begin() twice therefore starts two successive epochs.
  Iterator begin();
  Iterator end() const;

  // Batches per epoch: ceil(N / batch_size), or floor(N / batch_size) with drop_last. 0 for an
  // empty dataset. With a sampler N is sampler->num_samples(), this rank's share.
  size_t size() const;
  // The number the next begin() will use. set_epoch(e) makes the next loop epoch e (as
  // PyTorch's DistributedSampler.set_epoch); loops after it continue with e + 1, e + 2, ...
  // With a sampler both are the sampler's: epoch() is sampler->epoch(), set_epoch(e) calls
  // sampler->set_epoch(e), and loops leave it unchanged.
  uint64_t epoch() const { return sampler_ ? sampler_->epoch() : epoch_; }
  void set_epoch(uint64_t epoch) {
    if (sampler_)
      sampler_->set_epoch(epoch);
    else
      epoch_ = epoch;
  }
  // The order in which epoch `epoch` visits the dataset's indices (all N of them, or the
  // sampler's indices(epoch) with a sampler; with drop_last the tail past the last whole batch
  // is skipped).
  std::vector<int64_t> order(uint64_t epoch) const;

  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }
  const DataLoaderOptions& options() const { return options_; }
  // Null without one.
  const std::shared_ptr<DistributedSampler>& sampler() const { return sampler_; }

 private:
  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<DistributedSampler> sampler_;
  uint64_t epoch_ = 0;
};

}  // namespace tt::data
