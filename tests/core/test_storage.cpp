// Storage: views share it (and its version counter); every in-place op bumps the version;
// a failed in-place op bumps nothing; from_blob wraps caller memory without copying.
#include "test_util.h"

using namespace tt;

TEST_CASE("views share storage and writes through a view are seen by the base", "[core][storage]") {
  Tensor base = arange(12.).reshape({3, 4});
  const Tensor views[] = {
      base.view({4, 3}),    base.reshape({12}),    base.flatten(),          base.transpose(0, 1),
      base.t(),             base.permute({1, 0}),  base.unsqueeze(0),       base.unsqueeze(0).squeeze(),
      base.squeeze(0),      base.slice(1, 1, 3),   base.select(0, 2),       base.narrow(1, 1, 2),
      base.split(2, 0)[1],  base.chunk(2, 1)[0],   base.detach(),           base[1],
      base.select(1, 0).expand({2, 3}),
  };
  for (const Tensor& v : views) CHECK(v.storage() == base.storage());

  Tensor row = base.select(0, 1);
  CHECK(row.storage_offset() == 4);
  row.fill_(-1);
  CHECK(base.to_vector<float>() == std::vector<float>{0, 1, 2, 3, -1, -1, -1, -1, 8, 9, 10, 11});
  Tensor col = base.t().select(0, 3);
  col.mul_(10);
  CHECK(base.select(1, 3).to_vector<float>() == std::vector<float>{30, -10, 110});

  // The copying forms do not share.
  CHECK(base.clone().storage() != base.storage());
  CHECK(base.t().contiguous().storage() != base.storage());
  CHECK(base.t().reshape({12}).storage() != base.storage());  // reshape must copy here
  CHECK(base.contiguous().is_same(base));                    // already contiguous: itself
  CHECK(base.to(kFloat64).storage() != base.storage());
}

TEST_CASE("every in-place op bumps the shared version counter", "[core][storage]") {
  Tensor t = zeros({2, 3});
  Tensor v = t.slice(1, 0, 2);  // a view sees the same counter
  uint64_t last = t.version();
  CHECK(v.version() == last);
  auto bumped = [&](const char* what) {
    INFO(what);
    CHECK(t.version() > last);
    CHECK(v.version() == t.version());
    last = t.version();
  };
  Tensor other = ones({2, 3});
  t.add_(other);                     bumped("add_");
  t.add_(other, 2);                  bumped("add_ alpha");
  t.add_(1.5);                       bumped("add_ scalar");
  t.sub_(other);                     bumped("sub_");
  t.sub_(0.5);                       bumped("sub_ scalar");
  t.mul_(other);                     bumped("mul_");
  t.mul_(2);                         bumped("mul_ scalar");
  t.div_(other);                     bumped("div_");
  t.div_(4.0);                       bumped("div_ scalar");
  t.neg_();                          bumped("neg_");
  t.exp_();                          bumped("exp_");
  t.relu_();                         bumped("relu_");
  t.copy_(other);                    bumped("copy_");
  t.fill_(3);                        bumped("fill_");
  t.zero_();                         bumped("zero_");
  t.masked_fill_(other > 0, 1.0);    bumped("masked_fill_");
  t.scatter_add_(1, zeros({2, 1}, kInt64), ones({2, 1})); bumped("scatter_add_");
  t += other;                        bumped("+=");
  t -= 1.0;                          bumped("-= scalar");
  t *= other;                        bumped("*=");
  t /= 2.0;                          bumped("/= scalar");
  v.fill_(9);                        bumped("fill_ through a view");

  // Out-of-place ops leave the counter alone.
  Tensor r = t + other;
  Tensor s = t.sum();
  Tensor c = t.clone();
  CHECK(t.version() == last);
  CHECK(c.version() == 0);
}

TEST_CASE("a failed in-place op changes nothing", "[core][storage]") {
  Tensor t = tensor({{1.0, 2.0}, {3.0, 4.0}});
  const std::vector<float> orig = t.to_vector<float>();
  uint64_t ver = t.version();
  REQUIRE_THROWS_AS(t.add_(ones({3})), ShapeError);                    // cannot broadcast
  REQUIRE_THROWS_AS(t.add_(ones({3, 2, 2})), ShapeError);              // would grow self
  REQUIRE_THROWS_AS(t.copy_(ones({3})), ShapeError);
  REQUIRE_THROWS_AS(t.masked_fill_(ones({2, 2}), 0.0), DtypeError);    // float mask
  REQUIRE_THROWS_AS(t.masked_fill_(tensor({true, false, true}), 0.0), ShapeError);
  REQUIRE_THROWS_AS(t.scatter_add_(0, tensor({{0, 5}}), ones({1, 2})), IndexError);
  REQUIRE_THROWS_AS(t.scatter_add_(0, tensor({{0, 1}}), ones({1, 2}, kFloat64)), DtypeError);
  Tensor i = tensor({1, 2});
  REQUIRE_THROWS_AS(i.mul_(2.5), DtypeError);                          // float into int64
  REQUIRE_THROWS_AS(i.div_(tensor({2, 2})), DtypeError);               // true division
  REQUIRE_THROWS_AS(i.exp_(), DtypeError);
  REQUIRE_THROWS_AS(t.expand({3, 2, 2}).fill_(0), Error);              // overlapping memory
  CHECK(t.to_vector<float>() == orig);
  CHECK(t.version() == ver);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, 2});
}

TEST_CASE("from_blob wraps caller memory without copying", "[core][storage]") {
  SECTION("reads and writes go to the caller's buffer") {
    std::vector<float> buf = {1, 2, 3, 4, 5, 6};
    MemoryStats before = memory::stats();
    Tensor t = from_blob(buf.data(), {2, 3});
    CHECK(memory::stats().num_allocs == before.num_allocs);  // nothing allocated
    CHECK(t.data_ptr<float>() == buf.data());
    CHECK(t.shape() == Shape{2, 3});
    CHECK(t.is_contiguous());
    buf[4] = 50;
    CHECK(t.select(0, 1).to_vector<float>() == std::vector<float>{4, 50, 6});
    t.mul_(2);
    CHECK(buf == std::vector<float>{2, 4, 6, 8, 100, 12});
  }
  SECTION("with strides and a dtype") {
    std::vector<double> buf = {0, 1, 2, 3, 4, 5};
    Tensor t = from_blob(buf.data(), {3, 2}, {1, 3}, kFloat64);  // column-major view
    CHECK(t.dtype() == kFloat64);
    CHECK(t.strides() == Shape{1, 3});
    CHECK(t.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
    CHECK(t.storage()->nbytes == 6 * sizeof(double));
    // A zero size spans no bytes, whatever the strides.
    CHECK(from_blob(buf.data(), {0, 1}, {5, 1}, kFloat64).storage()->nbytes == 0);
    CHECK(from_blob(buf.data(), {2, 0}, {1, 4}, kFloat64).numel() == 0);
  }
  SECTION("the deleter runs once, when the last view goes") {
    int calls = 0;
    void* seen = nullptr;
    auto* data = new int64_t[4]{1, 2, 3, 4};
    {
      Tensor view;
      {
        Tensor t = from_blob(data, {4}, [&](void* p) { ++calls; seen = p; delete[] static_cast<int64_t*>(p); },
                             kInt64);
        view = t.slice(0, 1, 3);
        CHECK(view.to_vector<int64_t>() == std::vector<int64_t>{2, 3});
      }
      CHECK(calls == 0);  // the view keeps the storage alive
    }
    CHECK(calls == 1);
    CHECK(seen == static_cast<void*>(data));
  }
}
