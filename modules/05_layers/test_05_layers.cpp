// Module 05 suite: Linear (values by hand, the [*, in] -> [*, out] rule, its errors, its
// backward against dX = dY W, dW = dY^T X, db = sum of dY, and gradcheck), the Module tree
// (registration, dotted names, modes, zero_grad, counting, printing, conversion), the init
// formulas and their statistics, Sequential, Dropout (inverted scaling, expectation, seeding,
// train vs eval) and state_dict round trips. It is the judge in exercise mode
// (`tools/tt exercise 05`): the cases tagged [exercise] lean on the bodies a learner writes
// (Linear's backward, dropout, the xavier and kaiming formulas).
#include <cmath>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

using Catch::Matchers::Contains;
using tt::Shape;
using tt::Tensor;
using tt::autograd::TensorList;

namespace nn = tt::nn;
namespace init = tt::nn::init;

namespace {

// A float64 leaf that requires grad, with values from the seeded generator.
Tensor leaf(const Shape& shape) { return tt::randn(shape, tt::kFloat64).requires_grad_(); }

void check_grad(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  tt::autograd::GradcheckResult r = tt::autograd::gradcheck(fn, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

// A Linear(3, 2) holding W = [[1, -1, 2], [0, 3, 1]] and b = [0.5, -1].
std::shared_ptr<nn::Linear> known_linear() {
  auto fc = std::make_shared<nn::Linear>(3, 2);
  tt::NoGradGuard no_grad;
  fc->weight.copy_(tt::tensor({{1.0, -1.0, 2.0}, {0.0, 3.0, 1.0}}));
  fc->bias.copy_(tt::tensor({0.5, -1.0}));
  return fc;
}

// The walkthrough's model: a buffer, then Linear -> ReLU -> Dropout -> Linear.
struct TinyMLP : nn::Module {
  TinyMLP() {
    input_mean = register_buffer("input_mean", tt::zeros({4}));
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 8));
    drop = register_module("drop", std::make_shared<nn::Dropout>(0.5));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 3));
  }
  Tensor forward(const Tensor& x) const { return fc2->forward(drop->forward(fc1->forward(x - input_mean).relu())); }
  Tensor input_mean;
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::Dropout> drop;
};

// Two levels of nesting: an encoder (a Sequential) inside a model with its own parameter.
struct Nested : nn::Module {
  Nested() {
    scale = register_parameter("scale", tt::ones({2}));
    encoder = register_module("encoder", std::make_shared<nn::Sequential>(nn::Linear(3, 4), nn::Tanh(), nn::Linear(4, 2)));
    head = register_module("head", std::make_shared<nn::Linear>(nn::LinearOptions(2, 1).bias(false)));
  }
  Tensor forward(const Tensor& x) const { return head->forward(encoder->forward(x) * scale); }
  Tensor scale;
  std::shared_ptr<nn::Sequential> encoder;
  std::shared_ptr<nn::Linear> head;
};

std::string printed(const nn::Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

}  // namespace

// --- Linear forward ------------------------------------------------------------------------------

TEST_CASE("Linear computes x W^T + b, checked by hand", "[module05]") {
  nn::Linear fresh(3, 2);
  CHECK(fresh.weight.shape() == Shape{2, 3});  // [out, in]
  CHECK(fresh.bias.shape() == Shape{2});
  CHECK(fresh.weight.is_leaf());
  CHECK(fresh.weight.requires_grad());
  CHECK(fresh.bias.requires_grad());

  auto fc = known_linear();
  Tensor x = tt::tensor({{1.0, 2.0, 3.0}, {-1.0, 0.0, 1.0}});
  // Row 0: 1 - 2 + 6 + 0.5 = 5.5 and 0 + 6 + 3 - 1 = 8; row 1: -1 + 0 + 2 + 0.5 = 1.5 and 0 + 0 + 1 - 1 = 0.
  Tensor y = fc->forward(x);
  CHECK_ALLCLOSE(y, tt::tensor({{5.5, 8.0}, {1.5, 0.0}}), 0, 0);
  CHECK_ALLCLOSE(y, x.matmul(fc->weight.t()) + fc->bias, 0, 1e-6);
  CHECK_ALLCLOSE((*fc)(x), y, 0, 0);
  // The functional form computes the same thing.
  CHECK_ALLCLOSE(tt::F::linear(x, fc->weight, fc->bias), y, 0, 0);
  // One node for the GEMM and the bias together.
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->name() == "LinearBackward0");
}

TEST_CASE("Linear treats every leading dim as rows", "[module05]") {
  tt::manual_seed(50);
  nn::Linear fc(3, 2);
  // Every dim but the last is a row: a [4, 5, 3] input is 20 rows.
  Tensor x3 = tt::randn({4, 5, 3});
  Tensor y3 = fc(x3);
  CHECK(y3.shape() == Shape{4, 5, 2});
  CHECK_ALLCLOSE(y3.reshape({20, 2}), fc(x3.reshape({20, 3})), 0, 0);
  CHECK(fc(tt::randn({2, 3, 4, 3})).shape() == Shape{2, 3, 4, 2});
  // A single vector is one row.
  Tensor v = tt::tensor({1.0, 0.0, -1.0});
  CHECK(fc(v).shape() == Shape{2});
  CHECK_ALLCLOSE(fc(v), fc(v.unsqueeze(0)).squeeze(0), 0, 0);
  // A transposed (non-contiguous) input gives what its contiguous copy gives.
  Tensor xt = tt::randn({3, 6}).t();
  CHECK_ALLCLOSE(fc(xt), fc(xt.contiguous()), 0, 1e-6);
  // No rows: an empty result of the right shape.
  CHECK(fc(tt::zeros({0, 3})).shape() == Shape{0, 2});
  // float64 after to(kFloat64).
  fc.to(tt::kFloat64);
  CHECK(fc(tt::randn({2, 3}, tt::kFloat64)).dtype() == tt::kFloat64);
}

TEST_CASE("Linear without bias has no bias parameter", "[module05]") {
  nn::Linear fc(nn::LinearOptions(4, 3).bias(false));
  CHECK_FALSE(fc.bias.defined());
  CHECK(fc.named_parameters().keys() == std::vector<std::string>{"weight"});
  CHECK(fc.num_parameters() == 12);
  CHECK(fc.state_dict().keys() == std::vector<std::string>{"weight"});
  Tensor x = tt::randn({2, 4});
  CHECK_ALLCLOSE(fc(x), x.matmul(fc.weight.t()), 1e-6, 1e-6);
  CHECK(fc.extra_repr() == "in_features=4, out_features=3, bias=false");
}

TEST_CASE("Linear rejects bad shapes with a message that names both", "[module05]") {
  nn::Linear fc(3, 2);
  REQUIRE_THROWS_WITH(fc(tt::zeros({4, 5})), "linear: the input's last dim must equal the weight's in_features, "
                                              "got input [4, 5] and weight [2, 3]");
  REQUIRE_THROWS_AS(fc(tt::zeros({4, 5})), tt::ShapeError);
  REQUIRE_THROWS_WITH(tt::F::linear(tt::zeros({4, 3}), tt::zeros({2, 3}), tt::zeros({3})),
                      Contains("expected bias of shape [2], got [3]"));
  REQUIRE_THROWS_WITH(tt::F::linear(tt::zeros({4, 3}), tt::zeros({3})),
                      Contains("expected input [*, in] and weight [out, in]"));
  REQUIRE_THROWS_WITH(fc(tt::zeros({4, 3}, tt::kFloat64)), Contains("same dtype"));
  REQUIRE_THROWS_WITH(nn::Linear(-1, 2), Contains("in_features and out_features must be >= 0"));
}

// --- Linear backward -----------------------------------------------------------------------------

TEST_CASE("Linear backward by hand: dX = dY W, dW = dY^T X, db = sum of dY", "[module05][exercise]") {
  auto fc = known_linear();
  Tensor x = tt::tensor({{1.0, 2.0, 3.0}, {-1.0, 0.0, 1.0}}).requires_grad_();
  Tensor G = tt::tensor({{1.0, 0.0}, {0.0, 2.0}});  // the upstream gradient dY
  (fc->forward(x) * G).sum().backward();
  // dX = G W: row 0 = 1 * W[0], row 1 = 2 * W[1].
  CHECK_ALLCLOSE(x.grad(), tt::tensor({{1.0, -1.0, 2.0}, {0.0, 6.0, 2.0}}), 0, 0);
  // dW = G^T X: row 0 = 1 * X[0], row 1 = 2 * X[1].
  CHECK_ALLCLOSE(fc->weight.grad(), tt::tensor({{1.0, 2.0, 3.0}, {-2.0, 0.0, 2.0}}), 0, 0);
  // db = the column sums of G.
  CHECK_ALLCLOSE(fc->bias.grad(), tt::tensor({1.0, 2.0}), 0, 0);
  CHECK(x.grad().shape() == x.shape());
  CHECK(fc->weight.grad().shape() == fc->weight.shape());
  CHECK(fc->bias.grad().shape() == fc->bias.shape());
}

TEST_CASE("Linear backward of a 3-D input is the formulas on its flattened rows", "[module05][exercise]") {
  tt::manual_seed(51);
  nn::Linear fc(4, 3);
  Tensor x = tt::randn({2, 5, 4}).requires_grad_();
  Tensor G = tt::randn({2, 5, 3});
  Tensor y = fc(x);
  TensorList g = tt::autograd::grad({y}, {x, fc.weight, fc.bias}, {G});
  Tensor G2 = G.reshape({10, 3}), X2 = x.detach().reshape({10, 4}), W = fc.weight.detach();
  CHECK(g[0].shape() == Shape{2, 5, 4});
  CHECK_ALLCLOSE(g[0], G2.matmul(W).reshape({2, 5, 4}), 1e-5, 1e-6);
  CHECK_ALLCLOSE(g[1], G2.t().matmul(X2), 1e-5, 1e-5);
  CHECK_ALLCLOSE(g[2], G2.sum({0}), 1e-5, 1e-5);
}

TEST_CASE("gradcheck passes for linear in float64", "[module05][exercise]") {
  tt::manual_seed(52);
  auto with_bias = [](const TensorList& in) { return tt::F::linear(in[0], in[1], in[2]); };
  auto no_bias = [](const TensorList& in) { return tt::F::linear(in[0], in[1]); };
  check_grad(with_bias, {leaf({3, 4}), leaf({2, 4}), leaf({2})});      // [R, in]
  check_grad(with_bias, {leaf({2, 3, 4}), leaf({5, 4}), leaf({5})});   // leading dims
  check_grad(with_bias, {leaf({4}), leaf({3, 4}), leaf({3})});         // one vector
  check_grad(no_bias, {leaf({3, 4}), leaf({2, 4})});
  // A transposed weight leaf (not contiguous) and a transposed input.
  check_grad(with_bias, {tt::randn({4, 3}, tt::kFloat64).t().requires_grad_(),
                         tt::randn({4, 2}, tt::kFloat64).t().requires_grad_(), leaf({2})});
  // Only some inputs require grad: data in, or a frozen weight.
  check_grad(with_bias, {tt::randn({3, 4}, tt::kFloat64), leaf({2, 4}), leaf({2})});
  check_grad(with_bias, {leaf({3, 4}), tt::randn({2, 4}, tt::kFloat64), tt::randn({2}, tt::kFloat64)});
  // The backward is written with differentiable ops, so second derivatives work too.
  tt::autograd::GradcheckResult r =
      tt::autograd::gradgradcheck(tt::autograd::GradcheckFn(with_bias), {leaf({3, 4}), leaf({2, 4}), leaf({2})});
  INFO(r.message);
  CHECK(r.ok);
}

TEST_CASE("a frozen Linear passes gradients to its input and keeps none", "[module05][exercise]") {
  auto fc = known_linear();
  fc->weight.requires_grad_(false);
  fc->bias.requires_grad_(false);
  Tensor x = tt::tensor({{1.0, 2.0, 3.0}}).requires_grad_();
  fc->forward(x).sum().backward();
  CHECK_ALLCLOSE(x.grad(), tt::tensor({{1.0, 2.0, 3.0}}), 0, 0);  // column sums of W
  CHECK_FALSE(fc->weight.grad().defined());
  CHECK_FALSE(fc->bias.grad().defined());
  CHECK(fc->num_parameters(/*only_trainable=*/true) == 0);
  CHECK(fc->num_parameters() == 8);
}

// --- the Module tree -----------------------------------------------------------------------------

TEST_CASE("registration builds dotted names in registration order", "[module05]") {
  Nested net;
  const std::vector<std::string> expected = {"scale", "encoder.0.weight", "encoder.0.bias",
                                             "encoder.2.weight", "encoder.2.bias", "head.weight"};
  CHECK(net.named_parameters().keys() == expected);
  CHECK(net.parameters().size() == expected.size());
  for (const Tensor& p : net.parameters()) CHECK(p.requires_grad());
  CHECK(net.named_parameters(/*recurse=*/false).keys() == std::vector<std::string>{"scale"});
  CHECK(net.children().size() == 2);
  CHECK(net.named_children().keys() == std::vector<std::string>{"encoder", "head"});
  CHECK(net.named_modules().keys() ==
        std::vector<std::string>{"", "encoder", "encoder.0", "encoder.1", "encoder.2", "head"});
  // A registered tensor is a handle: the entry and the member are one tensor.
  CHECK(net.named_parameters()["head.weight"].is_same(net.head->weight));
  CHECK(net.named_parameters()["encoder.2.bias"].is_same(net.encoder->ptr<nn::Linear>(2)->bias));

  TinyMLP mlp;
  CHECK(mlp.named_parameters().keys() == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  CHECK(mlp.named_buffers().keys() == std::vector<std::string>{"input_mean"});
  CHECK_FALSE(mlp.input_mean.requires_grad());  // a buffer is state, not something to train
}

TEST_CASE("register_parameter sets requires_grad on the caller's handle", "[module05]") {
  nn::Module m;
  Tensor w = tt::randn({2, 3});
  CHECK_FALSE(w.requires_grad());
  Tensor& stored = m.register_parameter("w", w);
  CHECK(w.requires_grad());
  CHECK(stored.is_same(w));
  Tensor frozen = m.register_parameter("frozen", tt::zeros({2}), /*requires_grad=*/false);
  CHECK_FALSE(frozen.requires_grad());
  CHECK(m.num_parameters() == 8);
  CHECK(m.num_parameters(/*only_trainable=*/true) == 6);
}

TEST_CASE("registration refuses non-leaves, dotted names and duplicates", "[module05]") {
  nn::Module m;
  Tensor w = tt::ones({2}).requires_grad_();
  REQUIRE_THROWS_WITH(m.register_parameter("twice", w * 2),
                      "Module::register_parameter: \"twice\" must be a leaf tensor (use detach())");
  m.register_parameter("twice", (w * 2).detach());  // detach() makes it a new leaf
  REQUIRE_THROWS_WITH(m.register_parameter("a.b", tt::zeros({2})),
                      "Module::register_parameter: the name must not contain '.', got \"a.b\"");
  REQUIRE_THROWS_WITH(m.register_parameter("", tt::zeros({2})), Contains("must not be empty"));
  REQUIRE_THROWS_WITH(m.register_parameter("twice", tt::zeros({2})), Contains("\"twice\" is already a parameter"));
  REQUIRE_THROWS_WITH(m.register_buffer("twice", tt::zeros({2})), Contains("already a parameter"));
  REQUIRE_THROWS_WITH(m.register_module("twice", std::make_shared<nn::ReLU>()), Contains("already a parameter"));
  REQUIRE_THROWS_WITH(m.register_parameter("ints", tt::zeros({2}, tt::kInt64)), Contains("floating-point"));
  CHECK(m.named_parameters().keys() == std::vector<std::string>{"twice"});  // the failures added nothing
}

TEST_CASE("train and eval reach every descendant", "[module05]") {
  Nested net;
  CHECK(net.is_training());
  net.eval();
  CHECK_FALSE(net.is_training());
  CHECK_FALSE(net.encoder->is_training());
  CHECK_FALSE(net.encoder->ptr<nn::Linear>(2)->is_training());
  CHECK_FALSE(net.head->is_training());
  net.train();
  CHECK(net.encoder->ptr<nn::Tanh>(1)->is_training());
  // eval() is not NoGradGuard: the output still records a graph.
  net.eval();
  CHECK(net.forward(tt::randn({2, 3})).requires_grad());
}

TEST_CASE("gradients reach every parameter, and zero_grad drops or zeroes them", "[module05]") {
  tt::manual_seed(53);
  Nested net;
  Tensor x = tt::randn({5, 3});
  net.forward(x).sum().backward();
  for (const auto& [name, p] : net.named_parameters()) {
    INFO(name);
    REQUIRE(p.grad().defined());
    CHECK(p.grad().shape() == p.shape());
  }
  // head.weight's gradient is the column sums of what reached it: twice after two backwards.
  Tensor once = net.head->weight.grad().clone();
  net.forward(x).sum().backward();
  CHECK_ALLCLOSE(net.head->weight.grad(), once * 2, 1e-6, 1e-6);
  net.zero_grad(/*set_to_none=*/false);
  for (const Tensor& p : net.parameters()) {
    REQUIRE(p.grad().defined());
    CHECK(p.grad().abs().sum().item<float>() == 0.0f);
  }
  net.zero_grad();
  for (const Tensor& p : net.parameters()) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("parameter counts by hand, and the printed tree", "[module05]") {
  TinyMLP mlp;
  CHECK(mlp.num_parameters() == (4 * 8 + 8) + (8 * 3 + 3));  // buffers are not parameters
  CHECK(printed(mlp) ==
        "TinyMLP(\n"
        "  (fc1): Linear(in_features=4, out_features=8, bias=true)  # 40 params\n"
        "  (drop): Dropout(p=0.5)\n"
        "  (fc2): Linear(in_features=8, out_features=3, bias=true)  # 27 params\n"
        ")\n"
        "parameters: 67");
  nn::Sequential mnist(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  CHECK(mnist.num_parameters() == 784 * 256 + 256 + 256 * 10 + 10);
  CHECK(printed(mnist) ==
        "Sequential(\n"
        "  (0): Linear(in_features=784, out_features=256, bias=true)  # 200,960 params\n"
        "  (1): ReLU()\n"
        "  (2): Linear(in_features=256, out_features=10, bias=true)  # 2,570 params\n"
        ")\n"
        "parameters: 203,530");
  // Frozen parameters are counted apart.
  mnist.ptr<nn::Linear>(0)->weight.requires_grad_(false);
  CHECK_THAT(printed(mnist), Contains("parameters: 203,530 (2,826 trainable)"));
  CHECK_THAT(printed(Nested()), Contains("  (encoder): Sequential(\n    (0): Linear(in_features=3, out_features=4, bias=true)"));
}

TEST_CASE("to(kFloat64) converts parameters in place and keeps them trainable", "[module05]") {
  TinyMLP mlp;
  Tensor w = mlp.fc1->weight;
  std::vector<float> before = w.to_vector<float>();
  mlp.to(tt::kFloat64);
  CHECK(w.dtype() == tt::kFloat64);  // the caller's handle sees the new data
  CHECK(w.is_same(mlp.fc1->weight));
  CHECK(w.requires_grad());
  CHECK(mlp.input_mean.dtype() == tt::kFloat64);
  std::vector<double> after = w.to_vector<double>();
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i] == double(before[i]));
  mlp.eval();
  CHECK(mlp.forward(tt::randn({2, 4}, tt::kFloat64)).dtype() == tt::kFloat64);
  REQUIRE_THROWS_WITH(mlp.to(tt::kInt64), Contains("floating-point"));
}

TEST_CASE("apply visits children first and can re-initialize every Linear", "[module05]") {
  Nested net;
  std::vector<std::string> seen;
  net.apply([&](nn::Module& m) { seen.push_back(m.name()); });
  CHECK(seen == std::vector<std::string>{"Linear", "Tanh", "Linear", "Sequential", "Linear", "Nested"});
  net.apply([](nn::Module& m) {
    if (auto* fc = dynamic_cast<nn::Linear*>(&m)) init::constant_(fc->weight, 0.5);
  });
  CHECK(net.head->weight.min().item<float>() == 0.5f);
  CHECK(net.encoder->ptr<nn::Linear>(0)->weight.max().item<float>() == 0.5f);
  CHECK(net.head->weight.is_leaf());  // initialization records no graph
}

// --- initialization ------------------------------------------------------------------------------

TEST_CASE("fan in, fan out and the gains", "[module05]") {
  // A Linear weight is [out, in]: fan_in = in, fan_out = out.
  CHECK(init::calculate_fan_in_and_fan_out(tt::empty({400, 300})) == std::pair<int64_t, int64_t>{300, 400});
  // With more dims (a convolution kernel [out, in, k, k]) each fan is multiplied by k * k.
  CHECK(init::calculate_fan_in_and_fan_out(tt::empty({8, 4, 3, 3})) == std::pair<int64_t, int64_t>{36, 72});
  REQUIRE_THROWS_WITH(init::calculate_fan_in_and_fan_out(tt::empty({5})), Contains("at least 2 dims, got [5]"));
  CHECK(init::calculate_gain("linear") == 1.0);
  CHECK(init::calculate_gain("sigmoid") == 1.0);
  CHECK(init::calculate_gain("tanh") == Approx(5.0 / 3.0));
  CHECK(init::calculate_gain("relu") == Approx(std::sqrt(2.0)));
  CHECK(init::calculate_gain("leaky_relu", 0.0) == Approx(std::sqrt(2.0)));
  // PyTorch's Linear default: slope sqrt(5) gives gain sqrt(2 / 6) = sqrt(1 / 3).
  CHECK(init::calculate_gain("leaky_relu", std::sqrt(5.0)) == Approx(std::sqrt(1.0 / 3.0)));
  REQUIRE_THROWS_WITH(init::calculate_gain("swish"), Contains("unknown nonlinearity \"swish\""));
}

TEST_CASE("xavier_uniform_ and xavier_normal_ follow their formulas", "[module05][exercise]") {
  tt::manual_seed(54);
  Tensor w = tt::empty({400, 300});
  // U(-a, a), a = gain sqrt(6 / (fan_in + fan_out)); a uniform has variance a^2 / 3.
  Tensor same = init::xavier_uniform_(w);  // returns the same tensor (a handle), filled in place
  CHECK(same.is_same(w));
  const double a = std::sqrt(6.0 / 700.0);
  CHECK(w.abs().max().item<double>() <= a);
  CHECK(w.abs().max().item<double>() > 0.99 * a);
  CHECK(std::fabs(w.mean().item<double>()) < 0.01 * a);
  CHECK(w.var().item<double>() == Approx(a * a / 3).epsilon(0.02));
  init::xavier_uniform_(w, 2.0);
  CHECK(w.abs().max().item<double>() <= 2 * a);
  CHECK(w.var().item<double>() == Approx(4 * a * a / 3).epsilon(0.02));
  // N(0, s^2), s = gain sqrt(2 / (fan_in + fan_out)).
  init::xavier_normal_(w);
  CHECK(w.std().item<double>() == Approx(std::sqrt(2.0 / 700.0)).epsilon(0.02));
  init::xavier_normal_(w, 5.0 / 3.0);
  CHECK(w.std().item<double>() == Approx(5.0 / 3.0 * std::sqrt(2.0 / 700.0)).epsilon(0.02));
  // Seeded, and the same generator state gives the same draw.
  tt::manual_seed(55);
  init::xavier_uniform_(w);
  Tensor first = w.clone();
  tt::manual_seed(55);
  init::xavier_uniform_(w);
  CHECK_ALLCLOSE(w, first, 0, 0);
  // A parameter stays a leaf that requires grad.
  nn::Linear fc(300, 400);
  init::xavier_normal_(fc.weight);
  CHECK(fc.weight.is_leaf());
  CHECK(fc.weight.requires_grad());
}

TEST_CASE("kaiming_uniform_ and kaiming_normal_ follow their formulas", "[module05][exercise]") {
  tt::manual_seed(56);
  Tensor w = tt::empty({400, 300});  // fan_in 300, fan_out 400
  // U(-b, b), b = gain sqrt(3 / fan); the default nonlinearity is leaky_relu with a = 0: gain sqrt(2).
  init::kaiming_uniform_(w);
  const double b_in = std::sqrt(2.0) * std::sqrt(3.0 / 300.0);
  CHECK(w.abs().max().item<double>() <= b_in);
  CHECK(w.abs().max().item<double>() > 0.99 * b_in);
  CHECK(w.var().item<double>() == Approx(2.0 / 300.0).epsilon(0.02));  // gain^2 / fan
  init::kaiming_uniform_(w, 0.0, init::FanMode::FanOut, "relu");
  CHECK(w.abs().max().item<double>() <= std::sqrt(6.0 / 400.0));
  CHECK(w.var().item<double>() == Approx(2.0 / 400.0).epsilon(0.02));
  init::kaiming_uniform_(w, 0.0, init::FanMode::FanIn, "tanh");
  CHECK(w.var().item<double>() == Approx(25.0 / 9.0 / 300.0).epsilon(0.02));
  // N(0, s^2), s = gain / sqrt(fan).
  init::kaiming_normal_(w, 0.0, init::FanMode::FanIn, "relu");
  CHECK(w.std().item<double>() == Approx(std::sqrt(2.0 / 300.0)).epsilon(0.02));
  init::kaiming_normal_(w, 0.0, init::FanMode::FanOut, "linear");
  CHECK(w.std().item<double>() == Approx(std::sqrt(1.0 / 400.0)).epsilon(0.02));
  init::kaiming_normal_(w, 0.2);  // leaky_relu with slope 0.2: gain sqrt(2 / 1.04)
  CHECK(w.std().item<double>() == Approx(std::sqrt(2.0 / 1.04 / 300.0)).epsilon(0.02));
  Tensor no_inputs = tt::empty({3, 0});
  REQUIRE_THROWS_WITH(init::kaiming_uniform_(no_inputs), Contains("zero fan"));
  REQUIRE_THROWS_WITH(init::kaiming_normal_(no_inputs), Contains("zero fan"));
}

TEST_CASE("Linear's default init is U(+-1/sqrt(in)) for weight and bias", "[module05][exercise]") {
  tt::manual_seed(57);
  nn::Linear fc(256, 300);
  const double bound = 1.0 / std::sqrt(256.0);
  CHECK(fc.weight.abs().max().item<double>() <= bound);
  CHECK(fc.weight.abs().max().item<double>() > 0.99 * bound);
  CHECK(fc.bias.abs().max().item<double>() <= bound);
  CHECK(fc.weight.var().item<double>() == Approx(bound * bound / 3).epsilon(0.02));
  // It is kaiming_uniform_ with a = sqrt(5), drawn first, from the same generator.
  tt::manual_seed(58);
  nn::Linear again(256, 300);
  tt::manual_seed(58);
  Tensor w = tt::empty({300, 256});
  init::kaiming_uniform_(w, std::sqrt(5.0));
  CHECK_ALLCLOSE(again.weight, w, 0, 0);
  // reset_parameters draws again.
  Tensor old = again.weight.clone();
  again.reset_parameters();
  CHECK_FALSE(tt::testing::allclose(again.weight, old, 0, 0));
  CHECK(again.weight.abs().max().item<double>() <= bound);
}

TEST_CASE("init decides whether a deep ReLU stack keeps its signal", "[module05][exercise]") {
  // 20 layers of Linear(64, 64) + ReLU, zero biases, unit-variance input. Each layer multiplies
  // E[h^2] by in * s^2 / 2 (ReLU keeps half): 1 for Kaiming, 1/2 for Xavier, 1/6 for the default,
  // 64e-4 / 2 for N(0, 0.01^2).
  nn::Sequential stack;
  for (int i = 0; i < 20; ++i) {
    stack.push_back(nn::Linear(64, 64));
    stack.push_back(nn::ReLU());
  }
  auto final_std = [&stack](const std::function<void(nn::Linear&)>& fill) {
    tt::manual_seed(59);
    for (int64_t i = 0; i < 40; i += 2) {
      nn::Linear& fc = *stack.ptr<nn::Linear>(i);
      fill(fc);
      init::zeros_(fc.bias);
    }
    tt::NoGradGuard no_grad;
    return stack(tt::randn({256, 64})).to(tt::kFloat64).std().item<double>();
  };
  double kaiming = final_std([](nn::Linear& fc) { init::kaiming_normal_(fc.weight, 0.0, init::FanMode::FanIn, "relu"); });
  double xavier = final_std([](nn::Linear& fc) { init::xavier_uniform_(fc.weight); });
  double pytorch_default = final_std([](nn::Linear& fc) { fc.reset_parameters(); });
  double too_small = final_std([](nn::Linear& fc) { init::normal_(fc.weight, 0.0, 0.01); });
  CHECK(kaiming > 0.2);
  CHECK(kaiming < 5.0);
  CHECK(xavier < 0.01);           // sqrt(1/2) per layer: 2^-10 ~ 1e-3 of the kaiming scale
  CHECK(pytorch_default < 1e-6);  // sqrt(1/6) per layer
  CHECK(too_small < 1e-20);
}

// --- Sequential ----------------------------------------------------------------------------------

TEST_CASE("Sequential chains its items and names them by index", "[module05]") {
  tt::manual_seed(60);
  auto first = std::make_shared<nn::Linear>(4, 8);
  nn::Sequential seq(first, nn::ReLU(), nn::Linear(8, 3));
  CHECK(seq.size() == 3);
  CHECK(seq.named_parameters().keys() == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(seq.ptr<nn::Linear>(0) == first);  // a shared_ptr item is shared with the caller
  Tensor x = tt::randn({5, 4});
  CHECK_ALLCLOSE(seq(x), seq.ptr<nn::Linear>(2)->forward(first->forward(x).relu()), 0, 0);
  CHECK(seq[1]->name() == "ReLU");
  CHECK(seq[-1]->name() == "Linear");
  REQUIRE_THROWS_WITH(seq.ptr<nn::Linear>(1), "Sequential::ptr: item 1 is a ReLU, not the requested type");
  REQUIRE_THROWS_WITH(seq[3], "Sequential: index 3 is out of range for 3 items");
  // Items can be added later; an empty Sequential returns its input.
  seq.push_back(nn::Tanh());
  CHECK(seq.named_modules().keys() == std::vector<std::string>{"", "0", "1", "2", "3"});
  nn::Sequential empty;
  CHECK(empty(x).is_same(x));
}

// --- Dropout -------------------------------------------------------------------------------------

TEST_CASE("Dropout zeroes with probability p and scales survivors by 1/(1-p)", "[module05][exercise]") {
  tt::manual_seed(61);
  nn::Dropout drop(0.25);
  Tensor x = tt::ones({400, 500});
  Tensor y = drop(x);
  CHECK(y.shape() == x.shape());
  std::vector<float> v = y.to_vector<float>();
  int64_t dropped = 0, kept = 0;
  for (float e : v) {
    if (e == 0.0f) ++dropped;
    if (e == float(1.0 / 0.75)) ++kept;
  }
  CHECK(dropped + kept == int64_t(v.size()));  // nothing but 0 and 1/(1-p)
  // 200,000 draws: the fraction's standard error is 0.001.
  CHECK(double(dropped) / double(v.size()) == Approx(0.25).margin(0.005));
  // Inverted scaling keeps the expectation: E[y] = x.
  CHECK(y.mean().item<double>() == Approx(1.0).margin(0.01));
  // On any input, each element is either 0 or x / (1 - p).
  Tensor z = tt::randn({50, 40});
  Tensor dz = tt::F::dropout(z, 0.5);
  Tensor kept_mask = (dz != 0.0).to(tt::kFloat32);
  CHECK_ALLCLOSE(dz, z * kept_mask * 2.0, 0, 1e-6);
  CHECK(dz.grad_fn() == nullptr);  // z requires no grad: no graph
}

TEST_CASE("Dropout is seeded: the same seed drops the same elements", "[module05][exercise]") {
  nn::Dropout drop(0.5);
  Tensor x = tt::ones({8, 16});
  tt::manual_seed(62);
  Tensor a = drop(x);
  Tensor b = drop(x);  // the generator moved on: another mask
  tt::manual_seed(62);
  Tensor c = drop(x);
  CHECK_ALLCLOSE(c, a, 0, 0);
  CHECK_FALSE(tt::testing::allclose(b, a, 0, 0));
  // A private generator does not disturb the global one.
  tt::Generator gen(7), gen_again(7);
  CHECK_ALLCLOSE(tt::F::dropout(x, 0.5, true, &gen), tt::F::dropout(x, 0.5, true, &gen_again), 0, 0);
}

TEST_CASE("Dropout's gradient goes through the same mask", "[module05][exercise]") {
  nn::Dropout drop(0.2);
  Tensor x = tt::randn({6, 7}).requires_grad_();
  tt::manual_seed(63);
  Tensor y = drop(x);
  Tensor G = tt::randn({6, 7});
  (y * G).sum().backward();
  // y = x * scale with scale 0 or 1/0.8, so dL/dx = G * scale = G * y / x.
  Tensor scale = (y.detach() != 0.0).to(tt::kFloat32) / 0.8;
  CHECK_ALLCLOSE(x.grad(), G * scale, 1e-6, 1e-6);
  // gradcheck in float64 with a fixed mask: reseed inside fn so every call draws the same one.
  auto fn = [](const TensorList& in) {
    tt::manual_seed(64);
    return tt::F::dropout(in[0], 0.3);
  };
  check_grad(fn, {leaf({4, 5})});
}

TEST_CASE("Dropout in eval mode, with p = 0 and with p = 1", "[module05][exercise]") {
  nn::Dropout drop(0.5);
  Tensor x = tt::randn({3, 4}).requires_grad_();
  drop.eval();
  CHECK(drop(x).is_same(x));  // the identity: the very same tensor
  drop.train();
  CHECK_FALSE(drop(x).is_same(x));
  CHECK(tt::F::dropout(x, 0.0).is_same(x));
  CHECK(tt::F::dropout(x, 0.5, /*training=*/false).is_same(x));
  // p = 1 drops everything, and so does the gradient.
  Tensor all = tt::F::dropout(x, 1.0);
  CHECK(all.abs().sum().item<float>() == 0.0f);
  all.sum().backward();
  CHECK(x.grad().abs().sum().item<float>() == 0.0f);
  // Inside a model: eval() makes the output deterministic, train() random again.
  tt::manual_seed(65);
  TinyMLP mlp;
  Tensor in = tt::randn({4, 4});
  mlp.eval();
  CHECK_ALLCLOSE(mlp.forward(in), mlp.forward(in), 0, 0);
  mlp.train();
  CHECK_FALSE(tt::testing::allclose(mlp.forward(in), mlp.forward(in), 0, 0));
}

TEST_CASE("Dropout rejects bad probabilities and integer inputs", "[module05][exercise]") {
  REQUIRE_THROWS_WITH(nn::Dropout(1.5), "nn::Dropout: probability must be in [0, 1], got 1.5");
  REQUIRE_THROWS_WITH(tt::F::dropout(tt::ones({2}), -0.1), "dropout: probability must be in [0, 1], got -0.1");
  REQUIRE_THROWS_WITH(tt::F::dropout(tt::zeros({2}, tt::kInt64), 0.5), Contains("floating-point"));
  CHECK(nn::Dropout(0.1).extra_repr() == "p=0.1");
}

// --- state_dict ----------------------------------------------------------------------------------

TEST_CASE("state_dict round trip restores a model exactly", "[module05]") {
  tt::manual_seed(66);
  TinyMLP a;
  {
    tt::NoGradGuard no_grad;
    a.input_mean.fill_(0.25);
  }
  tt::manual_seed(67);
  TinyMLP b;
  nn::StateDict sd = a.state_dict();
  // A module's own parameters, then its own buffers, then each child's.
  CHECK(sd.keys() == std::vector<std::string>{"input_mean", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  // Detached handles on the module's storage, not copies.
  CHECK(sd["fc1.weight"].data_ptr<float>() == a.fc1->weight.data_ptr<float>());
  CHECK_FALSE(sd["fc1.weight"].requires_grad());

  a.eval();
  b.eval();
  Tensor x = tt::randn({3, 4});
  CHECK_FALSE(tt::testing::allclose(a.forward(x), b.forward(x), 0, 1e-3));
  Tensor b_weight = b.fc1->weight;
  nn::LoadResult r = b.load_state_dict(sd);
  CHECK(r.missing_keys.empty());
  CHECK(r.unexpected_keys.empty());
  CHECK_ALLCLOSE(b.forward(x), a.forward(x), 0, 0);
  CHECK_ALLCLOSE(b.input_mean, tt::full({4}, 0.25), 0, 0);  // buffers travel too
  CHECK(b.fc1->weight.is_same(b_weight));                   // loaded in place: the same tensor
  CHECK(b.fc1->weight.requires_grad());
  // The copy is independent: changing a afterwards leaves b alone.
  {
    tt::NoGradGuard no_grad;
    a.fc2->bias.fill_(100.0);
  }
  CHECK(b.fc2->bias.max().item<float>() < 100.0f);
}

TEST_CASE("load_state_dict checks every key and shape and changes nothing on error", "[module05]") {
  tt::manual_seed(68);
  TinyMLP net;
  nn::StateDict good = net.state_dict();
  std::vector<Tensor> before;
  for (const auto& [k, t] : good) before.push_back(t.clone());
  auto unchanged = [&] {
    size_t i = 0;
    for (const auto& [k, t] : net.state_dict()) {
      CHECK_ALLCLOSE(t, before[i], 0, 0);
      ++i;
    }
  };
  // Zeros everywhere, except what each case changes.
  auto zeros_except = [&](const std::string& skip) {
    nn::StateDict sd;
    for (const auto& [k, t] : good)
      if (k != skip) sd.insert(k, tt::zeros_like(t));
    return sd;
  };

  nn::StateDict missing = zeros_except("fc2.bias");
  REQUIRE_THROWS_WITH(net.load_state_dict(missing), Contains("missing keys: fc2.bias"));
  REQUIRE_THROWS_WITH(net.load_state_dict(missing), Contains("nothing was changed"));
  unchanged();

  nn::StateDict unexpected = zeros_except("");
  unexpected.insert("fc3.weight", tt::zeros({1}));
  REQUIRE_THROWS_WITH(net.load_state_dict(unexpected), Contains("unexpected keys: fc3.weight"));
  unchanged();

  nn::StateDict wrong_shape = zeros_except("");
  wrong_shape.insert_or_assign("fc1.weight", tt::zeros({4, 8}));  // transposed by mistake
  REQUIRE_THROWS_WITH(net.load_state_dict(wrong_shape),
                      Contains("fc1.weight: shape [4, 8] in the state dict, [8, 4] in the module"));
  REQUIRE_THROWS_AS(net.load_state_dict(wrong_shape, /*strict=*/false), tt::ShapeError);  // shapes always count
  unchanged();

  // Not strict: the missing and unexpected keys are reported, the rest is loaded.
  nn::LoadResult r = net.load_state_dict(missing, /*strict=*/false);
  CHECK(r.missing_keys == std::vector<std::string>{"fc2.bias"});
  CHECK(r.unexpected_keys.empty());
  CHECK(net.fc1->weight.abs().sum().item<float>() == 0.0f);
  CHECK_ALLCLOSE(net.fc2->bias, before[4], 0, 0);
}
