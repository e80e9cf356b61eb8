// Loss layers and F:: loss functions (nn/loss.h): each module equals its function and its op,
// options read like LibTorch's and are honoured, class weights are buffers (state dict,
// conversion), printing shows the non-default options, bad options throw, and a loss trains.
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {
// The printed module's first line, without the parameter total.
std::string repr(const nn::Module& m) {
  std::ostringstream os;
  os << m;
  std::string s = os.str();
  return s.substr(0, s.find('\n'));
}
}  // namespace

TEST_CASE("loss modules equal their functions and ops", "[nn][loss]") {
  manual_seed(910);
  Tensor x = randn({4, 3}), y = randn({4, 3});
  Tensor t = tensor({2, 0, 1, 2});
  Tensor p = rand({4, 3}), q = rand({4, 3});
  CHECK_ALLCLOSE(nn::MSELoss()(x, y), mse_loss(x, y), 0, 0);
  CHECK_ALLCLOSE(F::mse_loss(x, y), mse_loss(x, y), 0, 0);
  CHECK_ALLCLOSE(nn::L1Loss()(x, y), l1_loss(x, y), 0, 0);
  CHECK_ALLCLOSE(F::l1_loss(x, y), l1_loss(x, y), 0, 0);
  CHECK_ALLCLOSE(nn::CrossEntropyLoss()(x, t), cross_entropy(x, t), 0, 0);
  CHECK_ALLCLOSE(F::cross_entropy(x, t), cross_entropy(x, t), 0, 0);
  CHECK_ALLCLOSE(nn::NLLLoss()(log_softmax(x, 1), t), nll_loss(log_softmax(x, 1), t), 0, 0);
  CHECK_ALLCLOSE(F::nll_loss(log_softmax(x, 1), t), cross_entropy(x, t), 1e-6, 1e-6);
  CHECK_ALLCLOSE(nn::BCELoss()(p, q), binary_cross_entropy(p, q), 0, 0);
  CHECK_ALLCLOSE(F::binary_cross_entropy(p, q), binary_cross_entropy(p, q), 0, 0);
  CHECK_ALLCLOSE(nn::BCEWithLogitsLoss()(x, q), binary_cross_entropy_with_logits(x, q), 0, 0);
  CHECK_ALLCLOSE(F::binary_cross_entropy_with_logits(x, q), binary_cross_entropy_with_logits(x, q), 0, 0);
  // operator() is forward
  nn::CrossEntropyLoss ce;
  CHECK_ALLCLOSE(ce(x, t), ce.forward(x, t), 0, 0);
}

TEST_CASE("loss options read like LibTorch's and are honoured", "[nn][loss]") {
  manual_seed(911);
  Tensor x = randn({5, 4}), y = randn({5, 4});
  Tensor t = tensor({3, 0, -1, 1, 3});
  Tensor w = tensor({0.5, 2.0, 1.0, 1.5});

  SECTION("defaults") {
    CHECK(nn::MSELossOptions().reduction() == kMean);
    CHECK(nn::L1LossOptions().reduction() == kMean);
    nn::CrossEntropyLossOptions ce;
    CHECK(ce.reduction() == kMean);
    CHECK(ce.ignore_index() == -100);
    CHECK(ce.label_smoothing() == 0.0);
    CHECK_FALSE(ce.weight().defined());
    CHECK(nn::NLLLossOptions().ignore_index() == -100);
    CHECK_FALSE(nn::BCEWithLogitsLossOptions().pos_weight().defined());
  }
  SECTION("reduction, also from the implicit constructor") {
    CHECK_ALLCLOSE(nn::MSELoss(kSum)(x, y), mse_loss(x, y, kSum), 0, 0);
    CHECK_ALLCLOSE(nn::L1Loss(nn::L1LossOptions().reduction(kNone))(x, y), l1_loss(x, y, kNone), 0, 0);
    CHECK_ALLCLOSE(F::mse_loss(x, y, kNone), mse_loss(x, y, kNone), 0, 0);
    CHECK_ALLCLOSE(F::l1_loss(x, y, F::L1LossFuncOptions(kSum)), l1_loss(x, y, kSum), 0, 0);
  }
  SECTION("cross-entropy: all options at once, module and function") {
    auto opts = nn::CrossEntropyLossOptions().weight(w).ignore_index(-1).label_smoothing(0.2).reduction(kSum);
    CHECK(opts.ignore_index() == -1);
    CHECK(opts.label_smoothing() == 0.2);
    CHECK(opts.reduction() == kSum);
    CHECK(opts.weight().is_same(w));
    Tensor expected = cross_entropy(x, t, w, kSum, -1, 0.2);
    CHECK_ALLCLOSE(nn::CrossEntropyLoss(opts)(x, t), expected, 0, 0);
    CHECK_ALLCLOSE(F::cross_entropy(x, t, opts), expected, 0, 0);
    CHECK_ALLCLOSE(F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(w).ignore_index(-1).label_smoothing(0.2)
                                              .reduction(kSum)),
                   expected, 0, 0);
    // each option matters
    CHECK_FALSE(testing::allclose(nn::CrossEntropyLoss(opts.label_smoothing(0.0))(x, t), expected));
  }
  SECTION("nll_loss, BCE and BCE with logits options") {
    Tensor lp = log_softmax(x, 1);
    CHECK_ALLCLOSE(nn::NLLLoss(nn::NLLLossOptions().weight(w).ignore_index(-1).reduction(kNone))(lp, t),
                   nll_loss(lp, t, w, kNone, -1), 0, 0);
    CHECK_ALLCLOSE(F::nll_loss(lp, t, F::NLLLossFuncOptions().ignore_index(-1)), nll_loss(lp, t, {}, kMean, -1), 0, 0);
    Tensor p = rand({5, 4}), q = rand({5, 4});
    CHECK_ALLCLOSE(nn::BCELoss(nn::BCELossOptions().weight(w).reduction(kSum))(p, q),
                   binary_cross_entropy(p, q, w, kSum), 0, 0);
    CHECK_ALLCLOSE(F::binary_cross_entropy(p, q, F::BinaryCrossEntropyFuncOptions().weight(w)),
                   binary_cross_entropy(p, q, w), 0, 0);
    auto bo = nn::BCEWithLogitsLossOptions().pos_weight(w).weight(tensor({2.0})).reduction(kNone);
    Tensor expected = binary_cross_entropy_with_logits(x, q, tensor({2.0}), w, kNone);
    CHECK_ALLCLOSE(nn::BCEWithLogitsLoss(bo)(x, q), expected, 0, 0);
    CHECK_ALLCLOSE(F::binary_cross_entropy_with_logits(x, q, bo), expected, 0, 0);
  }
  SECTION("options changed after construction take effect, as a layer's options member in LibTorch") {
    nn::MSELoss mse;
    mse.options.reduction(kSum);
    CHECK_ALLCLOSE(mse(x, y), mse_loss(x, y, kSum), 0, 0);
  }
}

TEST_CASE("loss weights are buffers, not parameters", "[nn][loss]") {
  Tensor w = tensor({0.5, 2.0, 1.0});
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(w));
  CHECK(ce.parameters().empty());
  CHECK(ce.named_buffers().keys() == std::vector<std::string>{"weight"});
  CHECK(ce.state_dict().keys() == std::vector<std::string>{"weight"});
  CHECK(ce.weight.data_ptr<float>() == w.data_ptr<float>());  // the same values, its own handle
  CHECK(nn::CrossEntropyLoss().named_buffers().size() == 0);
  nn::BCEWithLogitsLoss bl(nn::BCEWithLogitsLossOptions().pos_weight(tensor({2.0, 3.0})));
  CHECK(bl.named_buffers().keys() == std::vector<std::string>{"pos_weight"});
  nn::BCEWithLogitsLoss both(nn::BCEWithLogitsLossOptions().weight(tensor({1.0})).pos_weight(tensor({2.0})));
  CHECK(both.named_buffers().keys() == std::vector<std::string>{"weight", "pos_weight"});
  CHECK(nn::NLLLoss(nn::NLLLossOptions().weight(w)).named_buffers().size() == 1);
  CHECK(nn::BCELoss(nn::BCELossOptions().weight(w)).named_buffers().size() == 1);
  SECTION("to(dtype) converts the weight, so float64 inputs work") {
    Tensor x = randn({2, 3}, kFloat64);
    Tensor t = tensor({1, 2});
    REQUIRE_THROWS_AS(ce(x, t), DtypeError);  // a float32 weight against float64 logits
    ce.to(kFloat64);
    CHECK(ce.weight.dtype() == kFloat64);
    CHECK_ALLCLOSE(ce(x, t), cross_entropy(x, t, w.to(kFloat64)), 0, 0);
  }
  SECTION("load_state_dict replaces the weight's values") {
    nn::StateDict sd;
    sd.insert("weight", tensor({1.0, 1.0, 1.0}));
    ce.load_state_dict(sd);
    Tensor x = randn({2, 3});
    CHECK_ALLCLOSE(ce(x, tensor({1, 2})), cross_entropy(x, tensor({1, 2})), 1e-6, 1e-7);
  }
}

TEST_CASE("loss modules print their non-default options", "[nn][loss]") {
  CHECK(repr(nn::MSELoss()) == "MSELoss()");
  CHECK(repr(nn::MSELoss(kSum)) == "MSELoss(reduction=sum)");
  CHECK(repr(nn::L1Loss(kNone)) == "L1Loss(reduction=none)");
  CHECK(repr(nn::CrossEntropyLoss()) == "CrossEntropyLoss()");
  CHECK(repr(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(0.1).weight(ones({10})))) ==
        "CrossEntropyLoss(label_smoothing=0.1, weight=[10])");
  CHECK(repr(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().ignore_index(0).reduction(kSum))) ==
        "CrossEntropyLoss(reduction=sum, ignore_index=0)");
  CHECK(repr(nn::NLLLoss(nn::NLLLossOptions().ignore_index(3))) == "NLLLoss(ignore_index=3)");
  CHECK(repr(nn::BCELoss(nn::BCELossOptions().weight(ones({2, 1})))) == "BCELoss(weight=[2, 1])");
  CHECK(repr(nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions().pos_weight(ones({5})).reduction(kNone))) ==
        "BCEWithLogitsLoss(reduction=none, pos_weight=[5])");
  std::ostringstream os;
  os << nn::CrossEntropyLoss();
  CHECK(os.str() == "CrossEntropyLoss()\nparameters: 0");
}

TEST_CASE("loss modules reject bad options", "[nn][loss][errors]") {
  REQUIRE_THROWS_AS(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(1.5)), Error);
  REQUIRE_THROWS_WITH(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(-0.5)),
                      Contains("nn::CrossEntropyLoss") && Contains("label_smoothing must be in [0, 1]") &&
                          Contains("-0.5"));
  // a weight of the wrong size is found at the first call, which knows C
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(ones({3})));
  REQUIRE_THROWS_AS(ce(randn({2, 4}), tensor({0, 1})), ShapeError);
  REQUIRE_THROWS_WITH(nn::NLLLoss()(randn({2, 4}), tensor({0, 4})), Contains("target 4 is out of bounds"));
}

TEST_CASE("a linear classifier trained with CrossEntropyLoss learns", "[nn][loss]") {
  manual_seed(912);
  // 3 separable classes in 2-D: class k around the point (cos 2πk/3, sin 2πk/3) * 3
  const int64_t n = 60;
  std::vector<int64_t> ks(n);
  for (int64_t i = 0; i < n; ++i) ks[i] = i % 3;
  Tensor labels = tensor(ks);  // 0, 1, 2, 0, ...
  Tensor angle = labels.to(kFloat32) * (2 * 3.14159265 / 3);
  Tensor x = stack({cos(angle), sin(angle)}, 1) * 3.0 + randn({n, 2}) * 0.3;
  nn::Linear fc(2, 3);
  nn::CrossEntropyLoss criterion(nn::CrossEntropyLossOptions().label_smoothing(0.05));
  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    fc.zero_grad();
    Tensor loss = criterion(fc(x), labels);
    loss.backward();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    NoGradGuard no_grad;
    for (Tensor& p : fc.parameters()) p.sub_(p.grad() * 0.5);
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.4 * first);
  Tensor predicted = argmax(fc(x), 1);
  CHECK(sum(predicted == labels).item<int64_t>() == n);
}
