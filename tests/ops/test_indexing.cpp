// index_select, gather, scatter_add(_), masked_fill(_): values, non-contiguous inputs, and the
// range / dtype / shape checks that run before any kernel.
#include "test_util.h"

using namespace tt;

namespace {
using V = std::vector<int64_t>;
V vals(const Tensor& t) { return t.to_vector<int64_t>(); }
}  // namespace

TEST_CASE("index_select picks slices along a dim", "[ops][indexing]") {
  Tensor m = arange(12).view({3, 4});
  CHECK(vals(m.index_select(0, tensor({2, 0}))) == V{8, 9, 10, 11, 0, 1, 2, 3});
  CHECK(vals(m.index_select(1, tensor({3, 3, 1}))) == V{3, 3, 1, 7, 7, 5, 11, 11, 9});
  CHECK(vals(m.index_select(-1, tensor({0}))) == V{0, 4, 8});
  CHECK(m.index_select(0, tensor({1})).shape() == Shape{1, 4});
  CHECK(m.index_select(0, scalar_tensor(1, kInt64)).shape() == Shape{1, 4});
  CHECK(m.index_select(1, zeros({0}, kInt64)).shape() == Shape{3, 0});
  CHECK(vals(m.t().index_select(1, tensor({1, 2}))) == V{4, 8, 5, 9, 6, 10, 7, 11});
  CHECK(vals(m.index_select(1, tensor({0, 1, 2, 3}).slice(0, 0, 4, 2))) == V{0, 2, 4, 6, 8, 10});
  Tensor f = arange(6.).view({2, 3}).index_select(1, tensor({2}));
  CHECK(f.dtype() == kFloat32);
  CHECK(f.to_vector<float>() == std::vector<float>{2, 5});
  CHECK(index_select(m, 0, tensor({0})).storage() != m.storage());

  REQUIRE_THROWS_AS(m.index_select(0, tensor({3})), IndexError);
  REQUIRE_THROWS_WITH(m.index_select(0, tensor({0, 3})), Catch::Contains("index_select") && Catch::Contains("index 3") &&
                                                             Catch::Contains("dimension 0 with size 3"));
  REQUIRE_THROWS_WITH(m.index_select(1, tensor({-1})), Catch::Contains("index -1"));
  REQUIRE_THROWS_AS(m.index_select(0, tensor({0.0})), DtypeError);
  REQUIRE_THROWS_WITH(m.index_select(0, tensor({0.0})), Catch::Contains("int64") && Catch::Contains("float32"));
  REQUIRE_THROWS_AS(m.index_select(0, zeros({1, 1}, kInt64)), IndexError);
  REQUIRE_THROWS_AS(m.index_select(2, tensor({0})), IndexError);
}

TEST_CASE("gather reads along a dim by index", "[ops][indexing]") {
  Tensor t = tensor({{1, 2}, {3, 4}});
  CHECK(vals(t.gather(1, tensor({{0, 0}, {1, 0}}))) == V{1, 1, 4, 3});
  CHECK(vals(t.gather(0, tensor({{1, 0}}))) == V{3, 2});
  CHECK(t.gather(0, tensor({{1, 0}})).shape() == Shape{1, 2});
  // An index smaller than the input in the other dims, and a transposed input.
  Tensor m = arange(12.).view({3, 4});
  Tensor g = m.t().gather(1, tensor({2, 0}).view({2, 1}));
  CHECK(g.shape() == Shape{2, 1});
  CHECK(g.to_vector<float>() == std::vector<float>{8, 1});
  CHECK(m.gather(-1, zeros({3, 0}, kInt64)).shape() == Shape{3, 0});
  REQUIRE_THROWS_AS(t.gather(1, tensor({{0, 2}, {0, 0}})), IndexError);
  REQUIRE_THROWS_WITH(t.gather(1, tensor({{0, 2}, {0, 0}})), Catch::Contains("gather") && Catch::Contains("index 2") &&
                                                                 Catch::Contains("size 2"));
  REQUIRE_THROWS_AS(t.gather(1, tensor({0, 1})), ShapeError);
  REQUIRE_THROWS_WITH(t.gather(1, tensor({0, 1})), Catch::Contains("gather") && Catch::Contains("[2]") &&
                                                       Catch::Contains("[2, 2]"));
  REQUIRE_THROWS_AS(t.gather(1, zeros({3, 1}, kInt64)), ShapeError);
  REQUIRE_THROWS_AS(t.gather(1, zeros({2, 1})), DtypeError);
}

TEST_CASE("scatter_add accumulates duplicates", "[ops][indexing]") {
  Tensor src = tensor({{1.0, 2.0}, {3.0, 4.0}});
  Tensor index = tensor({{0, 1}, {0, 0}});
  Tensor base = zeros({3, 2});
  Tensor out = base.scatter_add(0, index, src);
  CHECK(out.to_vector<float>() == std::vector<float>{4, 4, 0, 2, 0, 0});
  CHECK(base.to_vector<float>() == std::vector<float>(6, 0.f));  // out-of-place leaves base
  base.scatter_add_(0, index, src);
  base.scatter_add_(0, index, src);
  CHECK(base.to_vector<float>() == std::vector<float>{8, 8, 0, 4, 0, 0});
  // Along dim 1 into a transposed view; an index smaller than src.
  Tensor tb = zeros({2, 3});
  Tensor view = tb.t();  // [3, 2]
  view.scatter_add_(1, tensor({1, 1, 0}).view({3, 1}), tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}));
  CHECK(tb.to_vector<float>() == std::vector<float>{0, 0, 5, 1, 3, 0});
  // src overlapping self is read before any write.
  Tensor self_src = tensor({1.0, 2.0, 3.0});
  self_src.scatter_add_(0, tensor({1, 2}), self_src.slice(0, 0, 2));
  CHECK(self_src.to_vector<float>() == std::vector<float>{1, 3, 5});
  // int64 histogram.
  Tensor hist = zeros({4}, kInt64).scatter_add(0, tensor({1, 3, 1, 1}), ones({4}, kInt64));
  CHECK(vals(hist) == V{0, 3, 0, 1});

  Tensor t = zeros({2, 2});
  REQUIRE_THROWS_AS(t.scatter_add_(0, tensor({{2, 0}}), ones({1, 2})), IndexError);
  REQUIRE_THROWS_WITH(t.scatter_add_(0, tensor({{2, 0}}), ones({1, 2})),
                      Catch::Contains("scatter_add_") && Catch::Contains("index 2") && Catch::Contains("size 2"));
  REQUIRE_THROWS_AS(t.scatter_add_(0, tensor({{0, 0}}), ones({1, 2}, kInt64)), DtypeError);
  REQUIRE_THROWS_WITH(t.scatter_add_(0, tensor({{0, 0}}), ones({1, 2}, kInt64)),
                      Catch::Contains("scatter_add_") && Catch::Contains("float32") && Catch::Contains("int64"));
  REQUIRE_THROWS_AS(t.scatter_add_(0, tensor({0, 0}), ones({2})), ShapeError);
  REQUIRE_THROWS_AS(t.scatter_add_(0, tensor({{0, 0, 0}}), ones({1, 2})), ShapeError);
  REQUIRE_THROWS_AS(t.scatter_add_(1, zeros({3, 1}, kInt64), ones({3, 1})), ShapeError);
  REQUIRE_THROWS_AS(t.scatter_add_(0, tensor({{0.0, 0.0}}), ones({1, 2})), DtypeError);
  REQUIRE_THROWS_AS(t.scatter_add_(2, tensor({{0, 0}}), ones({1, 2})), IndexError);
  CHECK(t.to_vector<float>() == std::vector<float>(4, 0.f));
}

TEST_CASE("masked_fill writes a value where the mask is true", "[ops][indexing]") {
  Tensor t = arange(6.).view({2, 3});
  Tensor mask = tensor({true, false, true});
  Tensor r = t.masked_fill(mask, -1.5);
  CHECK(r.to_vector<float>() == std::vector<float>{-1.5, 1, -1.5, -1.5, 4, -1.5});
  CHECK(t.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(r.dtype() == kFloat32);
  Tensor col = tensor({false, true}).view({2, 1});
  CHECK(t.t().masked_fill(col.t(), 9).to_vector<float>() == std::vector<float>{0, 9, 1, 9, 2, 9});
  CHECK(t.masked_fill(scalar_tensor(true, kBool), 0).to_vector<float>() == std::vector<float>(6, 0.f));
  Tensor i = tensor({1, 2, 3});
  CHECK(vals(i.masked_fill(mask, 7)) == V{7, 2, 7});
  CHECK(i.masked_fill(mask, 7).dtype() == kInt64);
  // Attention-style: -inf above the diagonal.
  Tensor scores = zeros({3, 3});
  Tensor causal = arange(3).view({1, 3}) > arange(3).view({3, 1});
  std::vector<float> s = scores.masked_fill(causal, -INFINITY).to_vector<float>();
  CHECK(std::isinf(s[1]));
  CHECK(s[3] == 0.f);
  CHECK(std::isinf(s[5]));

  SECTION("in place, through a view") {
    Tensor base = zeros({3, 2});
    base.t().masked_fill_(tensor({true, false, true}), 4);
    CHECK(base.to_vector<float>() == std::vector<float>{4, 4, 0, 0, 4, 4});
  }
  SECTION("errors") {
    REQUIRE_THROWS_AS(t.masked_fill(tensor({1, 0, 1}), 0), DtypeError);
    REQUIRE_THROWS_WITH(t.masked_fill(tensor({1, 0, 1}), 0), Catch::Contains("masked_fill") &&
                                                                 Catch::Contains("bool") && Catch::Contains("int64"));
    REQUIRE_THROWS_AS(t.masked_fill(tensor({true, false}), 0), ShapeError);
    Tensor expanded = ones({3}).expand({2, 3});
    REQUIRE_THROWS_WITH(expanded.masked_fill_(mask, 0), Catch::Contains("masked_fill_") && Catch::Contains("[2, 3]"));
    REQUIRE_THROWS_AS(t.masked_fill(zeros({2, 2, 3}, kBool), 0), ShapeError);  // would grow t
    REQUIRE_THROWS_WITH(t.masked_fill(zeros({2, 2, 3}, kBool), 0), Catch::Contains("masked_fill") &&
                                                                       Catch::Contains("[2, 2, 3]") &&
                                                                       Catch::Contains("[2, 3]"));
  }
}
