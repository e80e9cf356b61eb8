// Module 06 suite: the losses. MSE and L1 by hand and their gradients 2(x - y)/N and sign(x - y)/N;
// cross-entropy as log-sum-exp minus the target's logit, log C for a uniform guess (and for an
// untrained classifier), stability at logits of 1000 where softmax-then-log fails, the gradient
// softmax - one_hot against autograd and gradcheck; reductions, ignore_index and the mean's
// denominator, class weights, label smoothing and soft targets; the class dim in dim 1 and the
// [B, T, V] pitfall; binary cross-entropy on probabilities and on logits (the -100 clamp, the
// stable form, the vanishing gradient of a saturated sigmoid); the loss modules; and the errors.
// It is the judge in exercise mode (`tools/tt exercise 06`): the cases tagged [exercise] lean on
// the bodies a learner writes (the fused cross-entropy forward and backward, BCE on probabilities
// forward and backward, the squared error, the stable BCE with logits).
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

using Catch::Matchers::Contains;
using tt::Shape;
using tt::Tensor;
using tt::autograd::TensorList;

namespace nn = tt::nn;
namespace F = tt::F;

namespace {

tt::Tensor f64(std::initializer_list<double> v) { return tt::tensor(v, tt::kFloat64); }
tt::Tensor f64(std::initializer_list<std::initializer_list<double>> v) { return tt::tensor(v, tt::kFloat64); }

// A float64 leaf that requires grad, with values from the seeded generator.
Tensor leaf(const Shape& shape, double scale = 1.0) {
  return (tt::randn(shape, tt::kFloat64) * scale).requires_grad_();
}

// Class indices as one-hot rows: t [N] int64 -> [N, C] in `dtype` (row i of the identity, picked).
Tensor one_hot(const Tensor& t, int64_t C, tt::ScalarType dtype = tt::kFloat64) {
  return tt::eye(C, dtype).index_select(0, t);
}

// gradcheck that reports the library's message when it fails.
void check_grad(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  tt::autograd::GradcheckResult r = tt::autograd::gradcheck(fn, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

double log_sum_exp(const std::vector<double>& z) {
  double m = z[0];
  for (double v : z) m = std::max(m, v);
  double s = 0;
  for (double v : z) s += std::exp(v - m);
  return m + std::log(s);
}

// The README's regression example: predictions, and targets with one outlier (15).
Tensor preds() { return f64({2.0, 3.0, 4.0, 5.0}); }
Tensor truths() { return f64({2.5, 3.0, 3.0, 15.0}); }  // x - y = [-0.5, 0, 1, -10]

}  // namespace

// --- MSE and L1 ------------------------------------------------------------------------------------

TEST_CASE("mse_loss and l1_loss by hand, in every reduction", "[module06][exercise]") {
  Tensor x = preds(), y = truths();
  // squared errors [0.25, 0, 1, 100]; absolute errors [0.5, 0, 1, 10]
  CHECK_ALLCLOSE(tt::mse_loss(x, y, tt::kNone), f64({0.25, 0.0, 1.0, 100.0}), 0, 0);
  CHECK(tt::mse_loss(x, y).item<double>() == Approx(101.25 / 4));
  CHECK(tt::mse_loss(x, y, tt::kSum).item<double>() == Approx(101.25));
  CHECK_ALLCLOSE(tt::l1_loss(x, y, tt::kNone), f64({0.5, 0.0, 1.0, 10.0}), 0, 0);
  CHECK(tt::l1_loss(x, y).item<double>() == Approx(11.5 / 4));
  CHECK(tt::l1_loss(x, y, tt::kSum).item<double>() == Approx(11.5));
  // mean and sum return 0-d tensors; none keeps the input's shape, here a 2-D one
  CHECK(tt::mse_loss(x, y).dim() == 0);
  CHECK(tt::mse_loss(x.view({2, 2}), y.view({2, 2}), tt::kNone).shape() == Shape{2, 2});
  // float32 in, float32 out
  CHECK(tt::mse_loss(x.to(tt::kFloat32), y.to(tt::kFloat32)).dtype() == tt::kFloat32);
  // the outlier is 100 of the 101.25 that MSE adds up, but 10 of L1's 11.5
  CHECK(tt::mse_loss(x, y, tt::kNone).select(0, 3).item<double>() / 101.25 > 0.98);
}

TEST_CASE("the gradients of MSE and L1 are 2(x - y)/N and sign(x - y)/N", "[module06][exercise]") {
  Tensor x = preds().requires_grad_(), y = truths().requires_grad_();
  tt::mse_loss(x, y).backward();
  CHECK_ALLCLOSE(x.grad(), f64({-0.25, 0.0, 0.5, -5.0}), 1e-12, 0);  // 2(x - y)/4
  CHECK_ALLCLOSE(y.grad(), f64({0.25, 0.0, -0.5, 5.0}), 1e-12, 0);   // the target gets the opposite
  x.set_grad(Tensor());
  tt::mse_loss(x, y.detach(), tt::kSum).backward();
  CHECK_ALLCLOSE(x.grad(), f64({-1.0, 0.0, 2.0, -20.0}), 1e-12, 0);  // sum: no 1/N
  x.set_grad(Tensor());
  tt::l1_loss(x, y.detach()).backward();
  // sign(x - y)/4; at x == y the gradient is 0 (sign(0)), as PyTorch's. The outlier pulls no harder
  // than the others.
  CHECK_ALLCLOSE(x.grad(), f64({-0.25, 0.0, 0.25, -0.25}), 1e-12, 0);

  tt::manual_seed(600);
  check_grad([](const TensorList& in) { return tt::mse_loss(in[0], in[1]); }, {leaf({3, 4}), leaf({3, 4})});
  check_grad([](const TensorList& in) { return tt::mse_loss(in[0], in[1], tt::kNone); }, {leaf({5}), leaf({5})});
  // L1 has a kink at x == y: keep every |x - y| at 1 or more
  Tensor a = leaf({2, 3});
  Tensor b = (a.detach() + (tt::randn({2, 3}) > 0).to(tt::kFloat64) * 3.0 - 1.5).requires_grad_();
  check_grad([](const TensorList& in) { return tt::l1_loss(in[0], in[1], tt::kSum); }, {a, b});
}

TEST_CASE("MSE is minimized by the mean, L1 by the median", "[module06]") {
  // A constant prediction c for targets [1, 2, 3, 4, 100]: the mean is 22, the median 3.
  Tensor y = f64({1.0, 2.0, 3.0, 4.0, 100.0});
  auto grad_at = [&](double c, bool l1) {
    Tensor cc = f64({c}).requires_grad_();
    Tensor pred = cc.expand({5});
    (l1 ? tt::l1_loss(pred, y) : tt::mse_loss(pred, y)).backward();
    return cc.grad().item<double>();
  };
  CHECK(grad_at(22.0, false) == Approx(0.0).margin(1e-12));
  CHECK(grad_at(3.0, true) == Approx(0.0).margin(1e-12));  // signs -1, -1, 0, +1, +1
  // MSE at the median still pulls hard toward the outlier; L1 at the mean pushes back
  CHECK(grad_at(3.0, false) == Approx(2.0 * (3.0 - 22.0)));
  CHECK(grad_at(22.0, true) == Approx(3.0 / 5.0));
}

// --- cross-entropy ---------------------------------------------------------------------------------

TEST_CASE("cross-entropy of one row is logsumexp minus the target's logit", "[module06][exercise]") {
  // z = [2, 1, 0.1], target 0: p = softmax(z) = [0.659, 0.242, 0.099], loss = -log 0.659
  const double expected = log_sum_exp({2.0, 1.0, 0.1}) - 2.0;
  CHECK(expected == Approx(0.41703001627783));
  Tensor z = f64({{2.0, 1.0, 0.1}});
  CHECK(tt::cross_entropy(z, tt::tensor({0})).item<double>() == Approx(expected).epsilon(1e-12));
  // the same row as an unbatched [C] input with a 0-d target
  Tensor l = tt::cross_entropy(f64({2.0, 1.0, 0.1}), tt::scalar_tensor(0, tt::kInt64));
  CHECK(l.dim() == 0);
  CHECK(l.item<double>() == Approx(expected).epsilon(1e-12));
  // -log_softmax picked at the target, and nll_loss of log_softmax, are the same number
  CHECK(-z.log_softmax(1).select(1, 0).item<double>() == Approx(expected).epsilon(1e-12));
  CHECK(tt::nll_loss(z.log_softmax(1), tt::tensor({0})).item<double>() == Approx(expected).epsilon(1e-12));
  // the other targets: logsumexp minus their logits
  CHECK_ALLCLOSE(tt::cross_entropy(z.expand({3, 3}), tt::tensor({0, 1, 2}), {}, tt::kNone),
                 f64({expected, expected + 1.0, expected + 1.9}), 1e-12, 0);
}

TEST_CASE("a uniform guess costs log C", "[module06][exercise]") {
  for (int64_t C : {2, 10, 1000}) {
    INFO("C = " << C);
    Tensor t = tt::tensor({0, 1, int(C - 1)});
    CHECK(tt::cross_entropy(tt::zeros({3, C}, tt::kFloat64), t).item<double>() == Approx(std::log(double(C))));
    // any constant logit is as uniform as zeros
    CHECK(tt::cross_entropy(tt::full({3, C}, 7.5, tt::kFloat64), t).item<double>() == Approx(std::log(double(C))));
  }
}

TEST_CASE("an untrained classifier's loss is close to log C", "[module06]") {
  // Module 05's default init keeps the logits small, so the first loss is near log 10 = 2.303.
  tt::manual_seed(601);
  nn::Linear fc(32, 10);
  Tensor x = tt::randn({256, 32});
  Tensor t = tt::randint(10, {256});
  const double first = tt::cross_entropy(fc(x), t).item<double>();
  CHECK(std::fabs(first - std::log(10.0)) < 0.3);
  // A badly scaled init gives large random logits, and a loss far above log C: a bug to look for.
  {
    tt::NoGradGuard no_grad;
    fc.weight.mul_(10.0);
  }
  CHECK(tt::cross_entropy(fc(x), t).item<double>() > std::log(10.0) + 1.0);
}

TEST_CASE("log-sum-exp: logits of 1000 in float32", "[module06][exercise]") {
  Tensor x = tt::tensor({{1000.0, 0.0}});  // float32
  // softmax then log, written naively: exp(1000) = inf, inf / inf = nan, 1 / inf = 0, log 0 = -inf
  Tensor naive_logp = (x.exp() / x.exp().sum({1}, true)).log();
  CHECK(std::isnan(naive_logp.select(1, 0).item<float>()));
  CHECK(std::isinf(naive_logp.select(1, 1).item<float>()));
  // the fused op subtracts the max first: right to float32 precision
  CHECK(tt::cross_entropy(x, tt::tensor({0})).item<float>() == 0.0f);
  CHECK(tt::cross_entropy(x, tt::tensor({1})).item<float>() == Approx(1000.0f));
  // underflow: exp(-200) is 0 in float32, so log(softmax) is -inf where the loss is 200
  Tensor far = tt::tensor({{0.0, -200.0}});
  CHECK(std::isinf(far.softmax(1).log().select(1, 1).item<float>()));
  CHECK(tt::cross_entropy(far, tt::tensor({1})).item<float>() == Approx(200.0f));
  // the gradient is finite too: softmax - one_hot = [1, 0] - [0, 1]
  Tensor xg = tt::tensor({{1000.0, 0.0}}).requires_grad_();
  tt::cross_entropy(xg, tt::tensor({1})).backward();
  CHECK_ALLCLOSE(xg.grad(), tt::tensor({{1.0, -1.0}}), 0, 0);
  // shift invariance: adding a constant to every logit changes nothing (float64)
  tt::manual_seed(602);
  Tensor z = tt::randn({4, 6}, tt::kFloat64);
  Tensor t = tt::tensor({5, 0, 2, 2});
  CHECK_ALLCLOSE(tt::cross_entropy(z + 1e6, t, {}, tt::kNone), tt::cross_entropy(z, t, {}, tt::kNone), 0, 1e-9);
}

TEST_CASE("the gradient of cross-entropy is softmax minus one-hot, over N for the mean",
          "[module06][exercise]") {
  tt::manual_seed(603);
  const int64_t N = 5, C = 4;
  Tensor x = leaf({N, C}, 2.0);
  Tensor t = tt::tensor({2, 0, 3, 1, 3});
  Tensor expected = x.detach().softmax(1) - one_hot(t, C);
  CHECK_ALLCLOSE(tt::autograd::grad({tt::cross_entropy(x, t)}, {x})[0], expected / double(N), 1e-12, 1e-15);
  CHECK_ALLCLOSE(tt::autograd::grad({tt::cross_entropy(x, t, {}, tt::kSum)}, {x})[0], expected, 1e-12, 1e-15);
  // kNone with an upstream gradient g per row scales each row's gradient by g
  Tensor g = f64({1.0, 0.0, -2.0, 0.5, 3.0});
  CHECK_ALLCLOSE(tt::autograd::grad({tt::cross_entropy(x, t, {}, tt::kNone)}, {x}, {g})[0], expected * g.unsqueeze(1),
                 1e-12, 1e-15);
  // each row's gradient sums to 0: raising every logit together changes nothing
  CHECK_ALLCLOSE(expected.sum({1}), tt::zeros({N}, tt::kFloat64), 0, 1e-15);
  // and against finite differences
  check_grad([t](const TensorList& in) { return tt::cross_entropy(in[0], t); }, {leaf({N, C})});
  check_grad([t](const TensorList& in) { return tt::cross_entropy(in[0], t, {}, tt::kNone); }, {leaf({N, C}, 3.0)});
  check_grad([](const TensorList& in) { return tt::cross_entropy(in[0], tt::scalar_tensor(1, tt::kInt64)); },
             {leaf({3})});
  // through a Linear layer's worth of ops: logits = X W
  check_grad([t](const TensorList& in) { return tt::cross_entropy(in[0].matmul(in[1]), t); },
             {leaf({N, 3}), leaf({3, C})});
}

TEST_CASE("a confidently wrong prediction gets the largest gradient, not a vanishing one", "[module06]") {
  // Module 03: softmax's own Jacobian vanishes as it saturates. Cross-entropy's gradient p - onehot
  // does not: it is largest exactly when the model is sure and wrong.
  Tensor x = tt::tensor({{10.0, 0.0, 0.0}}, tt::kFloat64).requires_grad_();
  tt::cross_entropy(x, tt::tensor({1})).backward();
  std::vector<double> g = x.grad().to_vector<double>();
  CHECK(g[0] > 0.999);
  CHECK(g[1] < -0.999);
  CHECK(std::fabs(g[2]) < 1e-4);
  // while a confidently right one gets almost none
  Tensor r = tt::tensor({{10.0, 0.0, 0.0}}, tt::kFloat64).requires_grad_();
  tt::cross_entropy(r, tt::tensor({0})).backward();
  CHECK(r.grad().abs().max().item<double>() < 1e-4);
}

// --- reductions, ignore_index, class weights -------------------------------------------------------

TEST_CASE("reductions: none keeps one loss per row, sum adds them, mean divides by N", "[module06]") {
  tt::manual_seed(604);
  Tensor x = tt::randn({6, 5}, tt::kFloat64);
  Tensor t = tt::tensor({0, 4, 1, 1, 3, 2});
  Tensor rows = tt::cross_entropy(x, t, {}, tt::kNone);
  CHECK(rows.shape() == Shape{6});
  CHECK(tt::cross_entropy(x, t, {}, tt::kSum).item<double>() == Approx(rows.sum().item<double>()));
  CHECK(tt::cross_entropy(x, t).item<double>() == Approx(rows.sum().item<double>() / 6));
  // every row's loss is positive: -log of a probability below 1
  CHECK(rows.min().item<double>() > 0.0);
}

TEST_CASE("ignore_index: padding costs nothing and leaves the mean's denominator", "[module06][exercise]") {
  // Two sequences of 4 tokens over a vocabulary of 5, flattened to [B*T, V] = [8, 5]. The second
  // sequence has one real token; -100 marks padding.
  tt::manual_seed(605);
  Tensor x = leaf({8, 5});
  Tensor t = tt::tensor({3, 1, 4, 0, 2, -100, -100, -100});
  Tensor rows = tt::cross_entropy(x, t, {}, tt::kNone);
  CHECK_ALLCLOSE(rows.slice(0, 5, 8), tt::zeros({3}, tt::kFloat64), 0, 0);
  Tensor loss = tt::cross_entropy(x, t);
  CHECK(loss.item<double>() == Approx(rows.sum().item<double>() / 5));  // 5 real tokens, not 8
  loss.backward();
  // padded rows get exactly zero gradient; real rows get (p - onehot) / 5
  CHECK_ALLCLOSE(x.grad().slice(0, 5, 8), tt::zeros({3, 5}, tt::kFloat64), 0, 0);
  Tensor real_t = t.slice(0, 0, 5);
  CHECK_ALLCLOSE(x.grad().slice(0, 0, 5), (x.detach().slice(0, 0, 5).softmax(1) - one_hot(real_t, 5)) / 5.0, 1e-12,
                 1e-15);
  // the loss of the real tokens alone, as if the padding had never been there
  CHECK(loss.item<double>() == Approx(tt::cross_entropy(x.detach().slice(0, 0, 5), real_t).item<double>()));
  // padding with a real class (0) instead is a silent bug: the pads are trained as class 0
  Tensor pad_as_zero = tt::tensor({3, 1, 4, 0, 2, 0, 0, 0});
  CHECK(std::fabs(tt::cross_entropy(x.detach(), pad_as_zero).item<double>() - loss.item<double>()) > 1e-3);
  // a pad id of the vocabulary's own, passed as ignore_index
  Tensor t0 = tt::tensor({3, 1, 4, 2, 2, 0, 0, 0});
  CHECK(tt::cross_entropy(x.detach(), t0, {}, tt::kMean, /*ignore_index=*/0).item<double>() ==
        Approx(tt::cross_entropy(x.detach().slice(0, 0, 5), t0.slice(0, 0, 5)).item<double>()));
  // every row ignored: the mean is 0 / 0 = NaN (as PyTorch), the sum 0, the gradient zero
  Tensor none = tt::full({8}, -100, tt::kInt64);
  CHECK(std::isnan(tt::cross_entropy(x, none).item<double>()));
  CHECK(tt::cross_entropy(x, none, {}, tt::kSum).item<double>() == 0.0);
  CHECK_ALLCLOSE(tt::autograd::grad({tt::cross_entropy(x, none)}, {x})[0], tt::zeros({8, 5}, tt::kFloat64), 0, 0);
  check_grad([t](const TensorList& in) { return tt::cross_entropy(in[0], t); }, {leaf({8, 5})});
}

TEST_CASE("class weights: each row counts w_t, in the loss and in the mean's denominator", "[module06]") {
  tt::manual_seed(606);
  Tensor x = tt::randn({4, 3}, tt::kFloat64);
  Tensor t = tt::tensor({0, 1, 1, 2});
  Tensor w = f64({1.0, 2.0, 0.5});
  Tensor plain = tt::cross_entropy(x, t, {}, tt::kNone);
  Tensor wt = f64({1.0, 2.0, 2.0, 0.5});  // w[t]
  CHECK_ALLCLOSE(tt::cross_entropy(x, t, w, tt::kNone), plain * wt, 1e-12, 0);
  CHECK(tt::cross_entropy(x, t, w).item<double>() == Approx((plain * wt).sum().item<double>() / 5.5));
  CHECK(tt::cross_entropy(x, t, w, tt::kSum).item<double>() == Approx((plain * wt).sum().item<double>()));
  check_grad([t, w](const TensorList& in) { return tt::cross_entropy(in[0], t, w); }, {leaf({4, 3})});
}

// --- label smoothing and soft targets --------------------------------------------------------------

TEST_CASE("label smoothing mixes the target with the uniform distribution", "[module06][exercise]") {
  tt::manual_seed(607);
  const int64_t N = 4, C = 5;
  const double eps = 0.1;
  Tensor x = leaf({N, C});
  Tensor t = tt::tensor({4, 0, 2, 2});
  Tensor logp = x.detach().log_softmax(1);
  // (1 - eps) * NLL + eps / C * sum over classes of -log p
  Tensor by_hand = -(logp * one_hot(t, C)).sum({1}) * (1 - eps) - logp.sum({1}) * (eps / C);
  CHECK_ALLCLOSE(tt::cross_entropy(x, t, {}, tt::kNone, -100, eps), by_hand, 1e-12, 1e-15);
  // the same as cross-entropy against the smoothed distribution q = (1 - eps) onehot + eps / C
  Tensor q = one_hot(t, C) * (1 - eps) + eps / C;
  CHECK_ALLCLOSE(tt::cross_entropy(x, t, {}, tt::kNone, -100, eps), tt::cross_entropy(x.detach(), q, {}, tt::kNone),
                 1e-12, 1e-15);
  // its gradient is p - q (over N for the mean)
  Tensor g = tt::autograd::grad({tt::cross_entropy(x, t, {}, tt::kMean, -100, eps)}, {x})[0];
  CHECK_ALLCLOSE(g, (x.detach().softmax(1) - q) / double(N), 1e-12, 1e-15);
  // eps = 0 is plain cross-entropy
  CHECK_ALLCLOSE(tt::cross_entropy(x.detach(), t, {}, tt::kNone, -100, 0.0),
                 tt::cross_entropy(x.detach(), t, {}, tt::kNone), 0, 0);
  check_grad([t](const TensorList& in) { return tt::cross_entropy(in[0], t, {}, tt::kMean, -100, 0.2); },
             {leaf({N, C})});
  check_grad([t](const TensorList& in) { return tt::cross_entropy(in[0], t, {}, tt::kSum, 0, 0.3); }, {leaf({N, C})});
}

TEST_CASE("with label smoothing the best logits are finite and the best loss is the entropy of q",
          "[module06][exercise]") {
  // C = 10, eps = 0.1: q = 0.91 on the target and 0.01 elsewhere. Logits log q give p = q exactly:
  // the gradient is zero, the loss is H(q) = 0.5003, and the target's logit leads by log 91 = 4.51.
  const int64_t C = 10;
  const double eps = 0.1, q_t = 1 - eps + eps / C, q_o = eps / C;
  std::vector<double> logits(C, std::log(q_o));
  logits[3] = std::log(q_t);
  Tensor x = tt::tensor(logits, {1, C}).requires_grad_();
  Tensor loss = tt::cross_entropy(x, tt::tensor({3}), {}, tt::kMean, -100, eps);
  const double entropy = -(q_t * std::log(q_t) + double(C - 1) * q_o * std::log(q_o));
  CHECK(entropy == Approx(0.50028803505776));
  CHECK(loss.item<double>() == Approx(entropy).epsilon(1e-12));
  loss.backward();
  CHECK(x.grad().abs().max().item<double>() < 1e-12);
  // without smoothing, the same logits are not a minimum: the gradient still pushes them apart
  Tensor y = tt::tensor(logits, {1, C}).requires_grad_();
  tt::cross_entropy(y, tt::tensor({3})).backward();
  CHECK(y.grad().select(1, 3).item<double>() == Approx(q_t - 1));
}

TEST_CASE("soft targets: cross-entropy against a distribution, gradient p - q", "[module06][exercise]") {
  tt::manual_seed(608);
  Tensor x = leaf({3, 4});
  Tensor q = f64({{0.1, 0.2, 0.3, 0.4}, {0.0, 0.0, 1.0, 0.0}, {0.25, 0.25, 0.25, 0.25}});
  Tensor expected = -(x.detach().log_softmax(1) * q).sum({1});
  CHECK_ALLCLOSE(tt::cross_entropy(x, q, {}, tt::kNone), expected, 1e-12, 1e-15);
  // a one-hot distribution is the same as its class index
  CHECK(tt::cross_entropy(x, q, {}, tt::kNone).select(0, 1).item<double>() ==
        Approx(tt::cross_entropy(x.detach().slice(0, 1, 2), tt::tensor({2})).item<double>()));
  Tensor g = tt::autograd::grad({tt::cross_entropy(x, q, {}, tt::kSum)}, {x})[0];
  CHECK_ALLCLOSE(g, x.detach().softmax(1) - q, 1e-12, 1e-15);
  check_grad([](const TensorList& in) { return tt::cross_entropy(in[0], in[1].softmax(1)); },
             {leaf({3, 4}), leaf({3, 4})});
}

// --- shapes ---------------------------------------------------------------------------------------

TEST_CASE("the classes are in dim 1: N, C, d1, d2 logits with N, d1, d2 targets", "[module06]") {
  // A 2 x 3 "image" per example, 4 classes per pixel: logits [N=2, C=4, 2, 3], targets [2, 2, 3].
  tt::manual_seed(609);
  Tensor x = leaf({2, 4, 2, 3});
  Tensor t = tt::randint(4, {2, 2, 3});
  Tensor rows = tt::cross_entropy(x, t, {}, tt::kNone);
  CHECK(rows.shape() == Shape{2, 2, 3});
  // the same as moving the classes last and flattening every other dim into rows
  Tensor flat = x.detach().permute({0, 2, 3, 1}).reshape({12, 4});
  CHECK_ALLCLOSE(rows.reshape({12}), tt::cross_entropy(flat, t.reshape({12}), {}, tt::kNone), 1e-12, 1e-15);
  CHECK(tt::cross_entropy(x, t).item<double>() == Approx(tt::cross_entropy(flat, t.reshape({12})).item<double>()));
  check_grad([t](const TensorList& in) { return tt::cross_entropy(in[0], t, {}, tt::kMean, -100, 0.1); },
             {leaf({2, 4, 2, 3})});
}

TEST_CASE("sequence logits B, T, V: the error says how to fix them, and both fixes agree", "[module06]") {
  tt::manual_seed(610);
  Tensor logits = tt::randn({2, 3, 7});      // [B, T, V]
  Tensor targets = tt::randint(7, {2, 3});   // [B, T]
  REQUIRE_THROWS_AS(tt::cross_entropy(logits, targets), tt::ShapeError);
  REQUIRE_THROWS_WITH(tt::cross_entropy(logits, targets),
                      Contains("expected target of shape [2, 7]") && Contains("got target [2, 3]") &&
                          Contains("flatten to [B*T, V]") && Contains("transpose(1, 2)"));
  const double flattened = tt::cross_entropy(logits.reshape({-1, 7}), targets.reshape({-1})).item<double>();
  const double moved = tt::cross_entropy(logits.transpose(1, 2), targets).item<double>();
  CHECK(moved == Approx(flattened).epsilon(1e-6));
  // When T == V no shape check can tell: [B, T, T] is read as classes in dim 1, silently wrong.
  Tensor square = tt::randn({2, 5, 5});
  Tensor t5 = tt::randint(5, {2, 5});
  REQUIRE_NOTHROW(tt::cross_entropy(square, t5));
  CHECK(std::fabs(tt::cross_entropy(square, t5).item<double>() -
                  tt::cross_entropy(square.reshape({-1, 5}), t5.reshape({-1})).item<double>()) > 1e-3);
}

// --- binary cross-entropy --------------------------------------------------------------------------

TEST_CASE("binary_cross_entropy by hand, its gradient and the -100 clamp", "[module06][exercise]") {
  Tensor p = f64({0.8, 0.3, 0.5}).requires_grad_(), y = f64({1.0, 0.0, 1.0});
  // -log 0.8, -log(1 - 0.3), -log 0.5
  CHECK_ALLCLOSE(tt::binary_cross_entropy(p, y, {}, tt::kNone), f64({-std::log(0.8), -std::log(0.7), std::log(2.0)}),
                 1e-12, 0);
  Tensor loss = tt::binary_cross_entropy(p, y);
  CHECK(loss.item<double>() == Approx(0.42432189193763));
  loss.backward();
  // dL/dp = (p - y) / (p (1 - p)) / N
  CHECK_ALLCLOSE(p.grad(), f64({-0.2 / 0.16 / 3, 0.3 / 0.21 / 3, -0.5 / 0.25 / 3}), 1e-12, 0);
  // soft targets: y = 0.3 at p = 0.3 is the minimum, with loss the entropy of Bernoulli(0.3)
  Tensor q = f64({0.3}).requires_grad_();
  Tensor soft = tt::binary_cross_entropy(q, f64({0.3}));
  CHECK(soft.item<double>() == Approx(-(0.3 * std::log(0.3) + 0.7 * std::log(0.7))));
  soft.backward();
  CHECK(q.grad().item<double>() == Approx(0.0).margin(1e-12));
  // log 0 is clamped to -100, as PyTorch: a certain, wrong answer costs 100, not infinity
  CHECK_ALLCLOSE(tt::binary_cross_entropy(f64({0.0, 1.0, 1.0}), f64({1.0, 0.0, 1.0}), {}, tt::kNone),
                 f64({100.0, 100.0, 0.0}), 0, 0);
  tt::manual_seed(611);
  check_grad([](const TensorList& in) { return tt::binary_cross_entropy(in[0].sigmoid(), in[1].sigmoid()); },
             {leaf({3, 2}), leaf({3, 2})});
}

TEST_CASE("BCE with logits equals BCE of sigmoid where both can be computed", "[module06][exercise]") {
  tt::manual_seed(612);
  Tensor x = tt::randn({4, 3}, tt::kFloat64) * 3.0;
  Tensor y = tt::rand({4, 3}, tt::kFloat64);
  CHECK_ALLCLOSE(tt::binary_cross_entropy_with_logits(x, y, {}, {}, tt::kNone),
                 tt::binary_cross_entropy(x.sigmoid(), y, {}, tt::kNone), 1e-10, 1e-12);
  // the stable formula max(x, 0) - x y + log(1 + exp(-|x|)), element by element in double
  std::vector<double> xs = x.to_vector<double>(), ys = y.to_vector<double>(), out;
  for (size_t i = 0; i < xs.size(); ++i)
    out.push_back(std::max(xs[i], 0.0) - xs[i] * ys[i] + std::log1p(std::exp(-std::fabs(xs[i]))));
  CHECK_ALLCLOSE(tt::binary_cross_entropy_with_logits(x, y, {}, {}, tt::kNone), tt::tensor(out, {4, 3}), 1e-12, 1e-15);
}

TEST_CASE("BCE with logits stays exact where sigmoid rounds to 1", "[module06][exercise]") {
  // float32: sigmoid(20) = 1 - 2e-9 rounds to 1.0f, so log(1 - sigmoid(20)) = log 0 = -inf
  Tensor x = tt::tensor({20.0});
  CHECK(x.sigmoid().item<float>() == 1.0f);
  CHECK(std::isinf((1.0 - x.sigmoid()).log().item<float>()));
  // BCE on the probability hits the -100 clamp: 100 instead of 20. With logits: 20.
  CHECK(tt::binary_cross_entropy(x.sigmoid(), tt::tensor({0.0})).item<float>() == 100.0f);
  CHECK(tt::binary_cross_entropy_with_logits(x, tt::tensor({0.0})).item<float>() == Approx(20.0f));
  // far out on both sides, still exact: loss = |x| when the label is on the wrong side
  Tensor far = tt::tensor({1000.0, -1000.0, 1000.0}), far_y = tt::tensor({0.0, 1.0, 1.0});
  CHECK_ALLCLOSE(tt::binary_cross_entropy_with_logits(far, far_y, {}, {}, tt::kNone), tt::tensor({1000.0, 1000.0, 0.0}),
                 0, 0);
}

TEST_CASE("the gradient of BCE with logits is sigmoid(x) - y, and it does not vanish", "[module06][exercise]") {
  Tensor x = tt::tensor({-3.0, 0.0, 2.0, 30.0, -30.0}, tt::kFloat64).requires_grad_();
  Tensor y = f64({1.0, 0.5, 0.0, 0.0, 0.0});
  tt::binary_cross_entropy_with_logits(x, y, {}, {}, tt::kSum).backward();
  CHECK_ALLCLOSE(x.grad(), x.detach().sigmoid() - y, 1e-12, 1e-15);
  // A saturated, confidently wrong unit in float32: through sigmoid then BCE, the gradient is
  // 1e12 * sigmoid'(30) = 1e12 * 0 = 0, and the unit never learns. With logits it is 1.
  Tensor z = tt::tensor({30.0}).requires_grad_();
  tt::binary_cross_entropy(z.sigmoid(), tt::tensor({0.0})).backward();
  CHECK(z.grad().item<float>() == 0.0f);
  Tensor w = tt::tensor({30.0}).requires_grad_();
  tt::binary_cross_entropy_with_logits(w, tt::tensor({0.0})).backward();
  CHECK(w.grad().item<float>() == Approx(1.0f));
  tt::manual_seed(613);
  check_grad([](const TensorList& in) { return tt::binary_cross_entropy_with_logits(in[0] * 5.0, in[1].sigmoid()); },
             {leaf({3, 4}), leaf({3, 4})});
  check_grad([](const TensorList& in) {
    return tt::binary_cross_entropy_with_logits(in[0], in[1].sigmoid(), {}, f64({3.0, 1.0, 0.5, 2.0}), tt::kSum);
  }, {leaf({2, 4}), leaf({2, 4})});
}

// --- the loss modules ---------------------------------------------------------------------------

TEST_CASE("loss modules and F:: functions compute the same as the ops", "[module06]") {
  tt::manual_seed(614);
  Tensor x = tt::randn({4, 3}), y = tt::randn({4, 3}), p = tt::rand({4, 3});
  Tensor t = tt::tensor({2, 0, 1, 0});
  CHECK_ALLCLOSE(nn::MSELoss()(x, y), tt::mse_loss(x, y), 0, 0);
  CHECK_ALLCLOSE(nn::L1Loss(tt::kSum)(x, y), tt::l1_loss(x, y, tt::kSum), 0, 0);
  nn::CrossEntropyLoss criterion(nn::CrossEntropyLossOptions().ignore_index(0).label_smoothing(0.1));
  CHECK_ALLCLOSE(criterion(x, t), tt::cross_entropy(x, t, {}, tt::kMean, 0, 0.1), 0, 0);
  CHECK_ALLCLOSE(F::cross_entropy(x, t, F::CrossEntropyFuncOptions().reduction(tt::kNone)),
                 tt::cross_entropy(x, t, {}, tt::kNone), 0, 0);
  CHECK_ALLCLOSE(nn::BCELoss()(p, p), tt::binary_cross_entropy(p, p), 0, 0);
  CHECK_ALLCLOSE(nn::BCEWithLogitsLoss()(x, p), tt::binary_cross_entropy_with_logits(x, p), 0, 0);
  CHECK_ALLCLOSE(F::mse_loss(x, y), tt::mse_loss(x, y), 0, 0);
  // a loss module holds no parameters
  CHECK(criterion.parameters().empty());
}

// --- errors ----------------------------------------------------------------------------------------

TEST_CASE("bad targets and options: errors name the op, the rule and the values", "[module06]") {
  Tensor x = tt::randn({3, 4});
  REQUIRE_THROWS_AS(tt::cross_entropy(x, tt::tensor({0, 4, 1})), tt::IndexError);
  REQUIRE_THROWS_WITH(tt::cross_entropy(x, tt::tensor({0, 4, 1})),
                      Contains("cross_entropy") && Contains("target 4 is out of bounds") && Contains("4 classes"));
  REQUIRE_THROWS_AS(tt::cross_entropy(x, tt::tensor({0.0, 1.0, 2.0})), tt::DtypeError);
  REQUIRE_THROWS_WITH(tt::cross_entropy(x, tt::tensor({0.0, 1.0, 2.0})), Contains("class-index targets must be int64"));
  REQUIRE_THROWS_WITH(tt::cross_entropy(x, tt::tensor({0, 1})), Contains("expected target of shape [3]"));
  REQUIRE_THROWS_WITH(tt::cross_entropy(x, tt::tensor({0, 1, 2}), {}, tt::kMean, -100, 1.5),
                      Contains("label_smoothing must be in [0, 1]"));
  REQUIRE_THROWS_WITH(tt::cross_entropy(x, tt::tensor({0, 1, 2}), tt::ones({3})), Contains("[C] = [4]"));
  // a prediction [4, 1] against a target [4] would broadcast to a [4, 4] loss: refused
  REQUIRE_THROWS_AS(tt::mse_loss(tt::rand({4, 1}), tt::rand({4})), tt::ShapeError);
  REQUIRE_THROWS_WITH(tt::mse_loss(tt::rand({4, 1}), tt::rand({4})),
                      Contains("mse_loss") && Contains("[4, 1]") && Contains("broadcasting a loss target"));
  REQUIRE_THROWS_AS(tt::mse_loss(tt::rand({2}), tt::rand({2}, tt::kFloat64)), tt::DtypeError);
  // logits passed where probabilities belong
  REQUIRE_THROWS_WITH(tt::binary_cross_entropy(tt::tensor({0.5, 2.5}), tt::tensor({1.0, 0.0})),
                      Contains("probabilities in [0, 1]") && Contains("got 2.5") &&
                          Contains("binary_cross_entropy_with_logits"));
  REQUIRE_THROWS_AS(tt::binary_cross_entropy_with_logits(tt::rand({2, 3}), tt::rand({3})), tt::ShapeError);
}
