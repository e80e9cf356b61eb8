// contiguous, clone, copy_ (broadcasting, dtype conversion, into views) and fill_.
#include "test_util.h"

using namespace tt;

TEST_CASE("contiguous and clone", "[ops][copy]") {
  Tensor m = arange(6).view({2, 3});
  CHECK(m.contiguous().is_same(m));
  Tensor t = m.t();
  Tensor c = t.contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.strides() == Shape{2, 1});
  CHECK(c.storage() != m.storage());
  CHECK(c.to_vector<int64_t>() == std::vector<int64_t>{0, 3, 1, 4, 2, 5});
  Tensor e = arange(3.).expand({2, 3}).contiguous();
  CHECK(e.strides() == Shape{3, 1});
  CHECK(e.to_vector<float>() == std::vector<float>{0, 1, 2, 0, 1, 2});

  Tensor k = m.clone();
  CHECK(k.storage() != m.storage());
  CHECK(k.dtype() == kInt64);
  k.fill_(0);
  CHECK(m.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  Tensor sl = arange(10.).slice(0, 1, 9, 3).clone();
  CHECK(sl.storage_offset() == 0);
  CHECK(sl.to_vector<float>() == std::vector<float>{1, 4, 7});
  CHECK(scalar_tensor(2.5).clone().item<float>() == 2.5f);
  CHECK(empty({0, 2}).clone().shape() == Shape{0, 2});
}

TEST_CASE("copy_ broadcasts, converts and writes through views", "[ops][copy]") {
  SECTION("same shape and dtype") {
    Tensor dst = zeros({2, 2});
    dst.copy_(tensor({{1.0, 2.0}, {3.0, 4.0}}));
    CHECK(dst.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  }
  SECTION("broadcast source") {
    Tensor dst = zeros({2, 3});
    dst.copy_(tensor({1.0, 2.0, 3.0}));
    CHECK(dst.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
    dst.copy_(scalar_tensor(9.0));
    CHECK(dst.to_vector<float>() == std::vector<float>(6, 9.f));
    dst.copy_(tensor({5.0, 6.0}).view({2, 1}));
    CHECK(dst.to_vector<float>() == std::vector<float>{5, 5, 5, 6, 6, 6});
  }
  SECTION("dtype conversion") {
    Tensor i = zeros({3}, kInt64);
    i.copy_(tensor({1.9, -2.9, 3.0}));
    CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, -2, 3});
    Tensor d = zeros({3}, kFloat64);
    d.copy_(tensor({true, false, true}));
    CHECK(d.to_vector<double>() == std::vector<double>{1, 0, 1});
    Tensor b = zeros({3}, kBool);
    b.copy_(tensor({0.0, 0.5, -2.0}));
    CHECK(b.to_vector<bool>() == std::vector<bool>{false, true, true});
  }
  SECTION("into a non-contiguous view, from a non-contiguous source") {
    Tensor base = zeros({3, 4});
    Tensor col = base.slice(1, 1, 4, 2);  // columns 1 and 3
    col.copy_(arange(6.).view({2, 3}).t());
    CHECK(base.to_vector<float>() == std::vector<float>{0, 0, 0, 3, 0, 1, 0, 4, 0, 2, 0, 5});
    base.t().copy_(arange(12.).view({4, 3}));
    CHECK(base.to_vector<float>() == std::vector<float>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11});
  }
  SECTION("copy_ returns the destination, and a self-copy is harmless") {
    Tensor a = arange(4.);
    Tensor& r = a.copy_(a);
    CHECK(&r == &a);
    CHECK(a.to_vector<float>() == std::vector<float>{0, 1, 2, 3});
  }
  SECTION("a source overlapping the destination is read as it was before the copy") {
    Tensor t = arange(6.);
    t.slice(0, 1, 6).copy_(t.slice(0, 0, 5));  // shift right
    CHECK(t.to_vector<float>() == std::vector<float>{0, 0, 1, 2, 3, 4});
    Tensor u = arange(6.);
    u.slice(0, 0, 5).copy_(u.slice(0, 1, 6));  // shift left
    CHECK(u.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 5});
    Tensor m = tensor({{1.0, 2.0}, {3.0, 4.0}});
    m.copy_(m.t());  // transpose in place
    CHECK(m.to_vector<float>() == std::vector<float>{1, 3, 2, 4});
    Tensor big = arange(100000.);
    big.slice(0, 1, 100000).copy_(big.slice(0, 0, 99999));
    CHECK(big.select(0, 99999).item<float>() == 99998.f);
    CHECK(big.select(0, 50000).item<float>() == 49999.f);
  }
  SECTION("shape errors") {
    Tensor dst = zeros({2, 3});
    REQUIRE_THROWS_AS(dst.copy_(ones({3, 3})), ShapeError);
    REQUIRE_THROWS_AS(dst.copy_(ones({2, 2, 3})), ShapeError);
    REQUIRE_THROWS_WITH(dst.copy_(ones({2, 2, 3})), Catch::Contains("copy_") && Catch::Contains("[2, 2, 3]") &&
                                                        Catch::Contains("[2, 3]"));
    REQUIRE_THROWS_AS(zeros({3}).expand({2, 3}).copy_(ones({2, 3})), Error);
    CHECK(dst.to_vector<float>() == std::vector<float>(6, 0.f));
  }
}

TEST_CASE("fill_ writes one value through any strides and dtype", "[ops][copy]") {
  Tensor t = zeros({3, 4});
  t.fill_(2.5);
  CHECK(t.to_vector<float>() == std::vector<float>(12, 2.5f));
  t.t().select(0, 1).fill_(-1);  // column 1
  CHECK(t.select(1, 1).to_vector<float>() == std::vector<float>{-1, -1, -1});
  CHECK(t.select(1, 0).to_vector<float>() == std::vector<float>{2.5, 2.5, 2.5});
  Tensor i = zeros({2}, kInt64);
  i.fill_(int64_t(1) << 40);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{int64_t(1) << 40, int64_t(1) << 40});
  Tensor b = zeros({2}, kBool);
  b.fill_(true);
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, true});
  Tensor d = zeros({2}, kFloat64);
  d.fill_(0.1);
  CHECK(d.to_vector<double>()[1] == 0.1);  // no float32 round trip
  Tensor z = arange(4.);
  z.zero_();
  CHECK(z.to_vector<float>() == std::vector<float>(4, 0.f));
  Tensor e = empty({0});
  REQUIRE_NOTHROW(e.fill_(1));
  REQUIRE_THROWS_AS(ones({1}).expand({3}).fill_(0), Error);
  REQUIRE_THROWS_WITH(ones({1}).expand({3}).fill_(0), Catch::Contains("fill_") && Catch::Contains("clone"));

  // full / zeros / ones / full_like
  CHECK(full({2}, 3, kInt64).to_vector<int64_t>() == std::vector<int64_t>{3, 3});
  CHECK(full_like(zeros({2}, kFloat64), 1.5).dtype() == kFloat64);
  CHECK(ones_like(zeros({2, 2}, kInt64)).to_vector<int64_t>() == std::vector<int64_t>(4, 1));
  CHECK(zeros_like(ones({3})).to_vector<float>() == std::vector<float>(3, 0.f));
  CHECK(empty_like(ones({4, 1})).shape() == Shape{4, 1});
}
