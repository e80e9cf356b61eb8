// gradcheck itself: it passes a right backward, fails a wrong one and names the worst entry,
// rejects bad inputs clearly, leaves its inputs exactly as they were, and perturbs the element a
// non-contiguous view really points at. Uses custom ops (custom_ops.h) so that these tests do not
// depend on the library's backward formulas.
#include <cmath>
#include <cstring>
#include <string>

#include "custom_ops.h"
#include "grad_util.h"

using namespace tt;
using namespace tt::testing;
using autograd::gradcheck;
using autograd::gradgradcheck;
using Catch::Matchers::Contains;

namespace {
Tensor sq(const TensorList& xs) { return square(xs[0]); }
Tensor sq_wrong(const TensorList& xs) { return square<SquareKind::kWrongFactor>(xs[0]); }

// The number printed right after `label` in `text`.
double number_after(const std::string& text, const std::string& label) {
  size_t at = text.find(label);
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + label.size()));
}

// Bit-for-bit copy of a tensor's values, in storage order over the whole storage.
std::vector<double> storage_bits(const Tensor& t) {
  const double* p = static_cast<const double*>(t.storage()->data);
  return std::vector<double>(p, p + t.storage()->nbytes / sizeof(double));
}
}  // namespace

TEST_CASE("gradcheck passes a correct backward", "[autograd][gradcheck]") {
  manual_seed(1);
  Tensor x = randn64({2, 3});
  autograd::GradcheckResult r = gradcheck(sq, {x});
  INFO(r.message);
  CHECK(r.ok);
  CHECK(static_cast<bool>(r));
  CHECK(r.message.empty());
}

TEST_CASE("gradcheck fails a wrong backward and reports the worst entry", "[autograd][gradcheck]") {
  // Numerical d(x^2)/dx = 2x, the wrong backward says 3x: the error |x| is largest at x = 3.
  Tensor x = leaf(tensor({{1.0, -2.0}, {0.5, 3.0}}, kFloat64));
  autograd::GradcheckResult r = gradcheck(sq_wrong, {x});
  INFO(r.message);
  CHECK_FALSE(r.ok);
  CHECK_FALSE(static_cast<bool>(r));
  CHECK_THAT(r.message, Contains("input 0"));
  CHECK_THAT(r.message, Contains("worst entry: d output[1, 1] / d input[1, 1]"));
  CHECK(number_after(r.message, "numerical  = ") == Approx(6.0).epsilon(1e-8));
  CHECK_THAT(r.message, Contains("analytical = 9"));
  CHECK_THAT(r.message, Contains("tolerance"));
  CHECK_THAT(r.message, Contains("4 of 16 entries"));
}

TEST_CASE("gradcheck with raise_exception throws GradcheckError with the report", "[autograd][gradcheck]") {
  Tensor x = leaf(tensor({1.0, 2.0}, kFloat64));
  CHECK_THROWS_AS(gradcheck(sq_wrong, {x}, 1e-6, 1e-5, 1e-3, /*raise_exception=*/true), autograd::GradcheckError);
  CHECK_THROWS_WITH(gradcheck(sq_wrong, {x}, 1e-6, 1e-5, 1e-3, true), Contains("worst entry"));
  CHECK_NOTHROW(gradcheck(sq, {x}, 1e-6, 1e-5, 1e-3, true));
}

TEST_CASE("gradcheck reports a gradient of the wrong shape", "[autograd][gradcheck]") {
  Tensor x = randn64({3});
  autograd::GradcheckResult r = gradcheck([](const TensorList& xs) { return square<SquareKind::kWrongShape>(xs[0]); }, {x});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Contains("shape []"));
  CHECK_THAT(r.message, Contains("must match its input"));
}

TEST_CASE("gradcheck rejects bad inputs with clear errors", "[autograd][gradcheck]") {
  SECTION("float32 input") {
    Tensor x = leaf(randn({3}));
    CHECK_THROWS_AS(gradcheck(sq, {x}), DtypeError);
    CHECK_THROWS_WITH(gradcheck(sq, {x}), Contains("float64") && Contains("input 0"));
  }
  SECTION("no input requires grad") {
    Tensor x = randn({3}, kFloat64);
    CHECK_THROWS_WITH(gradcheck(sq, {x}), Contains("no input requires grad"));
  }
  SECTION("expanded input") {
    Tensor x = leaf(randn({3, 1}, kFloat64).expand({3, 4}));
    CHECK_THROWS_WITH(gradcheck(sq, {x}), Contains("stride 0"));
  }
  SECTION("non-positive eps") {
    Tensor x = randn64({3});
    CHECK_THROWS_WITH(gradcheck(sq, {x}, 0.0), Contains("eps"));
  }
}

TEST_CASE("gradcheck restores its inputs bit for bit", "[autograd][gradcheck]") {
  manual_seed(2);
  SECTION("contiguous") {
    Tensor x = randn64({3, 4});
    std::vector<double> before = storage_bits(x);
    CHECK(gradcheck(sq, {x}).ok);
    std::vector<double> after = storage_bits(x);
    CHECK(std::memcmp(before.data(), after.data(), before.size() * sizeof(double)) == 0);
    CHECK_FALSE(gradcheck(sq_wrong, {x}).ok);  // a failing check restores too
    after = storage_bits(x);
    CHECK(std::memcmp(before.data(), after.data(), before.size() * sizeof(double)) == 0);
  }
  SECTION("a strided view leaves the elements between its own alone") {
    Tensor x = randn64_strided({3, 4});
    std::vector<double> before = storage_bits(x);
    CHECK(gradcheck(sq, {x}).ok);
    std::vector<double> after = storage_bits(x);
    CHECK(std::memcmp(before.data(), after.data(), before.size() * sizeof(double)) == 0);
  }
  SECTION("when fn throws midway") {
    Tensor x = randn64({4});
    std::vector<double> before = storage_bits(x);
    int calls = 0;
    auto flaky = [&calls](const TensorList& xs) {
      if (++calls == 4) throw Error("flaky: failing on purpose");
      return square(xs[0]);
    };
    CHECK_THROWS_WITH(gradcheck(flaky, {x}), Contains("on purpose"));
    std::vector<double> after = storage_bits(x);
    CHECK(std::memcmp(before.data(), after.data(), before.size() * sizeof(double)) == 0);
  }
}

TEST_CASE("gradcheck perturbs the element a non-contiguous view points at", "[autograd][gradcheck]") {
  // If gradcheck moved storage element k instead of view element k, the numerical Jacobian of an
  // elementwise function would come out permuted and could not match the diagonal analytical one.
  manual_seed(3);
  Tensor xt = randn64_t({3, 4});
  REQUIRE_FALSE(xt.is_contiguous());
  autograd::GradcheckResult r = gradcheck(sq, {xt});
  INFO(r.message);
  CHECK(r.ok);
  Tensor xs = randn64_strided({2, 3});
  r = gradcheck(sq, {xs});
  INFO(r.message);
  CHECK(r.ok);
}

TEST_CASE("gradcheck checks only inputs that require grad, and every output", "[autograd][gradcheck]") {
  manual_seed(4);
  Tensor a = randn64({2, 2});
  Tensor b = randn({2, 2}, kFloat64);  // a constant: not checked, not perturbed
  Tensor idx = tensor({0, 1});         // an integer input is fine when it does not require grad
  auto fn = [](const TensorList& xs) { return TensorList{square(xs[0]), xs[1], square(xs[0])}; };
  autograd::GradcheckResult r = gradcheck(fn, {a, b, idx});
  INFO(r.message);
  CHECK(r.ok);
  auto wrong_second = [](const TensorList& xs) {
    return TensorList{square(xs[0]), square<SquareKind::kWrongFactor>(xs[0])};
  };
  r = gradcheck(wrong_second, {a, b});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Contains("output 1"));
}

TEST_CASE("gradcheck fails an output that recorded no graph", "[autograd][gradcheck]") {
  Tensor x = randn64({3});
  auto no_graph = [](const TensorList& xs) {
    NoGradGuard g;
    return xs[0] * 2.0;
  };
  autograd::GradcheckResult r = gradcheck(no_graph, {x});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Contains("does not require grad"));
}

TEST_CASE("gradgradcheck tells a differentiable backward from a detached one", "[autograd][gradcheck]") {
  manual_seed(5);
  Tensor x = randn64({2, 3});
  auto detached = [](const TensorList& xs) { return square<SquareKind::kDetached>(xs[0]); };
  CHECK(gradcheck(detached, {x}).ok);  // first order is right...
  autograd::GradcheckResult r = gradgradcheck(detached, {x});
  CHECK_FALSE(r.ok);                   // ...but the backward cannot be differentiated
  CHECK_THAT(r.message, Contains("gradgradcheck"));
  r = gradgradcheck(sq, {x});          // needs mul's backward to be differentiable
  INFO(r.message);
  CHECK(r.ok);
}
