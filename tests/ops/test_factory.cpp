// Factories that make values: arange, linspace, eye, tensor literals and tensor(vector, shape).
// (rand/randn/randint are in tests/core/test_generator.cpp; from_blob in test_storage.cpp.)
#include "test_util.h"

using namespace tt;

TEST_CASE("arange: int64 for integer arguments, float32 otherwise", "[ops][factory]") {
  Tensor a = arange(5);
  CHECK(a.dtype() == kInt64);
  CHECK(a.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(2, 11, 3).to_vector<int64_t>() == std::vector<int64_t>{2, 5, 8});
  CHECK(arange(5, 0, -2).to_vector<int64_t>() == std::vector<int64_t>{5, 3, 1});
  Tensor f = arange(0.0, 1.0, 0.25);
  CHECK(f.dtype() == kFloat32);
  CHECK(f.to_vector<float>() == std::vector<float>{0, 0.25, 0.5, 0.75});
  CHECK(arange(3.0).to_vector<float>() == std::vector<float>{0, 1, 2});
  CHECK(arange(3, kFloat64).dtype() == kFloat64);
  CHECK(arange(1, 2, 0.3, kFloat64).numel() == 4);  // 1, 1.3, 1.6, 1.9
  CHECK(arange(0).numel() == 0);
  REQUIRE_THROWS_AS(arange(0, 5, 0), Error);
  REQUIRE_THROWS_WITH(arange(0, 5, 0), Catch::Contains("arange") && Catch::Contains("nonzero"));
  REQUIRE_THROWS_WITH(arange(5, 0, 1), Catch::Contains("arange") && Catch::Contains("start=5"));
}

TEST_CASE("linspace and eye", "[ops][factory]") {
  Tensor l = linspace(0, 1, 5);
  CHECK(l.dtype() == kFloat32);
  CHECK(l.to_vector<float>() == std::vector<float>{0, 0.25, 0.5, 0.75, 1});
  Tensor l64 = linspace(-1, 1, 7, kFloat64);
  CHECK(l64.to_vector<double>().back() == 1.0);
  CHECK(l64.to_vector<double>()[3] == Approx(0.0).margin(1e-15));
  CHECK(linspace(2, 3, 1).to_vector<float>() == std::vector<float>{2});
  CHECK(linspace(2, 3, 0).numel() == 0);
  REQUIRE_THROWS_AS(linspace(0, 1, -1), Error);

  CHECK(eye(3).to_vector<float>() == std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(eye(2, 3, kInt64).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0, 0, 1, 0});
  CHECK(eye(3, 2).to_vector<float>() == std::vector<float>{1, 0, 0, 1, 0, 0});
  CHECK(eye(0).numel() == 0);
  REQUIRE_THROWS_AS(eye(-1), Error);
}

TEST_CASE("tensor literals pick dtypes like torch::tensor", "[ops][factory]") {
  CHECK(tensor({1.0, 2.0}).dtype() == kFloat32);
  CHECK(tensor({1, 2}).dtype() == kInt64);
  CHECK(tensor({true}).dtype() == kBool);
  CHECK(tensor({1.0, 2.0}, kFloat64).dtype() == kFloat64);
  Tensor m = tensor({{1, 2, 3}, {4, 5, 6}});
  CHECK(m.shape() == Shape{2, 3});
  CHECK(m.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  CHECK(tensor({{1.5, 0.5}, {2.5, 0.5}}).shape() == Shape{2, 2});
  Tensor v = tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2});
  CHECK(v.dtype() == kFloat64);
  CHECK(v.shape() == Shape{3, 2});
  CHECK(v.select(0, 2).to_vector<double>() == std::vector<double>{5, 6});
  CHECK(tensor(std::vector<float>{1.5f}).dtype() == kFloat32);
  CHECK(tensor(std::vector<int64_t>{7, 8}).to_vector<int64_t>() == std::vector<int64_t>{7, 8});
  CHECK(tensor(std::vector<bool>{true, false}, {2}).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK(tensor(std::vector<float>{}, {0, 3}).shape() == Shape{0, 3});
  CHECK(scalar_tensor(3, kFloat64).dtype() == kFloat64);
  CHECK(scalar_tensor(3.5).dtype() == kFloat32);
  REQUIRE_THROWS_AS(tensor(std::vector<float>{1, 2, 3}, {2, 2}), ShapeError);
  REQUIRE_THROWS_WITH(tensor(std::vector<float>{1, 2, 3}, {2, 2}),
                      Catch::Contains("tensor") && Catch::Contains("[2, 2]") && Catch::Contains("got 3"));
  REQUIRE_THROWS_AS(tensor({{1, 2}, {3}}), ShapeError);
  REQUIRE_THROWS_AS(empty({2, -1}), ShapeError);
  REQUIRE_THROWS_WITH(zeros({-3}), Catch::Contains("non-negative") && Catch::Contains("[-3]"));
}
