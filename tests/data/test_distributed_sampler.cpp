// DistributedSampler (data/distributed_sampler.h) and the DataLoader that takes one: the partition
// of an epoch among ranks (disjoint and covering, or padded with PyTorch's numbers), reproducible
// shuffles, the ranks' batches against one process's bigger batch, bad options. Single process:
// every rank's sampler is built here with an explicit rank.
#include <algorithm>
#include <set>

#include "test_util.h"
#include "tinytorch/distributed/distributed.h"

using namespace tt;
using namespace tt::data;

namespace {

// Example i is data [i] (float32) and target i (0-d int64), so a batch shows which indices it holds.
std::shared_ptr<TensorDataset> range_dataset(int64_t n) {
  return std::make_shared<TensorDataset>(arange(n, kFloat32).reshape({n, 1}), arange(n));
}

DistributedSampler make_sampler(int64_t n, int64_t world, int64_t rank, bool shuffle, bool drop_last = false,
                                uint64_t seed = 0) {
  return DistributedSampler(
      n, DistributedSamplerOptions().num_replicas(world).rank(rank).shuffle(shuffle).drop_last(drop_last).seed(seed));
}

// Every rank's indices for one epoch, rank by rank.
std::vector<std::vector<int64_t>> all_ranks(int64_t n, int64_t world, bool shuffle, bool drop_last = false,
                                            uint64_t seed = 0, uint64_t epoch = 0) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t r = 0; r < world; ++r) {
    DistributedSampler s = make_sampler(n, world, r, shuffle, drop_last, seed);
    s.set_epoch(epoch);
    out.push_back(s.indices());
  }
  return out;
}

using Lists = std::vector<std::vector<int64_t>>;

}  // namespace

TEST_CASE("DistributedSampler partitions the epoch when the world size divides N", "[data][sampler]") {
  for (bool shuffle : {false, true}) {
    for (int64_t world : {1, 2, 3, 4, 6, 12}) {
      INFO("shuffle " << shuffle << ", world " << world);
      const int64_t n = 24;
      std::vector<int64_t> all;
      for (const std::vector<int64_t>& mine : all_ranks(n, world, shuffle, false, 11, 2)) {
        CHECK(int64_t(mine.size()) == n / world);
        all.insert(all.end(), mine.begin(), mine.end());
      }
      std::sort(all.begin(), all.end());
      std::vector<int64_t> expected(size_t(n), 0);
      for (int64_t i = 0; i < n; ++i) expected[size_t(i)] = i;
      CHECK(all == expected);  // disjoint and covering: each index exactly once
      // drop_last changes nothing when W divides N.
      CHECK(all_ranks(n, world, shuffle, true, 11, 2) == all_ranks(n, world, shuffle, false, 11, 2));
    }
  }
}

TEST_CASE("DistributedSampler pads and drops as PyTorch does", "[data][sampler]") {
  // Derived by hand from torch.utils.data.DistributedSampler's algorithm (shuffle=False), and
  // checked against torch 1.13: pad with the order's start, then rank r takes [r::W].
  SECTION("N = 10, W = 3") {
    CHECK(all_ranks(10, 3, false) == Lists{{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}});
    CHECK(all_ranks(10, 3, false, true) == Lists{{0, 3, 6}, {1, 4, 7}, {2, 5, 8}});
    DistributedSampler s = make_sampler(10, 3, 1, false);
    CHECK(s.num_samples() == 4);
    CHECK(s.total_size() == 12);
    DistributedSampler d = make_sampler(10, 3, 1, false, true);
    CHECK(d.num_samples() == 3);  // PyTorch: ceil((10 - 3) / 3) = 3
    CHECK(d.total_size() == 9);
  }
  SECTION("N = 7, W = 4") {
    CHECK(all_ranks(7, 4, false) == Lists{{0, 4}, {1, 5}, {2, 6}, {3, 0}});
    CHECK(all_ranks(7, 4, false, true) == Lists{{0}, {1}, {2}, {3}});
  }
  SECTION("padding longer than N wraps around repeatedly: N = 2, W = 5") {
    // Padded order 0 1 | 0 1 0 (three padding entries from a list of two).
    CHECK(all_ranks(2, 5, false) == Lists{{0}, {1}, {0}, {1}, {0}});
    // With drop_last: ceil((2 - 5) / 5) = 0 each.
    CHECK(all_ranks(2, 5, false, true) == Lists{{}, {}, {}, {}, {}});
    CHECK(make_sampler(2, 5, 4, false, true).total_size() == 0);
  }
  SECTION("an empty dataset gives every rank nothing") {
    CHECK(all_ranks(0, 3, true) == Lists{{}, {}, {}});
    CHECK(all_ranks(0, 3, false, true) == Lists{{}, {}, {}});
  }
  SECTION("the padding repeats the start of the shuffled order") {
    std::vector<int64_t> p = permutation(10, 5, 2);
    Lists expected{{p[0], p[3], p[6], p[9]}, {p[1], p[4], p[7], p[0]}, {p[2], p[5], p[8], p[1]}};
    CHECK(all_ranks(10, 3, true, false, 5, 2) == expected);
    CHECK(all_ranks(10, 3, true, true, 5, 2) == Lists{{p[0], p[3], p[6]}, {p[1], p[4], p[7]}, {p[2], p[5], p[8]}});
  }
}

TEST_CASE("DistributedSampler's shuffle depends only on seed and epoch", "[data][sampler]") {
  DistributedSampler a = make_sampler(50, 2, 1, true, false, 3);
  DistributedSampler b = make_sampler(50, 2, 1, true, false, 3);
  CHECK(a.epoch() == 0);
  a.set_epoch(4);
  b.set_epoch(4);
  CHECK(a.epoch() == 4);
  CHECK(a.indices() == b.indices());      // same seed and epoch: same indices
  CHECK(a.indices() == a.indices(4));     // indices() is the current epoch's
  CHECK(a.indices() == a.indices());      // asking twice changes nothing
  CHECK(a.indices(5) != a.indices(4));    // another epoch: another order
  CHECK(make_sampler(50, 2, 1, true, false, 4).indices(4) != a.indices());  // another seed too
  // The shuffled order is the DataLoader's: rank r of W takes permutation(N, seed, epoch)[r::W].
  std::vector<int64_t> p = permutation(50, 3, 4), strided;
  for (size_t i = 1; i < p.size(); i += 2) strided.push_back(p[i]);
  CHECK(a.indices() == strided);
  // Without shuffle every epoch is the same.
  DistributedSampler plain = make_sampler(50, 2, 1, false);
  CHECK(plain.indices(0) == plain.indices(7));
}

TEST_CASE("DistributedSampler defaults to the process group's world size and rank", "[data][sampler]") {
  DistributedSampler s(9);  // a single test process: a world of one
  CHECK(s.num_replicas() == tt::distributed::get_world_size());
  CHECK(s.rank() == tt::distributed::get_rank());
  CHECK(s.shuffle());  // PyTorch's default
  CHECK(s.seed() == 0);
  CHECK_FALSE(s.drop_last());
  CHECK(s.num_samples() == 9);
  CHECK(s.indices() == permutation(9, 0, 0));  // the whole epoch, in the DataLoader's shuffled order
}

TEST_CASE("The ranks' batches together are the single-process batch", "[data][sampler]") {
  const int64_t n = 32, world = 2, batch = 4;
  const uint64_t seed = 7, epoch = 3;
  auto ds = range_dataset(n);
  DataLoader single(ds, DataLoaderOptions().batch_size(world * batch).shuffle(true).seed(seed));
  single.set_epoch(epoch);
  std::vector<DataLoader> ranks;
  for (int64_t r = 0; r < world; ++r) {
    auto sampler = std::make_shared<DistributedSampler>(
        n, DistributedSamplerOptions().num_replicas(world).rank(r).seed(seed));
    sampler->set_epoch(epoch);
    ranks.emplace_back(ds, DataLoaderOptions().batch_size(batch), sampler);
    CHECK(ranks.back().size() == size_t(n / (world * batch)));
  }
  REQUIRE(single.size() == 4);

  std::vector<DataLoader::Iterator> its;
  for (DataLoader& l : ranks) its.push_back(l.begin());
  size_t steps = 0;
  for (const Batch& big : single) {
    std::vector<int64_t> t = big.target.to_vector<int64_t>();
    std::multiset<int64_t> expected(t.begin(), t.end()), together;
    for (size_t r = 0; r < its.size(); ++r) {
      REQUIRE(its[r] != ranks[r].end());
      CHECK(its[r]->data.size(0) == batch);
      std::vector<int64_t> mine = its[r]->target.to_vector<int64_t>();
      together.insert(mine.begin(), mine.end());
      ++its[r];
    }
    CHECK(together == expected);
    ++steps;
  }
  CHECK(steps == 4);
  for (size_t r = 0; r < its.size(); ++r) CHECK(its[r] == ranks[r].end());
}

TEST_CASE("A DataLoader with a sampler batches the sampler's indices", "[data][sampler][dataloader]") {
  auto ds = range_dataset(10);
  auto sampler = std::make_shared<DistributedSampler>(
      10, DistributedSamplerOptions().num_replicas(3).rank(1).shuffle(false));  // indices 1 4 7 0
  DataLoader keep(ds, DataLoaderOptions().batch_size(3), sampler);
  DataLoader drop(ds, DataLoaderOptions().batch_size(3).drop_last(true), sampler);
  CHECK(keep.size() == 2);  // 4 indices: batches of 3 and 1
  CHECK(drop.size() == 1);  // the loader's drop_last applies to its own batches
  CHECK(keep.sampler() == sampler);

  std::vector<std::vector<int64_t>> batches;
  for (const Batch& b : keep) batches.push_back(b.target.to_vector<int64_t>());
  CHECK(batches == Lists{{1, 4, 7}, {0}});
  batches.clear();
  for (const Batch& b : drop) batches.push_back(b.target.to_vector<int64_t>());
  CHECK(batches == Lists{{1, 4, 7}});

  // The sampler owns the epoch: loops do not advance it, set_epoch on either changes both.
  auto shuffled = std::make_shared<DistributedSampler>(10, DistributedSamplerOptions().num_replicas(2).rank(0).seed(1));
  DataLoader loader(ds, DataLoaderOptions().batch_size(5), shuffled);
  auto one_epoch = [&] {
    std::vector<int64_t> seen;
    for (const Batch& b : loader) {
      std::vector<int64_t> t = b.target.to_vector<int64_t>();
      seen.insert(seen.end(), t.begin(), t.end());
    }
    return seen;
  };
  std::vector<int64_t> first = one_epoch();
  CHECK(first == shuffled->indices(0));
  CHECK(one_epoch() == first);  // no set_epoch: the same order again (PyTorch's behaviour)
  CHECK(loader.epoch() == 0);
  shuffled->set_epoch(1);
  CHECK(loader.epoch() == 1);
  CHECK(loader.order(1) == shuffled->indices(1));
  std::vector<int64_t> second = one_epoch();
  CHECK(second == shuffled->indices(1));
  CHECK(second != first);
  loader.set_epoch(5);
  CHECK(shuffled->epoch() == 5);

  // A null sampler is no sampler: the ordinary loader.
  DataLoader plain(ds, DataLoaderOptions().batch_size(4), nullptr);
  CHECK(plain.size() == 3);
  CHECK(plain.sampler() == nullptr);
}

TEST_CASE("DistributedSampler and the loader reject bad options", "[data][sampler]") {
  REQUIRE_THROWS_WITH(DistributedSampler(-1, DistributedSamplerOptions().num_replicas(2).rank(0)),
                      "DistributedSampler: dataset_size must be non-negative, got -1");
  REQUIRE_THROWS_WITH(DistributedSampler(10, DistributedSamplerOptions().num_replicas(0).rank(0)),
                      "DistributedSampler: num_replicas must be at least 1, got 0");
  REQUIRE_THROWS_WITH(DistributedSampler(10, DistributedSamplerOptions().num_replicas(3).rank(3)),
                      "DistributedSampler: rank must be in [0, num_replicas) = [0, 3), got 3");
  REQUIRE_THROWS_WITH(DistributedSampler(10, DistributedSamplerOptions().num_replicas(3).rank(-1)),
                      "DistributedSampler: rank must be in [0, num_replicas) = [0, 3), got -1");

  auto ds = range_dataset(10);
  auto sampler = std::make_shared<DistributedSampler>(10, DistributedSamplerOptions().num_replicas(2).rank(0));
  REQUIRE_THROWS_WITH(DataLoader(ds, DataLoaderOptions().batch_size(2).shuffle(true), sampler),
                      Catch::Contains("DataLoader: sampler option is mutually exclusive with shuffle"));
  auto wrong = std::make_shared<DistributedSampler>(12, DistributedSamplerOptions().num_replicas(2).rank(0));
  REQUIRE_THROWS_WITH(DataLoader(ds, DataLoaderOptions().batch_size(2), wrong),
                      "DataLoader: the sampler was built for 12 examples but the dataset has 10");
}
