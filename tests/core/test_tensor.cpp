// The Tensor handle: copies share one TensorImpl, clone() does not; metadata accessors; data
// access through item, data_ptr and to_vector; detach; undefined tensors.
#include "test_util.h"

using namespace tt;

TEST_CASE("Tensor is a handle: copies share, clone copies", "[core][tensor]") {
  Tensor a = zeros({3});
  Tensor b = a;  // same tensor
  CHECK(b.is_same(a));
  CHECK(b.unsafe_impl() == a.unsafe_impl());
  b.fill_(7);
  CHECK(a.to_vector<float>() == std::vector<float>{7, 7, 7});
  b.requires_grad_();
  CHECK(a.requires_grad());  // metadata is shared too

  Tensor c = a.clone();
  CHECK_FALSE(c.is_same(a));
  CHECK(c.storage() != a.storage());
  CHECK(c.requires_grad());  // clone is recorded by autograd, as in PyTorch
  CHECK_FALSE(c.is_leaf());
  c.fill_(1);
  CHECK(a.to_vector<float>() == std::vector<float>{7, 7, 7});

  Tensor d = a.detach();  // same storage, no autograd flag
  CHECK_FALSE(d.is_same(a));
  CHECK(d.storage() == a.storage());
  CHECK_FALSE(d.requires_grad());
  d.fill_(2);
  CHECK(a.to_vector<float>() == std::vector<float>{2, 2, 2});

  Tensor e = std::move(b);
  CHECK(e.is_same(a));
  CHECK(a.storage().use_count() >= 2);
}

TEST_CASE("undefined tensors", "[core][tensor]") {
  Tensor u;
  CHECK_FALSE(u.defined());
  REQUIRE_THROWS_AS(u.shape(), Error);
  REQUIRE_THROWS_WITH(u.dim(), Catch::Contains("undefined"));
  CHECK(to_string(u) == "[ undefined tensor ]");
  CHECK_FALSE(ones({1}).grad().defined());
}

TEST_CASE("metadata: shape, strides, numel, dim, size with negative dims", "[core][tensor]") {
  Tensor t = empty({2, 3, 4}, kFloat64);
  CHECK(t.shape() == Shape{2, 3, 4});
  CHECK(t.sizes() == t.shape());
  CHECK(t.strides() == Shape{12, 4, 1});
  CHECK(t.dim() == 3);
  CHECK(t.numel() == 24);
  CHECK(t.size(-1) == 4);
  CHECK(t.size(0) == 2);
  CHECK(t.stride(-3) == 12);
  CHECK(t.element_size() == 8);
  CHECK(t.dtype() == kFloat64);
  CHECK(t.scalar_type() == kFloat64);
  CHECK(t.is_floating_point());
  CHECK_FALSE(t.is_cuda());
  CHECK(t.device() == Device(kCPU));
  CHECK(t.is_contiguous());
  CHECK(t.storage_offset() == 0);
  CHECK(t.storage()->nbytes == 24 * 8);
  REQUIRE_THROWS_AS(t.size(3), IndexError);
  REQUIRE_THROWS_WITH(t.size(-4), Catch::Contains("size") && Catch::Contains("[-3, 2]") && Catch::Contains("-4"));
  REQUIRE_THROWS_AS(t.stride(5), IndexError);

  Tensor s = scalar_tensor(1.0);
  CHECK(s.dim() == 0);
  CHECK(s.numel() == 1);
  CHECK(s.shape() == Shape{});
  CHECK(s.is_contiguous());
  CHECK_FALSE(t.transpose(0, 2).is_contiguous());
  CHECK(t.slice(0, 0, 1).is_contiguous());  // size-1 dims do not break contiguity
}

TEST_CASE("item, data_ptr and to_vector", "[core][tensor]") {
  SECTION("item reads one element of any dtype and converts") {
    CHECK(scalar_tensor(2.5).item<float>() == 2.5f);
    CHECK(scalar_tensor(2.5, kFloat64).item<double>() == 2.5);
    CHECK(scalar_tensor(-3, kInt64).item<int64_t>() == -3);
    CHECK(scalar_tensor(true, kBool).item<bool>());
    CHECK(scalar_tensor(2.75).item<int64_t>() == 2);
    CHECK(tensor({4.5}).item<double>() == 4.5);  // one element, any shape
    CHECK(ones({1, 1, 1}, kInt64).item<int64_t>() == 1);
    Scalar s = scalar_tensor(7, kInt64).item();
    CHECK_FALSE(s.is_floating_point());
    CHECK(s.to<int64_t>() == 7);
    CHECK(scalar_tensor(0.5).item().is_floating_point());
    Tensor m = arange(6.).reshape({2, 3});
    CHECK(m.select(1, 2).select(0, 1).item<float>() == 5.f);  // through a strided view
  }
  SECTION("item of several elements is an error naming the count") {
    Tensor t = ones({2, 3});
    REQUIRE_THROWS_AS(t.item<float>(), ShapeError);
    REQUIRE_THROWS_WITH(t.item(), Catch::Contains("item") && Catch::Contains("6 elements") &&
                                      Catch::Contains("[2, 3]"));
    REQUIRE_THROWS_AS(empty({0}).item(), ShapeError);
  }
  SECTION("data_ptr points at the first element of a view and checks the dtype") {
    Tensor t = arange(10.);
    float* p = t.data_ptr<float>();
    CHECK(p[3] == 3.f);
    Tensor v = t.slice(0, 4, 8);
    CHECK(v.data_ptr<float>() == p + 4);
    CHECK(v.raw_data_ptr() == static_cast<void*>(p + 4));
    v.data_ptr<float>()[0] = 40.f;
    CHECK(t.to_vector<float>()[4] == 40.f);
    REQUIRE_THROWS_AS(t.data_ptr<double>(), DtypeError);
    REQUIRE_THROWS_WITH(t.data_ptr<int64_t>(), Catch::Contains("data_ptr") &&
                                                   Catch::Contains("int64") && Catch::Contains("float32"));
  }
  SECTION("to_vector reads row-major order through any strides, converting") {
    Tensor m = arange(6).reshape({2, 3});
    CHECK(m.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
    CHECK(m.t().to_vector<int64_t>() == std::vector<int64_t>{0, 3, 1, 4, 2, 5});
    CHECK(m.to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4, 5});
    CHECK(m.slice(1, 0, 3, 2).to_vector<float>() == std::vector<float>{0, 2, 3, 5});
    CHECK(tensor({true, false}).to_vector<bool>() == std::vector<bool>{true, false});
    CHECK(empty({0, 4}).to_vector<float>().empty());
  }
}

TEST_CASE("requires_grad_ is for floating-point tensors only", "[core][tensor]") {
  Tensor f = ones({2});
  CHECK_FALSE(f.requires_grad());
  f.requires_grad_();
  CHECK(f.requires_grad());
  f.requires_grad_(false);
  CHECK_FALSE(f.requires_grad());
  Tensor i = ones({2}, kInt64);
  REQUIRE_THROWS_AS(i.requires_grad_(), DtypeError);
  REQUIRE_THROWS_WITH(i.requires_grad_(), Catch::Contains("requires_grad_") && Catch::Contains("int64"));
  CHECK_FALSE(i.requires_grad());
  REQUIRE_NOTHROW(i.requires_grad_(false));
}
