// Module 06 walkthrough: the number a network minimizes. MSE and L1 and their gradients, with
// an outlier; cross-entropy from logits through log-sum-exp, log C for a uniform guess, the
// overflow of softmax-then-log at logits of 1000, the gradient softmax - one_hot checked three
// ways; reductions and ignore_index on padded sequences, class weights, label smoothing, the
// shapes cross_entropy accepts and the [B, T, V] mistake; binary cross-entropy on probabilities
// and on logits; and what a fused cross-entropy saves in passes, time and memory. Run it with
// `tools/tt walkthrough 06` (or build-*/modules/walkthrough_06). Each step prints its code (after
// ">>>") and the result. Each numbered section is one function; `--step N` reruns section N alone,
// `--list` lists them.
#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, quietly, and SHOW / RUN / SHOW_ERROR

namespace {

// What a timing measured, for the line under it: "best of 5, 2 threads" (tt::get_num_threads()).
std::string best_of(int reps) {
  const int threads = tt::get_num_threads();
  return "best of " + std::to_string(reps) + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

// Class indices as one-hot rows: t [N] int64 -> [N, C] (rows of the identity, picked by t).
tt::Tensor one_hot(const tt::Tensor& t, int64_t C, tt::ScalarType dtype = tt::kFloat32) {
  return tt::eye(C, dtype).index_select(0, t);
}

double max_abs(const tt::Tensor& t) { return t.abs().max().item<double>(); }

// Peak bytes allocated above what was live before `f` ran.
template <typename F>
double peak_mib(F f) {
  const int64_t before = tt::memory::stats().allocated_bytes;
  tt::memory::reset_peak_stats();
  f();
  return double(tt::memory::stats().peak_allocated_bytes - before) / (1024.0 * 1024.0);
}

// -----------------------------------------------------------------------------------------------

void step_1_loss() {
  say("A loss turns the model's outputs and the right answers into one number that is small when\n"
      "the outputs are good. Backward then tells every output which way to move. Four predictions\n"
      "of a regression model, as a leaf so that we can see their gradient:");
  RUN(tt::Tensor pred = tt::tensor({2.0, 3.0, 4.0, 5.0}, tt::kFloat64).requires_grad_());
  RUN(tt::Tensor truth = tt::tensor({2.5, 3.0, 3.0, 6.0}, tt::kFloat64));
  RUN(tt::Tensor loss = tt::mse_loss(pred, truth));
  SHOW(loss);
  RUN(loss.backward());
  SHOW(pred.grad());
  say("The gradient is negative where the prediction is too small (raising it lowers the loss),\n"
      "positive where it is too large, and zero where it is right. One small step against the\n"
      "gradient lowers the loss:");
  {
    tt::NoGradGuard no_grad;
    std::cout << ">>> pred - 0.5 * pred.grad(), then the loss again\n";
    tt::Tensor stepped = pred - 0.5 * pred.grad();
    std::cout << "    " << tt::mse_loss(stepped, truth).item<double>() << "  (was " << loss.item<double>() << ")\n";
  }
  say("That is all training is (module 08): repeat the step over many examples. The rest of this\n"
      "walkthrough is about choosing the number well and computing it without losing digits.");
}

// -----------------------------------------------------------------------------------------------

// Two tensors a step returns for later steps to read again.
struct Pair {
  tt::Tensor a, b;
};

// Returns the predictions x and the targets y, which step 11 reads again.
Pair step_2_mse_l1() {
  say("The same four predictions, but the last target is an outlier: 15 instead of 6.\n"
      "Differences x - y = [-0.5, 0, 1, -10].");
  RUN(tt::Tensor x = tt::tensor({2.0, 3.0, 4.0, 5.0}, tt::kFloat64).requires_grad_());
  RUN(tt::Tensor y = tt::tensor({2.5, 3.0, 3.0, 15.0}, tt::kFloat64));
  SHOW(tt::mse_loss(x, y, tt::kNone));
  SHOW(tt::mse_loss(x, y));
  SHOW(tt::l1_loss(x, y, tt::kNone));
  SHOW(tt::l1_loss(x, y));
  say("The outlier is 100 of MSE's 101.25 (99%), and 10 of L1's 11.5 (87%). The gradients show\n"
      "how hard each example pulls. MSE: 2 (x - y) / N.");
  RUN(tt::mse_loss(x, y).backward());
  SHOW(x.grad());
  say("L1: sign(x - y) / N. Every example pulls with the same strength, however far off it is\n"
      "(and the one that is exactly right, with sign(0) = 0, not at all).");
  RUN(x.set_grad(tt::Tensor()));
  RUN(tt::l1_loss(x, y).backward());
  SHOW(x.grad());
  say("Which single number c best predicts targets [1, 2, 3, 4, 100]? MSE's gradient\n"
      "2 (c - mean) vanishes at the mean, 22; L1's at the median, 3.");
  RUN(tt::Tensor targets = tt::tensor({1.0, 2.0, 3.0, 4.0, 100.0}, tt::kFloat64));
  for (double c : {3.0, 22.0}) {
    tt::Tensor cc = tt::tensor({c}, tt::kFloat64).requires_grad_();
    tt::Tensor g_mse = tt::autograd::grad({tt::mse_loss(cc.expand({5}), targets)}, {cc})[0];
    tt::Tensor g_l1 = tt::autograd::grad({tt::l1_loss(cc.expand({5}), targets)}, {cc})[0];
    auto clean = [](double v) { return std::fabs(v) < 1e-9 ? 0.0 : v; };  // no "-0.00"
    std::cout << "    c = " << fmt("%4.0f", c) << ":   dMSE/dc = " << fmt("%7.2f", clean(g_mse.item<double>()))
              << "   dL1/dc = " << fmt("%5.2f", clean(g_l1.item<double>())) << "\n";
  }
  return {x, y};
}

// -----------------------------------------------------------------------------------------------

// Returns the logits z and the target t, which step 8 reads again.
Pair step_3_cross_entropy() {
  say("A classifier outputs one unnormalized score, a logit, per class. Softmax (module 03) turns\n"
      "a row into probabilities, and the loss is minus the log-probability of the right class.\n"
      "Three classes, logits [2, 1, 0.1], right class 0:");
  RUN(tt::Tensor z = tt::tensor({{2.0, 1.0, 0.1}}, tt::kFloat64));
  RUN(tt::Tensor t = tt::tensor({0}));
  SHOW(z.softmax(1));
  SHOW(-z.softmax(1).log().select(1, 0));
  say("-log p_t = -(z_t - logsumexp(z)) = logsumexp(z) - z_t: the log-sum-exp of the row minus the\n"
      "right class's logit. tt::cross_entropy takes the logits and computes exactly that:");
  RUN(tt::Tensor m = z.max());
  SHOW(m + (z - m).exp().sum().log() - 2.0);
  SHOW(tt::cross_entropy(z, t));
  say("The other targets cost logsumexp minus their own logits: 1 and 1.9 more.");
  SHOW(tt::cross_entropy(z.expand({3, 3}), tt::tensor({0, 1, 2}), {}, tt::kNone));
  say("cross_entropy is log_softmax followed by nll_loss (which picks -input[t] and averages);\n"
      "tinytorch fuses the two into one op with one backward (section 6).");
  SHOW(tt::nll_loss(z.log_softmax(1), t));
  return {z, t};
}

// -----------------------------------------------------------------------------------------------

void step_4_uniform_guess() {
  say("Equal logits give p = 1/C for every class, whatever the target: the loss is log C.");
  SHOW(tt::cross_entropy(tt::zeros({4, 10}), tt::tensor({0, 3, 7, 9})));
  SHOW(std::log(10.0));
  SHOW(std::log(50257.0));
  say("(50257 is GPT-2's vocabulary: a language model's first loss should be near 10.8.)\n"
      "An untrained classifier is close to uniform, because module 05's default init keeps the\n"
      "logits small. Its first loss should therefore be near log C; the practitioner's first\n"
      "sanity check. A Linear(32, 10) on random inputs and labels:");
  RUN(tt::manual_seed(6));
  RUN(tt::nn::Linear fc(32, 10));
  RUN(tt::Tensor inputs = tt::randn({256, 32}));
  RUN(tt::Tensor labels = tt::randint(10, {256}));
  SHOW(tt::cross_entropy(fc(inputs), labels));
  SHOW(fc(inputs).std());
  say("Slightly above log 10 = 2.303, because the logits are not exactly equal: random logits\n"
      "of standard deviation s cost about log C + s^2/2 (here 2.30 + 0.18). Scale the weights by\n"
      "10, as a bad init would, and the first loss is far above log C: the model is confidently\n"
      "wrong about random labels. A first loss like this is a bug to look for.");
  {
    tt::NoGradGuard no_grad;
    RUN(fc.weight.mul_(10.0));
  }
  SHOW(tt::cross_entropy(fc(inputs), labels));
}

// -----------------------------------------------------------------------------------------------

void step_5_log_sum_exp() {
  say("Logits [1000, 0] in float32, the kind an exploding model produces. exp(1000) overflows\n"
      "(float32 stops at 3.4e38, exp overflows above 88.7):");
  RUN(tt::Tensor big = tt::tensor({{1000.0, 0.0}}));
  SHOW(big.exp());
  RUN(auto naive_log_softmax = [](const tt::Tensor& v) { return (v.exp() / v.exp().sum({1}, true)).log(); });
  SHOW(naive_log_softmax(big));
  say("inf / inf is nan, 1 / inf is 0 and log 0 is -inf: the naive loss is nan for target 0\n"
      "and inf for target 1. One nan in a batch makes the mean nan, then every gradient, then\n"
      "every weight after the next step.");
  SHOW(-naive_log_softmax(big).select(1, 0));
  SHOW(-naive_log_softmax(big).select(1, 1));
  say("logsumexp(z) = m + log sum exp(z - m) with m = max z: the largest exponent is exactly 0.\n"
      "For [1000, 0]: 1000 + log(1 + e^-1000) = 1000. The fused op gets both losses right:");
  SHOW(tt::cross_entropy(big, tt::tensor({0})));
  SHOW(tt::cross_entropy(big, tt::tensor({1})));
  say("The other failure is underflow. [0, -200]: e^-200 = 1.4e-87 is 0 in float32, so the\n"
      "probability of class 1 is 0 and its log -inf, where the true loss is 200:");
  RUN(tt::Tensor far = tt::tensor({{0.0, -200.0}}));
  SHOW(far.softmax(1));
  SHOW(-far.softmax(1).log().select(1, 1));
  SHOW(tt::cross_entropy(far, tt::tensor({1})));
  say("And the gradient at [1000, 0] with target 1 is finite: softmax - one_hot = [1, 0] - [0, 1].");
  RUN(tt::Tensor big_leaf = tt::tensor({{1000.0, 0.0}}).requires_grad_());
  RUN(tt::cross_entropy(big_leaf, tt::tensor({1})).backward());
  SHOW(big_leaf.grad());
}

// -----------------------------------------------------------------------------------------------

void step_6_gradient() {
  say("For one row, L = logsumexp(z) - z_t. d logsumexp / dz_c = exp(z_c) / sum exp = p_c, and\n"
      "d z_t / dz_c is 1 for c = t and 0 otherwise. So dL/dz = p - one_hot(t). No chain through\n"
      "softmax's Jacobian is needed: the log and the exp cancel. Checked three ways, float64:");
  RUN(tt::manual_seed(60));
  RUN(tt::Tensor logits = tt::randn({4, 5}, tt::kFloat64).requires_grad_());
  RUN(tt::Tensor target = tt::tensor({1, 0, 4, 4}));
  RUN(tt::Tensor grad = tt::autograd::grad({tt::cross_entropy(logits, target)}, {logits})[0]);
  SHOW(grad);
  SHOW((logits.detach().softmax(1) - one_hot(target, 5, tt::kFloat64)) / 4.0);
  SHOW(max_abs(grad - (logits.detach().softmax(1) - one_hot(target, 5, tt::kFloat64)) / 4.0));
  say("(The / 4 is the mean over N = 4 rows.) Each row sums to 0: raising every logit of a row\n"
      "together changes nothing. And gradcheck, against finite differences:");
  RUN(auto ce_of = [&](const tt::autograd::TensorList& in) { return tt::cross_entropy(in[0], target); });
  SHOW(bool(tt::autograd::gradcheck(ce_of, {logits})));
  say("Unlike softmax's own Jacobian (module 03), this gradient does not vanish when softmax\n"
      "saturates. A confident wrong answer gets the largest gradient there is; a confident right\n"
      "one almost none:");
  RUN(tt::Tensor sure = tt::tensor({{10.0, 0.0, 0.0}}, tt::kFloat64).requires_grad_());
  SHOW(tt::autograd::grad({tt::cross_entropy(sure, tt::tensor({1}))}, {sure})[0]);
  SHOW(tt::autograd::grad({tt::cross_entropy(sure, tt::tensor({0}))}, {sure})[0]);
}

// -----------------------------------------------------------------------------------------------

// The padded batch of step 7, which step 11 reads again.
struct Padded {
  tt::Tensor tokens, next, w;
};

Padded step_7_reductions() {
  say("kNone keeps one loss per row, kSum adds them, kMean (the default) divides by the number of\n"
      "rows that count. Two sequences of 4 tokens over a vocabulary of 5, flattened to [8, 5]; the\n"
      "second sequence has one real token, the rest is padding marked -100 (ignore_index):");
  RUN(tt::manual_seed(61));
  RUN(tt::Tensor tokens = tt::randn({8, 5}).requires_grad_());
  RUN(tt::Tensor next = tt::tensor({3, 1, 4, 0, 2, -100, -100, -100}));
  SHOW(tt::cross_entropy(tokens, next, {}, tt::kNone));
  SHOW(tt::cross_entropy(tokens, next, {}, tt::kSum));
  SHOW(tt::cross_entropy(tokens, next));
  SHOW(tt::cross_entropy(tokens, next, {}, tt::kSum).item<float>() / 5);
  say("The mean divides by the 5 real tokens, not by 8: the loss is that of the real tokens\n"
      "alone, as if the padding had never been there.");
  SHOW(tt::cross_entropy(tokens.slice(0, 0, 5), next.slice(0, 0, 5)));
  say("The gradient of the last real row, then of the three padded ones: exactly zero.");
  RUN(tt::cross_entropy(tokens, next).backward());
  SHOW(tokens.grad().slice(0, 4, 8));
  say("The classic bug: padding with a real token id (0 here) instead. The padding is then\n"
      "trained as class 0 and counted in the mean: a different loss, and no error.");
  SHOW(tt::cross_entropy(tokens, tt::tensor({3, 1, 4, 0, 2, 0, 0, 0})));
  say("If the pad id is a real id of the vocabulary, pass it as ignore_index:");
  SHOW(tt::cross_entropy(tokens, tt::tensor({3, 1, 4, 2, 2, 0, 0, 0}), {}, tt::kMean, /*ignore_index=*/0));
  say("A batch with nothing to count divides 0 by 0: nan, as in PyTorch (its gradient is zero).");
  SHOW(tt::cross_entropy(tokens, tt::full({8}, -100, tt::kInt64)));
  say("Class weights scale each row by w[target], and the mean divides by the sum of those\n"
      "weights, not by N, so the weighted mean stays an average:");
  RUN(tt::Tensor w = tt::tensor({1.0, 2.0, 0.5, 1.0, 1.0}));
  SHOW(tt::cross_entropy(tokens, next, w, tt::kNone));
  SHOW(tt::cross_entropy(tokens, next, w));
  return {tokens, next, w};
}

// -----------------------------------------------------------------------------------------------

void step_8_label_smoothing() {
  const Pair step_3 = quietly(step_3_cross_entropy);
  const tt::Tensor z = step_3.a, t = step_3.b;
  say("Cross-entropy against a one-hot target is minimized only by infinite logits: p_t = 1\n"
      "needs z_t - z_other -> infinity, so training keeps growing the logits. Label smoothing\n"
      "aims at q = (1 - eps) one_hot + eps / C instead:\n"
      "    loss = (1 - eps) (-log p_t) + eps / C * sum_c (-log p_c)\n"
      "Row [2, 1, 0.1], target 0, eps = 0.1, by hand and by the op:");
  RUN(tt::Tensor lp = z.log_softmax(1));
  SHOW(-lp.select(1, 0) * 0.9 - lp.sum({1}) * (0.1 / 3));
  SHOW(tt::cross_entropy(z, t, {}, tt::kMean, -100, /*label_smoothing=*/0.1));
  say("It is cross-entropy against the distribution q, and its gradient is p - q:");
  RUN(tt::Tensor q = one_hot(t, 3, tt::kFloat64) * 0.9 + 0.1 / 3);
  SHOW(q);
  SHOW(tt::cross_entropy(z, q));
  RUN(tt::Tensor zl = z.clone().requires_grad_());
  SHOW(tt::autograd::grad({tt::cross_entropy(zl, t, {}, tt::kMean, -100, 0.1)}, {zl})[0]);
  SHOW(z.softmax(1) - q);
  say("The minimum is at p = q, with finite logits. For C = 10 and eps = 0.1, q_t = 0.91 and the\n"
      "others 0.01: the best target logit leads by log(0.91 / 0.01) = 4.51, and the best loss is\n"
      "the entropy of q, not 0. Logits log q sit exactly there:");
  {
    std::vector<double> best(10, std::log(0.01));
    best[3] = std::log(0.91);
    RUN(tt::Tensor zq = tt::tensor(best, {1, 10}).requires_grad_());
    SHOW(tt::cross_entropy(zq, tt::tensor({3}), {}, tt::kMean, -100, 0.1));
    SHOW(-(0.91 * std::log(0.91) + 9 * 0.01 * std::log(0.01)));
    SHOW(max_abs(tt::autograd::grad({tt::cross_entropy(zq, tt::tensor({3}), {}, tt::kMean, -100, 0.1)}, {zq})[0]));
  }
}

// -----------------------------------------------------------------------------------------------

void step_9_shapes() {
  resume_random_stream(61, 8 * 5);  // where step 7 leaves it: seed 61, then tokens' 8 x 5 numbers
  say("[N, C] logits take [N] targets. With more dims, PyTorch's rule (and tinytorch's) is\n"
      "[N, C, d1, d2, ...] with targets [N, d1, d2, ...]: a segmentation map of 2 x 3 pixels\n"
      "and 4 classes per pixel is [N, 4, 2, 3]:");
  RUN(tt::Tensor seg = tt::randn({2, 4, 2, 3}));
  RUN(tt::Tensor seg_t = tt::randint(4, {2, 2, 3}));
  SHOW(tt::cross_entropy(seg, seg_t, {}, tt::kNone).shape());
  SHOW(tt::cross_entropy(seg, seg_t));
  SHOW(tt::cross_entropy(seg.permute({0, 2, 3, 1}).reshape({12, 4}), seg_t.reshape({12})));
  say("A language model's logits are [B, T, V], classes LAST. Passing them with [B, T] targets\n"
      "is the most common shape mistake; the error says what to do:");
  RUN(tt::Tensor lm = tt::randn({2, 3, 7}));
  RUN(tt::Tensor lm_t = tt::randint(7, {2, 3}));
  SHOW_ERROR(tt::cross_entropy(lm, lm_t));
  SHOW(tt::cross_entropy(lm.reshape({-1, 7}), lm_t.reshape({-1})));
  SHOW(tt::cross_entropy(lm.transpose(1, 2), lm_t));
  say("When T happens to equal V, the shapes [B, T, T] and [B, T] fit the rule and nothing can\n"
      "complain: the classes are silently read from the time dim.");
  RUN(tt::Tensor sq = tt::randn({2, 5, 5}));
  RUN(tt::Tensor sq_t = tt::randint(5, {2, 5}));
  SHOW(tt::cross_entropy(sq, sq_t));
  SHOW(tt::cross_entropy(sq.reshape({-1, 5}), sq_t.reshape({-1})));
  say("Regression losses refuse to broadcast: a [4, 1] prediction against a [4] target would\n"
      "otherwise become a [4, 4] loss of every prediction against every target.");
  SHOW_ERROR(tt::mse_loss(tt::rand({4, 1}), tt::rand({4})));
}

// -----------------------------------------------------------------------------------------------

// Returns the logits xs and the labels ys, which step 11 reads again.
Pair step_10_binary() {
  say("For yes/no outputs (or several independent labels), one probability per output:\n"
      "    BCE(p, y) = -(y log p + (1 - y) log(1 - p))");
  RUN(tt::Tensor p = tt::tensor({0.8, 0.3, 0.5}, tt::kFloat64));
  RUN(tt::Tensor yb = tt::tensor({1.0, 0.0, 1.0}, tt::kFloat64));
  SHOW(tt::binary_cross_entropy(p, yb, {}, tt::kNone));
  say("The probability usually comes from a sigmoid of a logit x, and the loss needs\n"
      "log(1 - sigmoid(x)). In float32, sigmoid(x) = 1 / (1 + e^-x) is exactly 1.0 once e^-x is\n"
      "below half a float32 step above 1 (x > 16.6); before that, 1 - sigmoid(x) is a few float32\n"
      "steps and its log loses digits. The stable form -(max(x, 0) + log(1 + e^-|x|)), which is\n"
      "-softplus(x), never forms 1 - sigmoid(x):");
  std::cout << "       x   log(1 - sigmoid(x)), f32   stable form, f32        exact (double)\n";
  for (double v : {5.0, 10.0, 15.0, 17.0, 20.0, 50.0}) {
    tt::Tensor xv = tt::tensor({v});
    float naive = (1.0 - xv.sigmoid()).log().item<float>();
    float stable = (-(xv.relu() + (1.0 + (-xv.abs()).exp()).log())).item<float>();
    double exact = -(v + std::log1p(std::exp(-v)));
    std::cout << "    " << fmt("%4.0f", v) << fmt("%27.8g", naive) << fmt("%19.8g", stable) << fmt("%22.10g", exact)
              << "\n";
  }
  say("binary_cross_entropy clamps each log at -100, as PyTorch does, so the naive path gives a\n"
      "finite but wrong loss: 100 where the truth is 20. binary_cross_entropy_with_logits takes\n"
      "the logit and computes the stable form:");
  RUN(tt::Tensor x20 = tt::tensor({20.0}));
  SHOW(tt::binary_cross_entropy(x20.sigmoid(), tt::tensor({0.0})));
  SHOW(tt::binary_cross_entropy_with_logits(x20, tt::tensor({0.0})));
  say("The gradient is worse. Through sigmoid then BCE, a saturated unit gets\n"
      "(p - y) / max(p (1 - p), 1e-12) * sigmoid'(x) = 1e12 * 0 = 0: confidently wrong, and it\n"
      "never learns. With logits the gradient is sigmoid(x) - y = 1.");
  RUN(tt::Tensor x30 = tt::tensor({30.0}).requires_grad_());
  SHOW(tt::autograd::grad({tt::binary_cross_entropy(x30.sigmoid(), tt::tensor({0.0}))}, {x30})[0]);
  SHOW(tt::autograd::grad({tt::binary_cross_entropy_with_logits(x30, tt::tensor({0.0}))}, {x30})[0]);
  say("Where both can be computed they agree (float64, moderate logits):");
  RUN(tt::Tensor xs = tt::tensor({-3.0, -0.5, 0.0, 2.0, 4.0}, tt::kFloat64));
  RUN(tt::Tensor ys = tt::tensor({0.0, 1.0, 0.5, 1.0, 0.0}, tt::kFloat64));
  SHOW(tt::binary_cross_entropy(xs.sigmoid(), ys, {}, tt::kNone));
  SHOW(tt::binary_cross_entropy_with_logits(xs, ys, {}, {}, tt::kNone));
  say("pos_weight multiplies the positive term, to balance rare positives (3 here):");
  SHOW(tt::binary_cross_entropy_with_logits(xs, ys, {}, tt::full({5}, 3.0, tt::kFloat64), tt::kNone));
  say("And a probability outside [0, 1] is refused, with the hint you probably need:");
  SHOW_ERROR(tt::binary_cross_entropy(tt::tensor({0.5, 2.5}), tt::tensor({1.0, 0.0})));
  return {xs, ys};
}

// -----------------------------------------------------------------------------------------------

void step_11_modules() {
  const Padded padded = quietly(step_7_reductions);
  const tt::Tensor tokens = padded.tokens, next = padded.next, w = padded.w;
  const Pair step_10 = quietly(step_10_binary), step_2 = quietly(step_2_mse_l1);
  const tt::Tensor xs = step_10.a, ys = step_10.b, x = step_2.a, y = step_2.b;
  say("tinytorch/nn/loss.h wraps each loss in a module with an options struct, as LibTorch does,\n"
      "and F:: gives the same as functions. A class weight becomes a buffer (saved, not trained).");
  RUN(tt::nn::CrossEntropyLoss criterion(tt::nn::CrossEntropyLossOptions().label_smoothing(0.1).weight(w)));
  SHOW(criterion);
  SHOW(criterion(tokens, next));
  SHOW(tt::F::cross_entropy(tokens, next, tt::F::CrossEntropyFuncOptions().label_smoothing(0.1).weight(w)));
  SHOW(tt::cross_entropy(tokens, next, w, tt::kMean, -100, 0.1));
  SHOW(tt::nn::BCEWithLogitsLoss()(xs, ys));
  SHOW(tt::nn::MSELoss(tt::kSum)(x.detach(), y));
}

// -----------------------------------------------------------------------------------------------

void step_12_costs() {
  say("Forward and backward of a cross-entropy over [N, C] = [512, 8192] float32 logits (16 MiB),\n"
      "three ways: the fused op; log_softmax then a one-hot pick; and the textbook chain max,\n"
      "subtract, exp, sum, divide, log, one-hot pick. Best of 3 runs; memory is the peak\n"
      "allocated above the logits, through the end of backward.");
  {
    const int64_t N = 512, C = 8192;
    tt::manual_seed(62);
    tt::Tensor xl = tt::randn({N, C}).requires_grad_();
    tt::Tensor tl = tt::randint(C, {N});
    tt::Tensor oh = one_hot(tl, C);  // built once, outside the timings, for the two chains
    const double mib = double(N * C * 4) / (1024.0 * 1024.0);
    struct Way {
      const char* name;
      std::function<tt::Tensor()> loss;
    };
    std::vector<Way> ways = {
        {"fused cross_entropy", [&] { return tt::cross_entropy(xl, tl); }},
        {"log_softmax, one-hot pick", [&] { return -(xl.log_softmax(1) * oh).sum() / double(N); }},
        {"max, -, exp, sum, /, log, pick", [&] {
           tt::Tensor mx = std::get<0>(xl.max(1, /*keepdim=*/true));
           tt::Tensor e = (xl - mx).exp();
           return -((e / e.sum({1}, true)).log() * oh).sum() / double(N);
         }},
    };
    std::vector<double> peaks;  // printed after the timings: bytes do not vary from run to run, times do
    for (const Way& way : ways) {
      auto step = [&] {
        tt::Tensor l = way.loss();
        l.backward();
        xl.set_grad(tt::Tensor());
      };
      step();  // warm the allocator's cache
      const double ms = best_ms(step, 3);
      peaks.push_back(peak_mib(step));
      const double value = way.loss().item<double>();
      const std::string name = way.name;
      std::cout << "    " << name << std::string(32 - name.size(), ' ') << fmt("%7.1f", ms) << " ms   loss "
                << fmt("%.6f", value) << "\n";
    }
    std::cout << "    (" << best_of(3) << ")\n"
              << "    peak allocated above the logits, forward through backward:\n";
    for (size_t i = 0; i < ways.size(); ++i) {
      const std::string name = ways[i].name;
      std::cout << "    " << name << std::string(32 - name.size(), ' ') << fmt("%6.0f", peaks[i]) << " MiB ("
                << fmt("%.1f", peaks[i] / mib) << "x the logits)\n";
    }
    std::cout << "    (log 8192 = " << fmt("%.6f", std::log(8192.0))
              << ": randn logits of std 1 cost about log C + 1/2, as in section 4)\n";
  }
  say("The peak includes the gradient itself (one logits-sized tensor, kept in .grad), and not\n"
      "the one-hot matrix, built once outside. The fused op saves only the logits it was given\n"
      "and spends its memory in backward; the chains keep intermediates alive for backward, and\n"
      "every small op reads and writes the whole [N, C] again. For a language model, N = B*T =\n"
      "8192 tokens and C = 50257: one [N, C] float32 tensor is 1.65 GB, and each extra pass or\n"
      "saved intermediate costs that much again.");
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_06";
  w.begin = [] {
    std::cout << "Module 06 - losses: MSE and L1, cross-entropy and log-sum-exp, its gradient softmax -\n"
                 "one_hot, reductions and ignore_index, label smoothing, shapes, binary cross-entropy, costs.\n";
    std::cout.precision(6);
  };
  w.steps = {
      {"1", "What a loss is for", step_1_loss},
      {"2", "MSE and L1, and an outlier", step_2_mse_l1},
      {"3", "From logits to probabilities to cross-entropy", step_3_cross_entropy},
      {"4", "A uniform guess costs log C", step_4_uniform_guess},
      {"5", "Log-sum-exp: why softmax-then-log fails", step_5_log_sum_exp},
      {"6", "The gradient: softmax minus one-hot", step_6_gradient},
      {"7", "Reductions, ignore_index and padding", step_7_reductions},
      {"8", "Label smoothing", step_8_label_smoothing},
      {"9", "Shapes: the classes live in dim 1", step_9_shapes},
      {"10", "Binary cross-entropy: probabilities or logits", step_10_binary},
      {"11", "The loss modules", step_11_modules},
      {"12", "What it costs: one fused op against a chain of small ones", step_12_costs},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs) << " s. Next: modules/07_optimizers, which turns these\n"
                 "gradients into updates.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}


