// cat, stack (copies) and split, chunk (views).
#include "test_util.h"

using namespace tt;

namespace {
using V = std::vector<int64_t>;
V vals(const Tensor& t) { return t.to_vector<int64_t>(); }
}  // namespace

TEST_CASE("cat joins along any dim, from any layout", "[ops][join]") {
  Tensor a = arange(6).view({2, 3}), b = arange(6, 12).view({3, 2}).t();  // b: [2, 3] transposed
  Tensor c0 = cat({a, b});
  CHECK(c0.shape() == Shape{4, 3});
  CHECK(vals(c0) == V{0, 1, 2, 3, 4, 5, 6, 8, 10, 7, 9, 11});
  Tensor c1 = cat({a, b}, 1);
  CHECK(c1.shape() == Shape{2, 6});
  CHECK(vals(c1) == V{0, 1, 2, 6, 8, 10, 3, 4, 5, 7, 9, 11});
  CHECK(vals(cat({a, b}, -1)) == vals(c1));
  CHECK(c0.storage() != a.storage());
  CHECK(cat({a}).storage() != a.storage());  // always a new tensor
  CHECK(vals(cat({a.slice(1, 0, 1), a.slice(1, 2, 3), scalar_tensor(9, kInt64).expand({2, 1})}, 1)) ==
        V{0, 2, 9, 3, 5, 9});
  CHECK(cat({zeros({0, 3}), ones({2, 3})}).shape() == Shape{2, 3});
  // Mixed dtypes promote.
  Tensor m = cat({tensor({1, 2}), tensor({0.5})});
  CHECK(m.dtype() == kFloat32);
  CHECK(m.to_vector<float>() == std::vector<float>{1, 2, 0.5});
  CHECK(cat({tensor({true}), tensor({2, 3})}).dtype() == kInt64);

  SECTION("legacy rule: 1-d empty tensors are skipped whatever the other shapes") {
    Tensor r = cat({zeros({0}), ones({2, 3}), empty({0})});
    CHECK(r.shape() == Shape{2, 3});
    CHECK(cat({ones({2, 3}), zeros({0})}, 1).shape() == Shape{2, 3});
    CHECK(cat({zeros({0}), zeros({0})}).shape() == Shape{0});
    CHECK(cat({zeros({0}, kInt64), ones({2}, kFloat64)}).dtype() == kFloat64);
  }
  SECTION("errors") {
    REQUIRE_THROWS_AS(cat({}), Error);
    REQUIRE_THROWS_WITH(cat({}), Catch::Contains("cat") && Catch::Contains("non-empty"));
    REQUIRE_THROWS_AS(cat({a, ones({2, 2})}), ShapeError);
    REQUIRE_THROWS_WITH(cat({a, ones({2, 2})}), Catch::Contains("cat") && Catch::Contains("except in dimension 0") &&
                                                    Catch::Contains("[2, 3]") && Catch::Contains("[2, 2]"));
    REQUIRE_THROWS_AS(cat({a, ones({6})}), ShapeError);
    REQUIRE_THROWS_WITH(cat({a, ones({6})}), Catch::Contains("same number of dimensions"));
    REQUIRE_THROWS_AS(cat({scalar_tensor(1.0), scalar_tensor(2.0)}), ShapeError);
    REQUIRE_THROWS_WITH(cat({scalar_tensor(1.0)}), Catch::Contains("zero-dimensional"));
    REQUIRE_THROWS_AS(cat({a, b}, 2), IndexError);
  }
}

TEST_CASE("stack adds a new dim", "[ops][join]") {
  Tensor a = tensor({1, 2, 3}), b = tensor({4, 5, 6});
  CHECK(stack({a, b}).shape() == Shape{2, 3});
  CHECK(vals(stack({a, b})) == V{1, 2, 3, 4, 5, 6});
  CHECK(stack({a, b}, 1).shape() == Shape{3, 2});
  CHECK(vals(stack({a, b}, 1)) == V{1, 4, 2, 5, 3, 6});
  CHECK(vals(stack({a, b}, -1)) == vals(stack({a, b}, 1)));
  CHECK(stack({scalar_tensor(1.0), scalar_tensor(2.0)}).shape() == Shape{2});
  Tensor m = arange(4).view({2, 2});
  CHECK(vals(stack({m, m.t()}, 1)) == V{0, 1, 0, 2, 2, 3, 1, 3});
  REQUIRE_THROWS_AS(stack({a, tensor({1, 2})}), ShapeError);
  REQUIRE_THROWS_WITH(stack({a, tensor({1, 2})}), Catch::Contains("stack") && Catch::Contains("[3]") &&
                                                      Catch::Contains("[2]") && Catch::Contains("entry 1"));
  REQUIRE_THROWS_AS(stack({a, b}, 2), IndexError);
  REQUIRE_THROWS_AS(stack({}), Error);
}

TEST_CASE("split and chunk return views", "[ops][join]") {
  Tensor t = arange(10).view({5, 2});
  std::vector<Tensor> s = t.split(2);
  REQUIRE(s.size() == 3);
  CHECK(vals(s[0]) == V{0, 1, 2, 3});
  CHECK(vals(s[2]) == V{8, 9});
  CHECK(s[2].shape() == Shape{1, 2});
  for (const Tensor& piece : s) CHECK(piece.storage() == t.storage());
  s[1].fill_(-1);
  CHECK(vals(t.select(0, 2)) == V{-1, -1});

  std::vector<Tensor> c = split(arange(5), std::vector<int64_t>{2, 0, 3});
  REQUIRE(c.size() == 3);
  CHECK(vals(c[0]) == V{0, 1});
  CHECK(c[1].numel() == 0);
  CHECK(vals(c[2]) == V{2, 3, 4});
  CHECK(t.split(1, 1).size() == 2);
  CHECK(t.split(7).size() == 1);
  CHECK(zeros({0}).split(3).size() == 1);

  std::vector<Tensor> k = arange(6).chunk(4);  // ceil(6 / 4) = 2 per chunk: 3 chunks
  REQUIRE(k.size() == 3);
  CHECK(vals(k[2]) == V{4, 5});
  std::vector<Tensor> k2 = arange(5).chunk(3);
  REQUIRE(k2.size() == 3);
  CHECK(vals(k2[2]) == V{4});
  std::vector<Tensor> kc = arange(12).view({3, 4}).chunk(2, -1);
  REQUIRE(kc.size() == 2);
  CHECK(vals(kc[1]) == V{2, 3, 6, 7, 10, 11});
  CHECK(zeros({0}).chunk(3).size() == 3);  // as PyTorch: chunks empty pieces
  CHECK(zeros({2, 0}).chunk(2, 1).size() == 2);

  REQUIRE_THROWS_AS(t.split(0), Error);
  REQUIRE_THROWS_WITH(t.split(-1), Catch::Contains("split") && Catch::Contains("positive") && Catch::Contains("-1"));
  REQUIRE_THROWS_AS(split(arange(5), std::vector<int64_t>{2, 2}), ShapeError);
  REQUIRE_THROWS_WITH(split(arange(5), std::vector<int64_t>{2, 2}), Catch::Contains("[2, 2]") &&
                                                                        Catch::Contains("(5)"));
  REQUIRE_THROWS_AS(t.chunk(0), Error);
  REQUIRE_THROWS_AS(t.split(2, 2), IndexError);
  REQUIRE_THROWS_AS(scalar_tensor(1.0).chunk(2), Error);
}
