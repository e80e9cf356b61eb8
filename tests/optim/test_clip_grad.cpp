// Gradient clipping (optim/clip_grad.h): known norms of each order, scaling, skipped parameters,
// non-finite norms, value clipping and argument checks.
#include <cmath>
#include <limits>
#include <vector>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// a.grad = [3, 4] (norm 5), b.grad = [0, 0, -12] (norm 12): total 2-norm 13.
struct Grads {
  explicit Grads(ScalarType dtype = kFloat64) {
    a = zeros({2}, dtype).requires_grad_();
    b = zeros({3}, dtype).requires_grad_();
    none = zeros({4}, dtype).requires_grad_();
    a.set_grad(tensor({3.0, 4.0}, dtype));
    b.set_grad(tensor({0.0, 0.0, -12.0}, dtype));
  }
  std::vector<Tensor> params() const { return {a, b, none}; }
  Tensor a, b, none;  // `none` has no gradient
};

}  // namespace

TEST_CASE("clip_grad_norm_ scales every gradient by max_norm / total norm", "[optim][clip]") {
  Grads g;
  const double total = nn::utils::clip_grad_norm_(g.params(), 6.5);
  CHECK(total == Approx(13.0).epsilon(1e-15));
  const double coef = 6.5 / (13.0 + 1e-6);
  CHECK_ALLCLOSE(g.a.grad(), tensor({3.0 * coef, 4.0 * coef}, kFloat64), 1e-15, 1e-15);
  CHECK_ALLCLOSE(g.b.grad(), tensor({0.0, 0.0, -12.0 * coef}, kFloat64), 1e-15, 1e-15);
  CHECK(!g.none.grad().defined());
}

TEST_CASE("clip_grad_norm_ of each order", "[optim][clip]") {
  struct Case {
    double norm_type, total;
  };
  const std::vector<Case> cases = {{2.0, 13.0}, {1.0, 19.0}, {kInf, 12.0}, {3.0, std::cbrt(27.0 + 64.0 + 1728.0)},
                                   {0.5, std::pow(std::sqrt(3.0) + 2.0 + std::sqrt(12.0), 2.0)}};
  for (const Case& c : cases) {
    INFO("norm_type " << c.norm_type);
    for (ScalarType dtype : {kFloat64, kFloat32}) {
      Grads g(dtype);
      const double total = nn::utils::clip_grad_norm_(g.params(), 2.0, c.norm_type);
      CHECK(total == Approx(c.total).epsilon(dtype == kFloat64 ? 1e-12 : 1e-6));
      const double coef = 2.0 / (c.total + 1e-6);
      CHECK_ALLCLOSE(g.a.grad(), tensor({3.0 * coef, 4.0 * coef}, dtype), 1e-6, 1e-7);
    }
  }
}

TEST_CASE("clip_grad_norm_ leaves gradients below max_norm unchanged", "[optim][clip]") {
  Grads g;
  CHECK(nn::utils::clip_grad_norm_(g.params(), 100.0) == Approx(13.0));
  CHECK(g.a.grad().to_vector<double>() == std::vector<double>{3.0, 4.0});
  CHECK(g.b.grad().to_vector<double>() == std::vector<double>{0.0, 0.0, -12.0});
  // A single tensor, and no gradient at all.
  CHECK(nn::utils::clip_grad_norm_(g.a, 1.0) == Approx(5.0));
  CHECK(g.a.grad().to_vector<double>()[1] == Approx(4.0 / (5.0 + 1e-6)));
  CHECK(nn::utils::clip_grad_norm_({g.none}, 1.0) == 0.0);
}

TEST_CASE("clip_grad_norm_ with a non-finite norm", "[optim][clip]") {
  Grads g;
  g.b.set_grad(tensor({0.0, kInf, 1.0}, kFloat64));
  REQUIRE_THROWS_WITH(nn::utils::clip_grad_norm_(g.params(), 1.0, 2.0, true),
                      Contains("clip_grad_norm_: the total norm of order 2 of the gradients is inf, non-finite"));
  CHECK(g.a.grad().to_vector<double>() == std::vector<double>{3.0, 4.0});  // nothing changed
  // Without the check the (zero) factor is applied, as PyTorch does: inf * 0 is NaN.
  CHECK(std::isinf(nn::utils::clip_grad_norm_(g.params(), 1.0)));
  CHECK(g.a.grad().to_vector<double>() == std::vector<double>{0.0, 0.0});
  CHECK(std::isnan(g.b.grad().to_vector<double>()[1]));

  Grads h;
  h.a.set_grad(tensor({std::nan(""), 1.0}, kFloat64));
  CHECK(std::isnan(nn::utils::clip_grad_norm_(h.params(), 1.0, kInf)));
  CHECK(std::isnan(h.b.grad().to_vector<double>()[2]));
}

TEST_CASE("clip_grad_value_ clamps every element", "[optim][clip]") {
  Tensor p = zeros({4}).requires_grad_();
  p.set_grad(tensor({-2.0f, 0.5f, 3.0f, std::nanf("")}));
  Tensor g = p.grad();
  nn::utils::clip_grad_value_(p, 1.0);
  std::vector<float> v = p.grad().to_vector<float>();
  CHECK(v[0] == -1.0f);
  CHECK(v[1] == 0.5f);
  CHECK(v[2] == 1.0f);
  CHECK(std::isnan(v[3]));
  CHECK(p.grad().is_same(g));  // in place
}

TEST_CASE("clipping arguments are checked", "[optim][clip]") {
  Grads g;
  REQUIRE_THROWS_WITH(nn::utils::clip_grad_norm_(g.params(), -1.0), Contains("max_norm must be >= 0, got -1"));
  REQUIRE_THROWS_WITH(nn::utils::clip_grad_norm_(g.params(), 1.0, 0.0), Contains("norm_type must be > 0"));
  REQUIRE_THROWS_WITH(nn::utils::clip_grad_value_(g.params(), -0.5), Contains("clip_value must be >= 0, got -0.5"));
  CHECK(g.a.grad().to_vector<double>() == std::vector<double>{3.0, 4.0});
}
