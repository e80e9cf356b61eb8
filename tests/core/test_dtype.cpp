// dtypes: names, sizes, the LibTorch aliases, promote_types and result_type (PyTorch's rule for
// dimensioned tensors, 0-d tensors and Python-like scalars), and to(dtype).
#include "test_util.h"

using namespace tt;

TEST_CASE("dtype names, sizes and aliases", "[core][dtype]") {
  CHECK(std::string(dtype_name(kFloat32)) == "float32");
  CHECK(std::string(dtype_name(kFloat64)) == "float64");
  CHECK(std::string(dtype_name(kInt64)) == "int64");
  CHECK(std::string(dtype_name(kBool)) == "bool");
  CHECK(element_size(kFloat32) == 4);
  CHECK(element_size(kFloat64) == 8);
  CHECK(element_size(kInt64) == 8);
  CHECK(element_size(kBool) == 1);
  CHECK(kFloat == kFloat32);
  CHECK(kDouble == kFloat64);
  CHECK(kLong == kInt64);
  CHECK(is_floating_point(kFloat32));
  CHECK(is_floating_point(kFloat64));
  CHECK_FALSE(is_floating_point(kInt64));
  CHECK_FALSE(is_floating_point(kBool));
  std::ostringstream os;
  os << kFloat64 << ' ' << kBool;
  CHECK(os.str() == "float64 bool");
  REQUIRE_THROWS_AS(dtype_name(ScalarType::NumTypes), DtypeError);
  REQUIRE_THROWS_AS(element_size(ScalarType::NumTypes), DtypeError);
  static_assert(dtype_of<float>::value == kFloat32, "float is float32");
  static_assert(dtype_of<int64_t>::value == kInt64, "int64_t is int64");
}

TEST_CASE("promote_types orders bool < int64 < float32 < float64", "[core][dtype]") {
  const ScalarType all[] = {kBool, kInt64, kFloat32, kFloat64};
  for (ScalarType a : all) {
    CHECK(promote_types(a, a) == a);
    CHECK(promote_types(a, kFloat64) == kFloat64);
    CHECK(promote_types(kBool, a) == a);
  }
  CHECK(promote_types(kInt64, kFloat32) == kFloat32);
  CHECK(promote_types(kFloat32, kInt64) == kFloat32);
  CHECK(promote_types(kBool, kInt64) == kInt64);
  CHECK(promote_types(kFloat32, kFloat64) == kFloat64);
}

TEST_CASE("result_type follows PyTorch for tensors, 0-d tensors and scalars", "[core][dtype]") {
  Tensor f = ones({2}), d = ones({2}, kFloat64), i = ones({2}, kInt64), b = ones({2}, kBool);
  Tensor f0 = scalar_tensor(1.5), d0 = scalar_tensor(1.5, kFloat64), i0 = scalar_tensor(2, kInt64),
         b0 = scalar_tensor(true, kBool);

  SECTION("dimensioned tensors promote fully") {
    CHECK(result_type(f, d) == kFloat64);
    CHECK(result_type(i, f) == kFloat32);
    CHECK(result_type(b, i) == kInt64);
    CHECK(result_type(b, b) == kBool);
    CHECK((f + d).dtype() == kFloat64);
    CHECK((i + f).dtype() == kFloat32);
    CHECK((b + i).dtype() == kInt64);
  }
  SECTION("a 0-d tensor widens only across categories") {
    CHECK(result_type(f, d0) == kFloat32);   // same category: dimensioned tensor wins
    CHECK(result_type(d0, f) == kFloat32);
    CHECK(result_type(f, i0) == kFloat32);
    CHECK(result_type(i, f0) == kFloat32);   // higher category: 0-d tensor's dtype
    CHECK(result_type(i, d0) == kFloat64);
    CHECK(result_type(b, i0) == kInt64);
    CHECK(result_type(i, b0) == kInt64);
    CHECK(result_type(f0, d0) == kFloat64);  // both 0-d: full promotion
    CHECK(result_type(i0, f0) == kFloat32);
    CHECK((f + d0).dtype() == kFloat32);
    CHECK((i + d0).dtype() == kFloat64);
  }
  SECTION("scalars never widen within their category; floats default to float32") {
    CHECK(result_type(f, Scalar(2.5)) == kFloat32);
    CHECK(result_type(d, Scalar(2.5)) == kFloat64);
    CHECK(result_type(i, Scalar(2.5)) == kFloat32);
    CHECK(result_type(i, Scalar(2)) == kInt64);
    CHECK(result_type(b, Scalar(true)) == kBool);
    CHECK(result_type(b, Scalar(1)) == kInt64);
    CHECK(result_type(b, Scalar(1.5)) == kFloat32);
    CHECK(result_type(i0, Scalar(2.5)) == kFloat32);
    CHECK((f + 2.5).dtype() == kFloat32);
    CHECK((i + 2.5).dtype() == kFloat32);
    CHECK((2.5 * i).dtype() == kFloat32);
    CHECK((i * 3).dtype() == kInt64);
    CHECK((d - 1).dtype() == kFloat64);
    CHECK_ALLCLOSE(i + 2.5, tensor({3.5, 3.5}));
  }
  SECTION("true division of integers gives float32") {
    Tensor x = tensor({1, 3, -7}), y = tensor({2, 2, 2});
    Tensor q = x / y;
    CHECK(q.dtype() == kFloat32);
    CHECK_ALLCLOSE(q, tensor({0.5, 1.5, -3.5}));
    CHECK((x / 2).dtype() == kFloat32);
    CHECK((b / b).dtype() == kFloat32);
    CHECK((d / i).dtype() == kFloat64);
  }
  SECTION("comparisons give bool whatever the operands") {
    CHECK((f < d).dtype() == kBool);
    CHECK((i == 2).dtype() == kBool);
  }
}

TEST_CASE("to(dtype) converts values and returns self when nothing changes", "[core][dtype]") {
  Tensor f = tensor({-1.7, 0.0, 2.9});
  CHECK(f.to(kFloat32).is_same(f));
  CHECK_FALSE(f.to(kFloat32, /*copy=*/true).is_same(f));
  Tensor i = f.to(kInt64);
  CHECK(i.dtype() == kInt64);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{-1, 0, 2});  // truncation toward zero
  Tensor b = f.to(kBool);
  CHECK(b.dtype() == kBool);
  CHECK(b.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1});
  Tensor d = f.to(kFloat64);
  CHECK(d.dtype() == kFloat64);
  CHECK(d.to_vector<double>()[2] == double(2.9f));
  CHECK(tensor({true, false}).to(kFloat32).to_vector<float>() == std::vector<float>{1.f, 0.f});
  Tensor dt = f.to(TensorOptions().dtype(kFloat64));
  CHECK(dt.dtype() == kFloat64);
  // A view converts in place of its elements, not of its storage.
  Tensor v = arange(6.).reshape({2, 3}).t().to(kInt64);
  CHECK(v.shape() == Shape{3, 2});
  CHECK(v.to_vector<int64_t>() == std::vector<int64_t>{0, 3, 1, 4, 2, 5});
}
