// Unary elementwise ops (every row of core/op_table.h, through tests/op_info.h): values against
// <cmath> in float32 and float64, on non-contiguous inputs, integer inputs promoted to float32
// for the float-only ops, special values, and the in-place forms.
// (Part of ops/elementwise.cpp; kept apart from test_elementwise.cpp to keep files small.)
#include <cmath>
#include <functional>
#include <limits>

#include "op_info.h"
#include "test_util.h"

using namespace tt;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Tensor apply_ref(const Tensor& t, const std::function<double(double)>& f) {
  std::vector<double> v = t.to_vector<double>();
  for (double& x : v) x = f(x);
  return tensor(v, t.shape(), kFloat64);
}
}  // namespace

TEST_CASE("op tables: every unary op has its reference, in table order", "[ops][elementwise]") {
  for (size_t i = 0; i < kNumUnaryOps; ++i) {
    INFO(unary_info(UnaryOp(i)).name);
    CHECK(size_t(testing::kUnaryRefs[i].op) == i);
  }
}

TEST_CASE("unary ops match <cmath> on strided float32 and float64 inputs", "[ops][elementwise]") {
  manual_seed(5);
  Tensor signed_vals = (rand({40, 30}) * 8 - 4).t().slice(0, 0, 30, 2);  // [15, 40], strided
  Tensor big = (rand({300, 400}) * 6 - 3).t();                              // parallel path
  for (const testing::UnaryRef& ref : testing::kUnaryRefs) {
    const char* name = unary_info(ref.op).name;
    for (ScalarType dt : {kFloat32, kFloat64}) {
      INFO(name << " " << dt);
      Tensor in = testing::in_domain(ref.op, signed_vals).to(dt);
      Tensor out = testing::apply(ref.op, in);
      CHECK(out.dtype() == dt);
      CHECK(out.shape() == in.shape());
      double tol = dt == kFloat32 ? 1e-5 : 1e-12;
      CHECK_ALLCLOSE(out, apply_ref(in, ref.reference), tol, tol);
    }
    INFO(name << " large");
    Tensor in = testing::in_domain(ref.op, big);
    CHECK_ALLCLOSE(testing::apply(ref.op, in), apply_ref(in, ref.reference), 1e-5, 1e-5);
  }
}

TEST_CASE("log1p and expm1 stay exact where log(1 + x) and exp(x) - 1 lose every digit", "[ops][elementwise]") {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    INFO(dt);
    Tensor tiny = tensor({1e-10, -1e-12, 3e-8, 0.0}).to(dt);
    CHECK_ALLCLOSE(log1p(tiny), tensor({1e-10 - 5e-21, -1e-12 - 5e-25, 3e-8 - 4.5e-16, 0.0}), 1e-6, 0);
    CHECK_ALLCLOSE(expm1(tiny), tensor({1e-10 + 5e-21, -1e-12 + 5e-25, 3e-8 + 4.5e-16, 0.0}), 1e-6, 0);
    CHECK((log(tiny + 1.0).to_vector<double>()[0] == 0.0) == (dt == kFloat32));  // what log1p avoids
  }
  CHECK_ALLCLOSE(log1p(tensor({-1.0, 1.0, std::exp(2.0) - 1})), tensor({-kInf, std::log(2.0), 2.0}));
  CHECK(std::isnan(log1p(tensor({-2.0})).item<double>()));  // outside the domain: NaN, as PyTorch
  CHECK_ALLCLOSE(expm1(tensor({-kInf, 0.0, 1.0, kInf})), tensor({-1.0, 0.0, std::exp(1.0) - 1, kInf}));
  CHECK(log1p(tensor({3})).dtype() == kFloat32);  // integers become float32 first
  CHECK(expm1(tensor({true})).dtype() == kFloat32);
}

// Every row of TT_UNARY_OPS is also a Tensor method giving the same values (x.log1p() as
// log1p(x)): a row added without its method stops this file from compiling. The inputs lie in
// every row's domain.
TEST_CASE("every unary op of the table is a Tensor method", "[ops][elementwise]") {
  const Tensor x = tensor({0.25, 0.5, 2.0, 3.0});
#define TT_UNARY_METHOD_MATCHES(Enum, fn, ...) \
  {                                            \
    INFO(#fn);                                 \
    CHECK_ALLCLOSE(x.fn(), tt::fn(x), 0, 0);   \
  }
  TT_UNARY_OPS(TT_UNARY_METHOD_MATCHES)
#undef TT_UNARY_METHOD_MATCHES
}

TEST_CASE("float-only unary ops turn integer and bool inputs into float32", "[ops][elementwise]") {
  Tensor i = tensor({1, 4, 9});
  CHECK(i.sqrt().dtype() == kFloat32);
  CHECK_ALLCLOSE(i.sqrt(), tensor({1.0, 2.0, 3.0}));
  CHECK_ALLCLOSE(i.rsqrt(), tensor({1.0, 0.5, 1.0 / 3.0}));
  CHECK_ALLCLOSE(i.log(), tensor({0.0, std::log(4.0), std::log(9.0)}));
  CHECK_ALLCLOSE(tensor({0, 1}).exp(), tensor({1.0, std::exp(1.0)}));
  CHECK_ALLCLOSE(tensor({0}).sin(), tensor({0.0}));
  CHECK_ALLCLOSE(tensor({0}).cos(), tensor({1.0}));
  CHECK_ALLCLOSE(tensor({0}).tanh(), tensor({0.0}));
  CHECK_ALLCLOSE(tensor({0}).sigmoid(), tensor({0.5}));
  CHECK(tensor({true, false}).exp().dtype() == kFloat32);
  CHECK_ALLCLOSE(tensor({true, false}).exp(), tensor({std::exp(1.0), 1.0}));
  // neg, abs and relu keep integer dtypes.
  Tensor s = tensor({-3, 0, 5});
  CHECK(s.neg().dtype() == kInt64);
  CHECK(s.neg().to_vector<int64_t>() == std::vector<int64_t>{3, 0, -5});
  CHECK(s.abs().to_vector<int64_t>() == std::vector<int64_t>{3, 0, 5});
  CHECK(s.relu().to_vector<int64_t>() == std::vector<int64_t>{0, 0, 5});
  CHECK(s.relu().dtype() == kInt64);
  CHECK(exp(scalar_tensor(0.0)).dim() == 0);
}

TEST_CASE("unary special values", "[ops][elementwise]") {
  std::vector<float> l = tensor({0.0, -1.0, kInf}).log().to_vector<float>();
  CHECK(l[0] == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(l[1]));
  CHECK(std::isinf(l[2]));
  CHECK(std::isnan(tensor({-1.0}).sqrt().item<float>()));
  CHECK(std::isinf(tensor({0.0}).rsqrt().item<float>()));
  CHECK(tensor({-100.0}).exp().item<float>() >= 0.0f);
  CHECK(std::isinf(tensor({100.0}).exp().item<float>()));
  // sigmoid and tanh saturate without NaN.
  std::vector<float> sg = tensor({-100.0, 100.0, -1000.0, 1000.0}).sigmoid().to_vector<float>();
  CHECK(sg[0] == Approx(0.0).margin(1e-30));
  CHECK(sg[1] == 1.0f);
  CHECK(sg[2] == 0.0f);
  CHECK(sg[3] == 1.0f);
  std::vector<double> th = tensor({-50.0, 50.0}, kFloat64).tanh().to_vector<double>();
  CHECK(th == std::vector<double>{-1.0, 1.0});
  // NaN passes through every op.
  Tensor n = tensor({kNaN});
  for (const Tensor& r : {n.neg(), n.exp(), n.log(), n.sqrt(), n.abs(), n.sin(), n.tanh(), n.sigmoid(), n.relu()})
    CHECK(std::isnan(r.item<float>()));
  CHECK(tensor({-0.0, 2.0}).relu().to_vector<float>()[1] == 2.0f);
}

TEST_CASE("in-place unary ops", "[ops][elementwise]") {
  Tensor base = tensor({{-1.0, 2.0}, {-3.0, 0.0}});
  Tensor col = base.select(1, 0);
  col.neg_();
  CHECK(base.to_vector<float>() == std::vector<float>{1, 2, 3, 0});
  base.sub_(2);
  base.relu_();
  CHECK(base.to_vector<float>() == std::vector<float>{0, 0, 1, 0});
  base.exp_();
  CHECK_ALLCLOSE(base, tensor({{1.0, 1.0}, {std::exp(1.0), 1.0}}));
  Tensor i = tensor({-2, 3});
  i.neg_();
  i.relu_();
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{2, 0});
  REQUIRE_THROWS_AS(i.exp_(), DtypeError);
  REQUIRE_THROWS_WITH(i.exp_(), Catch::Contains("exp_") && Catch::Contains("int64"));
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{2, 0});
}
