// DistributedSampler: the share of a dataset's indices that one rank of a data-parallel job visits
// in an epoch, with PyTorch's padding semantics (torch.utils.data.DistributedSampler).
//
//   auto sampler = std::make_shared<tt::data::DistributedSampler>(
//       int64_t(ds->size()), tt::data::DistributedSamplerOptions().seed(0));  // world size, rank
//   tt::data::DataLoader loader(ds, tt::data::DataLoaderOptions().batch_size(B), sampler);
//   for (uint64_t epoch = 0; epoch < E; ++epoch) {
//     sampler->set_epoch(epoch);  // as in PyTorch: without it every epoch has the same order
//     for (const tt::data::Batch& b : loader) { ... }
//   }
//
// Note [distributed sampler]. With N examples and W ranks the epoch's order is the one a
// single-process DataLoader uses (permutation(N, seed, epoch) from data/random.h when shuffling,
// else 0..N-1). It is made a multiple of W long:
//   - without drop_last: total_size = ceil(N / W) * W, padded by repeating the order from its
//     start (cyclically, when the padding is longer than N), so some examples are seen twice;
//   - with drop_last: total_size = floor(N / W) * W, the tail of the order is dropped.
// Rank r then takes the strided slice order[r], order[r + W], order[r + 2W], ... (num_samples =
// total_size / W indices). Because the slice is strided rather than contiguous, step k of W ranks
// each loading batch B covers positions [k*W*B, (k+1)*W*B) of the order: together the ranks'
// batches are exactly the batch of W*B a single process would load at step k (when W divides N,
// so that no padding moves the positions). This is what makes data-parallel training on W ranks
// equal to one process on a batch W times larger.
//
// There is no communication here: every rank computes the same order from the same seed and
// epoch, so the ranks must agree on seed, shuffle and drop_last (and call set_epoch alike).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tt::data {

struct DistributedSamplerOptions {
  // Ranks sharing the dataset (>= 1). Default: tt::distributed::get_world_size() (1 when the
  // program runs alone).
  DistributedSamplerOptions& num_replicas(int64_t v) {
    num_replicas_ = v;
    return *this;
  }
  // This rank, in [0, num_replicas). Default: tt::distributed::get_rank().
  DistributedSamplerOptions& rank(int64_t v) {
    rank_ = v;
    return *this;
  }
  // A new random order every epoch (permutation(N, seed, epoch), the DataLoader's shuffle).
  DistributedSamplerOptions& shuffle(bool v) {
    shuffle_ = v;
    return *this;
  }
  // Seed of the shuffle; every rank must use the same.
  DistributedSamplerOptions& seed(uint64_t v) {
    seed_ = v;
    return *this;
  }
  // Drop the tail that does not divide evenly among the ranks instead of padding it.
  DistributedSamplerOptions& drop_last(bool v) {
    drop_last_ = v;
    return *this;
  }
  // Unset (std::nullopt) means "ask tt::distributed when the sampler is built".
  std::optional<int64_t> num_replicas() const { return num_replicas_; }
  std::optional<int64_t> rank() const { return rank_; }
  bool shuffle() const { return shuffle_; }
  uint64_t seed() const { return seed_; }
  bool drop_last() const { return drop_last_; }

 private:
  std::optional<int64_t> num_replicas_;
  std::optional<int64_t> rank_;
  bool shuffle_ = true;  // PyTorch's defaults
  uint64_t seed_ = 0;
  bool drop_last_ = false;
};

class DistributedSampler {
 public:
  // Throws tt::Error when dataset_size < 0, num_replicas < 1 or rank is outside [0, num_replicas).
  explicit DistributedSampler(int64_t dataset_size, const DistributedSamplerOptions& options = {});

  // The epoch whose order indices() gives. Call set_epoch(e) at the start of every epoch on every
  // rank (as with PyTorch's sampler); a DataLoader given this sampler never changes it itself.
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }

  // This rank's indices for the current epoch / for epoch `epoch` (num_samples() of them, see
  // Note [distributed sampler]).
  std::vector<int64_t> indices() const { return indices(epoch_); }
  std::vector<int64_t> indices(uint64_t epoch) const;

  // Indices per rank and per epoch: ceil(N / W), or floor(N / W) with drop_last.
  int64_t num_samples() const { return num_samples_; }
  // num_samples() * num_replicas(): the length of the padded (or truncated) order.
  int64_t total_size() const { return num_samples_ * num_replicas_; }
  int64_t dataset_size() const { return dataset_size_; }
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }
  bool shuffle() const { return shuffle_; }
  uint64_t seed() const { return seed_; }
  bool drop_last() const { return drop_last_; }

 private:
  int64_t dataset_size_;
  int64_t num_replicas_;
  int64_t rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t num_samples_;
  uint64_t epoch_ = 0;
};

}  // namespace tt::data
