// gradcheck and gradgradcheck of the activations (ops/activation.h): softmax and log_softmax over
// every dim, GELU (erf and tanh forms), SiLU, LeakyReLU; their exported backward kernels; the
// gradient of a fully masked softmax row.
#include <cmath>
#include <limits>

#include "grad_util.h"

using namespace tt;
using namespace tt::testing;

namespace {
using L = const TensorList&;
}  // namespace

TEST_CASE("gradcheck: softmax", "[autograd][gradcheck][activation]") {
  manual_seed(600);
  expect_grad("dim -1", [](L x) { return softmax(x[0], -1); }, {randn64({2, 4})});
  expect_grad("dim 0, transposed", [](L x) { return x[0].softmax(0); }, {randn64_t({3, 4})});
  expect_grad("dim 1 of 3-D, strided", [](L x) { return softmax(x[0], 1); }, {randn64_strided({2, 3, 2})});
  expect_grad("weighted, so the Jacobian is not symmetric", [](L x) { return softmax(x[0], -1) * x[1]; },
              {randn64({2, 3}), randn64({3})});
  expect_grad("1-D", [](L x) { return softmax(x[0], 0); }, {randn64({5})});
  Tensor mask = tensor({false, true, false, true}).view({1, 4});
  expect_grad("with -inf entries", [mask](L x) {
    return softmax(x[0].masked_fill(mask, -std::numeric_limits<double>::infinity()), -1);
  }, {randn64({2, 4})});
}

TEST_CASE("gradcheck: log_softmax", "[autograd][gradcheck][activation]") {
  manual_seed(601);
  expect_grad("dim -1", [](L x) { return log_softmax(x[0], -1); }, {randn64({2, 4})});
  expect_grad("dim 0, transposed", [](L x) { return x[0].log_softmax(0); }, {randn64_t({3, 4})});
  expect_grad("dim 2 of 3-D", [](L x) { return log_softmax(x[0], 2) * x[1]; }, {randn64({2, 2, 3}), randn64({3})});
  expect_grad("cross-entropy by hand", [](L x) {
    Tensor target = tensor({2, 0});
    return -(log_softmax(x[0], 1).gather(1, target.view({2, 1}))).mean();
  }, {randn64({2, 3})});
}

TEST_CASE("gradcheck: gelu", "[autograd][gradcheck][activation]") {
  manual_seed(602);
  expect_grad("erf", [](L x) { return gelu(x[0]); }, {randn64_t({3, 2})});
  expect_grad("tanh", [](L x) { return gelu(x[0], "tanh"); }, {randn64_strided({2, 3})});
  expect_grad("wide range", [](L x) { return gelu(x[0] * 4.0); }, {randn64({6})});
}

TEST_CASE("gradcheck: silu and leaky_relu", "[autograd][gradcheck][activation]") {
  manual_seed(603);
  expect_grad("silu", [](L x) { return silu(x[0]); }, {randn64_t({3, 2})});
  expect_grad("leaky_relu default slope", [](L x) { return leaky_relu(x[0]); }, {randn64_strided({2, 3})});
  expect_grad("leaky_relu slope 0.2", [](L x) { return leaky_relu(x[0], 0.2); }, {randn64({5})});
}

TEST_CASE("gradcheck: softplus, a composite, to second order", "[autograd][gradcheck][activation]") {
  manual_seed(605);
  expect_grad("default", [](L x) { return softplus(x[0]); }, {randn64_t({3, 2})});
  expect_grad("beta 2, threshold 1: both branches", [](L x) { return softplus(x[0] * 2.0, 2.0, 1.0); },
              {randn64_strided({2, 3})});
  expect_grad("beta -0.5", [](L x) { return softplus(x[0], -0.5); }, {randn64({5})});
}

TEST_CASE("gradcheck: the exported activation backward kernels", "[autograd][gradcheck][activation]") {
  manual_seed(604);
  expect_grad("softmax_backward", [](L x) { return softmax_backward(x[0], softmax(x[1], -1), -1); },
              {randn64({2, 3}), randn64({2, 3})});
  expect_grad("log_softmax_backward", [](L x) { return log_softmax_backward(x[0], log_softmax(x[1], 0), 0); },
              {randn64({3, 2}), randn64({3, 2})});
  expect_grad("gelu_backward", [](L x) { return gelu_backward(x[0], x[1]); }, {randn64({4}), randn64({4})});
  expect_grad("gelu_backward tanh", [](L x) { return gelu_backward(x[0], x[1], "tanh"); }, {randn64({4}), randn64({4})});
}

TEST_CASE("a fully masked softmax row has a zero, finite gradient", "[autograd][activation]") {
  double inf = std::numeric_limits<double>::infinity();
  Tensor x = randn64({2, 3});
  Tensor mask = tensor({true, true, true, false, true, false}).view({2, 3});
  Tensor z = x.masked_fill(mask, -inf);
  z.retain_grad();
  Tensor y = softmax(z, -1);
  (y * tensor({1.0, 2.0, 3.0}, kFloat64)).sum().backward();
  REQUIRE(z.grad().defined());
  std::vector<double> g = z.grad().to_vector<double>();
  for (double v : g) CHECK(std::isfinite(v));
  CHECK(g[0] == 0.0);
  CHECK(g[1] == 0.0);
  CHECK(g[2] == 0.0);
}
