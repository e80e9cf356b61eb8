// linear_regression: the smallest complete training loop. Fits y = 3x - 2 (plus noise) with one
// Linear(1, 1) layer, mean squared error and plain SGD, printing the loss as it falls and the
// learned slope and intercept at the end.
#include <cmath>
#include <cstdio>

#include <tinytorch/tinytorch.h>

int main() {
  tt::manual_seed(0);
  // 256 points on a line with a little noise: x: [256, 1], y: [256, 1].
  tt::Tensor x = tt::rand({256, 1}) * 4 - 2;
  tt::Tensor y = x * 3.0 - 2.0 + tt::randn({256, 1}) * 0.1;

  tt::nn::Linear model(1, 1);
  tt::optim::SGD optimizer(model.parameters(), tt::optim::SGDOptions(0.1));
  for (int step = 0; step <= 100; ++step) {
    tt::Tensor loss = tt::F::mse_loss(model(x), y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (step % 20 == 0) std::printf("step %3d  loss %.5f\n", step, loss.item<double>());
  }
  std::printf("learned y = %.3f x %+.3f (true: y = 3x - 2)\n", model.weight.item<double>(), model.bias.item<double>());
  const bool ok = std::abs(model.weight.item<double>() - 3.0) < 0.05 && std::abs(model.bias.item<double>() + 2.0) < 0.05;
  return ok ? 0 : 1;
}
