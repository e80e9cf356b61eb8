// CPU<->CUDA parity of the elementwise families: unary ops, binary ops (arithmetic, pow,
// maximum/minimum, comparisons, scalar operands, in place), where, copy and dtype conversion,
// fill and the factories, random numbers and dropout. Every operand layout the strided engine
// must handle: contiguous, transposed (permute), broadcast (expand), sliced with a step, odd
// sizes, empty. All [cuda]: skipped where no GPU is present.
#include <cmath>
#include <limits>

#include "cuda/parity.h"
#include "op_info.h"

using namespace tt;
using namespace tt::testing;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("parity: unary ops on every layout and size", "[cuda][parity][elementwise]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (int64_t n : odd_sizes()) {
      Tensor x = rnd({n}, dt);
      std::string at = std::string(dtype_name(dt)) + " n=" + std::to_string(n);
      for (const testing::UnaryRef& ref : testing::kUnaryRefs) {
        const UnaryOp op = ref.op;
        check_parity(std::string(unary_info(op).name) + " " + at,
                     [op](const Tensor& a) { return testing::apply(op, a); }, testing::in_domain(op, x));
      }
    }
    // Strided inputs: a transposed 3-D tensor, a slice with a step, a broadcast row.
    Tensor x3 = rnd({5, 33, 7}, dt);
    check_parity("exp of a permuted tensor", [](const Tensor& a) { return a.permute({2, 0, 1}).exp(); }, x3);
    check_parity("tanh of a stepped slice", [](const Tensor& a) { return a.slice(1, 1, 33, 3).tanh(); }, x3);
    check_parity("sigmoid of an expanded row", [](const Tensor& a) { return a.expand({6, 33}).sigmoid(); },
                 rnd({1, 33}, dt));
    check_parity("relu of an empty tensor", [](const Tensor& a) { return a.relu(); }, rnd({3, 0, 4}, dt));
  }
  // Integer unary ops are exact.
  Tensor i = rnd_int({1000}, -50, 50);
  check_parity("neg int64", [](const Tensor& a) { return -a; }, i);
  check_parity("abs int64", [](const Tensor& a) { return a.abs(); }, i);
  // Special values: inf and NaN go through as on the CPU.
  Tensor special = tensor({0.0, -0.0, kInf, -kInf, std::nan(""), 1e-30, -1e30});
  check_parity_with("exp/tanh/sigmoid/relu of special values", ParityOptions{{}, {}, false},
                    [](const Tensor& a) {
                      return std::vector<Tensor>{a.exp(), a.tanh(), a.sigmoid(), a.relu(), a.abs()};
                    },
                    special);
}

TEST_CASE("parity: binary ops, broadcasting and strides", "[cuda][parity][elementwise]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (int64_t n : odd_sizes()) {
      Tensor a = rnd({n}, dt), b = rnd({n}, dt), pos = rnd_uniform({n}, 0.5, 2.0, dt);
      std::string at = std::string(dtype_name(dt)) + " n=" + std::to_string(n);
      check_parity("add " + at, [](const Tensor& x, const Tensor& y) { return x + y; }, a, b);
      check_parity("sub " + at, [](const Tensor& x, const Tensor& y) { return x - y; }, a, b);
      check_parity("mul " + at, [](const Tensor& x, const Tensor& y) { return x * y; }, a, b);
      check_parity("div " + at, [](const Tensor& x, const Tensor& y) { return x / y; }, a, pos);
      check_parity("pow " + at, [](const Tensor& x, const Tensor& y) { return x.pow(y); }, pos, b);
      check_parity("maximum " + at, [](const Tensor& x, const Tensor& y) { return x.maximum(y); }, a, b);
      check_parity("minimum " + at, [](const Tensor& x, const Tensor& y) { return x.minimum(y); }, a, b);
    }
    // Broadcast and transposed operands: [4, 1, 33] against [1, 7, 33], [33, 7]^T against [7, 33].
    Tensor col = rnd({4, 1, 33}, dt), row = rnd({1, 7, 33}, dt);
    check_parity("add, both sides broadcast", [](const Tensor& x, const Tensor& y) { return x + y; }, col, row);
    check_parity("mul, explicit expand",
                 [](const Tensor& x, const Tensor& y) { return x.expand({4, 7, 33}) * y.expand({4, 7, 33}); }, col,
                 row);
    check_parity("sub, transposed minus contiguous",
                 [](const Tensor& x, const Tensor& y) { return x.t() - y; }, rnd({33, 7}, dt), rnd({7, 33}, dt));
    check_parity("div, permuted by stepped slice",
                 [](const Tensor& x, const Tensor& y) { return x.permute({1, 0, 2}) / y.slice(2, 0, 10, 2); },
                 rnd({6, 3, 5}, dt), rnd_uniform({3, 6, 10}, 1.0, 2.0, dt));
    check_parity("maximum with a 0-d tensor", [](const Tensor& x, const Tensor& y) { return x.maximum(y); },
                 rnd({5, 7}, dt), rnd({}, dt));
    check_parity("add, empty", [](const Tensor& x, const Tensor& y) { return x + y; }, rnd({0, 5}, dt),
                 rnd({1, 5}, dt));
    // Scalar operands (a wrapped 0-d CPU scalar on the device path).
    Tensor x = rnd({7, 33}, dt), p = rnd_uniform({7, 33}, 0.5, 3.0, dt);
    check_parity("tensor + scalar", [](const Tensor& t) { return t + 2.5; }, x);
    check_parity("scalar - tensor", [](const Tensor& t) { return 2.5 - t; }, x);
    check_parity("tensor * scalar", [](const Tensor& t) { return t * -0.75; }, x);
    check_parity("scalar / tensor", [](const Tensor& t) { return 3.0 / t; }, p);
    check_parity("pow(tensor, 2)", [](const Tensor& t) { return t.pow(2); }, x);
    check_parity("pow(tensor, 0.5)", [](const Tensor& t) { return t.pow(0.5); }, p);
    check_parity("pow(tensor, -1.5)", [](const Tensor& t) { return t.pow(-1.5); }, p);
    // Comparisons write bool, compared exactly (ties included: b holds copies of a's values).
    Tensor a = rnd({33, 7}, dt);
    Tensor b = where(rand({33, 7}) < 0.5, a.detach(), rnd({33, 7}, dt).detach());
    check_parity("eq", [](const Tensor& u, const Tensor& v) { return u == v; }, a, b);
    check_parity("ne", [](const Tensor& u, const Tensor& v) { return u != v; }, a, b);
    check_parity("lt", [](const Tensor& u, const Tensor& v) { return u < v; }, a, b);
    check_parity("le", [](const Tensor& u, const Tensor& v) { return u.le(v); }, a, b);
    check_parity("gt, transposed", [](const Tensor& u, const Tensor& v) { return u.t().gt(v.t()); }, a, b);
    check_parity("ge, broadcast", [](const Tensor& u, const Tensor& v) { return u.ge(v.slice(0, 0, 1)); }, a, b);
    check_parity("lt scalar", [](const Tensor& u) { return u < 0.25; }, a);
  }
  // Integer arithmetic is exact; true division of integers gives float32.
  Tensor i = rnd_int({33, 7}, -20, 20), j = rnd_int({33, 7}, 1, 9);
  check_parity("int add/sub/mul/max/min",
               [](const Tensor& u, const Tensor& v) {
                 return std::vector<Tensor>{u + v, u - v, u * v, u.maximum(v), u.minimum(v), u == v, u.lt(v)};
               },
               i, j);
  check_parity("int true division", [](const Tensor& u, const Tensor& v) { return u / v; }, i, j);
  // In place: out aliases the first operand.
  check_parity("add_ and mul_ in place on a clone",
               [](const Tensor& u, const Tensor& v) {
                 Tensor w = u.detach().clone();
                 w.add_(v.detach());
                 w.mul_(v.detach().t().t());
                 w.sub_(1.5);
                 return w;
               },
               rnd({7, 33}), rnd({1, 33}));
}

TEST_CASE("parity: where", "[cuda][parity][elementwise]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (int64_t n : odd_sizes()) {
      Tensor cond = rand({n}, {}, &parity_generator()) < 0.5;
      check_parity("where n=" + std::to_string(n),
                   [](const Tensor& c, const Tensor& a, const Tensor& b) { return where(c, a, b); }, cond,
                   rnd({n}, dt), rnd({n}, dt));
    }
    Tensor cond = rand({4, 1, 7}, {}, &parity_generator()) < 0.5;
    check_parity("where, broadcast condition and transposed operand",
                 [](const Tensor& c, const Tensor& a, const Tensor& b) { return where(c, a.transpose(1, 2), b); },
                 cond, rnd({4, 7, 5}, dt), rnd({1, 5, 7}, dt));
    check_parity("where with a scalar", [](const Tensor& c, const Tensor& a) { return where(c, a, 0.5); },
                 rand({3, 7}, {}, &parity_generator()) < 0.5, rnd({3, 7}, dt));
    check_parity("masked_fill", [](const Tensor& a, const Tensor& m) { return a.masked_fill(m, -1e9); },
                 rnd({3, 7}, dt), rand({1, 7}, {}, &parity_generator()) < 0.5);
  }
  check_parity("where on int64", [](const Tensor& c, const Tensor& a, const Tensor& b) { return where(c, a, b); },
               rand({33}, {}, &parity_generator()) < 0.5, rnd_int({33}, -9, 9), rnd_int({33}, -9, 9));
}

TEST_CASE("parity: copies and dtype conversions", "[cuda][parity][elementwise]") {
  TT_REQUIRE_CUDA();
  Tensor f = rnd({33, 7}) * 10, d = rnd({33, 7}, kFloat64) * 10;
  check_parity("float32 -> float64", [](const Tensor& t) { return t.to(kFloat64); }, f);
  check_parity("float64 -> float32", [](const Tensor& t) { return t.to(kFloat32); }, d);
  check_parity("float -> int64 (truncation), transposed",
               [](const Tensor& t) { return t.detach().t().to(kInt64); }, f);
  check_parity("float -> bool", [](const Tensor& t) { return t.detach().relu().to(kBool); }, f);
  check_parity("int64 -> float32 and float64",
               [](const Tensor& t) { return std::vector<Tensor>{t.to(kFloat32), t.to(kFloat64), t.to(kBool)}; },
               rnd_int({1000}, -3, 3));
  check_parity("bool -> float32 and int64",
               [](const Tensor& t) { return std::vector<Tensor>{t.to(kFloat32), t.to(kInt64)}; },
               rand({4097}, {}, &parity_generator()) < 0.5);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    check_parity("contiguous() of a permuted tensor", [](const Tensor& t) { return t.permute({2, 0, 1}).contiguous(); },
                 rnd({5, 33, 7}, dt));
    check_parity("clone of an expanded tensor", [](const Tensor& t) { return t.expand({9, 4097}).clone(); },
                 rnd({1, 4097}, dt));
    check_parity("copy_ of a broadcast source into a transposed destination",
                 [](const Tensor& src) {
                   Tensor dst = zeros({7, 33}, src.options());
                   Tensor view = dst.t();
                   view.copy_(src.detach().expand({33, 7}));
                   return dst;
                 },
                 rnd({1, 7}, dt));
    check_parity("copy_ across dtypes", [](const Tensor& src) {
                   Tensor dst = zeros({33, 7}, TensorOptions().dtype(kFloat64).device(src.device()));
                   dst.copy_(src.detach());
                   return dst;
                 },
                 rnd({33, 7}, dt));
  }
  // Transfers of non-contiguous tensors both ways keep the values.
  Tensor host = rnd({33, 7}, kFloat64).detach();
  check_same("CPU transposed -> CUDA -> CPU", host.t().to(gpu(), true).cpu(), host.t());
  Tensor dev = host.to(gpu(), true);
  check_same("CUDA transposed -> CPU", dev.t().cpu(), host.t());
  check_same("CUDA stepped slice -> CPU", dev.slice(0, 1, 33, 4).cpu(), host.slice(0, 1, 33, 4));
  check_same("empty transfer", zeros({0, 3}).to(gpu(), true).cpu(), zeros({0, 3}));
}

TEST_CASE("parity: fill and factories", "[cuda][parity][factory]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64, kInt64, kBool}) {
    TensorOptions on = TensorOptions().dtype(dt).device(gpu()), off = TensorOptions().dtype(dt);
    std::string at = dtype_name(dt);
    check_same("zeros " + at, zeros({7, 33}, on), zeros({7, 33}, off));
    check_same("ones " + at, ones({4097}, on), ones({4097}, off));
    check_same("full " + at, full({3, 5}, 1, on), full({3, 5}, 1, off));
    check_same("eye " + at, eye(7, on), eye(7, off));
    check_same("eye 5x33 " + at, eye(5, 33, on), eye(5, 33, off));
    check_same("empty zeros " + at, zeros({0, 4}, on), zeros({0, 4}, off));
  }
  for (ScalarType dt : {kFloat32, kFloat64}) {
    TensorOptions on = TensorOptions().dtype(dt).device(gpu()), off = TensorOptions().dtype(dt);
    check_same("full -2.5", full({1000}, -2.5, on), full({1000}, -2.5, off));
    check_same("arange 0.5 step 0.25", arange(0.5, 1000.0, 0.25, on), arange(0.5, 1000.0, 0.25, off));
    check_same("linspace", linspace(-3, 7, 4097, on), linspace(-3, 7, 4097, off));
    check_same("linspace of 1", linspace(2, 5, 1, on), linspace(2, 5, 1, off));
  }
  check_same("arange int64", arange(-7, 4097, 3, TensorOptions().dtype(kInt64).device(gpu())),
             arange(-7, 4097, 3, kInt64));
  // fill_ on strided views of a device tensor.
  Tensor host = zeros({7, 33}, kFloat64), dev = host.to(gpu(), true);
  host.slice(1, 1, 33, 3).fill_(4.5);
  dev.slice(1, 1, 33, 3).fill_(4.5);
  host.t().select(0, 2).fill_(-1);
  dev.t().select(0, 2).fill_(-1);
  check_same("fill_ of a stepped slice and a transposed row", dev, host);
  Tensor ib = zeros({4097}, kInt64).to(gpu(), true);
  ib.fill_(-3);
  check_same("fill_ int64", ib, full({4097}, -3, kInt64));
}

TEST_CASE("parity: random numbers from the same seed", "[cuda][parity][random]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(4097), int64_t(100003)}) {
      std::string at = std::string(dtype_name(dt)) + " n=" + std::to_string(n);
      TensorOptions on = TensorOptions().dtype(dt).device(gpu()), off = TensorOptions().dtype(dt);
      Generator g1(123), g2(123);
      // Twice from each generator: the offset advances the same way on both devices.
      for (int round = 0; round < 2; ++round) {
        Tensor a = rand({n}, off, &g1), b = rand({n}, on, &g2);
        // The same uniform bits; an ulp of slack for a fused multiply-add on the device.
        check_same("rand " + at, b, a, Tolerance{dt == kFloat32 ? 1e-6 : 1e-14, 0});
        Tensor c = randn({n}, off, &g1), d = randn({n}, on, &g2);
        // Box-Muller goes through log, sqrt, sin/cos: device libm may differ by an ulp or two.
        check_same("randn " + at, d, c, Tolerance{dt == kFloat32 ? 1e-5 : 1e-12, dt == kFloat32 ? 1e-6 : 1e-14});
        Tensor e = randint(-5, 1000, {n}, kInt64, &g1);
        Tensor f = randint(-5, 1000, {n}, TensorOptions(kInt64).device(gpu()), &g2);
        check_same("randint " + at, f, e);
      }
    }
  }
  // The default generator: same seed, same numbers on either device.
  manual_seed(99);
  Tensor a = rand({4097});
  manual_seed(99);
  Tensor b = rand({4097}, TensorOptions().device(gpu()));
  check_same("rand from the default generator", b, a, Tolerance{1e-6, 0});
}

TEST_CASE("parity: dropout masks from the same seed", "[cuda][parity][random]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (double p : {0.1, 0.5, 0.9}) {
      Tensor x = rnd_uniform({33, 129}, 0.5, 1.5, dt);
      Generator g1(5), g2(5);
      Tensor xc = x.detach().requires_grad_(), xd = x.detach().to(gpu(), true).requires_grad_();
      Tensor yc = F::dropout(xc, p, true, &g1), yd = F::dropout(xd, p, true, &g2);
      INFO("p = " << p);
      check_same("dropout mask", yd == 0, yc == 0);
      check_same("dropout output", yd, yc);
      Tensor cot = rnd({33, 129}, dt).detach();
      (yc * cot).sum().backward();
      (yd * cot.to(gpu(), true)).sum().backward();
      check_same("dropout grad", xd.grad(), xc.grad());
    }
  }
  // Dropout of a transposed input and an empty one.
  Generator g1(8), g2(8);
  Tensor x = rnd({7, 33}).detach();
  check_same("dropout of a transposed input", F::dropout(x.to(gpu(), true).t(), 0.3, true, &g2),
             F::dropout(x.t(), 0.3, true, &g1));
  check_same("dropout, empty", F::dropout(zeros({0, 3}).to(gpu(), true), 0.3, true, &g2),
             F::dropout(zeros({0, 3}), 0.3, true, &g1));
}
