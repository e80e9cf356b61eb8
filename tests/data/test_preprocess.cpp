// Preprocessing (data/preprocess.h): train_test_split sizes, coverage and determinism, and
// Normalize's statistics, constant features, application to tensors and datasets, errors.
#include <algorithm>
#include <set>

#include "test_util.h"

using namespace tt;
using namespace tt::data;

namespace {

// Row i is [i, 2 i] (float32) with target i, so every row says where it came from.
std::shared_ptr<TensorDataset> tagged_rows(int64_t n) {
  Tensor i = arange(n, kFloat32);
  return std::make_shared<TensorDataset>(stack({i, i * 2}, 1), arange(n));
}

}  // namespace

TEST_CASE("train_test_split partitions the rows", "[data][preprocess]") {
  auto ds = tagged_rows(50);
  TrainTestSplit split = train_test_split(*ds, 0.2, 3);
  CHECK(split.train->size() == 40);
  CHECK(split.test->size() == 10);
  std::vector<int64_t> train = split.train->targets().to_vector<int64_t>();
  std::vector<int64_t> test = split.test->targets().to_vector<int64_t>();
  // Disjoint, and together every row once.
  std::vector<int64_t> all(train);
  all.insert(all.end(), test.begin(), test.end());
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(50);
  for (int64_t k = 0; k < 50; ++k) expected[size_t(k)] = k;
  CHECK(all == expected);
  // Data follows targets.
  CHECK_ALLCLOSE(split.test->data().select(1, 0), split.test->targets().to(kFloat32), 0, 0);
  CHECK_ALLCLOSE(split.train->data().select(1, 1), split.train->targets().to(kFloat32) * 2, 0, 0);
  // The rows are shuffled (not the first or last 10).
  std::vector<int64_t> sorted_test(test);
  std::sort(sorted_test.begin(), sorted_test.end());
  CHECK(sorted_test != std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(sorted_test != std::vector<int64_t>{40, 41, 42, 43, 44, 45, 46, 47, 48, 49});
  // The parts are copies: writing into one leaves the source alone.
  Tensor train_data = split.train->data();  // a handle: fill_ writes the part's storage
  train_data.fill_(-1);
  CHECK(ds->data().min().item<double>() == 0.0);
}

TEST_CASE("train_test_split is reproducible and rounds the test size", "[data][preprocess]") {
  auto ds = tagged_rows(10);
  TrainTestSplit a = train_test_split(*ds, 0.3, 5), b = train_test_split(*ds, 0.3, 5);
  TrainTestSplit c = train_test_split(*ds, 0.3, 6);
  CHECK(a.test->targets().to_vector<int64_t>() == b.test->targets().to_vector<int64_t>());
  CHECK(a.train->targets().to_vector<int64_t>() == b.train->targets().to_vector<int64_t>());
  CHECK(a.test->targets().to_vector<int64_t>() != c.test->targets().to_vector<int64_t>());
  // The test part is the first round(f N) indices of permutation(N, seed).
  std::vector<int64_t> order = permutation(10, 5);
  CHECK(a.test->targets().to_vector<int64_t>() == std::vector<int64_t>(order.begin(), order.begin() + 3));
  CHECK(train_test_split(*ds, 0.25, 0).test->size() == 3);  // 2.5 rounds up
  CHECK(train_test_split(*ds, 0.04, 0).test->size() == 0);  // an empty part is allowed
  CHECK(train_test_split(*ds, 0.96, 0).train->size() == 0);
}

TEST_CASE("train_test_split keeps unlabelled data unlabelled and rejects bad fractions", "[data][preprocess]") {
  TensorDataset ds(arange(12, kFloat32).reshape({6, 2}));
  TrainTestSplit split = train_test_split(ds, 0.5, 1);
  CHECK(split.train->data().shape() == Shape{3, 2});
  CHECK_FALSE(split.train->targets().defined());
  CHECK_FALSE(split.test->targets().defined());
  CHECK_THROWS_AS(train_test_split(ds, 0.0), Error);
  CHECK_THROWS_AS(train_test_split(ds, 1.0), Error);
  CHECK_THROWS_AS(train_test_split(ds, -0.5), Error);
  CHECK_THROWS_AS(train_test_split(ds, std::nan("")), Error);
}

TEST_CASE("Normalize::fit standardizes each feature", "[data][preprocess]") {
  manual_seed(17);
  Tensor x = randn({500, 3}) * tensor({2.0, 0.5, 10.0}) + tensor({1.0, -3.0, 50.0});
  Normalize norm = Normalize::fit(x);
  CHECK(norm.mean.shape() == Shape{3});
  CHECK(norm.stddev.shape() == Shape{3});
  CHECK_ALLCLOSE(norm.mean, x.mean({0}), 1e-6, 1e-6);
  CHECK_ALLCLOSE(norm.stddev, x.var({0}, 0).sqrt(), 1e-6, 1e-6);  // population std
  Tensor y = norm(x);
  CHECK(y.shape() == Shape{500, 3});
  CHECK_ALLCLOSE(y.mean({0}), zeros({3}), 0, 1e-5);
  CHECK_ALLCLOSE(y.var({0}, 0), ones({3}), 1e-4, 1e-4);
  // One example [3] works too, the same as its row of the batch.
  CHECK_ALLCLOSE(norm(x[7]), y[7], 1e-6, 1e-6);
  // Fitting records no graph, even on data that requires grad.
  Tensor leaf = x.clone().requires_grad_();
  Normalize fit_leaf = Normalize::fit(leaf);
  CHECK_FALSE(fit_leaf.mean.requires_grad());
  CHECK_FALSE(fit_leaf.stddev.requires_grad());
}

TEST_CASE("Normalize maps a constant feature to zero and applies to datasets", "[data][preprocess]") {
  Tensor x = tensor({{1.0, 5.0}, {3.0, 5.0}, {5.0, 5.0}});
  Normalize norm = Normalize::fit(x);
  CHECK(norm.stddev[1].item<double>() == 1.0);
  Tensor y = norm(x);
  CHECK_ALLCLOSE(y.select(1, 1), zeros({3}), 0, 0);
  for (float v : y.to_vector<float>()) CHECK(std::isfinite(v));

  auto ds = std::make_shared<TensorDataset>(x, tensor({0, 1, 2}));
  std::shared_ptr<TensorDataset> out = norm(*ds);
  CHECK_ALLCLOSE(out->data(), y, 0, 0);
  CHECK(out->targets().is_same(ds->targets()));  // targets are shared, untouched
  CHECK_ALLCLOSE(ds->data(), x, 0, 0);           // the source is unchanged
}

TEST_CASE("Normalize rejects bad input", "[data][preprocess][errors]") {
  CHECK_THROWS_AS(Normalize::fit(zeros({0, 3})), ShapeError);
  CHECK_THROWS_AS(Normalize::fit(scalar_tensor(1.0)), ShapeError);
  CHECK_THROWS_AS(Normalize::fit(arange(6).reshape({3, 2})), DtypeError);
  CHECK_THROWS_AS(Normalize(zeros({3}), ones({2})), ShapeError);
  CHECK_THROWS_AS(Normalize(Tensor(), ones({2})), Error);
  Normalize norm(zeros({3}), ones({3}));
  try {
    norm(zeros({4, 2}));
    FAIL("expected a ShapeError");
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    CHECK(msg.find("Normalize") != std::string::npos);
    CHECK(msg.find("[3]") != std::string::npos);
    CHECK(msg.find("[4, 2]") != std::string::npos);
  }
  CHECK_THROWS_AS(norm(TensorDataset(zeros({4, 2, 3}))), ShapeError);
}
