// gradcheck and gradgradcheck (float64) of every loss (ops/loss.h) in every reduction and option:
// cross_entropy with ignore_index, label smoothing, class weights and their combinations, class
// dim 1 with extra dims, unbatched and transposed logits, probability targets (gradients for the
// logits and the target); nll_loss; binary cross-entropy (input and target) with weights; BCE
// with logits with weight and pos_weight; mse and l1 (input and target). Every backward here is
// written with differentiable ops, so every case checks the second order too.
#include "grad_util.h"

using namespace tt;
using namespace tt::testing;

namespace {
using L = const TensorList&;
const Reduction kReductions[] = {kNone, kMean, kSum};

std::string named(const std::string& what, Reduction r) { return what + ", reduction " + reduction_name(r); }
}  // namespace

TEST_CASE("gradcheck: mse_loss and l1_loss", "[autograd][gradcheck][loss]") {
  manual_seed(900);
  for (Reduction r : kReductions) {
    expect_grad(named("mse", r), [r](L x) { return mse_loss(x[0], x[1], r); }, {randn64({3, 4}), randn64({3, 4})});
    // |x - y| >= 0.5: no kink within the finite-difference step
    Tensor y = randn64({2, 3});
    Tensor x = leaf(y.detach() + away_from_zero64({2, 3}).detach());
    expect_grad(named("l1", r), [r](L t) { return l1_loss(t[0], t[1], r); }, {x, y});
  }
  expect_grad("mse, transposed operands", [](L x) { return mse_loss(x[0], x[1]); },
              {randn64_t({3, 2}), randn64({3, 2})});
}

TEST_CASE("gradcheck: cross_entropy with class indices", "[autograd][gradcheck][loss]") {
  manual_seed(901);
  const Tensor t = tensor({2, 0, 3, 1, 3});
  const Tensor w = tensor({0.5, 2.0, 1.0, 1.5}, kFloat64);
  for (Reduction r : kReductions) {
    expect_grad(named("plain", r), [&](L x) { return cross_entropy(x[0], t, {}, r); }, {randn64({5, 4})});
    expect_grad(named("ignore_index 3", r), [&](L x) { return cross_entropy(x[0], t, {}, r, 3); }, {randn64({5, 4})});
    expect_grad(named("label_smoothing 0.2", r), [&](L x) { return cross_entropy(x[0], t, {}, r, -100, 0.2); },
                {randn64({5, 4})});
    expect_grad(named("weight", r), [&](L x) { return cross_entropy(x[0], t, w, r); }, {randn64({5, 4})});
    expect_grad(named("weight, label_smoothing 0.3, ignore_index 0", r),
                [&](L x) { return cross_entropy(x[0], t, w, r, 0, 0.3); }, {randn64({5, 4})});
    expect_grad(named("ignore_index -100 on one row, smoothing 0.1", r),
                [&](L x) { return cross_entropy(x[0], tensor({1, -100, 0}), {}, r, -100, 0.1); }, {randn64({3, 4})});
  }
  expect_grad("label_smoothing 1", [&](L x) { return cross_entropy(x[0], t, w, kMean, -100, 1.0); }, {randn64({5, 4})});
  expect_grad("transposed logits", [&](L x) { return cross_entropy(x[0], t, {}, kMean, -100, 0.1); },
              {randn64_t({5, 4})});
  expect_grad("strided logits", [&](L x) { return cross_entropy(x[0], t, w, kSum); }, {randn64_strided({5, 4})});
  expect_grad("unbatched [C], 0-d target", [](L x) { return cross_entropy(x[0], scalar_tensor(2, kInt64)); },
              {randn64({4})});
  expect_grad("unbatched, smoothing, none", [](L x) {
    return cross_entropy(x[0], scalar_tensor(1, kInt64), {}, kNone, -100, 0.2);
  }, {randn64({3})});
  expect_grad("logits from a matmul", [&](L x) { return cross_entropy(x[0].matmul(x[1]), t, {}, kMean, -100, 0.1); },
              {randn64({5, 3}), randn64({3, 4})});
}

TEST_CASE("gradcheck: cross_entropy with the classes in dim 1 and extra dims", "[autograd][gradcheck][loss]") {
  manual_seed(902);
  const Tensor t3 = tensor({{0, 2}, {1, -100}});            // [N=2, d=2]
  const Tensor t4 = randint(3, {2, 2, 2});                  // [N=2, d1=2, d2=2]
  const Tensor w = tensor({1.0, 0.25, 2.0}, kFloat64);
  for (Reduction r : kReductions) {
    expect_grad(named("[N, C, d]", r), [&](L x) { return cross_entropy(x[0], t3, {}, r); }, {randn64({2, 3, 2})});
    expect_grad(named("[N, C, d], weight, smoothing", r), [&](L x) { return cross_entropy(x[0], t3, w, r, -100, 0.2); },
                {randn64({2, 3, 2})});
    expect_grad(named("[N, C, d1, d2]", r), [&](L x) { return cross_entropy(x[0], t4, w, r, 1, 0.1); },
                {randn64({2, 3, 2, 2})});
  }
  expect_grad("[B, T, V] moved to [B, V, T]", [&](L x) { return cross_entropy(x[0].transpose(1, 2), t3, {}, kMean); },
              {randn64({2, 2, 3})});
}

TEST_CASE("gradcheck: cross_entropy with probability targets", "[autograd][gradcheck][loss]") {
  manual_seed(903);
  const Tensor w = tensor({0.5, 2.0, 1.0}, kFloat64);
  for (Reduction r : kReductions) {
    // gradients for the logits and for the target
    expect_grad(named("[N, C]", r), [r](L x) { return cross_entropy(x[0], x[1], {}, r); },
                {randn64({4, 3}), uniform64({4, 3}, 0.0, 1.0)});
    expect_grad(named("weight, smoothing 0.2", r), [&](L x) { return cross_entropy(x[0], x[1], w, r, -100, 0.2); },
                {randn64({4, 3}), uniform64({4, 3}, 0.0, 1.0)});
    expect_grad(named("[N, C, d]", r), [&](L x) { return cross_entropy(x[0], x[1], w, r, -100, 0.1); },
                {randn64({2, 3, 2}), uniform64({2, 3, 2}, 0.0, 1.0)});
  }
  expect_grad("unbatched", [](L x) { return cross_entropy(x[0], x[1]); }, {randn64({3}), uniform64({3}, 0.0, 1.0)});
  expect_grad("softmax targets", [](L x) { return cross_entropy(x[0], softmax(x[1], 1), {}, kSum); },
              {randn64_t({3, 4}), randn64({3, 4})});
}

TEST_CASE("gradcheck: nll_loss", "[autograd][gradcheck][loss]") {
  manual_seed(904);
  const Tensor t = tensor({2, 0, 3, 1, 3});
  const Tensor w = tensor({0.5, 2.0, 1.0, 1.5}, kFloat64);
  for (Reduction r : kReductions) {
    expect_grad(named("plain", r), [&](L x) { return nll_loss(x[0], t, {}, r); }, {randn64({5, 4})});
    expect_grad(named("weight, ignore_index 3", r), [&](L x) { return nll_loss(x[0], t, w, r, 3); }, {randn64({5, 4})});
    expect_grad(named("of log_softmax, [N, C, d]", r),
                [&](L x) { return nll_loss(log_softmax(x[0], 1), tensor({{0, 2}, {1, -100}}), {}, r); },
                {randn64({2, 3, 2})});
  }
  expect_grad("unbatched", [](L x) { return nll_loss(x[0], scalar_tensor(1, kInt64)); }, {randn64({3})});
}

TEST_CASE("gradcheck: binary_cross_entropy", "[autograd][gradcheck][loss]") {
  manual_seed(905);
  for (Reduction r : kReductions) {
    // probabilities away from 0 and 1; gradients for the input and the target
    expect_grad(named("input and target", r), [r](L x) { return binary_cross_entropy(x[0], x[1], {}, r); },
                {uniform64({3, 4}, 0.05, 0.95), uniform64({3, 4}, 0.0, 1.0)});
    const Tensor w = rand({4}, kFloat64) + 0.5;
    expect_grad(named("weight", r), [r, w](L x) { return binary_cross_entropy(x[0], x[1], w, r); },
                {uniform64({3, 4}, 0.05, 0.95), uniform64({3, 4}, 0.0, 1.0)});
  }
  expect_grad("of sigmoid, transposed", [](L x) { return binary_cross_entropy(sigmoid(x[0]), x[1]); },
              {randn64_t({3, 2}), uniform64({3, 2}, 0.0, 1.0)});
}

TEST_CASE("gradcheck: binary_cross_entropy_with_logits", "[autograd][gradcheck][loss]") {
  manual_seed(906);
  const Tensor pw = tensor({3.0, 0.5, 1.0, 2.0}, kFloat64);
  const Tensor w = tensor({2.0, 0.5, 1.0}, kFloat64).reshape({3, 1});  // per row
  for (Reduction r : kReductions) {
    expect_grad(named("input and target", r),
                [r](L x) { return binary_cross_entropy_with_logits(x[0] * 3.0, x[1], {}, {}, r); },
                {randn64({3, 4}), uniform64({3, 4}, 0.0, 1.0)});
    expect_grad(named("pos_weight", r), [&](L x) { return binary_cross_entropy_with_logits(x[0], x[1], {}, pw, r); },
                {randn64({3, 4}), uniform64({3, 4}, 0.0, 1.0)});
    expect_grad(named("weight and pos_weight", r),
                [&](L x) { return binary_cross_entropy_with_logits(x[0], x[1], w, pw, r); },
                {randn64({3, 4}), uniform64({3, 4}, 0.0, 1.0)});
  }
  expect_grad("large logits", [](L x) { return binary_cross_entropy_with_logits(x[0] * 40.0, x[1]); },
              {randn64_strided({2, 3}), uniform64({2, 3}, 0.0, 1.0)});
}
