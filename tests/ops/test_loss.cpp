// The losses (ops/loss.h) against known values: worked by hand where the arithmetic is short
// (mse, l1, uniform logits, the -100 clamp) and otherwise printed by PyTorch 1.13 in float64
// (noted at each case), every reduction, ignore_index, label smoothing, class weights, class dim
// 1 with extra dims, unbatched inputs, probability targets, the NaN of an empty mean, stability
// at +-1000; then every bad input: the error type, and a message that names the op, the rule and
// the values. On a GPU, every loss on CUDA against the CPU ([cuda], skipped without one).
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <vector>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f64(std::initializer_list<double> v) { return tensor(v, kFloat64); }
Tensor f64(std::initializer_list<std::initializer_list<double>> v) { return tensor(v, kFloat64); }

// Logits used by several cases, and targets [2, 0, 1].
Tensor logits() { return f64({{1.0, 2.0, 3.0}, {1.0, 1.0, 1.0}, {0.5, -1.0, 2.0}}); }
Tensor targets() { return tensor({2, 0, 1}); }

// A tensor whose storage says cuda:0 (host memory, never read): device checks run without a GPU.
Tensor fake_cuda(const Shape& shape, ScalarType dtype) {
  static double host[64] = {};
  auto storage = std::make_shared<StorageImpl>(host, sizeof host, Device(kCUDA, 0), nullptr);
  return detail::make_tensor(storage, 0, shape, contiguous_strides(shape), dtype);
}

}  // namespace

TEST_CASE("reduction names", "[ops][loss]") {
  CHECK(std::string(reduction_name(kNone)) == "none");
  CHECK(std::string(reduction_name(kMean)) == "mean");
  CHECK(std::string(reduction_name(Reduction::Sum)) == "sum");
  std::ostringstream os;
  os << kSum;
  CHECK(os.str() == "sum");
}

TEST_CASE("mse_loss and l1_loss: values by hand", "[ops][loss]") {
  Tensor x = f64({1.0, 2.0, 3.0}), y = f64({2.0, 2.0, 5.0});  // differences -1, 0, -2
  CHECK_ALLCLOSE(mse_loss(x, y, kNone), f64({1.0, 0.0, 4.0}));
  CHECK_ALLCLOSE(mse_loss(x, y), scalar_tensor(5.0 / 3.0, kFloat64));
  CHECK_ALLCLOSE(mse_loss(x, y, kSum), scalar_tensor(5.0, kFloat64));
  CHECK_ALLCLOSE(l1_loss(x, y, kNone), f64({1.0, 0.0, 2.0}));
  CHECK_ALLCLOSE(l1_loss(x, y), scalar_tensor(1.0, kFloat64));
  CHECK_ALLCLOSE(l1_loss(x, y, kSum), scalar_tensor(3.0, kFloat64));
  SECTION("float32, 2-D, transposed operands") {
    Tensor a = tensor({{1.0, 2.0}, {3.0, 4.0}}).t(), b = zeros({2, 2});
    CHECK(mse_loss(a, b).dtype() == kFloat32);
    CHECK_ALLCLOSE(mse_loss(a, b, kNone), tensor({{1.0, 9.0}, {4.0, 16.0}}));
    CHECK_ALLCLOSE(l1_loss(a, b), scalar_tensor(2.5));
  }
  SECTION("l1_loss's gradient at x == y is 0, as PyTorch's") {
    Tensor a = f64({0.0, 1.0, -2.0}).requires_grad_();
    l1_loss(a, zeros({3}, kFloat64)).backward();
    CHECK_ALLCLOSE(a.grad(), f64({0.0, 1.0 / 3, -1.0 / 3}));
  }
  SECTION("a mean over nothing is NaN") {
    CHECK(std::isnan(mse_loss(zeros({0}), zeros({0})).item<double>()));
    CHECK(std::isnan(l1_loss(zeros({0, 3}), zeros({0, 3})).item<double>()));
  }
}

TEST_CASE("cross_entropy: uniform logits cost log(C)", "[ops][loss]") {
  Tensor x = zeros({2, 4}, kFloat64);
  CHECK_ALLCLOSE(cross_entropy(x, tensor({3, 1}), {}, kNone), f64({std::log(4.0), std::log(4.0)}));
  CHECK_ALLCLOSE(cross_entropy(x, tensor({3, 1})), scalar_tensor(std::log(4.0), kFloat64));
  CHECK_ALLCLOSE(cross_entropy(x, tensor({3, 1}), {}, kSum), scalar_tensor(2 * std::log(4.0), kFloat64));
}

TEST_CASE("cross_entropy: values from PyTorch", "[ops][loss]") {
  Tensor x = logits(), t = targets();
  // row 0 by hand: -log(e^3 / (e + e^2 + e^3)) = log(1 + e^-1 + e^-2)
  const double row0 = std::log(1 + std::exp(-1.0) + std::exp(-2.0));
  CHECK_ALLCLOSE(cross_entropy(x, t, {}, kNone), f64({row0, std::log(3.0), 3.2413112967}), 1e-9, 1e-9);
  CHECK_ALLCLOSE(cross_entropy(x, t), scalar_tensor(1.5825098499, kFloat64), 1e-9, 1e-9);
  SECTION("ignore_index: the row costs 0 and leaves the mean's denominator") {
    CHECK_ALLCLOSE(cross_entropy(x, t, {}, kNone, 1), f64({0.4076059644, 1.0986122887, 0.0}), 1e-9, 1e-9);
    CHECK_ALLCLOSE(cross_entropy(x, t, {}, kMean, 1), scalar_tensor(0.7531091266, kFloat64), 1e-9, 1e-9);
    CHECK_ALLCLOSE(cross_entropy(x, tensor({2, -100, 1}), {}, kSum),
                   scalar_tensor(0.4076059644 + 3.2413112967, kFloat64), 1e-9, 1e-9);
  }
  SECTION("label smoothing: (1 - eps) NLL + eps / C * sum of -log p") {
    CHECK_ALLCLOSE(cross_entropy(x, t, {}, kNone, -100, 0.2), f64({0.6076059644, 1.0986122887, 2.9413112967}),
                   1e-9, 1e-9);
    CHECK_ALLCLOSE(cross_entropy(x, t, {}, kMean, -100, 0.2), scalar_tensor(1.5491765166, kFloat64), 1e-9, 1e-9);
    // eps = 1: the target does not matter any more
    CHECK_ALLCLOSE(cross_entropy(x, t, {}, kNone, -100, 1.0),
                   cross_entropy(x, tensor({0, 1, 2}), {}, kNone, -100, 1.0));
  }
  SECTION("class weights: the mean divides by the sum of the target weights") {
    Tensor w = f64({1.0, 2.0, 0.5});
    CHECK_ALLCLOSE(cross_entropy(x, t, w, kNone), f64({0.2038029822, 1.0986122887, 6.4826225933}), 1e-9, 1e-9);
    CHECK_ALLCLOSE(cross_entropy(x, t, w), scalar_tensor(2.2242965326, kFloat64), 1e-9, 1e-9);
    CHECK_ALLCLOSE(cross_entropy(x, t, w, kSum), scalar_tensor(7.7850378642, kFloat64), 1e-9, 1e-9);
    CHECK_ALLCLOSE(cross_entropy(x, t, w, kNone, 0, 0.3), f64({0.6853241751, 0.0, 5.3722947692}), 1e-9, 1e-9);
    CHECK_ALLCLOSE(cross_entropy(x, t, w, kMean, 0, 0.3), scalar_tensor(2.4230475777, kFloat64), 1e-9, 1e-9);
  }
  SECTION("float32 logits give a float32 loss") {
    Tensor l = cross_entropy(x.to(kFloat32), t);
    CHECK(l.dtype() == kFloat32);
    CHECK_ALLCLOSE(l, scalar_tensor(1.5825098499));
  }
}

TEST_CASE("cross_entropy: PyTorch's shapes", "[ops][loss]") {
  SECTION("[N, C, d] with targets [N, d]: classes in dim 1") {
    Tensor x = arange(12, TensorOptions(kFloat64)).reshape({2, 3, 2}).sin();
    Tensor t = tensor({{0, 2}, {1, 1}});
    Tensor none = cross_entropy(x, t, {}, kNone);
    CHECK(none.shape() == Shape{2, 2});
    CHECK_ALLCLOSE(none, f64({{1.3741564726, 2.3082031001}, {0.4034506506, 0.9246881054}}), 1e-9, 1e-9);
    CHECK_ALLCLOSE(cross_entropy(x, t), scalar_tensor(1.2526245822, kFloat64), 1e-9, 1e-9);
    // the same as moving the classes last and flattening
    Tensor flat = x.permute({0, 2, 1}).reshape({4, 3});
    CHECK_ALLCLOSE(cross_entropy(flat, t.reshape({4}), {}, kNone).reshape({2, 2}), none);
  }
  SECTION("[C] with a 0-d target gives a 0-d loss in every reduction") {
    Tensor x = f64({1.0, 2.0, 3.0});
    for (Reduction r : {kNone, kMean, kSum}) {
      Tensor l = cross_entropy(x, scalar_tensor(0, kInt64), {}, r);
      CHECK(l.dim() == 0);
      CHECK_ALLCLOSE(l, scalar_tensor(2.4076059644, kFloat64), 1e-9, 1e-9);
    }
  }
  SECTION("[N, C, d1, d2] with targets [N, d1, d2]") {
    Tensor x = randn({2, 3, 2, 2}, kFloat64);
    Tensor t = randint(3, {2, 2, 2});
    Tensor ref = cross_entropy(x.permute({0, 2, 3, 1}).reshape({8, 3}), t.reshape({8}), {}, kNone);
    CHECK_ALLCLOSE(cross_entropy(x, t, {}, kNone).reshape({8}), ref);
  }
}

TEST_CASE("cross_entropy: probability targets", "[ops][loss]") {
  Tensor x = logits(), t = targets();
  Tensor p = f64({{0.1, 0.2, 0.7}, {1.0, 0.0, 0.0}, {0.3, 0.3, 0.4}});
  CHECK_ALLCLOSE(cross_entropy(x, p, {}, kNone), f64({0.8076059644, 1.0986122887, 1.5913112967}), 1e-9, 1e-9);
  CHECK_ALLCLOSE(cross_entropy(x, p), scalar_tensor(1.1658431833, kFloat64), 1e-9, 1e-9);
  CHECK_ALLCLOSE(cross_entropy(x, p, f64({1.0, 2.0, 0.5}), kMean, -100, 0.1), scalar_tensor(1.5638931957, kFloat64),
                 1e-9, 1e-9);
  SECTION("one-hot probabilities equal class indices, with smoothing too") {
    Tensor onehot = f64({{0.0, 0.0, 1.0}, {1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}});
    CHECK_ALLCLOSE(cross_entropy(x, onehot, {}, kNone), cross_entropy(x, t, {}, kNone));
    CHECK_ALLCLOSE(cross_entropy(x, onehot, {}, kSum, -100, 0.25), cross_entropy(x, t, {}, kSum, -100, 0.25));
  }
  SECTION("unbatched: [C] logits and [C] probabilities") {
    Tensor l = cross_entropy(f64({1.0, 2.0, 3.0}), f64({1.0, 0.0, 0.0}), {}, kNone);
    CHECK(l.dim() == 0);
    CHECK_ALLCLOSE(l, scalar_tensor(2.4076059644, kFloat64), 1e-9, 1e-9);
  }
}

TEST_CASE("cross_entropy: means over nothing are NaN, with zero gradients (as PyTorch)", "[ops][loss]") {
  Tensor x = randn({3, 4}, kFloat64).requires_grad_();
  Tensor ignored = tensor({-100, -100, -100});
  for (double eps : {0.0, 0.1}) {
    CHECK(std::isnan(cross_entropy(x, ignored, {}, kMean, -100, eps).item<double>()));
    CHECK(cross_entropy(x, ignored, {}, kSum, -100, eps).item<double>() == 0.0);
    Tensor g = autograd::grad({cross_entropy(x, ignored, {}, kMean, -100, eps)}, {x}).at(0);
    CHECK_ALLCLOSE(g, zeros({3, 4}, kFloat64));
  }
  CHECK(std::isnan(cross_entropy(x, ignored, f64({1.0, 2.0, 3.0, 4.0})).item<double>()));
  CHECK(std::isnan(cross_entropy(zeros({0, 4}), zeros({0}, kInt64)).item<double>()));
  CHECK(std::isnan(cross_entropy(zeros({0, 4}), zeros({0, 4})).item<double>()));
  CHECK(cross_entropy(zeros({0, 4}), zeros({0}, kInt64), {}, kNone).shape() == Shape{0});
}

TEST_CASE("cross_entropy: stable for huge logits and -inf entries", "[ops][loss]") {
  Tensor x = tensor({{1e4, -1e4, 0.0}, {-1e4, 1e4, 1e4}});
  Tensor l = cross_entropy(x, tensor({0, 2}), {}, kNone);
  CHECK_ALLCLOSE(l, tensor({0.0, std::log(2.0)}), 1e-5, 1e-6);
  // a masked class (-inf) that is not the target costs nothing, even with an ignored row beside it
  const double inf = std::numeric_limits<double>::infinity();
  Tensor m = f64({{0.0, -inf, 0.0}, {-inf, -inf, 1.0}});
  CHECK_ALLCLOSE(cross_entropy(m, tensor({0, -100}), {}, kNone), f64({std::log(2.0), 0.0}));
}

TEST_CASE("nll_loss: values, weights, ignore_index", "[ops][loss]") {
  Tensor x = logits(), t = targets(), w = f64({1.0, 2.0, 0.5});
  CHECK_ALLCLOSE(nll_loss(log_softmax(x, 1), t, w, kNone, 1), f64({0.2038029822, 1.0986122887, 0.0}), 1e-9, 1e-9);
  // on raw numbers: -(3 + 1 - 1) / 3
  CHECK_ALLCLOSE(nll_loss(x, t), scalar_tensor(-1.0, kFloat64));
  CHECK_ALLCLOSE(nll_loss(x, t, {}, kSum), scalar_tensor(-3.0, kFloat64));
  CHECK_ALLCLOSE(nll_loss(f64({0.5, -2.0}), scalar_tensor(1, kInt64)), scalar_tensor(2.0, kFloat64));
  CHECK_ALLCLOSE(nll_loss(log_softmax(x, 1), t, w), cross_entropy(x, t, w));
  Tensor x3 = randn({2, 4, 3}, kFloat64);
  Tensor t3 = tensor({{1, 2, 3}, {0, -100, 0}});
  CHECK_ALLCLOSE(nll_loss(log_softmax(x3, 1), t3, {}, kNone), cross_entropy(x3, t3, {}, kNone));
  CHECK(std::isnan(nll_loss(x, tensor({-100, -100, -100})).item<double>()));
}

TEST_CASE("binary_cross_entropy: values and PyTorch's -100 clamp", "[ops][loss]") {
  Tensor p = f64({0.2, 0.9, 0.5, 0.0}), y = f64({0.0, 1.0, 0.3, 1.0});
  // -log(0.8), -log(0.9), log(2), and log(0) clamped to -100
  CHECK_ALLCLOSE(binary_cross_entropy(p, y, {}, kNone), f64({-std::log(0.8), -std::log(0.9), std::log(2.0), 100.0}));
  CHECK_ALLCLOSE(binary_cross_entropy(p, y), scalar_tensor(25.2554128119, kFloat64), 1e-9, 1e-9);
  CHECK_ALLCLOSE(binary_cross_entropy(p, y, f64({1.0, 2.0, 3.0, 0.5})), scalar_tensor(13.1283265311, kFloat64), 1e-9,
                 1e-9);
  CHECK_ALLCLOSE(binary_cross_entropy(f64({0.0, 1.0}), f64({1.0, 0.0}), {}, kSum), scalar_tensor(200.0, kFloat64));
  SECTION("the gradient at 0 and 1 is finite, as PyTorch's (eps 1e-12 in the denominator)") {
    Tensor q = f64({0.0, 1.0, 0.5}).requires_grad_();
    Tensor y = f64({1.0, 0.0, 0.3}).requires_grad_();
    binary_cross_entropy(q, y).backward();
    const double eps = 1e-12f;  // PyTorch's EPSILON is a float
    CHECK_ALLCLOSE(q.grad(), f64({-1.0 / (3 * eps), 1.0 / (3 * eps), 0.2 / 0.25 / 3}), 1e-12, 0.0);
    // the target's gradient is the derivative of the clamped loss: finite (PyTorch's is infinite here)
    CHECK_ALLCLOSE(y.grad(), f64({100.0 / 3, -100.0 / 3, 0.0}), 1e-12, 1e-15);
  }
  SECTION("weight broadcasts over rows") {
    Tensor q = rand({2, 3}, kFloat64), t = rand({2, 3}, kFloat64), w = f64({1.0, 2.0, 3.0});
    CHECK_ALLCLOSE(binary_cross_entropy(q, t, w, kNone), binary_cross_entropy(q, t, {}, kNone) * w);
  }
}

TEST_CASE("binary_cross_entropy_with_logits: stable values and pos_weight", "[ops][loss]") {
  Tensor z = f64({-2.0, 0.0, 3.0, 1000.0, -1000.0}), y = f64({0.0, 1.0, 1.0, 0.0, 1.0});
  Tensor l = binary_cross_entropy_with_logits(z, y, {}, {}, kNone);
  CHECK_ALLCLOSE(l, f64({std::log1p(std::exp(-2.0)), std::log(2.0), std::log1p(std::exp(-3.0)), 1000.0, 1000.0}));
  SECTION("equals BCE of sigmoid for moderate logits") {
    Tensor x = randn({4, 3}, kFloat64), t = rand({4, 3}, kFloat64);
    CHECK_ALLCLOSE(binary_cross_entropy_with_logits(x, t), binary_cross_entropy(sigmoid(x), t), 1e-10, 1e-12);
  }
  SECTION("pos_weight per class (last dim), weight per element (PyTorch's values)") {
    Tensor x = f64({{-2.0, 0.5}, {3.0, -1.0}}), t = f64({{1.0, 0.0}, {1.0, 0.3}}), pw = f64({3.0, 0.5});
    CHECK_ALLCLOSE(binary_cross_entropy_with_logits(x, t, {}, pw, kNone),
                   f64({{6.3807840331, 0.9740769842}, {0.1457620547, 0.4162724344}}), 1e-9, 1e-9);
    CHECK_ALLCLOSE(binary_cross_entropy_with_logits(x, t, f64({2.0, 1.0}), pw), scalar_tensor(3.6108603986, kFloat64),
                   1e-9, 1e-9);
  }
  SECTION("float32 keeps the loss of a confident right answer (log1p), not 0") {
    // softplus(-20) = log(1 + e^-20) = 2.06e-9: log(1 + 2.06e-9) rounds to 0 in float32 (and
    // PyTorch 1.13 returns 0 here). With y = 0 and x << 0 the loss is x + (-x + tiny), which rounds
    // to 0 in float32 in both libraries.
    Tensor x = tensor({20.0, 17.0, 16.5});
    Tensor l = binary_cross_entropy_with_logits(x, tensor({1.0, 1.0, 1.0}), {}, {}, kNone);
    CHECK_ALLCLOSE(l, tensor({std::log1p(std::exp(-20.0)), std::log1p(std::exp(-17.0)), std::log1p(std::exp(-16.5))}),
                   1e-6, 0);
    CHECK(l.to_vector<float>()[0] > 0.0f);
  }
  SECTION("the gradient at a logit of exactly 0 is sigmoid(0) - y") {
    Tensor x = zeros({3}, kFloat64).requires_grad_();
    binary_cross_entropy_with_logits(x, f64({0.0, 1.0, 0.25}), {}, f64({1.0, 1.0, 3.0}), kSum).backward();
    // d/dx = sigmoid(x) - y without pos_weight; (1 + (pw - 1) y) (sigmoid(x) - 1) + (1 - y) with it.
    CHECK_ALLCLOSE(x.grad(), f64({0.5, -0.5, 1.5 * -0.5 + 0.75}));
  }
  SECTION("gradcheck across 0 and far into both tails") {
    auto f = [](const autograd::TensorList& in) {
      return binary_cross_entropy_with_logits(in[0], f64({0.0, 1.0, 0.3, 1.0, 0.7}), {}, f64({2.0, 1.0, 0.5, 1.0, 3.0}));
    };
    CHECK(autograd::gradcheck(f, {f64({0.0, -40.0, 2.5, 35.0, -1e-3}).requires_grad_()}));
  }
  SECTION("the gradient at logits of -inf and +inf is sigmoid(x) - y, finite (as PyTorch)") {
    // PyTorch 1.13: d/dx = (1 + (pw - 1) y) sigmoid(x) - pw y, so -pw y at -inf and 1 - y at +inf.
    const double inf = std::numeric_limits<double>::infinity();
    for (ScalarType dt : {kFloat32, kFloat64}) {
      Tensor x = tensor({-inf, inf, -inf, inf, -inf, inf}, dt).requires_grad_();
      Tensor y = tensor({0.0, 0.0, 1.0, 1.0, 0.3, 0.3}, dt);
      binary_cross_entropy_with_logits(x, y, {}, {}, kSum).backward();
      CHECK_ALLCLOSE(x.grad(), tensor({0.0, 1.0, -1.0, 0.0, -0.3, 0.7}, dt));
      Tensor xp = tensor({-inf, inf, -inf, inf}, dt).requires_grad_();
      binary_cross_entropy_with_logits(xp, tensor({1.0, 1.0, 0.3, 0.0}, dt), {}, tensor({2.0}, dt), kSum).backward();
      CHECK_ALLCLOSE(xp.grad(), tensor({-2.0, 0.0, -0.6, 1.0}, dt));
    }
  }
  SECTION("float32 at +-100 stays finite, and so does its gradient") {
    Tensor x = tensor({100.0, -100.0}).requires_grad_();
    Tensor loss = binary_cross_entropy_with_logits(x, tensor({0.0, 1.0}), {}, {}, kSum);
    CHECK_ALLCLOSE(loss, scalar_tensor(200.0));
    loss.backward();
    CHECK_ALLCLOSE(x.grad(), tensor({1.0, -1.0}));
  }
}

// --- bad input --------------------------------------------------------------------------------

TEST_CASE("errors: cross_entropy and nll_loss targets", "[ops][loss][errors]") {
  Tensor x = randn({3, 4});
  SECTION("a class index out of range names the value and C") {
    REQUIRE_THROWS_AS(cross_entropy(x, tensor({0, 4, 1})), IndexError);
    REQUIRE_THROWS_WITH(cross_entropy(x, tensor({0, 4, 1})),
                        Contains("cross_entropy") && Contains("target 4 is out of bounds") && Contains("4 classes"));
    REQUIRE_THROWS_WITH(cross_entropy(x, tensor({0, -1, 1})), Contains("target -1") && Contains("[0, 4)"));
    REQUIRE_THROWS_AS(nll_loss(x, tensor({7, 0, 0})), IndexError);
    REQUIRE_THROWS_WITH(nll_loss(x, tensor({7, 0, 0})), Contains("nll_loss") && Contains("target 7"));
    // ignore_index itself is fine, however far out of range; other values are still checked
    CHECK_NOTHROW(cross_entropy(x, tensor({0, 9, 1}), {}, kMean, 9));
    REQUIRE_THROWS_AS(cross_entropy(x, tensor({0, 9, -100}), {}, kMean, 9), IndexError);
    REQUIRE_THROWS_AS(cross_entropy(randn({2, 3, 2}), tensor({{0, 1}, {2, 3}})), IndexError);
  }
  SECTION("class-index targets must be int64") {
    REQUIRE_THROWS_AS(cross_entropy(x, tensor({true, false, true})), DtypeError);
    REQUIRE_THROWS_WITH(cross_entropy(x, tensor({true, false, true})), Contains("must be int64") && Contains("bool"));
    REQUIRE_THROWS_AS(cross_entropy(x, tensor({0.0, 1.0, 2.0})), DtypeError);
    REQUIRE_THROWS_WITH(cross_entropy(x, tensor({0.0, 1.0, 2.0})),
                        Contains("float32") && Contains("class probabilities only when it has the input's shape"));
    REQUIRE_THROWS_AS(nll_loss(x, tensor({0.0, 1.0, 2.0})), DtypeError);
    // the input's shape means probabilities, which must be float
    REQUIRE_THROWS_AS(cross_entropy(x, zeros({3, 4}, kInt64)), DtypeError);
    REQUIRE_THROWS_WITH(cross_entropy(x, zeros({3, 4}, kInt64)), Contains("must be float") && Contains("[3]"));
  }
  SECTION("wrong target shapes show both shapes") {
    REQUIRE_THROWS_AS(cross_entropy(x, tensor({0, 1})), ShapeError);
    REQUIRE_THROWS_WITH(cross_entropy(x, tensor({0, 1})),
                        Contains("expected target of shape [3]") && Contains("input [3, 4]") &&
                            Contains("got target [2]"));
    REQUIRE_THROWS_AS(cross_entropy(x, tensor({{0, 1, 2}})), ShapeError);
    REQUIRE_THROWS_AS(cross_entropy(randn({3}), tensor({1})), ShapeError);
    REQUIRE_THROWS_WITH(cross_entropy(randn({3}), tensor({1})), Contains("0-d target"));
    REQUIRE_THROWS_AS(nll_loss(randn({2, 4, 3, 5}), zeros({2, 3}, kInt64)), ShapeError);
  }
  SECTION("logits [B, T, V] with targets [B, T]: the hint says how to fix it") {
    Tensor lm = randn({2, 5, 11});
    Tensor t = zeros({2, 5}, kInt64);
    REQUIRE_THROWS_AS(cross_entropy(lm, t), ShapeError);
    REQUIRE_THROWS_WITH(cross_entropy(lm, t), Contains("[2, 5, 11]") && Contains("[2, 5]") &&
                                                  Contains("flatten to [B*T, V]") && Contains("move classes to dim 1"));
    // following the hint works
    CHECK_NOTHROW(cross_entropy(lm.reshape({-1, 11}), t.reshape({-1})));
    CHECK_NOTHROW(cross_entropy(lm.transpose(1, 2), t));
  }
  SECTION("probability targets: dtype, ignore_index") {
    REQUIRE_THROWS_AS(cross_entropy(x, rand({3, 4}, kFloat64)), DtypeError);
    REQUIRE_THROWS_WITH(cross_entropy(x, rand({3, 4}, kFloat64)), Contains("float64") && Contains("float32"));
    REQUIRE_THROWS_WITH(cross_entropy(x, rand({3, 4}), {}, kMean, 1), Contains("ignore_index is not supported"));
  }
  SECTION("device") {
    REQUIRE_THROWS_AS(cross_entropy(x, fake_cuda({3}, kInt64)), DeviceError);
    REQUIRE_THROWS_AS(nll_loss(x, fake_cuda({3}, kInt64)), DeviceError);
    REQUIRE_THROWS_AS(cross_entropy(x, tensor({0, 1, 2}), fake_cuda({4}, kFloat32)), DeviceError);
  }
}

TEST_CASE("errors: cross_entropy and nll_loss inputs and options", "[ops][loss][errors]") {
  Tensor x = randn({3, 4}), t = tensor({0, 1, 2});
  REQUIRE_THROWS_AS(cross_entropy(scalar_tensor(1.0), scalar_tensor(0, kInt64)), ShapeError);
  REQUIRE_THROWS_WITH(cross_entropy(scalar_tensor(1.0), scalar_tensor(0, kInt64)), Contains("0-d"));
  REQUIRE_THROWS_AS(nll_loss(scalar_tensor(1.0), scalar_tensor(0, kInt64)), ShapeError);
  REQUIRE_THROWS_AS(cross_entropy(zeros({3, 4}, kInt64), t), DtypeError);
  REQUIRE_THROWS_WITH(cross_entropy(zeros({3, 4}, kInt64), t), Contains("floating-point input") && Contains("int64"));
  REQUIRE_THROWS_AS(cross_entropy(x, t, {}, kMean, -100, 1.5), Error);
  REQUIRE_THROWS_WITH(cross_entropy(x, t, {}, kMean, -100, -0.1), Contains("label_smoothing must be in [0, 1]") &&
                                                                      Contains("-0.1"));
  REQUIRE_THROWS_AS(cross_entropy(x, t, ones({3})), ShapeError);
  REQUIRE_THROWS_WITH(cross_entropy(x, t, ones({3})), Contains("[C] = [4]") && Contains("got [3]"));
  REQUIRE_THROWS_AS(nll_loss(x, t, ones({2, 2})), ShapeError);
  REQUIRE_THROWS_AS(cross_entropy(x, t, ones({4}, kFloat64)), DtypeError);
  Tensor w = ones({4}).requires_grad_();
  REQUIRE_THROWS_WITH(cross_entropy(x, t, w), Contains("weight must not require grad"));
  {
    NoGradGuard no_grad;  // without a graph a weight that requires grad is harmless
    CHECK_NOTHROW(cross_entropy(x, t, w));
  }
  REQUIRE_THROWS_AS(cross_entropy(x, t, {}, static_cast<Reduction>(7)), Error);
  REQUIRE_THROWS_WITH(nll_loss(x, t, {}, static_cast<Reduction>(7)), Contains("reduction must be"));
  REQUIRE_THROWS_AS(cross_entropy(x, Tensor()), Error);
}

TEST_CASE("errors: binary cross-entropy", "[ops][loss][errors]") {
  Tensor p = rand({2, 3}), y = rand({2, 3});
  REQUIRE_THROWS_AS(binary_cross_entropy(tensor({0.5, 1.5}), tensor({1.0, 0.0})), Error);
  REQUIRE_THROWS_WITH(binary_cross_entropy(tensor({0.5, 1.5}), tensor({1.0, 0.0})),
                      Contains("binary_cross_entropy") && Contains("[0, 1]") && Contains("got 1.5") &&
                          Contains("binary_cross_entropy_with_logits"));
  REQUIRE_THROWS_WITH(binary_cross_entropy(tensor({-0.25}), tensor({1.0})), Contains("got -0.25"));
  REQUIRE_THROWS_WITH(binary_cross_entropy(f64({kNaN}), f64({1.0})), Contains("got nan"));
  REQUIRE_THROWS_AS(binary_cross_entropy(p, rand({3})), ShapeError);
  REQUIRE_THROWS_WITH(binary_cross_entropy(p, rand({3})), Contains("[2, 3]") && Contains("[3]"));
  REQUIRE_THROWS_AS(binary_cross_entropy(p, y.to(kFloat64)), DtypeError);
  REQUIRE_THROWS_AS(binary_cross_entropy(p, y, ones({2})), ShapeError);
  REQUIRE_THROWS_WITH(binary_cross_entropy(p, y, ones({2})), Contains("weight must broadcast"));
  REQUIRE_THROWS_AS(binary_cross_entropy_with_logits(p, rand({3, 2})), ShapeError);
  REQUIRE_THROWS_AS(binary_cross_entropy_with_logits(p, y, {}, ones({2})), ShapeError);
  REQUIRE_THROWS_WITH(binary_cross_entropy_with_logits(p, y, {}, ones({2})), Contains("pos_weight must broadcast"));
  REQUIRE_THROWS_AS(binary_cross_entropy_with_logits(p, y, {}, ones({3}, kFloat64)), DtypeError);
  REQUIRE_THROWS_WITH(binary_cross_entropy_with_logits(p, y, {}, ones({3}).requires_grad_()),
                      Contains("pos_weight must not require grad"));
  REQUIRE_THROWS_AS(binary_cross_entropy_with_logits(zeros({2}, kInt64), zeros({2}, kInt64)), DtypeError);
  REQUIRE_THROWS_AS(binary_cross_entropy(p, fake_cuda({2, 3}, kFloat32)), DeviceError);
}

TEST_CASE("errors: mse_loss and l1_loss", "[ops][loss][errors]") {
  REQUIRE_THROWS_AS(mse_loss(rand({4, 1}), rand({4})), ShapeError);
  REQUIRE_THROWS_WITH(mse_loss(rand({4, 1}), rand({4})),
                      Contains("mse_loss") && Contains("must have the input's shape") && Contains("[4, 1]") &&
                          Contains("[4]"));
  REQUIRE_THROWS_AS(l1_loss(rand({2}), rand({3})), ShapeError);
  REQUIRE_THROWS_AS(mse_loss(tensor({1, 2}), tensor({1, 3})), DtypeError);
  REQUIRE_THROWS_AS(mse_loss(rand({2}), rand({2}, kFloat64)), DtypeError);
  REQUIRE_THROWS_WITH(l1_loss(rand({2}), tensor({1, 2})), Contains("target must have the input's dtype float32"));
  REQUIRE_THROWS_AS(mse_loss(rand({2}), fake_cuda({2}, kFloat32)), DeviceError);
}

// --- CUDA --------------------------------------------------------------------------------------

TEST_CASE("losses on CUDA match the CPU, values and gradients", "[ops][loss][cuda]") {
  if (!cuda::is_available()) {  // a skip (exit 77) when CTest runs this case alone, a warning otherwise
    if (Catch::getCurrentContext().getConfig()->hasTestFilters()) std::exit(77);
    WARN("skipped: no CUDA device");
    return;
  }
  manual_seed(920);
  const Device gpu(kCUDA, 0);
  // Runs fn on CPU leaves and on their CUDA copies; compares the losses and every leaf's gradient.
  auto parity = [&](const char* what, const std::vector<Tensor>& inputs,
                    const std::function<Tensor(const std::vector<Tensor>&)>& fn) {
    INFO(what);
    std::vector<Tensor> cpu, dev;
    for (const Tensor& t : inputs) {
      const bool rg = t.is_floating_point() && t.requires_grad();
      cpu.push_back(rg ? t.detach().requires_grad_() : t);
      dev.push_back(rg ? t.detach().to(gpu).requires_grad_() : t.to(gpu));
    }
    Tensor a = fn(cpu), b = fn(dev);
    CHECK(b.device() == gpu);
    CHECK_ALLCLOSE(b.cpu(), a, 1e-10, 1e-12);
    a.sum().backward();
    b.sum().backward();
    for (size_t i = 0; i < cpu.size(); ++i)
      if (cpu[i].requires_grad()) CHECK_ALLCLOSE(dev[i].grad().cpu(), cpu[i].grad(), 1e-10, 1e-12);
  };
  Tensor x = randn({6, 5}, kFloat64).requires_grad_();
  Tensor t = tensor({4, 0, -100, 2, 2, 1});
  Tensor w = rand({5}, kFloat64) + 0.5;
  for (Reduction r : {kNone, kMean, kSum}) {
    parity("cross_entropy, all options", {x, t, w},
           [r](const std::vector<Tensor>& v) { return cross_entropy(v[0], v[1], v[2], r, -100, 0.2); });
    parity("nll_loss", {x, t, w}, [r](const std::vector<Tensor>& v) { return nll_loss(v[0], v[1], v[2], r); });
  }
  parity("cross_entropy, [N, C, d], probabilities", {randn({2, 5, 3}, kFloat64).requires_grad_(),
                                                      rand({2, 5, 3}, kFloat64).requires_grad_()},
         [](const std::vector<Tensor>& v) { return cross_entropy(v[0], v[1], {}, kMean, -100, 0.1); });
  parity("cross_entropy, [N, C, d], indices", {randn({2, 5, 3}, kFloat64).requires_grad_(), randint(5, {2, 3})},
         [](const std::vector<Tensor>& v) { return cross_entropy(v[0], v[1]); });
  Tensor p = (rand({4, 3}, kFloat64) * 0.9 + 0.05).requires_grad_(), y = rand({4, 3}, kFloat64).requires_grad_();
  parity("binary_cross_entropy", {p, y}, [](const std::vector<Tensor>& v) { return binary_cross_entropy(v[0], v[1]); });
  parity("binary_cross_entropy_with_logits", {randn({4, 3}, kFloat64).requires_grad_(), y, rand({3}, kFloat64) + 1.0},
         [](const std::vector<Tensor>& v) { return binary_cross_entropy_with_logits(v[0], v[1], {}, v[2]); });
  parity("mse_loss", {x, randn({6, 5}, kFloat64).requires_grad_()},
         [](const std::vector<Tensor>& v) { return mse_loss(v[0], v[1]); });
  parity("l1_loss", {x, randn({6, 5}, kFloat64)}, [](const std::vector<Tensor>& v) { return l1_loss(v[0], v[1]); });
  REQUIRE_THROWS_AS(cross_entropy(x.detach().to(gpu), tensor({0, 9, 0, 0, 0, 0}).to(gpu)), IndexError);
}
