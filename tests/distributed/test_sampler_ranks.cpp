// DistributedSampler across real ranks: each rank builds its own (rank and world size from the
// group), and together their shards partition the dataset (padded when W does not divide N); a
// DataLoader on each shard, step by step, covers exactly the single-process loader's batch.
#include <catch2/catch.hpp>

#include <algorithm>

#include "dist_util.h"

using namespace tt_test;

namespace {

// Every rank's indices, gathered: [W, num_samples].
std::vector<std::vector<int64_t>> every_rank(const tt::data::DistributedSampler& s) {
  tt::Tensor all = gather(tt::tensor(s.indices()));
  std::vector<std::vector<int64_t>> out;
  for (int r = 0; r < world(); ++r) out.push_back(all.select(0, r).to_vector<int64_t>());
  return out;
}

}  // namespace

TEST_CASE("the ranks' samplers partition the dataset: disjoint and covering, padded when W does not divide N",
          "[distributed][sampler]") {
  for (int64_t N : {int64_t(12), int64_t(13), int64_t(30)}) {
    for (bool shuffle : {false, true}) {
      tt::data::DistributedSampler s(N, tt::data::DistributedSamplerOptions().shuffle(shuffle).seed(7));
      s.set_epoch(3);
      REQUIRE(s.num_samples() == (N + world() - 1) / world());
      std::vector<int64_t> all;
      for (const auto& shard : every_rank(s)) all.insert(all.end(), shard.begin(), shard.end());
      REQUIRE(int64_t(all.size()) == s.total_size());
      std::sort(all.begin(), all.end());
      std::vector<int64_t> unique_all = all;
      unique_all.erase(std::unique(unique_all.begin(), unique_all.end()), unique_all.end());
      REQUIRE(int64_t(unique_all.size()) == N);                             // covering
      REQUIRE(int64_t(all.size() - unique_all.size()) == s.total_size() - N);  // repeats = padding only
    }
  }
}

TEST_CASE("with a sampler per rank, step k's batches together are the single-process step k batch",
          "[distributed][sampler]") {
  const int64_t B = 2, N = 8 * world() * B;
  auto ds = std::make_shared<tt::data::TensorDataset>(tt::arange(N, tt::kInt64), tt::arange(N, tt::kInt64));
  auto sampler = std::make_shared<tt::data::DistributedSampler>(N, tt::data::DistributedSamplerOptions().seed(3));
  sampler->set_epoch(1);
  tt::data::DataLoader mine(ds, tt::data::DataLoaderOptions().batch_size(B), sampler);
  tt::data::DataLoader whole(ds, tt::data::DataLoaderOptions().batch_size(world() * B).shuffle(true).seed(3));
  whole.set_epoch(1);
  auto it = whole.begin();
  size_t steps = 0;
  for (const tt::data::Batch& b : mine) {
    std::vector<int64_t> together = gather(b.data).reshape({-1}).to_vector<int64_t>();
    std::vector<int64_t> expected = it->data.to_vector<int64_t>();
    std::sort(together.begin(), together.end());
    std::sort(expected.begin(), expected.end());
    REQUIRE(together == expected);
    ++it;
    ++steps;
  }
  REQUIRE(steps == size_t(N / (world() * B)));
}
