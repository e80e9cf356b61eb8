// DistributedSampler: option checks, the per-rank sizes and the padded, strided order
// (Note [distributed sampler] in distributed_sampler.h).
#include "tinytorch/data/distributed_sampler.h"

#include "tinytorch/core/error.h"
#include "tinytorch/data/random.h"
#include "tinytorch/distributed/distributed.h"

namespace tt::data {

DistributedSampler::DistributedSampler(int64_t dataset_size, const DistributedSamplerOptions& options)
    : dataset_size_(dataset_size),
      num_replicas_(options.num_replicas() ? *options.num_replicas() : tt::distributed::get_world_size()),
      rank_(options.rank() ? *options.rank() : tt::distributed::get_rank()),
      shuffle_(options.shuffle()),
      seed_(options.seed()),
      drop_last_(options.drop_last()),
      num_samples_(0) {
  if (!options.num_replicas() || !options.rank()) tt::distributed::check_initialized_under_mpirun("DistributedSampler");
  TT_CHECK(dataset_size_ >= 0, "DistributedSampler: dataset_size must be non-negative, got ", dataset_size_);
  TT_CHECK(num_replicas_ >= 1, "DistributedSampler: num_replicas must be at least 1, got ", num_replicas_);
  TT_CHECK(rank_ >= 0 && rank_ < num_replicas_, "DistributedSampler: rank must be in [0, num_replicas) = [0, ",
           num_replicas_, "), got ", rank_);
  // PyTorch writes the drop_last case as ceil((N - W) / W) when W does not divide N; that is
  // floor(N / W) for every N >= 0 (it is 0 when N < W), which is what we compute.
  num_samples_ = drop_last_ ? dataset_size_ / num_replicas_ : (dataset_size_ + num_replicas_ - 1) / num_replicas_;
}

std::vector<int64_t> DistributedSampler::indices(uint64_t epoch) const {
  // TT_EXERCISE_BEGIN(16, 3)
  // The epoch's order of all N indices, exactly as a single-process DataLoader sees it.
  std::vector<int64_t> order;
  if (shuffle_) {
    order = permutation(dataset_size_, seed_, epoch);
  } else {
    order.resize(size_t(dataset_size_));
    for (int64_t i = 0; i < dataset_size_; ++i) order[size_t(i)] = i;
  }
  // Position p of the padded order (0 <= p < total_size) holds order[p mod N]: the padding repeats
  // the order from its start, wrapping as often as needed; with drop_last total_size <= N and the
  // tail is never read. Rank r takes positions r, r + W, r + 2W, ...
  std::vector<int64_t> mine(static_cast<size_t>(num_samples_));
  for (int64_t i = 0; i < num_samples_; ++i) {
    int64_t position = rank_ + i * num_replicas_;
    mine[size_t(i)] = order[size_t(position % dataset_size_)];
  }
  return mine;
  // TT_EXERCISE_END
}

}  // namespace tt::data
