// Module 03 suite: the activations' forward values against their float64 definitions, their
// ranges, softmax and log-softmax over every dim (stability at +-1e4, masked rows, strided
// input), the saturation of softmax's Jacobian as scores grow, and the activation modules. It
// tests only modules 01-03 (derivatives here come from formulas, finite differences and the fused
// backward kernels called directly; autograd is module 04's suite), and it is the judge in
// exercise mode (`tools/tt exercise 03`): the cases tagged [exercise] lean on the two softmax row
// kernels a learner writes, forward (softmax_row) and backward (softmax_backward_row).
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

using Catch::Matchers::Contains;
using tt::Shape;
using tt::Tensor;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// Applies a scalar function to every element, in float64, returning a float64 tensor.
Tensor map64(const Tensor& x, const std::function<double(double)>& f) {
  std::vector<double> v = x.to_vector<double>();
  for (double& e : v) e = f(e);
  return tt::tensor(v, x.shape());
}

double sigmoid_ref(double v) { return 1.0 / (1.0 + std::exp(-v)); }
double gelu_ref(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }
double gelu_tanh_ref(double v) {
  const double k = std::sqrt(2.0 / std::acos(-1.0));
  return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
}
double silu_ref(double v) { return v * sigmoid_ref(v); }

// Softmax (or log-softmax) of `x` along `dim`, computed in float64 with plain loops over a
// contiguous copy: the definition, sharing nothing with the kernels under test.
Tensor softmax_ref(const Tensor& x, int64_t dim, bool log = false) {
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  std::vector<double> v = x.to_vector<double>();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= x.size(i);
  for (int64_t i = d + 1; i < x.dim(); ++i) inner *= x.size(i);
  const int64_t n = x.size(d);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t k) -> double& { return v[size_t((o * n + k) * inner + in)]; };
      double m = -kInf;
      for (int64_t k = 0; k < n; ++k) m = std::max(m, at(k));
      double s = 0;
      for (int64_t k = 0; k < n; ++k) s += std::exp(at(k) - m);
      for (int64_t k = 0; k < n; ++k) at(k) = log ? at(k) - m - std::log(s) : std::exp(at(k) - m) / s;
    }
  return tt::tensor(v, x.shape());
}

// J = diag(p) - p p^T for a 1-D probability vector, in float64 with module 01-02 ops.
Tensor softmax_jacobian(const Tensor& p) {
  Tensor col = p.to(tt::kFloat64).unsqueeze(1);
  return tt::eye(p.size(0), tt::kFloat64) * col - col.matmul(col.t());
}

// The same Jacobian by central differences of tt::softmax (float64).
Tensor softmax_jacobian_fd(const Tensor& z, double h = 1e-6) {
  const int64_t n = z.size(0);
  std::vector<double> zv = z.to_vector<double>(), cols(size_t(n * n));
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> up = zv, down = zv;
    up[size_t(j)] += h;
    down[size_t(j)] -= h;
    std::vector<double> pu = tt::softmax(tt::tensor(up, {n}), 0).to_vector<double>();
    std::vector<double> pd = tt::softmax(tt::tensor(down, {n}), 0).to_vector<double>();
    for (int64_t i = 0; i < n; ++i) cols[size_t(i * n + j)] = (pu[size_t(i)] - pd[size_t(i)]) / (2 * h);
  }
  return tt::tensor(cols, {n, n});
}

double max_abs(const Tensor& t) { return t.abs().max().item<double>(); }

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector<double>())
    if (!std::isfinite(v)) return false;
  return true;
}

// Points on [-6, 6] that avoid 0 (the kink of ReLU-like functions) by construction.
Tensor test_grid(tt::ScalarType dtype) { return tt::linspace(-6.0, 6.0, 97, dtype) + 0.0123; }

}  // namespace

// --- why nonlinearity -----------------------------------------------------------------------------

TEST_CASE("two linear layers compose into one, a ReLU between them does not", "[module03]") {
  tt::manual_seed(3);
  Tensor W1 = tt::randn({8, 4}, tt::kFloat64), b1 = tt::randn({8, 1}, tt::kFloat64);
  Tensor W2 = tt::randn({3, 8}, tt::kFloat64), b2 = tt::randn({3, 1}, tt::kFloat64);
  Tensor X = tt::randn({4, 50}, tt::kFloat64);  // one input per column
  Tensor stacked = W2.matmul(W1.matmul(X) + b1) + b2;
  Tensor merged = W2.matmul(W1).matmul(X) + (W2.matmul(b1) + b2);
  CHECK_ALLCLOSE(stacked, merged, 1e-12, 1e-12);
  Tensor with_relu = W2.matmul((W1.matmul(X) + b1).relu()) + b2;
  CHECK(max_abs(with_relu - merged) > 1e-3);
}

TEST_CASE("two ReLU units compute XOR", "[module03]") {
  Tensor in = tt::tensor({{0.0, 0.0}, {0.0, 1.0}, {1.0, 0.0}, {1.0, 1.0}});
  Tensor s = in.sum({1});
  CHECK((s.relu() - 2 * (s - 1).relu()).to_vector<float>() == std::vector<float>{0, 1, 1, 0});
}

// --- elementwise activations ----------------------------------------------------------------------

TEST_CASE("elementwise activations match their definitions in float64", "[module03]") {
  Tensor x = test_grid(tt::kFloat64);
  CHECK_ALLCLOSE(x.relu(), map64(x, [](double v) { return v > 0 ? v : 0.0; }), 0, 0);
  CHECK_ALLCLOSE(tt::leaky_relu(x, 0.1), map64(x, [](double v) { return v > 0 ? v : 0.1 * v; }), 1e-15, 0);
  CHECK_ALLCLOSE(tt::leaky_relu(x), map64(x, [](double v) { return v > 0 ? v : 0.01 * v; }), 1e-15, 0);
  CHECK_ALLCLOSE(x.sigmoid(), map64(x, sigmoid_ref), 1e-14, 1e-15);
  CHECK_ALLCLOSE(x.tanh(), map64(x, [](double v) { return std::tanh(v); }), 1e-14, 1e-15);
  CHECK_ALLCLOSE(tt::silu(x), map64(x, silu_ref), 1e-14, 1e-15);
}

TEST_CASE("GELU, exact and tanh, matches the definitions", "[module03]") {
  Tensor x64 = test_grid(tt::kFloat64);
  CHECK_ALLCLOSE(tt::gelu(x64), map64(x64, gelu_ref), 1e-13, 1e-15);
  CHECK_ALLCLOSE(tt::gelu(x64, "none"), map64(x64, gelu_ref), 1e-13, 1e-15);
  CHECK_ALLCLOSE(tt::gelu(x64, "tanh"), map64(x64, gelu_tanh_ref), 1e-13, 1e-15);
  // float32: a vectorised erf, accurate to ~1e-7 absolute.
  Tensor x32 = test_grid(tt::kFloat32);
  CHECK_ALLCLOSE(tt::gelu(x32).to(tt::kFloat64), map64(x32, gelu_ref), 1e-5, 1e-6);
  CHECK_ALLCLOSE(tt::gelu(x32, "tanh").to(tt::kFloat64), map64(x32, gelu_tanh_ref), 1e-5, 1e-6);
  // Known values (README table).
  Tensor k = tt::tensor({-3.0, -1.0, 0.0, 1.0, 3.0}, tt::kFloat64);
  CHECK_ALLCLOSE(tt::gelu(k), tt::tensor({-0.004050, -0.158655, 0.0, 0.841345, 2.995950}, tt::kFloat64), 0, 1e-6);
  CHECK_ALLCLOSE(tt::gelu(k, "tanh"), tt::tensor({-0.003637, -0.158808, 0.0, 0.841192, 2.996363}, tt::kFloat64), 0,
                 1e-6);
}

TEST_CASE("float32 activations agree with float64 ones", "[module03]") {
  Tensor x32 = test_grid(tt::kFloat32);
  Tensor x64 = x32.to(tt::kFloat64);
  CHECK_ALLCLOSE(x32.sigmoid().to(tt::kFloat64), x64.sigmoid(), 1e-6, 1e-7);
  CHECK_ALLCLOSE(x32.tanh().to(tt::kFloat64), x64.tanh(), 1e-6, 1e-7);
  CHECK_ALLCLOSE(tt::silu(x32).to(tt::kFloat64), tt::silu(x64), 1e-6, 1e-6);
  CHECK_ALLCLOSE(tt::leaky_relu(x32, 0.2).to(tt::kFloat64), tt::leaky_relu(x64, 0.2), 1e-6, 1e-7);
}

TEST_CASE("activations keep shape and dtype and read strided input", "[module03]") {
  tt::manual_seed(1);
  Tensor base = tt::randn({6, 5}, tt::kFloat64);
  Tensor view = base.t().slice(1, 0, 6, 2);  // [5, 3], strides [1, 10]
  REQUIRE_FALSE(view.is_contiguous());
  const std::vector<std::function<Tensor(const Tensor&)>> acts = {
      [](const Tensor& t) { return t.relu(); },          [](const Tensor& t) { return t.sigmoid(); },
      [](const Tensor& t) { return t.tanh(); },          [](const Tensor& t) { return tt::gelu(t); },
      [](const Tensor& t) { return tt::gelu(t, "tanh"); }, [](const Tensor& t) { return tt::silu(t); },
      [](const Tensor& t) { return tt::leaky_relu(t, 0.05); }};
  for (const auto& act : acts) {
    Tensor out = act(view);
    CHECK(out.shape() == Shape{5, 3});
    CHECK(out.dtype() == tt::kFloat64);
    CHECK_ALLCLOSE(out, act(view.contiguous()), 0, 0);
    CHECK(act(tt::zeros({2, 3})).dtype() == tt::kFloat32);
  }
}

TEST_CASE("activation ranges and minima", "[module03]") {
  Tensor x = tt::linspace(-30.0, 30.0, 6001, tt::kFloat64);
  Tensor s = x.sigmoid(), th = x.tanh();
  CHECK(s.min().item<double>() > 0.0);
  CHECK(s.max().item<double>() < 1.0);
  CHECK(th.min().item<double>() >= -1.0);
  CHECK(th.max().item<double>() <= 1.0);
  CHECK(x.relu().min().item<double>() == 0.0);
  // GELU dips to -0.170 near x = -0.752; SiLU to -0.278 near x = -1.278.
  Tensor fine = tt::linspace(-4.0, 4.0, 80001, tt::kFloat64);
  CHECK(tt::gelu(fine).min().item<double>() == Approx(-0.16997).margin(1e-5));
  CHECK(fine.to_vector<double>()[size_t(tt::gelu(fine).argmin().item<int64_t>())] == Approx(-0.7518).margin(2e-4));
  CHECK(tt::silu(fine).min().item<double>() == Approx(-0.27846).margin(1e-5));
  CHECK(fine.to_vector<double>()[size_t(tt::silu(fine).argmin().item<int64_t>())] == Approx(-1.2785).margin(2e-4));
  // The two GELUs differ by at most ~4.7e-4.
  CHECK(max_abs(tt::gelu(fine) - tt::gelu(fine, "tanh")) == Approx(4.73e-4).margin(1e-5));
}

TEST_CASE("sigmoid and tanh saturate: their derivatives collapse away from 0", "[module03]") {
  // Derivatives from finite differences of the forward (no autograd in this module).
  auto fd = [](const std::function<Tensor(const Tensor&)>& f, double v) {
    const double h = 1e-6;
    return (f(tt::tensor({v + h}, tt::kFloat64)).item<double>() - f(tt::tensor({v - h}, tt::kFloat64)).item<double>()) /
           (2 * h);
  };
  auto sig = [](const Tensor& t) { return t.sigmoid(); };
  auto th = [](const Tensor& t) { return t.tanh(); };
  CHECK(fd(sig, 0.0) == Approx(0.25).epsilon(1e-8));
  CHECK(fd(th, 0.0) == Approx(1.0).epsilon(1e-8));
  CHECK(fd(sig, 5.0) == Approx(0.0066481).epsilon(1e-4));
  CHECK(fd(sig, 10.0) == Approx(4.5396e-5).epsilon(1e-3));
  CHECK(fd(th, 5.0) == Approx(1.8158e-4).epsilon(1e-3));
  CHECK(std::fabs(fd(th, 10.0)) < 1e-7);
  // ReLU-like units do not saturate on the right.
  auto gelu = [](const Tensor& t) { return tt::gelu(t); };
  auto silu = [](const Tensor& t) { return tt::silu(t); };
  CHECK(fd(gelu, 10.0) == Approx(1.0).epsilon(1e-6));
  CHECK(fd(silu, 10.0) == Approx(1.0005).epsilon(1e-4));
}

TEST_CASE("activations reject integer input", "[module03]") {
  CHECK_THROWS_AS(tt::gelu(tt::tensor({1, 2})), tt::DtypeError);
  CHECK_THROWS_AS(tt::softmax(tt::tensor({1, 2}), 0), tt::DtypeError);
  CHECK_THROWS_WITH(tt::gelu(tt::tensor({1.0}), "fast"), Contains("tanh"));
}

// --- softmax and log-softmax ----------------------------------------------------------------------

TEST_CASE("softmax is a distribution along its dim, for every dim", "[module03][exercise]") {
  tt::manual_seed(7);
  Tensor x = tt::randn({2, 3, 5}, tt::kFloat64) * 3;
  for (int64_t dim : {0, 1, 2, -1, -2, -3}) {
    INFO("dim " << dim);
    Tensor p = tt::softmax(x, dim);
    CHECK(p.shape() == x.shape());
    CHECK_ALLCLOSE(p, softmax_ref(x, dim), 1e-12, 1e-15);
    CHECK_ALLCLOSE(p.sum({dim}), tt::ones_like(p.sum({dim})), 1e-12, 1e-12);
    CHECK(p.min().item<double>() > 0.0);
    CHECK_ALLCLOSE(tt::log_softmax(x, dim), softmax_ref(x, dim, /*log=*/true), 1e-12, 1e-13);
    CHECK_ALLCLOSE(x.softmax(dim), p, 0, 0);
    CHECK_ALLCLOSE(x.log_softmax(dim), tt::log_softmax(x, dim), 0, 0);
  }
}

TEST_CASE("float32 softmax matches the float64 definition", "[module03][exercise]") {
  tt::manual_seed(8);
  Tensor x = tt::randn({4, 33}) * 4;  // a row length that is not a multiple of a vector width
  CHECK_ALLCLOSE(tt::softmax(x, -1).to(tt::kFloat64), softmax_ref(x, -1), 1e-5, 1e-7);
  CHECK_ALLCLOSE(tt::log_softmax(x, -1).to(tt::kFloat64), softmax_ref(x, -1, true), 1e-5, 1e-5);
  CHECK(tt::softmax(x, -1).dtype() == tt::kFloat32);
}

TEST_CASE("softmax reads strided and transposed rows", "[module03][exercise]") {
  tt::manual_seed(9);
  Tensor base = tt::randn({6, 8}, tt::kFloat64);
  Tensor views[] = {base.t(), base.slice(1, 1, 8, 3), base.select(1, 2).unsqueeze(0).expand({3, 6})};
  for (const Tensor& v : views)
    for (int64_t dim : {0, -1}) {
      CHECK_ALLCLOSE(tt::softmax(v, dim), softmax_ref(v, dim), 1e-12, 1e-15);
      CHECK_ALLCLOSE(tt::log_softmax(v, dim), softmax_ref(v, dim, true), 1e-12, 1e-13);
    }
}

TEST_CASE("softmax is invariant to shifting a row", "[module03]") {
  Tensor z = tt::tensor({2.0, 1.0, 0.1, -1.0}, tt::kFloat64);
  CHECK_ALLCLOSE(tt::softmax(z + 100, 0), tt::softmax(z, 0), 1e-12, 1e-15);
  CHECK_ALLCLOSE(tt::softmax(z - 1000, 0), tt::softmax(z, 0), 1e-12, 1e-15);
  CHECK_ALLCLOSE(tt::log_softmax(z + 100, 0), tt::log_softmax(z, 0), 1e-12, 1e-12);
}

TEST_CASE("softmax does not overflow at +-1e4, where the naive formula gives nan", "[module03][exercise]") {
  Tensor big = tt::tensor({1e4, 1e4 - 1, 1e4 - 2});
  Tensor naive = big.exp() / big.exp().sum();
  CHECK(std::isnan(naive.to_vector<float>()[0]));
  Tensor expected = tt::tensor({0.665241, 0.244728, 0.090031});
  CHECK_ALLCLOSE(tt::softmax(big, 0), expected, 1e-5, 1e-6);
  CHECK_ALLCLOSE(tt::softmax(-big, 0), tt::tensor({0.090031, 0.244728, 0.665241}), 1e-5, 1e-6);
  CHECK_ALLCLOSE(tt::log_softmax(big, 0), tt::tensor({-0.407606, -1.407606, -2.407606}), 1e-5, 1e-6);
  // Rows of mixed magnitude in one tensor, every dtype and dim.
  for (auto dtype : {tt::kFloat32, tt::kFloat64}) {
    Tensor x = tt::tensor({{1e4, -1e4, 0.0}, {-1e4, -1e4 - 1, -1e4 - 2}, {3e4, 3e4, 3e4}}, dtype);
    for (int64_t dim : {0, 1}) {
      INFO("dtype " << dtype << ", dim " << dim);
      Tensor p = tt::softmax(x, dim);
      CHECK(all_finite(p));
      CHECK_ALLCLOSE(p.to(tt::kFloat64), softmax_ref(x, dim), 1e-5, 1e-7);
      Tensor lp = tt::log_softmax(x, dim);
      CHECK(all_finite(lp));
      CHECK_ALLCLOSE(lp.to(tt::kFloat64), softmax_ref(x, dim, true), 1e-5, 1e-3);
    }
  }
}

TEST_CASE("masked positions get zero probability; fully masked rows give zeros and -inf", "[module03][exercise]") {
  Tensor masked = tt::tensor({1.0, 2.0, -kInf, 0.0});
  Tensor p = tt::softmax(masked, 0);
  CHECK(p.to_vector<float>()[2] == 0.0f);
  CHECK_ALLCLOSE(p, tt::tensor({0.244728, 0.665241, 0.0, 0.090031}), 1e-5, 1e-6);
  CHECK(tt::log_softmax(masked, 0).to_vector<float>()[2] == -std::numeric_limits<float>::infinity());

  for (auto dtype : {tt::kFloat32, tt::kFloat64}) {
    Tensor rows = tt::tensor({{-kInf, -kInf, -kInf}, {0.0, 1.0, -kInf}}, dtype);
    Tensor sp = tt::softmax(rows, -1);
    CHECK_ALLCLOSE(sp.select(0, 0), tt::zeros({3}, dtype), 0, 0);
    CHECK_ALLCLOSE(sp.select(0, 1).to(tt::kFloat64), tt::tensor({0.268941, 0.731059, 0.0}, tt::kFloat64), 1e-5, 1e-6);
    Tensor lp = tt::log_softmax(rows, -1);
    CHECK_ALLCLOSE(lp.select(0, 0), tt::full({3}, -kInf, dtype), 0, 0);
    CHECK(lp.to_vector<double>()[3] == Approx(-1.313262).epsilon(1e-5));
    // Masked along dim 0 (columns) as well.
    Tensor cols = rows.t().contiguous();
    CHECK_ALLCLOSE(tt::softmax(cols, 0), sp.t(), 0, 0);
  }

  // A causal mask built with comparisons: row i sees keys 0..i, uniformly when the scores are 0.
  Tensor future = tt::arange(4).unsqueeze(0) > tt::arange(4).unsqueeze(1);
  Tensor causal = tt::softmax(tt::zeros({4, 4}).masked_fill(future, -kInf), -1);
  CHECK_ALLCLOSE(causal.select(0, 0), tt::tensor({1.0, 0.0, 0.0, 0.0}), 0, 0);
  CHECK_ALLCLOSE(causal.select(0, 3), tt::full({4}, 0.25), 1e-7, 0);
  // A -1e9 "mask" is not a mask when the whole row is masked: it gives a uniform row.
  CHECK_ALLCLOSE(tt::softmax(tt::tensor({-1e9, -1e9, -1e9}), 0), tt::full({3}, 1.0 / 3), 1e-6, 0);
}

TEST_CASE("log_softmax keeps what log(softmax) loses", "[module03][exercise]") {
  Tensor far = tt::tensor({0.0, -200.0});
  CHECK(tt::softmax(far, 0).to_vector<float>()[1] == 0.0f);
  CHECK(std::isinf(tt::softmax(far, 0).log().to_vector<float>()[1]));
  CHECK_ALLCLOSE(tt::log_softmax(far, 0), tt::tensor({0.0, -200.0}), 1e-6, 1e-6);
  // log-sum-exp by hand agrees with the fused kernel.
  tt::manual_seed(11);
  Tensor z = tt::randn({5, 7}, tt::kFloat64) * 10;
  Tensor m = std::get<0>(z.max(1, /*keepdim=*/true));
  Tensor lse = m + (z - m).exp().sum({1}, /*keepdim=*/true).log();
  CHECK_ALLCLOSE(tt::log_softmax(z, 1), z - lse, 1e-12, 1e-12);
  CHECK_ALLCLOSE(tt::log_softmax(z, 1).exp(), tt::softmax(z, 1), 1e-12, 1e-15);
}

TEST_CASE("softmax of a single element and of a 0-d tensor is 1", "[module03]") {
  CHECK(tt::softmax(tt::tensor({-3.5}), 0).item<float>() == 1.0f);
  CHECK(tt::softmax(tt::scalar_tensor(7.0), 0).item<float>() == 1.0f);
  CHECK(tt::log_softmax(tt::scalar_tensor(7.0), 0).item<float>() == 0.0f);
  CHECK(tt::softmax(tt::zeros({3, 0}), 1).numel() == 0);
}

TEST_CASE("softmax checks its dim", "[module03]") {
  CHECK_THROWS_AS(tt::softmax(tt::zeros({2, 3}), 2), tt::Error);
  CHECK_THROWS_AS(tt::log_softmax(tt::zeros({2, 3}), -3), tt::Error);
}

// --- saturation ------------------------------------------------------------------------------------

TEST_CASE("the softmax Jacobian diag(p) - p p^T matches finite differences", "[module03]") {
  Tensor z = tt::tensor({2.0, 1.0, 0.1, -1.0}, tt::kFloat64);
  Tensor J = softmax_jacobian(tt::softmax(z, 0));
  CHECK_ALLCLOSE(J, softmax_jacobian_fd(z), 1e-7, 1e-9);
  // Rows and columns sum to 0 (shifting every score changes nothing), entries are at most 1/4.
  CHECK(max_abs(J.sum({0})) < 1e-15);
  CHECK(max_abs(J.sum({1})) < 1e-15);
  CHECK(max_abs(J) <= 0.25);
  // The vector-Jacobian product p * (g - g.p) is g^T J.
  Tensor p = tt::softmax(z, 0);
  Tensor g = tt::tensor({1.0, 0.0, -1.0, 0.5}, tt::kFloat64);
  CHECK_ALLCLOSE(p * (g - (g * p).sum()), J.t().matmul(g), 1e-14, 1e-15);
}

TEST_CASE("softmax saturates: its Jacobian vanishes as the scores are scaled up", "[module03]") {
  Tensor z = tt::tensor({2.0, 1.0, 0.1, -1.0});
  Tensor v = tt::tensor({1.0, 0.0, -1.0, 0.5});
  double prev_j = 1.0, prev_g = 1.0;
  for (double scale : {1.0, 2.0, 5.0, 10.0, 100.0}) {
    INFO("scale " << scale);
    Tensor p = tt::softmax(z * scale, 0);
    double j = max_abs(softmax_jacobian(p));
    Tensor o = (p * v).sum();
    double g = max_abs(p * (v - o));  // d o / d z for o = sum_i p_i v_i
    CHECK(j < prev_j);
    CHECK(g < prev_g);
    prev_j = j;
    prev_g = g;
  }
  CHECK(max_abs(softmax_jacobian(tt::softmax(z, 0))) == Approx(0.2310).epsilon(1e-3));
  CHECK(max_abs(softmax_jacobian(tt::softmax(z * 10, 0))) == Approx(4.54e-5).epsilon(1e-2));
  // At scale 100 the distribution is one-hot in float32 and the Jacobian is (numerically) zero.
  Tensor p100 = tt::softmax(z * 100, 0);
  CHECK(p100.to_vector<float>()[0] == 1.0f);
  CHECK(max_abs(softmax_jacobian(p100)) < 1e-30);
}

TEST_CASE("dividing dot-product scores by sqrt(D) keeps softmax away from one-hot", "[module03]") {
  tt::manual_seed(12);
  const int64_t D = 64;
  Tensor scores = tt::randn({256, D}).matmul(tt::randn({D, 16}));  // [queries, keys], variance D
  double unscaled = std::get<0>(tt::softmax(scores, -1).max(1)).mean().item<double>();
  double scaled = std::get<0>(tt::softmax(scores / std::sqrt(double(D)), -1).max(1)).mean().item<double>();
  CHECK(unscaled > 0.8);
  CHECK(scaled < 0.5);
}

TEST_CASE("the fused softmax backward kernels compute g^T J without building J", "[module03][exercise]") {
  // tt::softmax_backward(g, p, dim) is p * (g - sum(g p)); tt::log_softmax_backward(g, logp, dim)
  // is g - exp(logp) * sum(g). Checked against the Jacobian and against finite differences of
  // the forward, for float64 and float32, along every dim and on strided operands.
  tt::manual_seed(14);
  Tensor z = tt::randn({3, 5}, tt::kFloat64) * 2;
  Tensor g = tt::randn({3, 5}, tt::kFloat64);
  for (int64_t dim : {0, 1, -1}) {
    INFO("dim " << dim);
    Tensor p = tt::softmax(z, dim);
    Tensor dz = tt::softmax_backward(g, p, dim);
    Tensor expected = p * (g - (g * p).sum({dim}, /*keepdim=*/true));
    CHECK_ALLCLOSE(dz, expected, 1e-12, 1e-14);
    Tensor logp = tt::log_softmax(z, dim);
    Tensor dlz = tt::log_softmax_backward(g, logp, dim);
    CHECK_ALLCLOSE(dlz, g - p * g.sum({dim}, /*keepdim=*/true), 1e-12, 1e-14);
  }
  // One row against the Jacobian and against finite differences of sum(g * softmax(z)).
  Tensor row = z.select(0, 0).contiguous(), grow = g.select(0, 0).contiguous();
  Tensor p = tt::softmax(row, 0);
  CHECK_ALLCLOSE(tt::softmax_backward(grow, p, 0), softmax_jacobian(p).t().matmul(grow), 1e-12, 1e-14);
  std::vector<double> zv = row.to_vector<double>(), numeric;
  const double h = 1e-6;
  for (size_t j = 0; j < zv.size(); ++j) {
    std::vector<double> up = zv, down = zv;
    up[j] += h;
    down[j] -= h;
    auto loss = [&](const std::vector<double>& v) {
      return (grow * tt::softmax(tt::tensor(v, {int64_t(v.size())}), 0)).sum().item<double>();
    };
    numeric.push_back((loss(up) - loss(down)) / (2 * h));
  }
  CHECK_ALLCLOSE(tt::softmax_backward(grow, p, 0), tt::tensor(numeric, {int64_t(numeric.size())}), 1e-6, 1e-9);
  // float32, a strided (transposed) gradient, and a long row.
  Tensor z32 = tt::randn({40, 7});
  Tensor g32 = tt::randn({7, 40}).t();
  Tensor p32 = tt::softmax(z32, 0);
  Tensor ref = p32.to(tt::kFloat64) * (g32.to(tt::kFloat64) -
                                       (g32.to(tt::kFloat64) * p32.to(tt::kFloat64)).sum({0}, true));
  CHECK_ALLCLOSE(tt::softmax_backward(g32, p32, 0).to(tt::kFloat64), ref, 1e-4, 1e-6);
  // A fully masked row: zeros in, zeros out (no NaN).
  Tensor masked = tt::softmax(tt::full({2, 3}, -kInf, tt::kFloat64), -1);
  CHECK_ALLCLOSE(tt::softmax_backward(tt::ones({2, 3}, tt::kFloat64), masked, -1), tt::zeros({2, 3}, tt::kFloat64), 0, 0);
}

TEST_CASE("the GELU backward kernel matches GELU' = Phi(x) + x phi(x)", "[module03]") {
  Tensor x = test_grid(tt::kFloat64);
  Tensor g = tt::full({x.numel()}, 2.0, tt::kFloat64);
  const double inv_sqrt_2pi = 1.0 / std::sqrt(2.0 * std::acos(-1.0));
  Tensor expected = map64(x, [&](double v) {
    return 2.0 * (0.5 * (1.0 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-0.5 * v * v) * inv_sqrt_2pi);
  });
  CHECK_ALLCLOSE(tt::gelu_backward(g, x), expected, 1e-12, 1e-14);
  // The tanh form against a finite difference of its own forward.
  const double h = 1e-6;
  Tensor numeric = (tt::gelu(x + h, "tanh") - tt::gelu(x - h, "tanh")) / (2 * h) * 2.0;
  CHECK_ALLCLOSE(tt::gelu_backward(g, x, "tanh"), numeric, 1e-6, 1e-8);
}

// --- modules -----------------------------------------------------------------------------------------

TEST_CASE("activation modules apply their functions", "[module03]") {
  tt::manual_seed(13);
  Tensor x = tt::randn({3, 4}, tt::kFloat64);
  tt::nn::ReLU relu;
  tt::nn::GELU gelu;
  tt::nn::SiLU silu;
  tt::nn::Sigmoid sigmoid;
  tt::nn::Tanh tanh;
  tt::nn::Softmax softmax0(0), softmax1(-1);
  tt::nn::LogSoftmax log_softmax1(1);
  CHECK_ALLCLOSE(relu(x), x.relu(), 0, 0);
  CHECK_ALLCLOSE(gelu(x), tt::gelu(x), 0, 0);
  CHECK_ALLCLOSE(silu(x), tt::silu(x), 0, 0);
  CHECK_ALLCLOSE(sigmoid(x), x.sigmoid(), 0, 0);
  CHECK_ALLCLOSE(tanh(x), x.tanh(), 0, 0);
  CHECK_ALLCLOSE(softmax0(x), tt::softmax(x, 0), 0, 0);
  CHECK_ALLCLOSE(softmax1(x), tt::softmax(x, -1), 0, 0);
  CHECK_ALLCLOSE(log_softmax1(x), tt::log_softmax(x, 1), 0, 0);
}
