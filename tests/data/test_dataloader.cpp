// DataLoader (data/dataloader.h) and permutation (data/random.h): batch counts, partial batches,
// epochs, reproducible shuffling, collation through custom datasets, bad options.
#include <algorithm>
#include <map>
#include <set>

#include "test_util.h"

using namespace tt;
using namespace tt::data;

namespace {

// Example i is data [i] (float32) and target i (0-d int64), so a batch shows which indices it holds.
std::shared_ptr<TensorDataset> range_dataset(int64_t n) {
  return std::make_shared<TensorDataset>(arange(n, kFloat32).reshape({n, 1}), arange(n));
}

// Every target of one epoch, in the order the loader gave them, and the batch sizes.
std::vector<int64_t> epoch_indices(DataLoader& loader, std::vector<int64_t>* sizes = nullptr) {
  std::vector<int64_t> seen;
  for (const Batch& b : loader) {
    std::vector<int64_t> t = b.target.to_vector<int64_t>();
    seen.insert(seen.end(), t.begin(), t.end());
    if (sizes) sizes->push_back(b.data.size(0));
  }
  return seen;
}

bool is_permutation_of_range(std::vector<int64_t> v, int64_t n) {
  if (int64_t(v.size()) != n) return false;
  std::sort(v.begin(), v.end());
  for (int64_t i = 0; i < n; ++i)
    if (v[size_t(i)] != i) return false;
  return true;
}

// A dataset computed on the fly with [2, 2] data and 0-d float targets (no fast get_batch).
struct GridDataset : Dataset {
  size_t size() const override { return 7; }
  Example get(size_t index) const override {
    double v = double(index);
    return {full({2, 2}, v), scalar_tensor(v * 0.5)};
  }
};

}  // namespace

TEST_CASE("DataLoader counts batches with and without drop_last", "[data][dataloader]") {
  auto ds = range_dataset(10);
  DataLoader keep(ds, DataLoaderOptions().batch_size(4));
  DataLoader drop(ds, DataLoaderOptions().batch_size(4).drop_last(true));
  CHECK(keep.size() == 3);
  CHECK(drop.size() == 2);

  std::vector<int64_t> sizes;
  std::vector<int64_t> seen = epoch_indices(keep, &sizes);
  CHECK(sizes == std::vector<int64_t>{4, 4, 2});  // the last batch is partial
  CHECK(seen == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});  // no shuffle: in order

  sizes.clear();
  seen = epoch_indices(drop, &sizes);
  CHECK(sizes == std::vector<int64_t>{4, 4});
  CHECK(seen == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});

  // Exact multiples: drop_last changes nothing.
  CHECK(DataLoader(range_dataset(8), DataLoaderOptions(4)).size() == 2);
  CHECK(DataLoader(range_dataset(8), DataLoaderOptions(4).drop_last(true)).size() == 2);
  // A batch larger than the dataset: one partial batch, or none with drop_last.
  DataLoader big(ds, DataLoaderOptions(64));
  sizes.clear();
  epoch_indices(big, &sizes);
  CHECK(sizes == std::vector<int64_t>{10});
  CHECK(DataLoader(ds, DataLoaderOptions(64).drop_last(true)).size() == 0);
  // batch_size 1 (the default).
  CHECK(DataLoader(ds).size() == 10);
}

TEST_CASE("DataLoader batches carry the dataset's rows", "[data][dataloader]") {
  auto ds = range_dataset(10);
  DataLoader loader(ds, DataLoaderOptions().batch_size(3).shuffle(true).seed(5));
  size_t batches = 0;
  for (const Batch& b : loader) {
    ++batches;
    CHECK(b.data.dim() == 2);
    CHECK(b.data.size(1) == 1);
    CHECK(b.target.dim() == 1);
    // data row i holds i, as does target i.
    CHECK(b.data.reshape({-1}).to_vector<int64_t>() == b.target.to_vector<int64_t>());
  }
  CHECK(batches == loader.size());
}

TEST_CASE("DataLoader on an empty dataset yields no batches", "[data][dataloader]") {
  auto ds = std::make_shared<TensorDataset>(zeros({0, 3}), zeros({0}, kInt64));
  DataLoader loader(ds, DataLoaderOptions(4).shuffle(true));
  CHECK(loader.size() == 0);
  int count = 0;
  for (const Batch& b : loader) {
    (void)b;
    ++count;
  }
  CHECK(count == 0);
  CHECK(loader.begin() == loader.end());
}

TEST_CASE("DataLoader rejects bad options", "[data][dataloader][errors]") {
  auto ds = range_dataset(4);
  CHECK_THROWS_AS(DataLoader(ds, DataLoaderOptions(0)), Error);
  try {
    DataLoader loader(ds, DataLoaderOptions().batch_size(-2));
    FAIL("expected an Error");
  } catch (const Error& e) {
    std::string msg = e.what();
    CHECK(msg.find("batch_size") != std::string::npos);
    CHECK(msg.find("-2") != std::string::npos);
  }
  CHECK_THROWS_AS(DataLoader(nullptr, DataLoaderOptions(2)), Error);
  // Advancing past the end is an error, not undefined behaviour.
  DataLoader loader(ds, DataLoaderOptions(4));
  DataLoader::Iterator it = loader.begin();
  ++it;
  CHECK(it == loader.end());
  CHECK_THROWS_AS(++it, Error);
}

TEST_CASE("DataLoader options read back", "[data][dataloader]") {
  DataLoaderOptions o = DataLoaderOptions().batch_size(64).shuffle(true).seed(9).drop_last(true);
  CHECK(o.batch_size() == 64);
  CHECK(o.shuffle());
  CHECK(o.seed() == 9);
  CHECK(o.drop_last());
  DataLoaderOptions d;
  CHECK(d.batch_size() == 1);
  CHECK_FALSE(d.shuffle());
  CHECK(d.seed() == 0);
  CHECK_FALSE(d.drop_last());
  DataLoader loader(range_dataset(3), o);
  CHECK(loader.options().batch_size() == 64);
  CHECK(loader.dataset()->size() == 3);
}

TEST_CASE("DataLoader shuffles every index exactly once per epoch", "[data][dataloader][shuffle]") {
  auto ds = range_dataset(37);
  DataLoader loader(ds, DataLoaderOptions().batch_size(5).shuffle(true).seed(11));
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 4; ++e) {
    std::vector<int64_t> sizes;
    epochs.push_back(epoch_indices(loader, &sizes));
    CHECK(is_permutation_of_range(epochs.back(), 37));
    CHECK(sizes == std::vector<int64_t>{5, 5, 5, 5, 5, 5, 5, 2});
  }
  CHECK(loader.epoch() == 4);
  // Each epoch is a new order, and none is the identity.
  std::set<std::vector<int64_t>> distinct(epochs.begin(), epochs.end());
  CHECK(distinct.size() == 4);
  std::vector<int64_t> identity = DataLoader(ds, DataLoaderOptions(5)).order(0);
  for (const auto& e : epochs) CHECK(e != identity);
  // The epoch's order is order(epoch).
  for (int e = 0; e < 4; ++e) CHECK(epochs[size_t(e)] == loader.order(uint64_t(e)));
}

TEST_CASE("DataLoader shuffling is reproducible from seed and epoch", "[data][dataloader][shuffle]") {
  auto ds = range_dataset(50);
  DataLoader a(ds, DataLoaderOptions(8).shuffle(true).seed(3));
  DataLoader b(ds, DataLoaderOptions(8).shuffle(true).seed(3));
  DataLoader c(ds, DataLoaderOptions(8).shuffle(true).seed(4));
  std::vector<int64_t> a0 = epoch_indices(a), a1 = epoch_indices(a);
  std::vector<int64_t> b0 = epoch_indices(b), b1 = epoch_indices(b);
  std::vector<int64_t> c0 = epoch_indices(c);
  CHECK(a0 == b0);  // same seed, same epoch: same order
  CHECK(a1 == b1);
  CHECK(a0 != a1);  // same seed, next epoch: new order
  CHECK(a0 != c0);  // other seed: other order
  // set_epoch rewinds (as DistributedSampler.set_epoch): epoch 1 again, then 2, 3, ...
  a.set_epoch(1);
  CHECK(epoch_indices(a) == a1);
  CHECK(a.epoch() == 2);
  // The batch size does not change the order, only how it is cut.
  DataLoader d(ds, DataLoaderOptions(7).shuffle(true).seed(3));
  CHECK(epoch_indices(d) == a0);
  // drop_last drops the tail of the same order.
  DataLoader e(ds, DataLoaderOptions(8).shuffle(true).seed(3).drop_last(true));
  std::vector<int64_t> e0 = epoch_indices(e);
  CHECK(e0.size() == 48);
  CHECK(std::equal(e0.begin(), e0.end(), a0.begin()));
}

TEST_CASE("permutation is a fixed function of n, seed and stream", "[data][shuffle]") {
  // Pinned values: the same on every platform, compiler and standard library (Philox and our
  // own integer draw; see data/random.h), and the same as an independent Python rewrite of
  // Philox4x32-10 and this Fisher-Yates gives. A change here changes every seeded run.
  CHECK(permutation(10, 0) == std::vector<int64_t>{1, 7, 5, 2, 4, 0, 6, 8, 3, 9});
  CHECK(permutation(10, 0, 1) == std::vector<int64_t>{8, 2, 9, 4, 0, 5, 6, 3, 1, 7});
  CHECK(permutation(10, 42) == std::vector<int64_t>{6, 2, 1, 8, 4, 3, 0, 5, 7, 9});
  CHECK(permutation(0, 1).empty());
  CHECK(permutation(1, 1) == std::vector<int64_t>{0});
  CHECK(is_permutation_of_range(permutation(1000, 7), 1000));
  CHECK_THROWS_AS(permutation(-1, 0), Error);
}

TEST_CASE("permutation draws every order about equally often", "[data][shuffle]") {
  // 6000 permutations of 3 elements: each of the 6 orders should appear about 1000 times
  // (binomial std ~29); a biased shuffle (e.g. swapping with any position) would show at once.
  std::map<std::vector<int64_t>, int> counts;
  for (uint64_t s = 0; s < 6000; ++s) counts[permutation(3, 123, s)]++;
  CHECK(counts.size() == 6);
  for (const auto& kv : counts) {
    INFO("order count " << kv.second);
    CHECK(kv.second > 880);
    CHECK(kv.second < 1120);
  }
  // Every value lands in every position about equally often (n = 5, 5000 draws: ~1000 each).
  int pos[5][5] = {};
  for (uint64_t s = 0; s < 5000; ++s) {
    std::vector<int64_t> p = permutation(5, s);
    for (int i = 0; i < 5; ++i) pos[i][p[size_t(i)]]++;
  }
  for (auto& row : pos)
    for (int c : row) {
      INFO("position count " << c);
      CHECK(c > 880);
      CHECK(c < 1120);
    }
}

TEST_CASE("RandomStream draws are in range and exact", "[data][shuffle]") {
  RandomStream rng(5, 0);
  for (int i = 0; i < 1000; ++i) {
    CHECK(rng.uniform_below(7) < 7);
    double u = rng.uniform();
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
  }
  CHECK(rng.uniform_below(1) == 0);
  CHECK_THROWS_AS(rng.uniform_below(0), Error);
  // A bound above 2^63 rejects about half the draws and still lands in range.
  uint64_t big = (uint64_t(1) << 63) + 12345;
  for (int i = 0; i < 100; ++i) CHECK(rng.uniform_below(big) < big);
  // Normal draws: mean ~0, variance ~1 over 20000 samples.
  double sum = 0, sq = 0;
  for (int i = 0; i < 20000; ++i) {
    double z = rng.normal();
    sum += z;
    sq += z * z;
  }
  CHECK(std::fabs(sum / 20000) < 0.05);
  CHECK(std::fabs(sq / 20000 - 1) < 0.05);
  // Two streams of one seed differ; one stream replays.
  RandomStream a(5, 1), b(5, 2), a2(5, 1);
  uint64_t xa = a.next_u64();
  CHECK(xa != b.next_u64());
  CHECK(xa == a2.next_u64());
}

TEST_CASE("DataLoader collates a custom dataset's examples", "[data][dataloader]") {
  auto ds = std::make_shared<GridDataset>();
  DataLoader loader(ds, DataLoaderOptions(3));
  std::vector<int64_t> sizes;
  int64_t next = 0;
  for (const Batch& b : loader) {
    int64_t n = b.data.size(0);
    sizes.push_back(n);
    CHECK(b.data.shape() == Shape{n, 2, 2});
    CHECK(b.target.shape() == Shape{n});  // 0-d targets -> [B]
    for (int64_t i = 0; i < n; ++i, ++next) {
      CHECK(b.data[i].to_vector<float>() == std::vector<float>(4, float(next)));
      CHECK(b.target[i].item<double>() == 0.5 * double(next));
    }
  }
  CHECK(sizes == std::vector<int64_t>{3, 3, 1});
}

TEST_CASE("a DataLoader iterator keeps its epoch alive", "[data][dataloader]") {
  auto ds = range_dataset(6);
  DataLoader::Iterator it, end;
  {
    DataLoader loader(ds, DataLoaderOptions(4).shuffle(true).seed(1));
    it = loader.begin();
    end = loader.end();
  }
  // The loader is gone; the iterator still walks its epoch.
  std::vector<int64_t> seen;
  for (; it != end; ++it) {
    std::vector<int64_t> t = it->target.to_vector<int64_t>();
    seen.insert(seen.end(), t.begin(), t.end());
  }
  CHECK(is_permutation_of_range(seen, 6));
  // Batches live on the dataset's device (here the CPU); the loader never moves them.
  DataLoader loader(ds, DataLoaderOptions(6));
  CHECK(loader.begin()->data.device() == ds->data().device());
}
