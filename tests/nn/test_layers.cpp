// Layers of module 05 (nn/linear.h, nn/dropout.h, nn/init.h): Linear against known values and its
// shape rules, the default initialization's bounds, Dropout's seeding and statistics, Flatten.
#include <cmath>

#include "test_util.h"

using namespace tt;

TEST_CASE("Linear computes x Wt + b over any leading dims", "[nn][linear]") {
  nn::Linear fc(3, 2);
  CHECK(fc.weight.shape() == Shape{2, 3});
  CHECK(fc.bias.shape() == Shape{2});
  {
    NoGradGuard g;
    fc.weight.copy_(tensor({{1.0, 2.0, 3.0}, {-1.0, 0.5, 0.0}}));
    fc.bias.copy_(tensor({0.5, -2.0}));
  }
  Tensor x = tensor({{1.0, 0.0, -1.0}, {2.0, 2.0, 2.0}});
  CHECK_ALLCLOSE(fc(x), tensor({{-1.5, -3.0}, {12.5, -3.0}}), 0, 1e-6);
  // [*, in] -> [*, out]: 3-D and 1-D inputs equal the 2-D result row by row.
  Tensor x3 = randn({4, 5, 3});
  Tensor y3 = fc(x3);
  CHECK(y3.shape() == Shape{4, 5, 2});
  CHECK_ALLCLOSE(y3.reshape({20, 2}), x3.reshape({20, 3}).matmul(fc.weight.t()) + fc.bias, 1e-5, 1e-6);
  CHECK(fc(tensor({1.0, 0.0, -1.0})).shape() == Shape{2});
  // A non-contiguous input gives the same result as its contiguous copy.
  Tensor xt = randn({3, 6}).t();
  CHECK_ALLCLOSE(fc(xt), fc(xt.contiguous()), 0, 0);
  // No rows: an empty result of the right shape.
  CHECK(fc(zeros({0, 3})).shape() == Shape{0, 2});
}

TEST_CASE("Linear without bias has no bias parameter", "[nn][linear]") {
  nn::Linear fc(nn::LinearOptions(4, 3).bias(false));
  CHECK_FALSE(fc.bias.defined());
  CHECK(fc.named_parameters().keys() == std::vector<std::string>{"weight"});
  CHECK(fc.state_dict().size() == 1);
  Tensor x = randn({2, 4});
  CHECK_ALLCLOSE(fc(x), x.matmul(fc.weight.t()), 1e-6, 1e-6);
}

TEST_CASE("Linear gradients match the matmul formulation", "[nn][linear]") {
  manual_seed(7);
  nn::Linear fc(3, 4);
  Tensor x = randn({2, 5, 3}, TensorOptions().requires_grad(true));
  Tensor g = randn({2, 5, 4});
  (fc(x) * g).sum().backward();
  Tensor w = fc.weight.detach().requires_grad_(), b = fc.bias.detach().requires_grad_();
  Tensor x2 = x.detach().requires_grad_();
  ((x2.matmul(w.t()) + b) * g).sum().backward();
  CHECK_ALLCLOSE(x.grad(), x2.grad(), 1e-5, 1e-6);
  CHECK_ALLCLOSE(fc.weight.grad(), w.grad(), 1e-5, 1e-5);
  CHECK_ALLCLOSE(fc.bias.grad(), b.grad(), 1e-5, 1e-5);
  CHECK(fc(x).grad_fn()->name() == "ViewBackward0");  // the [R, out] GEMM result reshaped to [2, 5, 4]
  CHECK(fc(x.reshape({10, 3})).grad_fn()->name() == "LinearBackward0");
}

TEST_CASE("Linear rejects bad shapes and dtypes", "[nn][linear][errors]") {
  nn::Linear fc(3, 2);
  REQUIRE_THROWS_WITH(fc(zeros({4, 5})), Catch::Contains("linear: the input's last dim must equal the weight's "
                                                         "in_features, got input [4, 5] and weight [2, 3]"));
  REQUIRE_THROWS_AS(fc(zeros({4, 5})), ShapeError);
  REQUIRE_THROWS_WITH(fc(zeros({4, 3}, kFloat64)), Catch::Contains("same dtype"));
  REQUIRE_THROWS_WITH(linear(zeros({4, 3}), zeros({2, 3}), zeros({3})), Catch::Contains("expected bias of shape [2]"));
  REQUIRE_THROWS_WITH(linear(zeros({4, 3}), zeros({3})), Catch::Contains("expected input [*, in] and weight [out, in]"));
  REQUIRE_THROWS_WITH(nn::Linear(-1, 2), Catch::Contains("must be >= 0"));
}

TEST_CASE("Linear's default init is PyTorch's: U(+-1/sqrt(in))", "[nn][linear][init]") {
  manual_seed(11);
  nn::Linear fc(256, 300);
  double bound = 1.0 / std::sqrt(256.0);
  CHECK(fc.weight.abs().max().item<double>() <= bound);
  CHECK(fc.bias.abs().max().item<double>() <= bound);
  // Uniform on [-a, a]: mean 0, variance a^2 / 3 (76,800 samples: tight).
  CHECK(std::fabs(fc.weight.mean().item<double>()) < 0.01 * bound);
  CHECK(fc.weight.var().item<double>() == Approx(bound * bound / 3).epsilon(0.02));
  // Seeded: the same seed gives the same layer.
  manual_seed(11);
  nn::Linear again(256, 300);
  CHECK_ALLCLOSE(again.weight, fc.weight, 0, 0);
}

TEST_CASE("init functions follow their formulas", "[nn][init]") {
  manual_seed(12);
  Tensor w = empty({400, 300});
  auto [fan_in, fan_out] = nn::init::calculate_fan_in_and_fan_out(w);
  CHECK(fan_in == 300);
  CHECK(fan_out == 400);
  CHECK(nn::init::calculate_fan_in_and_fan_out(empty({8, 4, 3, 3})) == std::pair<int64_t, int64_t>{36, 72});
  nn::init::xavier_uniform_(w);
  double a = std::sqrt(6.0 / 700.0);
  CHECK(w.abs().max().item<double>() <= a);
  CHECK(w.var().item<double>() == Approx(a * a / 3).epsilon(0.02));
  nn::init::xavier_normal_(w, 2.0);
  CHECK(w.std().item<double>() == Approx(2.0 * std::sqrt(2.0 / 700.0)).epsilon(0.02));
  nn::init::kaiming_normal_(w, 0.0, nn::init::FanMode::FanIn, "relu");
  CHECK(w.std().item<double>() == Approx(std::sqrt(2.0 / 300.0)).epsilon(0.02));
  nn::init::kaiming_uniform_(w, 0.0, nn::init::FanMode::FanOut, "relu");
  CHECK(w.abs().max().item<double>() <= std::sqrt(6.0 / 400.0));
  nn::init::normal_(w, 3.0, 0.5);
  CHECK(w.mean().item<double>() == Approx(3.0).epsilon(0.005));
  nn::init::uniform_(w, -2.0, -1.0);
  CHECK(w.max().item<double>() < -1.0);
  CHECK(w.min().item<double>() >= -2.0);
  nn::init::constant_(w, 0.25);
  CHECK(w.min().item<double>() == 0.25);
  CHECK(nn::init::calculate_gain("tanh") == Approx(5.0 / 3));
  CHECK(nn::init::calculate_gain("leaky_relu", 0.2) == Approx(std::sqrt(2.0 / 1.04)));
  REQUIRE_THROWS_WITH(nn::init::calculate_gain("swish"), Catch::Contains("unknown nonlinearity \"swish\""));
  Tensor v = empty({5});
  REQUIRE_THROWS_WITH(nn::init::xavier_uniform_(v), Catch::Contains("at least 2 dims, got [5]"));
  Tensor i = zeros({2, 2}, kInt64);
  REQUIRE_THROWS_WITH(nn::init::normal_(i), Catch::Contains("floating-point"));
  // Initializing a parameter records no graph.
  nn::Linear fc(2, 2);
  nn::init::ones_(fc.weight);
  CHECK(fc.weight.is_leaf());
  CHECK(fc.weight.requires_grad());
}

TEST_CASE("Dropout is inverted, seeded and off in eval", "[nn][dropout]") {
  nn::Dropout drop(0.25);
  Tensor x = ones({200, 500});
  manual_seed(21);
  Tensor y = drop(x);
  // Survivors are scaled by 1 / (1 - p); about p of the elements are zero.
  std::vector<float> v = y.to_vector<float>();
  int64_t zeros_n = 0, scaled_n = 0;
  for (float e : v) {
    if (e == 0.0f) ++zeros_n;
    if (e == float(1.0 / 0.75)) ++scaled_n;
  }
  CHECK(zeros_n + scaled_n == int64_t(v.size()));
  double frac = double(zeros_n) / double(v.size());
  CHECK(frac == Approx(0.25).margin(0.01));
  CHECK(y.mean().item<double>() == Approx(1.0).margin(0.015));
  // Same seed, same mask.
  manual_seed(21);
  Tensor y2 = drop(x);
  CHECK_ALLCLOSE(y2, y, 0, 0);
  // The gradient flows through the same mask.
  manual_seed(22);
  Tensor xg = ones({3, 7}, TensorOptions().requires_grad(true));
  Tensor out = drop(xg);
  out.sum().backward();
  CHECK_ALLCLOSE(xg.grad(), out.detach(), 0, 0);
  // eval(): identity, the same tensor.
  drop.eval();
  CHECK(drop(x).is_same(x));
  // p = 0 and p = 1.
  CHECK(nn::Dropout(0.0)(x).is_same(x));
  CHECK(nn::Dropout(1.0)(x).abs().sum().item<double>() == 0.0);
  REQUIRE_THROWS_WITH(nn::Dropout(1.5), Catch::Contains("probability must be in [0, 1], got 1.5"));
  REQUIRE_THROWS_WITH(F::dropout(x, -0.1), Catch::Contains("probability must be in [0, 1]"));
  REQUIRE_THROWS_WITH(F::dropout(zeros({2}, kInt64), 0.5), Catch::Contains("floating-point"));
  // F::dropout with training = false returns its input.
  CHECK(F::dropout(x, 0.5, false).is_same(x));
}

TEST_CASE("Flatten and Identity", "[nn][layers]") {
  Tensor x = randn({2, 3, 4, 5});
  CHECK(nn::Flatten()(x).shape() == Shape{2, 60});
  CHECK(nn::Flatten(nn::FlattenOptions().start_dim(0).end_dim(1))(x).shape() == Shape{6, 4, 5});
  CHECK(nn::Identity()(x).is_same(x));
  std::ostringstream os;
  os << nn::Flatten();
  CHECK(os.str() == "Flatten(start_dim=1, end_dim=-1)\nparameters: 0");
}
