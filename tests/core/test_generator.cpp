// The seeded generator behind rand / randn / randint: same seed, same numbers, on one thread or
// two; successive draws differ; the distributions have the right range and moments.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "test_util.h"

using namespace tt;

namespace {
// Restores the OpenMP thread count when a test is done changing it.
struct ThreadCountGuard {
  int saved = omp_get_max_threads();
  ~ThreadCountGuard() { omp_set_num_threads(saved); }
};
double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}
double std_of(const std::vector<double>& v) {
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size() - 1));
}
}  // namespace

TEST_CASE("same seed gives the same numbers and the stream advances", "[core][generator]") {
  manual_seed(42);
  CHECK(default_generator().seed() == 42);
  CHECK(default_generator().offset() == 0);
  Tensor a1 = rand({1000}), a2 = randn({3, 7}), a3 = randint(0, 100, {50});
  CHECK(default_generator().offset() == 1000 + 21 + 50);
  manual_seed(42);
  Tensor b1 = rand({1000}), b2 = randn({3, 7}), b3 = randint(0, 100, {50});
  CHECK(a1.to_vector<float>() == b1.to_vector<float>());
  CHECK(a2.to_vector<float>() == b2.to_vector<float>());
  CHECK(a3.to_vector<int64_t>() == b3.to_vector<int64_t>());

  Tensor c1 = rand({1000});  // the next draw differs from the first
  CHECK(c1.to_vector<float>() != a1.to_vector<float>());
  manual_seed(43);
  CHECK(rand({1000}).to_vector<float>() != a1.to_vector<float>());

  SECTION("a private Generator is independent of the default one") {
    Generator g1(7), g2(7);
    Tensor x = rand({100}, {}, &g1);
    manual_seed(1234);
    Tensor noise = rand({10});
    Tensor y = rand({100}, {}, &g2);
    CHECK(x.to_vector<float>() == y.to_vector<float>());
    CHECK(g1.offset() == 100);
    g1.manual_seed(7);
    CHECK(g1.offset() == 0);
    CHECK(rand({100}, {}, &g1).to_vector<float>() == x.to_vector<float>());
  }
  SECTION("rand_like and randn_like keep shape and dtype") {
    Tensor like = rand_like(zeros({4, 5}, kFloat64));
    CHECK(like.shape() == Shape{4, 5});
    CHECK(like.dtype() == kFloat64);
    CHECK(randn_like(zeros({2})).dtype() == kFloat32);
  }
}

TEST_CASE("random numbers do not depend on the thread count", "[core][generator]") {
  ThreadCountGuard guard;
  const Shape shape{300, 1000};  // large enough for the parallel path
  std::vector<float> u[2], n[2];
  std::vector<int64_t> k[2];
  std::vector<double> d[2];
  for (int threads = 1; threads <= 2; ++threads) {
    omp_set_num_threads(threads);
    REQUIRE(omp_get_max_threads() == threads);
    manual_seed(2024);
    u[threads - 1] = rand(shape).to_vector<float>();
    n[threads - 1] = randn(shape).to_vector<float>();
    k[threads - 1] = randint(-5, 5, shape).to_vector<int64_t>();
    d[threads - 1] = randn(shape, kFloat64).to_vector<double>();
  }
  CHECK(u[0] == u[1]);
  CHECK(n[0] == n[1]);
  CHECK(k[0] == k[1]);
  CHECK(d[0] == d[1]);
}

TEST_CASE("rand is uniform on 0 <= x < 1", "[core][generator]") {
  manual_seed(0);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    INFO("dtype " << dt);
    Tensor r = rand({100000}, dt);
    CHECK(r.dtype() == dt);
    std::vector<double> v = r.to_vector<double>();
    CHECK(*std::min_element(v.begin(), v.end()) >= 0.0);
    CHECK(*std::max_element(v.begin(), v.end()) < 1.0);
    CHECK(mean_of(v) == Approx(0.5).margin(0.01));
    CHECK(std_of(v) == Approx(std::sqrt(1.0 / 12.0)).margin(0.01));
    // Each tenth of the interval gets about a tenth of the samples.
    std::vector<int> bins(10);
    for (double x : v) ++bins[size_t(x * 10)];
    for (int b : bins) CHECK(std::abs(b - 10000) < 600);
  }
  REQUIRE_THROWS_AS(rand({2}, kInt64), DtypeError);
  REQUIRE_THROWS_WITH(rand({2}, kInt64), Catch::Contains("rand") && Catch::Contains("int64"));
}

TEST_CASE("randn has mean 0 and std 1", "[core][generator]") {
  manual_seed(1);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    INFO("dtype " << dt);
    std::vector<double> v = randn({100000}, dt).to_vector<double>();
    CHECK(mean_of(v) == Approx(0.0).margin(0.02));
    CHECK(std_of(v) == Approx(1.0).margin(0.02));
    size_t within1 = size_t(std::count_if(v.begin(), v.end(), [](double x) { return std::fabs(x) < 1; }));
    CHECK(double(within1) / double(v.size()) == Approx(0.6827).margin(0.01));
    CHECK(std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }));
  }
  REQUIRE_THROWS_AS(randn({2}, kBool), DtypeError);
}

TEST_CASE("randint stays in low <= x < high and reaches both ends", "[core][generator]") {
  manual_seed(3);
  Tensor r = randint(-3, 4, {20000});
  CHECK(r.dtype() == kInt64);
  std::vector<int64_t> v = r.to_vector<int64_t>();
  CHECK(*std::min_element(v.begin(), v.end()) == -3);
  CHECK(*std::max_element(v.begin(), v.end()) == 3);
  std::vector<int> counts(7);
  for (int64_t x : v) ++counts[size_t(x + 3)];
  for (int c : counts) CHECK(std::abs(c - 20000 / 7) < 300);

  Tensor h = randint(5, {1000});
  std::vector<int64_t> hv = h.to_vector<int64_t>();
  CHECK(*std::min_element(hv.begin(), hv.end()) == 0);
  CHECK(*std::max_element(hv.begin(), hv.end()) == 4);
  Tensor f = randint(0, 10, {100}, kFloat32);
  CHECK(f.dtype() == kFloat32);
  std::vector<float> fv = f.to_vector<float>();
  CHECK(std::all_of(fv.begin(), fv.end(), [](float x) { return x == std::floor(x) && x >= 0 && x < 10; }));

  REQUIRE_THROWS_AS(randint(5, 5, {2}), Error);
  REQUIRE_THROWS_WITH(randint(5, 2, {2}), Catch::Contains("randint") && Catch::Contains("low=5") &&
                                              Catch::Contains("high=2"));
  REQUIRE_THROWS_AS(randint(0, 2, {2}, kBool), DtypeError);
}
