// Activation layers (nn/activation.h): each forward equals its op, options are honoured and read
// like LibTorch's, bad options throw, gradients flow through the layers.
#include <sstream>
#include <string>

#include "test_util.h"

using namespace tt;

TEST_CASE("activation modules compute their ops", "[nn][activation]") {
  manual_seed(41);
  Tensor x = randn({3, 5}) * 2;
  CHECK_ALLCLOSE(nn::ReLU()(x), relu(x), 0, 0);
  CHECK_ALLCLOSE(nn::LeakyReLU()(x), leaky_relu(x, 0.01), 0, 0);
  CHECK_ALLCLOSE(nn::GELU()(x), gelu(x), 0, 0);
  CHECK_ALLCLOSE(nn::SiLU()(x), silu(x), 0, 0);
  CHECK_ALLCLOSE(nn::Sigmoid()(x), sigmoid(x), 0, 0);
  CHECK_ALLCLOSE(nn::Tanh()(x), tanh(x), 0, 0);
  CHECK_ALLCLOSE(nn::Softmax(1)(x), softmax(x, 1), 0, 0);
  CHECK_ALLCLOSE(nn::Softmax(0).forward(x), softmax(x, 0), 0, 0);
  CHECK_ALLCLOSE(nn::LogSoftmax(-1)(x), log_softmax(x, -1), 0, 0);
  CHECK_ALLCLOSE(nn::Softplus()(x), softplus(x), 0, 0);
  nn::Softplus sharp(nn::SoftplusOptions().beta(2).threshold(10));
  CHECK_ALLCLOSE(sharp(x), softplus(x, 2, 10), 0, 0);
  CHECK(sharp.options.beta() == 2);
  CHECK(sharp.options.threshold() == 10);
  std::ostringstream printed;
  printed << sharp;
  // print(torch.nn.Softplus(beta=2, threshold=10)); tinytorch adds a line counting parameters.
  CHECK(printed.str().rfind("Softplus(beta=2, threshold=10)\n", 0) == 0);
  // operator() is forward.
  nn::GELU g;
  CHECK_ALLCLOSE(g(x), g.forward(x), 0, 0);
  // Known values (torch 1.13): nn.GELU()(t), nn.SiLU()(t) for t = [-1, 0, 2].
  Tensor t = tensor({-1.0, 0.0, 2.0}, kFloat64);
  CHECK_ALLCLOSE(nn::GELU()(t), tensor({-0.15865525393145702, 0.0, 1.9544997361036416}, kFloat64), 1e-14, 1e-15);
  CHECK_ALLCLOSE(nn::SiLU()(t), tensor({-0.2689414213699951, 0.0, 1.7615941559557646}, kFloat64), 1e-14, 1e-15);
}

TEST_CASE("activation module options read like LibTorch's", "[nn][activation]") {
  Tensor x = tensor({-2.0, -0.5, 0.0, 1.5});
  nn::LeakyReLU leaky(nn::LeakyReLUOptions().negative_slope(0.2));
  CHECK(leaky.options.negative_slope() == 0.2);
  CHECK_ALLCLOSE(leaky(x), tensor({-0.4, -0.1, 0.0, 1.5}), 1e-7, 1e-7);
  CHECK(nn::LeakyReLU().options.negative_slope() == 0.01);

  nn::GELU approx(nn::GELUOptions().approximate("tanh"));
  CHECK(approx.options.approximate() == "tanh");
  CHECK(nn::GELU().options.approximate() == "none");
  CHECK_ALLCLOSE(approx(x), gelu(x, "tanh"), 0, 0);
  CHECK_FALSE(tt::testing::allclose(approx(x), gelu(x), 0, 1e-6));  // the two forms differ

  nn::Softmax sm(nn::SoftmaxOptions(0));
  CHECK(sm.options.dim() == 0);
  nn::LogSoftmax lsm(nn::LogSoftmaxOptions(-1));
  CHECK(lsm.options.dim() == -1);
  Tensor m = tensor({{1.0, 2.0}, {3.0, 5.0}});
  CHECK_ALLCLOSE(sm(m), softmax(m, 0), 0, 0);
  CHECK_ALLCLOSE(lsm(m), log_softmax(m, 1), 0, 0);
  // Options can be changed after construction, as a layer's options member in LibTorch.
  sm.options.dim(1);
  CHECK_ALLCLOSE(sm(m), softmax(m, 1), 0, 0);
}

TEST_CASE("activation modules reject bad options and inputs", "[nn][activation][errors]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_AS(nn::GELU(nn::GELUOptions().approximate("sigmoid")), Error);
  CHECK_THROWS_WITH(nn::GELU(nn::GELUOptions().approximate("sigmoid")),
                    Contains("GELU") && Contains("\"none\"") && Contains("\"tanh\"") && Contains("sigmoid"));
  CHECK_THROWS_AS(nn::Softmax(2)(randn({2, 3})), IndexError);
  CHECK_THROWS_AS(nn::GELU()(tensor({1, 2})), DtypeError);
}

TEST_CASE("gradients flow through activation modules", "[nn][activation][autograd]") {
  manual_seed(42);
  Tensor x = (randn({2, 4}, kFloat64) + 0.05).requires_grad_();
  nn::Softmax sm(-1);
  nn::GELU gelu_layer;
  nn::LeakyReLU leaky(nn::LeakyReLUOptions().negative_slope(0.3));
  Tensor y = sm(gelu_layer(leaky(x)));
  (y * tensor({1.0, 2.0, 3.0, 4.0}, kFloat64)).sum().backward();
  REQUIRE(x.grad().defined());
  // The same chain through the ops.
  Tensor x2 = x.detach().clone().requires_grad_();
  (softmax(gelu(leaky_relu(x2, 0.3)), -1) * tensor({1.0, 2.0, 3.0, 4.0}, kFloat64)).sum().backward();
  CHECK_ALLCLOSE(x.grad(), x2.grad(), 0, 0);
  autograd::GradcheckResult r = autograd::gradcheck(
      [&](const autograd::TensorList& in) { return nn::LogSoftmax(0)(nn::SiLU()(nn::Tanh()(in[0]))); },
      {x.detach().clone().requires_grad_()});
  INFO(r.message);
  CHECK(r.ok);
}
