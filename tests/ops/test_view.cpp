// View ops: view, reshape, flatten, transpose, t, permute, unsqueeze, squeeze, expand, slice,
// select, narrow. Each checks values, shape, strides and that the result shares storage.
#include "test_util.h"

using namespace tt;

namespace {
std::vector<int64_t> vals(const Tensor& t) { return t.to_vector<int64_t>(); }
using V = std::vector<int64_t>;
}  // namespace

TEST_CASE("view: new shapes over the same storage, with -1 inferred", "[ops][view]") {
  Tensor t = arange(24);
  Tensor v = t.view({2, 3, 4});
  CHECK(v.shape() == Shape{2, 3, 4});
  CHECK(v.strides() == Shape{12, 4, 1});
  CHECK(v.storage() == t.storage());
  CHECK(t.view({4, -1}).shape() == Shape{4, 6});
  CHECK(t.view({-1}).shape() == Shape{24});
  CHECK(t.view({2, -1, 3}).shape() == Shape{2, 4, 3});
  CHECK(vals(v.view({6, 4}).select(0, 5)) == V{20, 21, 22, 23});
  CHECK(scalar_tensor(5.0).view({1, 1}).shape() == Shape{1, 1});
  CHECK(ones({1}).view({}).dim() == 0);
  CHECK(empty({0, 4}).view({-1, 2, 2}).shape() == Shape{0, 2, 2});

  SECTION("a non-contiguous input can be viewed when the strides allow it") {
    Tensor p = arange(24).view({2, 3, 4}).transpose(0, 1);  // [3, 2, 4] strides [4, 12, 1]
    Tensor q = p.view({3, 2, 2, 2});                        // splits the contiguous last dim
    CHECK(q.strides() == Shape{4, 12, 2, 1});
    CHECK(q.storage() == p.storage());
    CHECK(vals(q.select(0, 1).select(0, 1)) == V{16, 17, 18, 19});
    Tensor s = arange(12).view({3, 4}).slice(1, 0, 4, 2).unsqueeze(0);  // [1, 3, 2]
    CHECK(s.view({3, 2}).strides() == Shape{4, 2});
  }
  SECTION("an incompatible view is a ShapeError pointing to reshape") {
    Tensor p = arange(24).view({2, 3, 4}).transpose(0, 1);
    REQUIRE_THROWS_AS(p.view({3, 8}), ShapeError);
    REQUIRE_THROWS_AS(p.view({-1}), ShapeError);
    REQUIRE_THROWS_WITH(p.view({24}), Catch::Contains("view") && Catch::Contains("reshape") &&
                                          Catch::Contains("[3, 2, 4]") && Catch::Contains("[4, 12, 1]"));
  }
  SECTION("bad sizes") {
    REQUIRE_THROWS_AS(t.view({5, 5}), ShapeError);
    REQUIRE_THROWS_WITH(t.view({5, -1}), Catch::Contains("view") && Catch::Contains("[5, -1]") &&
                                             Catch::Contains("size 24"));
    REQUIRE_THROWS_WITH(t.view({-1, -1}), Catch::Contains("only one dimension can be inferred"));
    REQUIRE_THROWS_WITH(t.view({-2, 12}), Catch::Contains("invalid shape dimension -2"));
    REQUIRE_THROWS_AS(empty({0}).view({-1, 0}), ShapeError);  // -1 is ambiguous with a 0
  }
}

TEST_CASE("reshape views when it can and copies when it must", "[ops][view]") {
  Tensor t = arange(6).view({2, 3});
  Tensor r = t.reshape({3, 2});
  CHECK(r.storage() == t.storage());
  CHECK(vals(r) == V{0, 1, 2, 3, 4, 5});
  Tensor tt_ = t.t();  // [3, 2] strides [1, 3]
  Tensor c = tt_.reshape({6});
  CHECK(c.storage() != t.storage());
  CHECK(c.is_contiguous());
  CHECK(vals(c) == V{0, 3, 1, 4, 2, 5});
  CHECK(tt_.reshape({-1, 3}).shape() == Shape{2, 3});
  CHECK(vals(tt_.reshape({2, 3})) == V{0, 3, 1, 4, 2, 5});
  CHECK(tt_.reshape({3, 2}).storage() == t.storage());  // same shape: still a view
  Tensor e = arange(3).view({3, 1}).expand({3, 4});
  CHECK(vals(e.reshape({12})) == V{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  REQUIRE_THROWS_AS(t.reshape({4}), ShapeError);
  REQUIRE_THROWS_WITH(t.reshape({4, -1}), Catch::Contains("reshape") && Catch::Contains("size 6"));
}

TEST_CASE("flatten merges a range of dims", "[ops][view]") {
  Tensor t = arange(24).view({2, 3, 4});
  CHECK(t.flatten().shape() == Shape{24});
  CHECK(t.flatten(1).shape() == Shape{2, 12});
  CHECK(t.flatten(0, 1).shape() == Shape{6, 4});
  CHECK(t.flatten(-2, -1).shape() == Shape{2, 12});
  CHECK(t.flatten(1, 1).shape() == Shape{2, 3, 4});
  CHECK(t.flatten().storage() == t.storage());
  CHECK(scalar_tensor(3.0).flatten().shape() == Shape{1});
  Tensor p = t.permute({2, 0, 1});
  CHECK(vals(p.flatten(1)).front() == 0);
  CHECK(vals(p.flatten(1).select(0, 1)) == V{1, 5, 9, 13, 17, 21});
  REQUIRE_THROWS_AS(t.flatten(2, 1), IndexError);
  REQUIRE_THROWS_WITH(t.flatten(2, 1), Catch::Contains("flatten") && Catch::Contains("start_dim"));
  REQUIRE_THROWS_AS(t.flatten(0, 3), IndexError);
}

TEST_CASE("transpose, t and permute swap strides", "[ops][view]") {
  Tensor m = arange(6).view({2, 3});
  Tensor tr = m.transpose(0, 1);
  CHECK(tr.shape() == Shape{3, 2});
  CHECK(tr.strides() == Shape{1, 3});
  CHECK(tr.storage() == m.storage());
  CHECK(vals(tr) == V{0, 3, 1, 4, 2, 5});
  CHECK(vals(m.transpose(-1, -2)) == vals(tr));
  CHECK(vals(m.t()) == vals(tr));
  CHECK(vals(m.t().t()) == vals(m));
  CHECK(vals(arange(3).t()) == V{0, 1, 2});  // 1-d: itself
  CHECK(scalar_tensor(1.0).t().dim() == 0);
  CHECK(m.transpose(1, 1).strides() == m.strides());
  REQUIRE_THROWS_AS(arange(8).view({2, 2, 2}).t(), ShapeError);
  REQUIRE_THROWS_WITH(arange(8).view({2, 2, 2}).t(), Catch::Contains("t:") && Catch::Contains("<= 2"));
  REQUIRE_THROWS_AS(m.transpose(0, 2), IndexError);

  Tensor c = arange(24).view({2, 3, 4});
  Tensor p = c.permute({2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.strides() == Shape{1, 12, 4});
  CHECK(vals(p.select(0, 1).select(0, 1)) == V{13, 17, 21});
  CHECK(c.permute({-1, 0, 1}).strides() == p.strides());
  REQUIRE_THROWS_AS(c.permute({0, 1}), ShapeError);
  REQUIRE_THROWS_WITH(c.permute({0, 1}), Catch::Contains("permute") && Catch::Contains("3 dims"));
  REQUIRE_THROWS_AS(c.permute({0, 1, 1}), IndexError);
  REQUIRE_THROWS_WITH(c.permute({0, 0, 1}), Catch::Contains("permute") && Catch::Contains("repeated dim 0"));
  REQUIRE_THROWS_AS(c.permute({0, 1, 3}), IndexError);
}

TEST_CASE("unsqueeze and squeeze", "[ops][view]") {
  Tensor t = arange(6).view({2, 3});
  CHECK(t.unsqueeze(0).shape() == Shape{1, 2, 3});
  CHECK(t.unsqueeze(1).shape() == Shape{2, 1, 3});
  CHECK(t.unsqueeze(2).shape() == Shape{2, 3, 1});
  CHECK(t.unsqueeze(-1).shape() == Shape{2, 3, 1});
  CHECK(t.unsqueeze(-3).shape() == Shape{1, 2, 3});
  CHECK(scalar_tensor(2.0).unsqueeze(0).shape() == Shape{1});
  CHECK(vals(t.t().unsqueeze(1).squeeze()) == V{0, 3, 1, 4, 2, 5});
  CHECK(t.unsqueeze(1).storage() == t.storage());
  REQUIRE_THROWS_AS(t.unsqueeze(3), IndexError);
  REQUIRE_THROWS_WITH(t.unsqueeze(-4), Catch::Contains("unsqueeze") && Catch::Contains("[-3, 2]"));

  Tensor s = zeros({1, 3, 1, 2});
  CHECK(s.squeeze().shape() == Shape{3, 2});
  CHECK(s.squeeze(0).shape() == Shape{3, 1, 2});
  CHECK(s.squeeze(2).shape() == Shape{1, 3, 2});
  CHECK(s.squeeze(-2).shape() == Shape{1, 3, 2});
  CHECK(s.squeeze(1).shape() == Shape{1, 3, 1, 2});  // not size 1: unchanged
  CHECK(ones({1, 1}).squeeze().dim() == 0);
  CHECK(scalar_tensor(1.0).squeeze(0).dim() == 0);
  REQUIRE_THROWS_AS(s.squeeze(4), IndexError);
}

TEST_CASE("expand broadcasts with stride 0", "[ops][view]") {
  Tensor col = arange(3).view({3, 1});
  Tensor e = col.expand({3, 4});
  CHECK(e.shape() == Shape{3, 4});
  CHECK(e.strides() == Shape{1, 0});
  CHECK(e.storage() == col.storage());
  CHECK(vals(e.select(1, 3)) == V{0, 1, 2});
  CHECK(vals(e.select(0, 2)) == V{2, 2, 2, 2});
  Tensor f = col.expand({2, -1, 2});  // new leading dim, -1 keeps a size
  CHECK(f.shape() == Shape{2, 3, 2});
  CHECK(f.strides() == Shape{0, 1, 0});
  CHECK(vals(f) == V{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2});
  CHECK(scalar_tensor(7, kInt64).expand({2, 2}).strides() == Shape{0, 0});
  CHECK(vals(arange(2).expand_as(zeros({3, 2}))) == V{0, 1, 0, 1, 0, 1});
  CHECK(col.expand({3, 0}).numel() == 0);
  REQUIRE_THROWS_AS(col.expand({4, 4}), ShapeError);
  REQUIRE_THROWS_WITH(col.expand({4, 4}), Catch::Contains("expand") && Catch::Contains("(4)") &&
                                              Catch::Contains("(3)") && Catch::Contains("[3, 1]"));
  REQUIRE_THROWS_WITH(col.expand({4}), Catch::Contains("expand") && Catch::Contains("number of sizes"));
  REQUIRE_THROWS_AS(col.expand({-1, 3, 1}), ShapeError);
}

TEST_CASE("slice follows Python slicing: steps, negatives, clamping", "[ops][view]") {
  Tensor t = arange(10);
  CHECK(vals(t.slice(0, 2, 5)) == V{2, 3, 4});
  CHECK(vals(t.slice(0, 1, 9, 3)) == V{1, 4, 7});
  CHECK(vals(t.slice(0, 0, 10, 4)) == V{0, 4, 8});
  CHECK(vals(t.slice(0, -3, kEnd)) == V{7, 8, 9});
  CHECK(vals(t.slice(0, -4, -1)) == V{6, 7, 8});
  CHECK(vals(t.slice(0, 8, 100)) == V{8, 9});
  CHECK(vals(t.slice(0, -100, 2)) == V{0, 1});
  CHECK(t.slice(0, 5, 3).numel() == 0);
  CHECK(t.slice(0, 12, 20).numel() == 0);
  CHECK(t.slice(0, 2, 5).storage_offset() == 2);
  CHECK(t.slice(0, 1, 9, 3).strides() == Shape{3});
  CHECK(t.slice(0, 2, 5).storage() == t.storage());

  Tensor m = arange(12).view({3, 4});
  Tensor s = m.slice(1, 1, kEnd, 2);  // m[:, 1::2]
  CHECK(s.shape() == Shape{3, 2});
  CHECK(s.strides() == Shape{4, 2});
  CHECK(vals(s) == V{1, 3, 5, 7, 9, 11});
  CHECK(vals(m.slice(-2, 1, 3)) == V{4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(vals(m.t().slice(0, 2, 4).slice(1, 0, 3, 2)) == V{2, 10, 3, 11});  // slice of a view
  REQUIRE_THROWS_AS(t.slice(0, 0, 5, 0), Error);
  REQUIRE_THROWS_WITH(t.slice(0, 0, 5, -1), Catch::Contains("slice") && Catch::Contains("step") &&
                                                Catch::Contains("-1"));
  REQUIRE_THROWS_AS(t.slice(1, 0, 1), IndexError);
  REQUIRE_THROWS_AS(scalar_tensor(1.0).slice(0, 0, 1), IndexError);
}

TEST_CASE("select and narrow", "[ops][view]") {
  Tensor m = arange(12).view({3, 4});
  CHECK(vals(m.select(0, 1)) == V{4, 5, 6, 7});
  CHECK(vals(m.select(1, -1)) == V{3, 7, 11});
  CHECK(vals(m[2]) == V{8, 9, 10, 11});
  CHECK(m.select(1, 2).strides() == Shape{4});
  CHECK(m.select(1, 2).storage_offset() == 2);
  CHECK(m[1][2].item<int64_t>() == 6);
  CHECK(m[1][2].dim() == 0);
  REQUIRE_THROWS_AS(m.select(0, 3), IndexError);
  REQUIRE_THROWS_AS(m.select(1, -5), IndexError);
  REQUIRE_THROWS_WITH(m.select(0, 3), Catch::Contains("select") && Catch::Contains("index 3") &&
                                          Catch::Contains("dimension 0 with size 3"));
  REQUIRE_THROWS_AS(scalar_tensor(1.0).select(0, 0), IndexError);

  CHECK(vals(m.narrow(1, 1, 2)) == V{1, 2, 5, 6, 9, 10});
  CHECK(vals(m.narrow(0, -1, 1)) == V{8, 9, 10, 11});
  CHECK(m.narrow(0, 3, 0).numel() == 0);
  CHECK(m.narrow(1, 1, 2).storage() == m.storage());
  REQUIRE_THROWS_AS(m.narrow(1, 3, 2), IndexError);
  REQUIRE_THROWS_WITH(m.narrow(1, 3, 2), Catch::Contains("narrow") && Catch::Contains("start (3)") &&
                                             Catch::Contains("length (2)") && Catch::Contains("(4)"));
  REQUIRE_THROWS_AS(m.narrow(0, 0, -1), IndexError);
  // A negative length is named as such, not as a sum that "exceeds" the size.
  REQUIRE_THROWS_WITH(arange(10).narrow(0, 2, -1), "narrow: length must be non-negative, got -1");
}
