// linear_regression: the smallest complete training loop. Fits y = 3x - 2 (plus noise) with one
// Linear(1, 1) layer, mean squared error and plain SGD, printing the loss as it falls and the
// learned slope and intercept at the end. The data, the layer and the loss live on --device.
//
//   linear_regression [--device cpu|cuda|auto]
#include <cmath>
#include <cstdio>
#include <string>

#include <tinytorch/tinytorch.h>

#include "cli.h"

int main(int argc, char** argv) {
  std::string device_flag = "cpu";
  examples::Cli cli("linear_regression", "Fits y = 3x - 2 with one Linear(1, 1) layer and SGD; exits 1 if the fit "
                                         "is off by more than 0.05.\n");
  cli.device_option(device_flag);
  cli.parse(argc, argv);
  const tt::Device device = cli.device(device_flag);
  return examples::run_main("linear_regression", [&] {
    tt::manual_seed(0);
    // 256 points on a line with a little noise, drawn on the CPU (the same numbers on every device),
    // then moved: x: [256, 1], y: [256, 1].
    tt::Tensor x = tt::rand({256, 1}) * 4 - 2;
    tt::Tensor y = x * 3.0 - 2.0 + tt::randn({256, 1}) * 0.1;
    x = x.to(device);
    y = y.to(device);

    tt::nn::Linear model(1, 1);
    model.to(device);
    tt::optim::SGD optimizer(model.parameters(), tt::optim::SGDOptions(0.1));
    std::printf("training on %s\n", examples::device_label(device).c_str());
    for (int step = 0; step <= 100; ++step) {
      tt::Tensor loss = tt::F::mse_loss(model(x), y);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      if (step % 20 == 0) std::printf("step %3d  loss %.5f\n", step, loss.item<double>());  // read back 6 times
    }
    const double w = model.weight.item<double>(), b = model.bias.item<double>();
    std::printf("learned y = %.3f x %+.3f (true: y = 3x - 2)\n", w, b);
    return std::abs(w - 3.0) < 0.05 && std::abs(b + 2.0) < 0.05 ? 0 : 1;
  });
}
