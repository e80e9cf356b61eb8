// Shape (inline list of sizes), numel, contiguous strides, dim wrapping and broadcasting.
#include "test_util.h"

using namespace tt;

TEST_CASE("Shape holds sizes inline and compares by value", "[core][shape]") {
  Shape s{2, 3, 4};
  REQUIRE(s.size() == 3);
  CHECK(s[0] == 2);
  CHECK(s[2] == 4);
  CHECK(s.back() == 4);
  CHECK(s.vec() == std::vector<int64_t>{2, 3, 4});
  CHECK(s == Shape(std::vector<int64_t>{2, 3, 4}));
  CHECK(s != Shape{2, 3});
  CHECK(s != Shape{2, 3, 5});
  CHECK(Shape().empty());
  CHECK(Shape::filled(3, 7) == Shape{7, 7, 7});

  SECTION("insert, erase, push_back, resize") {
    s.insert(1, 9);
    CHECK(s == Shape{2, 9, 3, 4});
    s.erase(0);
    CHECK(s == Shape{9, 3, 4});
    s.push_back(5);
    CHECK(s == Shape{9, 3, 4, 5});
    s.resize(2);
    CHECK(s == Shape{9, 3});
    s.resize(4, 1);
    CHECK(s == Shape{9, 3, 1, 1});
  }
  SECTION("prints as a list") {
    std::ostringstream os;
    os << s << ' ' << Shape{};
    CHECK(os.str() == "[2, 3, 4] []");
  }
  SECTION("more than kMaxDims dims is a ShapeError") {
    Shape big = Shape::filled(kMaxDims, 1);
    REQUIRE_THROWS_AS(big.push_back(1), ShapeError);
    REQUIRE_THROWS_WITH(big.insert(0, 1), Catch::Contains("at most 16 dimensions"));
    REQUIRE_THROWS_AS(Shape::filled(kMaxDims + 1, 1), ShapeError);
    CHECK(big.size() == kMaxDims);
  }
}

TEST_CASE("numel_of and contiguous_strides", "[core][shape]") {
  CHECK(numel_of(Shape{}) == 1);
  CHECK(numel_of(Shape{2, 3, 4}) == 24);
  CHECK(numel_of(Shape{2, 0, 4}) == 0);
  CHECK(contiguous_strides(Shape{2, 3, 4}) == Shape{12, 4, 1});
  CHECK(contiguous_strides(Shape{5}) == Shape{1});
  CHECK(contiguous_strides(Shape{}) == Shape{});
  // A zero size does not zero the outer strides (as PyTorch).
  CHECK(contiguous_strides(Shape{2, 0, 3}) == Shape{3, 3, 1});
}

TEST_CASE("wrap_dim accepts -n <= dim < n and names the op otherwise", "[core][shape]") {
  CHECK(wrap_dim(0, 3, "op") == 0);
  CHECK(wrap_dim(2, 3, "op") == 2);
  CHECK(wrap_dim(-1, 3, "op") == 2);
  CHECK(wrap_dim(-3, 3, "op") == 0);
  // 0-d tensors accept 0 and -1, as in PyTorch.
  CHECK(wrap_dim(0, 0, "op") == 0);
  CHECK(wrap_dim(-1, 0, "op") == 0);
  REQUIRE_THROWS_AS(wrap_dim(3, 3, "myop"), IndexError);
  REQUIRE_THROWS_AS(wrap_dim(-4, 3, "myop"), IndexError);
  REQUIRE_THROWS_WITH(wrap_dim(3, 3, "myop"),
                      Catch::Contains("myop") && Catch::Contains("[-3, 2]") && Catch::Contains("got 3"));
  REQUIRE_THROWS_AS(wrap_dim(1, 0, "op"), IndexError);
}

TEST_CASE("broadcast_shapes aligns from the right", "[core][shape]") {
  CHECK(broadcast_shapes({2, 3}, {2, 3}, "op") == Shape{2, 3});
  CHECK(broadcast_shapes({3}, {2, 3}, "op") == Shape{2, 3});
  CHECK(broadcast_shapes({2, 1, 4}, {3, 1}, "op") == Shape{2, 3, 4});
  CHECK(broadcast_shapes({}, {5, 2}, "op") == Shape{5, 2});
  CHECK(broadcast_shapes({1}, {0}, "op") == Shape{0});
  CHECK(broadcast_shapes({2, 0}, {1, 1}, "op") == Shape{2, 0});
  REQUIRE_THROWS_AS(broadcast_shapes({2, 3}, {4}, "myop"), ShapeError);
  REQUIRE_THROWS_WITH(broadcast_shapes({2, 3}, {4}, "myop"),
                      Catch::Contains("myop") && Catch::Contains("broadcast") &&
                          Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  REQUIRE_THROWS_AS(broadcast_shapes({0}, {2}, "op"), ShapeError);
}

TEST_CASE("broadcast_strides puts stride 0 on broadcast dims", "[core][shape]") {
  CHECK(broadcast_strides({3}, {1}, {2, 3}) == Shape{0, 1});
  CHECK(broadcast_strides({2, 1}, {1, 1}, {2, 4}) == Shape{1, 0});
  CHECK(broadcast_strides({4, 3}, {1, 4}, {4, 3}) == Shape{1, 4});
}
