// Datasets (data/dataset.h): TensorDataset's get/get_batch values and errors, collation rules,
// and a custom Dataset subclass going through the default get_batch.
#include <string>

#include "test_util.h"

using namespace tt;
using namespace tt::data;

namespace {

// x: [5, 3] with x[i][j] = 10 i + j; y: [5] = 100 + i.
std::shared_ptr<TensorDataset> small_dataset() {
  Tensor x = arange(15, kFloat32).reshape({5, 3});
  x = x + (arange(5, kFloat32) * 7).unsqueeze(1);  // row i: 10 i + j
  return std::make_shared<TensorDataset>(x, arange(100, 105, 1));
}

// A dataset computed on the fly: example i is data [i, -i] (float64), target i*i (0-d int64).
struct SquaresDataset : Dataset {
  explicit SquaresDataset(size_t n) : n(n) {}
  size_t size() const override { return n; }
  Example get(size_t index) const override {
    TT_CHECK_INDEX(index < n, "SquaresDataset: index ", index, " out of range");
    double v = double(index);
    return {tensor({v, -v}, kFloat64), scalar_tensor(int64_t(index * index), kInt64)};
  }
  size_t n;
};

}  // namespace

TEST_CASE("TensorDataset get returns rows as views", "[data][dataset]") {
  auto ds = small_dataset();
  CHECK(ds->size() == 5);
  Example e = ds->get(2);
  CHECK(e.data.shape() == Shape{3});
  CHECK(e.target.shape() == Shape{});
  CHECK_ALLCLOSE(e.data, tensor({20.0, 21.0, 22.0}), 0, 0);
  CHECK(e.target.item<int64_t>() == 102);
  // A view: it shares the dataset's storage.
  CHECK(e.data.storage().get() == ds->data().storage().get());
}

TEST_CASE("TensorDataset get_batch picks rows in the order asked", "[data][dataset]") {
  auto ds = small_dataset();
  Batch b = ds->get_batch({4, 0, 4, 1});
  CHECK(b.data.shape() == Shape{4, 3});
  CHECK(b.target.shape() == Shape{4});
  CHECK_ALLCLOSE(b.data, tensor({{40.0, 41.0, 42.0}, {0.0, 1.0, 2.0}, {40.0, 41.0, 42.0}, {10.0, 11.0, 12.0}}), 0, 0);
  CHECK(b.target.to_vector<int64_t>() == std::vector<int64_t>{104, 100, 104, 101});
  CHECK(b.data.dtype() == kFloat32);
  CHECK(b.target.dtype() == kInt64);
  // A copy: writing into the batch leaves the dataset alone.
  b.data.fill_(-1);
  CHECK(ds->get(4).data.to_vector<float>() == std::vector<float>{40, 41, 42});
  // An empty list gives an empty batch.
  Batch none = ds->get_batch({});
  CHECK(none.data.shape() == Shape{0, 3});
  CHECK(none.target.shape() == Shape{0});
}

TEST_CASE("TensorDataset keeps extra dims and agrees with collate of get", "[data][dataset]") {
  manual_seed(3);
  Tensor x = randn({6, 2, 3});
  Tensor y = randint(0, 4, {6, 2});
  TensorDataset ds(x, y);
  std::vector<int64_t> idx{5, 1, 3};
  Batch fast = ds.get_batch(idx);
  Batch slow = collate({ds.get(5), ds.get(1), ds.get(3)});
  CHECK(fast.data.shape() == Shape{3, 2, 3});
  CHECK(fast.target.shape() == Shape{3, 2});
  CHECK_ALLCLOSE(fast.data, slow.data, 0, 0);
  CHECK_ALLCLOSE(fast.target, slow.target, 0, 0);
  // And with the base class's default path.
  Batch base = ds.Dataset::get_batch(idx);
  CHECK_ALLCLOSE(base.data, fast.data, 0, 0);
  CHECK_ALLCLOSE(base.target, fast.target, 0, 0);
}

TEST_CASE("TensorDataset without targets gives undefined targets", "[data][dataset]") {
  TensorDataset ds(arange(6, kFloat32).reshape({3, 2}));
  CHECK(ds.size() == 3);
  CHECK_FALSE(ds.targets().defined());
  CHECK_FALSE(ds.get(1).target.defined());
  Batch b = ds.get_batch({2, 0});
  CHECK_ALLCLOSE(b.data, tensor({{4.0, 5.0}, {0.0, 1.0}}), 0, 0);
  CHECK_FALSE(b.target.defined());
  CHECK_FALSE(ds.Dataset::get_batch({2, 0}).target.defined());
}

TEST_CASE("TensorDataset rejects bad shapes and indices", "[data][dataset][errors]") {
  // First dims differ: a ShapeError that shows both shapes.
  try {
    TensorDataset bad(zeros({4, 3}), zeros({5}, kInt64));
    FAIL("expected a ShapeError");
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    CHECK(msg.find("TensorDataset") != std::string::npos);
    CHECK(msg.find("[4, 3]") != std::string::npos);
    CHECK(msg.find("[5]") != std::string::npos);
  }
  CHECK_THROWS_AS(TensorDataset(scalar_tensor(1.0), zeros({1})), ShapeError);
  CHECK_THROWS_AS(TensorDataset(zeros({2, 2}), scalar_tensor(1.0)), ShapeError);
  CHECK_THROWS_AS(TensorDataset(Tensor(), zeros({2})), Error);

  auto ds = small_dataset();
  CHECK_THROWS_AS(ds->get(5), IndexError);
  CHECK_THROWS_AS(ds->get_batch({0, 5}), IndexError);
  CHECK_THROWS_AS(ds->get_batch({-1}), IndexError);
  try {
    ds->get_batch({1, 7});
    FAIL("expected an IndexError");
  } catch (const IndexError& e) {
    std::string msg = e.what();
    CHECK(msg.find("index 7") != std::string::npos);
    CHECK(msg.find("size 5") != std::string::npos);
  }
}

TEST_CASE("a custom Dataset batches through the default get_batch", "[data][dataset]") {
  SquaresDataset ds(6);
  Batch b = ds.get_batch({3, 0, 5});
  CHECK(b.data.shape() == Shape{3, 2});
  CHECK(b.data.dtype() == kFloat64);
  CHECK_ALLCLOSE(b.data, tensor({{3.0, -3.0}, {0.0, 0.0}, {5.0, -5.0}}, kFloat64), 0, 0);
  // 0-d targets become [B].
  CHECK(b.target.shape() == Shape{3});
  CHECK(b.target.to_vector<int64_t>() == std::vector<int64_t>{9, 0, 25});
  // The default checks the range before calling get(), and refuses an empty list.
  CHECK_THROWS_AS(ds.get_batch({2, 6}), IndexError);
  CHECK_THROWS_AS(ds.get_batch({-3}), IndexError);
  CHECK_THROWS_AS(ds.get_batch({}), Error);
}

TEST_CASE("collate stacks along a new first dim", "[data][dataset]") {
  Example a{tensor({1.0, 2.0}), scalar_tensor(int64_t(7), kInt64)};
  Example b{tensor({3.0, 4.0}), scalar_tensor(int64_t(8), kInt64)};
  Batch batch = collate({a, b, a});
  CHECK(batch.data.shape() == Shape{3, 2});
  CHECK_ALLCLOSE(batch.data, tensor({{1.0, 2.0}, {3.0, 4.0}, {1.0, 2.0}}), 0, 0);
  CHECK(batch.target.shape() == Shape{3});
  CHECK(batch.target.to_vector<int64_t>() == std::vector<int64_t>{7, 8, 7});
  // Multi-dim targets get a leading batch dim too; one example gives B = 1.
  Batch one = collate({Example{zeros({2, 2}), ones({3})}});
  CHECK(one.data.shape() == Shape{1, 2, 2});
  CHECK(one.target.shape() == Shape{1, 3});
}

TEST_CASE("collate rejects examples that do not match", "[data][dataset][errors]") {
  Example a{zeros({2}), scalar_tensor(int64_t(0), kInt64)};
  Example wide{zeros({3}), scalar_tensor(int64_t(0), kInt64)};
  Example other_dtype{zeros({2}, kFloat64), scalar_tensor(int64_t(0), kInt64)};
  Example other_target{zeros({2}), zeros({2}, kInt64)};
  Example unlabelled{zeros({2}), Tensor()};
  try {
    collate({a, a, wide});
    FAIL("expected a ShapeError");
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    CHECK(msg.find("collate") != std::string::npos);
    CHECK(msg.find("[2]") != std::string::npos);
    CHECK(msg.find("[3]") != std::string::npos);
    CHECK(msg.find("position 2") != std::string::npos);
  }
  CHECK_THROWS_AS(collate({a, other_dtype}), DtypeError);
  CHECK_THROWS_AS(collate({a, other_target}), ShapeError);
  CHECK_THROWS_AS(collate({a, unlabelled}), Error);
  CHECK_THROWS_AS(collate({}), Error);
  CHECK_THROWS_AS(collate({Example{}}), Error);
  // All unlabelled is fine.
  CHECK_FALSE(collate({unlabelled, unlabelled}).target.defined());
}
