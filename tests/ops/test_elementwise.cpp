// Binary elementwise ops (+ - * / pow maximum minimum, comparisons, where) against a plain
// reference loop, with broadcasting over transposed, sliced and expanded operands, scalar
// operands on either side, type promotion, NaN propagation and in-place forms.
#include <cmath>
#include <functional>
#include <limits>

#include "op_info.h"
#include "test_util.h"

using namespace tt;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// out[i] = f(a[ia], b[ib]) with PyTorch broadcasting, computed in float64 on plain vectors.
Tensor reference(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f) {
  Shape out = broadcast_shapes(a.shape(), b.shape(), "reference");
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), r(size_t(numel_of(out)));
  Shape sa = contiguous_strides(a.shape()), sb = contiguous_strides(b.shape());
  for (int64_t i = 0; i < numel_of(out); ++i) {
    int64_t rem = i, ia = 0, ib = 0;
    for (int d = out.size() - 1; d >= 0; --d) {
      int64_t idx = rem % out[d];
      rem /= out[d];
      int da = d - (out.size() - a.dim()), db = d - (out.size() - b.dim());
      if (da >= 0 && a.size(da) != 1) ia += idx * sa[da];
      if (db >= 0 && b.size(db) != 1) ib += idx * sb[db];
    }
    r[size_t(i)] = f(av[size_t(ia)], bv[size_t(ib)]);
  }
  return tensor(r, out, kFloat64);
}

struct Pair {
  const char* what;
  Tensor a, b;
};

// Operand pairs that exercise every layout the elementwise engine must handle.
std::vector<Pair> layouts() {
  manual_seed(11);
  Tensor base = rand({6, 8}) + 0.5;
  return {
      {"contiguous, same shape", rand({3, 4}) + 0.5, rand({3, 4}) + 0.5},
      {"transposed + stepped row", base.t(), (rand({12}) + 0.5).slice(0, 0, 12, 2)},
      {"[2,1,4] with [3,1]", rand({2, 1, 4}) + 0.5, rand({3, 1}) + 0.5},
      {"expanded with sliced", (rand({3, 1}) + 0.5).expand({3, 5}), base.slice(0, 1, 4).slice(1, 2, 7)},
      {"permuted 3-d with 0-d", (rand({2, 3, 4}) + 0.5).permute({2, 0, 1}), scalar_tensor(1.75)},
      {"0-d with negative-step-free narrow", scalar_tensor(0.5), base.narrow(1, 3, 4)},
      {"large transposed (parallel path)", (rand({300, 200}) + 0.5).t(), rand({300}) + 0.5},
      {"large expanded column", (rand({400, 1}) + 0.5).expand({400, 300}), (rand({300, 400}) + 0.5).t()},
  };
}
}  // namespace

TEST_CASE("binary ops match a reference loop on every layout", "[ops][elementwise]") {
  struct Op {
    std::string name;
    std::function<Tensor(const Tensor&, const Tensor&)> ours;
    double (*ref)(double, double);
    bool comparison;
  };
  std::vector<Op> ops;
  for (const testing::BinaryRef& r : testing::kBinaryRefs) {  // every row of core/op_table.h
    const BinaryOp op = r.op;
    ops.push_back({binary_info(op).name, [op](const Tensor& a, const Tensor& b) { return testing::apply(op, a, b); },
                   r.reference, is_comparison(op)});
  }
  ops.push_back({"add alpha", [](const Tensor& a, const Tensor& b) { return a.add(b, 2.5); },
                 [](double x, double y) { return x + 2.5 * y; }, false});
  ops.push_back({"sub alpha", [](const Tensor& a, const Tensor& b) { return a.sub(b, 2); },
                 [](double x, double y) { return x - 2 * y; }, false});
  for (const Pair& p : layouts()) {
    for (const Op& op : ops) {
      INFO(op.name << " on " << p.what << ": " << p.a.shape() << " and " << p.b.shape());
      Tensor got = op.ours(p.a, p.b);
      CHECK(got.dtype() == (op.comparison ? kBool : kFloat32));
      CHECK(got.is_contiguous());
      CHECK_ALLCLOSE(got.to(kFloat64), reference(p.a, p.b, op.ref), 1e-5, 1e-6);
      // float64 operands take the float64 kernels.
      CHECK_ALLCLOSE(op.ours(p.a.to(kFloat64), p.b.to(kFloat64)).to(kFloat64), reference(p.a, p.b, op.ref), 1e-12,
                     1e-12);
    }
  }
}

TEST_CASE("comparisons give bool tensors", "[ops][elementwise]") {
  Tensor a = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}).t();  // [3, 2]
  Tensor b = tensor({2.0, 5.0});
  auto as_int = [](const Tensor& t) { return t.to_vector<int64_t>(); };
  using V = std::vector<int64_t>;
  CHECK((a == b).dtype() == kBool);
  CHECK((a == b).shape() == Shape{3, 2});
  CHECK(as_int(a == b) == V{0, 0, 1, 1, 0, 0});
  CHECK(as_int(a != b) == V{1, 1, 0, 0, 1, 1});
  CHECK(as_int(a < b) == V{1, 1, 0, 0, 0, 0});
  CHECK(as_int(a <= b) == V{1, 1, 1, 1, 0, 0});
  CHECK(as_int(a > b) == V{0, 0, 0, 0, 1, 1});
  CHECK(as_int(a >= b) == V{0, 0, 1, 1, 1, 1});
  CHECK(as_int(a.eq(b)) == as_int(a == b));
  CHECK(as_int(a.ge(b)) == as_int(a >= b));
  CHECK(as_int(a > 3) == V{0, 1, 0, 1, 0, 1});
  CHECK(as_int(a <= 2.5) == V{1, 0, 1, 0, 0, 0});
  CHECK(as_int(a == 5) == V{0, 0, 0, 1, 0, 0});
  // Mixed dtypes compare by value after promotion.
  CHECK(as_int(tensor({1, 2}) < tensor({1.5, 1.5})) == V{1, 0});
  CHECK(as_int(tensor({1, 2}) < 1.5) == V{1, 0});
  CHECK(as_int(tensor({true, false}) == tensor({1, 1})) == V{1, 0});
  // NaN compares unequal to everything.
  Tensor n = tensor({kNaN, 1.0});
  CHECK(as_int(n == n) == V{0, 1});
  CHECK(as_int(n != n) == V{1, 0});
  CHECK(as_int(n < 2.0) == V{0, 1});
}

TEST_CASE("scalar operands work on either side", "[ops][elementwise]") {
  Tensor t = tensor({1.0, 2.0, 4.0});
  CHECK_ALLCLOSE(t + 2, tensor({3.0, 4.0, 6.0}));
  CHECK_ALLCLOSE(2 + t, tensor({3.0, 4.0, 6.0}));
  CHECK_ALLCLOSE(t - 2, tensor({-1.0, 0.0, 2.0}));
  CHECK_ALLCLOSE(2 - t, tensor({1.0, 0.0, -2.0}));
  CHECK_ALLCLOSE(t * 1.5, tensor({1.5, 3.0, 6.0}));
  CHECK_ALLCLOSE(1.5 * t, tensor({1.5, 3.0, 6.0}));
  CHECK_ALLCLOSE(t / 4, tensor({0.25, 0.5, 1.0}));
  CHECK_ALLCLOSE(4 / t, tensor({4.0, 2.0, 1.0}));
  CHECK_ALLCLOSE(t.pow(2), tensor({1.0, 4.0, 16.0}));
  CHECK_ALLCLOSE(t.pow(0.5), tensor({1.0, std::sqrt(2.0), 2.0}));
  CHECK_ALLCLOSE(-t, tensor({-1.0, -2.0, -4.0}));
  CHECK_ALLCLOSE(add(t, 1), tensor({2.0, 3.0, 5.0}));
  CHECK_ALLCLOSE(sub(t, 1), tensor({0.0, 1.0, 3.0}));
  CHECK_ALLCLOSE(mul(t, -1), -t);
  CHECK_ALLCLOSE(div(t, 2), t * 0.5);
  // float64 tensors keep full precision with scalars.
  Tensor d = tensor({1.0}, kFloat64);
  CHECK((d + 0.1).to_vector<double>()[0] == 1.0 + 0.1);
  CHECK((0.1 - d).to_vector<double>()[0] == 0.1 - 1.0);
  // Integer tensors with integer scalars stay exact int64.
  Tensor i = tensor({3, -7, 10});
  CHECK((i * 3).to_vector<int64_t>() == std::vector<int64_t>{9, -21, 30});
  CHECK((10 - i).to_vector<int64_t>() == std::vector<int64_t>{7, 17, 0});
  CHECK((i + (int64_t(1) << 40)).to_vector<int64_t>()[0] == (int64_t(1) << 40) + 3);
  CHECK(i.pow(2).dtype() == kInt64);
  CHECK(i.pow(2).to_vector<int64_t>() == std::vector<int64_t>{9, 49, 100});
  CHECK((3 / i).dtype() == kFloat32);
  CHECK_ALLCLOSE(3 / i, tensor({1.0, -3.0 / 7.0, 0.3}));
  CHECK_ALLCLOSE(i / 2, tensor({1.5, -3.5, 5.0}));
  // Division by zero follows IEEE.
  std::vector<float> z = (tensor({1.0, -1.0, 0.0}) / 0).to_vector<float>();
  CHECK(std::isinf(z[0]));
  CHECK(z[0] > 0);
  CHECK(z[1] < 0);
  CHECK(std::isnan(z[2]));
  // 0-d with 0-d gives 0-d.
  Tensor s = scalar_tensor(2.0) * scalar_tensor(3.0);
  CHECK(s.dim() == 0);
  CHECK(s.item<float>() == 6.0f);
}

TEST_CASE("integer and bool arithmetic", "[ops][elementwise]") {
  Tensor a = tensor({5, -3, 0}), b = tensor({2, 4, -1});
  CHECK((a + b).to_vector<int64_t>() == std::vector<int64_t>{7, 1, -1});
  CHECK((a - b).to_vector<int64_t>() == std::vector<int64_t>{3, -7, 1});
  CHECK((a * b).to_vector<int64_t>() == std::vector<int64_t>{10, -12, 0});
  CHECK(maximum(a, b).to_vector<int64_t>() == std::vector<int64_t>{5, 4, 0});
  CHECK(minimum(a, b).to_vector<int64_t>() == std::vector<int64_t>{2, -3, -1});
  CHECK(maximum(a, b).dtype() == kInt64);
  CHECK_ALLCLOSE(a / b, tensor({2.5, -0.75, 0.0}));
  CHECK_ALLCLOSE(a + tensor({0.5, 0.5, 0.5}), tensor({5.5, -2.5, 0.5}));
  Tensor t = tensor({true, true, false}), f = tensor({true, false, false});
  CHECK((t + f).dtype() == kBool);  // logical or
  CHECK((t + f).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 0});
  CHECK((t * f).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});  // logical and
  CHECK((t + 1).to_vector<int64_t>() == std::vector<int64_t>{2, 2, 1});
  CHECK((t * 2.5).dtype() == kFloat32);
  REQUIRE_THROWS_AS(t - f, DtypeError);
  REQUIRE_THROWS_WITH(t - f, Catch::Contains("sub") && Catch::Contains("bool"));
  REQUIRE_THROWS_AS(-t, DtypeError);
  REQUIRE_THROWS_WITH(-t, Catch::Contains("neg") && Catch::Contains("bool"));
  // Any bool operand of a subtraction is refused, as in PyTorch.
  REQUIRE_THROWS_AS(t - 1, DtypeError);
  REQUIRE_THROWS_AS(1 - t, DtypeError);
  REQUIRE_THROWS_WITH(1 - t, Catch::Contains("sub") && Catch::Contains("bool"));
  REQUIRE_THROWS_AS(a - t, DtypeError);
  REQUIRE_THROWS_AS(a - true, DtypeError);
  REQUIRE_THROWS_AS(sub(a, t, 2), DtypeError);
  REQUIRE_THROWS_AS(a.sub_(t), DtypeError);
  REQUIRE_THROWS_AS(a.sub_(t, 2), DtypeError);
  CHECK(a.to_vector<int64_t>() == std::vector<int64_t>{5, -3, 0});
  // Integers to negative integer powers are refused; a float exponent gives floats.
  REQUIRE_THROWS_AS(a.pow(-1), DtypeError);
  REQUIRE_THROWS_WITH(a.pow(-2), Catch::Contains("pow") && Catch::Contains("negative") &&
                                     Catch::Contains("int64") && Catch::Contains("-2"));
  CHECK_ALLCLOSE(tensor({2, 4}).pow(-1.0), tensor({0.5, 0.25}));
  CHECK(tensor({2, 4}).pow(0).to_vector<int64_t>() == std::vector<int64_t>{1, 1});
}

TEST_CASE("int64 arithmetic wraps around (two's complement), as PyTorch's does", "[ops][elementwise]") {
  // Signed overflow is undefined behaviour in C++; these must be clean under -fsanitize=undefined
  // (Note [integer wraparound] in backend/functors.h). Expected values are PyTorch 1.13's.
  using V = std::vector<int64_t>;
  const int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  Tensor big = tensor({kMax, kMin}), one = tensor({int64_t(1), int64_t(1)});
  CHECK((big + one).to_vector<int64_t>() == V{kMin, kMin + 1});
  CHECK((big + 1).to_vector<int64_t>() == V{kMin, kMin + 1});
  CHECK((big - one).to_vector<int64_t>() == V{kMax - 1, kMax});
  CHECK((big - 1).to_vector<int64_t>() == V{kMax - 1, kMax});
  CHECK((big * 2).to_vector<int64_t>() == V{-2, 0});
  CHECK((big * big).to_vector<int64_t>() == V{1, 0});
  CHECK(add(big, big, 3).to_vector<int64_t>() == V{-4, 0});  // 4 * kMax and 4 * kMin modulo 2^64
  CHECK((-big).to_vector<int64_t>() == V{kMin + 1, kMin});
  CHECK(big.abs().to_vector<int64_t>() == V{kMax, kMin});
  // a^b modulo 2^64: 3^41, (-3)^41, 2^63, 2^64, 7^(10^12).
  CHECK(tensor({int64_t(3)}).pow(41).to_vector<int64_t>() == V{-420491770248316829});
  CHECK(pow(tensor({int64_t(3), int64_t(-3), int64_t(2), int64_t(2), int64_t(7)}),
            tensor({int64_t(41), int64_t(41), int64_t(63), int64_t(64), int64_t(1000000000000)}))
            .to_vector<int64_t>() == V{-420491770248316829, 420491770248316829, kMin, 0, -8074337051264843775});
  Tensor inplace = big.clone();
  inplace.add_(1);
  CHECK(inplace.to_vector<int64_t>() == V{kMin, kMin + 1});
}

TEST_CASE("maximum and minimum propagate NaN", "[ops][elementwise]") {
  Tensor a = tensor({1.0, kNaN, 3.0, kNaN}), b = tensor({2.0, 0.0, kNaN, kNaN});
  std::vector<float> mx = maximum(a, b).to_vector<float>(), mn = minimum(a, b).to_vector<float>();
  CHECK(mx[0] == 2.0f);
  CHECK(mn[0] == 1.0f);
  for (size_t i = 1; i < 4; ++i) {
    INFO("element " << i);
    CHECK(std::isnan(mx[i]));
    CHECK(std::isnan(mn[i]));
  }
  CHECK(std::isnan(maximum(b, a).to_vector<double>()[1]));  // whichever side the NaN is on
  CHECK(std::isnan(minimum(tensor({0.0}, kFloat64), tensor({kNaN}, kFloat64)).item<double>()));
  CHECK(std::isnan((a + 1).to_vector<float>()[1]));
}

TEST_CASE("where selects with broadcasting and promotion", "[ops][elementwise]") {
  Tensor cond = tensor({true, false, true});
  Tensor a = arange(6.).view({2, 3}), b = tensor({-1.0, -2.0, -3.0});
  Tensor w = where(cond, a, b);
  CHECK(w.shape() == Shape{2, 3});
  CHECK(w.to_vector<float>() == std::vector<float>{0, -2, 2, 3, -2, 5});
  Tensor col = tensor({true, false}).view({2, 1});
  CHECK(where(col, a.t().t(), 0.5).to_vector<float>() == std::vector<float>{0, 1, 2, 0.5, 0.5, 0.5});
  CHECK(where(col, 9, a).to_vector<float>() == std::vector<float>{9, 9, 9, 3, 4, 5});
  Tensor wi = where(cond, tensor({1, 2, 3}), tensor({0.5, 0.5, 0.5}));
  CHECK(wi.dtype() == kFloat32);
  CHECK(wi.to_vector<float>() == std::vector<float>{1, 0.5, 3});
  CHECK(where(cond, tensor({1, 2, 3}), 0).dtype() == kInt64);
  CHECK(where(cond, tensor({1, 2, 3}), 0.5).dtype() == kFloat32);
  Tensor big_cond = arange(100000) > 50000;
  Tensor picked = where(big_cond, ones({100000}), zeros({100000}));
  CHECK(picked.sum().item<double>() == 49999.0);
  REQUIRE_THROWS_AS(where(ones({3}), a, b), DtypeError);
  REQUIRE_THROWS_WITH(where(ones({3}), a, b), Catch::Contains("where") && Catch::Contains("bool") &&
                                                  Catch::Contains("float32"));
  REQUIRE_THROWS_AS(where(tensor({true, false}), a, b), ShapeError);
}

TEST_CASE("where's scalar operand is cast like PyTorch's, not checked like a fill", "[ops][elementwise]") {
  // torch.where(cond, float32_tensor, 1e300) -> tensor([1., inf]): the scalar is an operand, cast
  // to the result's dtype; full's overflow check is for values a caller asked to store.
  Tensor cond = tensor({true, false});
  const Tensor a = tensor({1.0, 2.0});
  Tensor w = where(cond, a, 1e300);
  CHECK(w.dtype() == kFloat32);
  CHECK(w.to_vector<float>()[0] == 1.0f);
  CHECK(std::isinf(w.to_vector<float>()[1]));
  Tensor v = where(cond, -1e300, a);
  CHECK(v.to_vector<float>()[0] == -std::numeric_limits<float>::infinity());
  CHECK(v.to_vector<float>()[1] == 2.0f);
  // An int64 tensor with a large integer scalar keeps every bit.
  const int64_t max = std::numeric_limits<int64_t>::max();
  CHECK(where(cond, tensor({1, 2}), max).to_vector<int64_t>() == std::vector<int64_t>{1, max});
  // A float64 result keeps the value itself.
  CHECK(where(cond, tensor({1.0, 2.0}, kFloat64), 1e300).to_vector<double>()[1] == 1e300);
}

TEST_CASE("in-place binary ops write into self with broadcasting", "[ops][elementwise]") {
  Tensor base = arange(6.).view({2, 3});
  Tensor t = base.t();  // [3, 2], non-contiguous
  t.add_(tensor({10.0, 20.0}));
  CHECK(base.to_vector<float>() == std::vector<float>{10, 11, 12, 23, 24, 25});
  t.mul_(tensor({1.0, 2.0, 3.0}).view({3, 1}));
  CHECK(base.to_vector<float>() == std::vector<float>{10, 22, 36, 23, 48, 75});
  t.sub_(1);
  t.div_(scalar_tensor(2.0));
  CHECK(base.to_vector<float>() == std::vector<float>{4.5, 10.5, 17.5, 11, 23.5, 37});
  Tensor a = tensor({1.0, 2.0});
  a.add_(a);  // aliasing self exactly is fine
  CHECK(a.to_vector<float>() == std::vector<float>{2, 4});
  a.add_(tensor({1.0, 1.0}), -3);
  CHECK(a.to_vector<float>() == std::vector<float>{-1, 1});
  a.sub_(tensor({1.0, 1.0}), 0.5);
  CHECK(a.to_vector<float>() == std::vector<float>{-1.5, 0.5});
  // A lower-category operand is converted; float64 into float32 is allowed.
  a.add_(tensor({1, 2}));
  a.mul_(tensor({2.0, 2.0}, kFloat64));
  CHECK(a.to_vector<float>() == std::vector<float>{-1, 5});
  CHECK(a.dtype() == kFloat32);
  Tensor i = tensor({1, 2});
  i.mul_(3);
  i.add_(tensor({true, false}));
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{4, 6});
  REQUIRE_THROWS_AS(i.add_(tensor({0.5, 0.5})), DtypeError);
  REQUIRE_THROWS_WITH(i.add_(0.5), Catch::Contains("add_") && Catch::Contains("float32") &&
                                       Catch::Contains("int64"));
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{4, 6});
  // An operand overlapping self is read as it was before the op started.
  Tensor sq = tensor({{1.0, 2.0}, {3.0, 4.0}});
  sq.add_(sq.t());
  CHECK(sq.to_vector<float>() == std::vector<float>{2, 5, 5, 8});
  Tensor rows = tensor({{1.0, 2.0}, {3.0, 4.0}});
  rows.mul_(rows.select(0, 0));
  CHECK(rows.to_vector<float>() == std::vector<float>{1, 4, 3, 8});
  Tensor shift = arange(5.);
  shift.slice(0, 1, 5).sub_(shift.slice(0, 0, 4));
  CHECK(shift.to_vector<float>() == std::vector<float>{0, 1, 1, 1, 1});
  // Large in-place on a transposed view (parallel path).
  Tensor big = zeros({500, 300});
  big.t().add_(arange(500.));
  CHECK(big.select(0, 499).to_vector<float>() == std::vector<float>(300, 499.f));
}
