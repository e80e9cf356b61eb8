// Fits y = 3*x0 - 2*x1 + 0.5 by gradient descent written with tinytorch's tensor ops; the
// README's library example. Exits 0 when the fit is good, so the install tests can judge it.
#include <tinytorch/tinytorch.h>

#include <iostream>

int main() {
  tt::manual_seed(0);
  const int64_t N = 256;
  tt::Tensor X = tt::randn({N, 2});                         // inputs: [N, 2]
  tt::Tensor y = X.matmul(tt::tensor({3.0, -2.0})) + 0.5;   // targets: [N]

  tt::Tensor w = tt::zeros({2}), b = tt::zeros({1});
  const double lr = 0.1;
  for (int step = 0; step < 200; ++step) {
    tt::Tensor err = X.matmul(w) + b - y;                   // [N]; b broadcasts
    w -= X.transpose(0, 1).matmul(err) * (2 * lr / N);      // gradient of mean(err^2)
    b -= err.mean() * (2 * lr);
  }
  double loss = (X.matmul(w) + b - y).pow(2).mean().item<double>();
  std::cout << "w = " << w << "\nb = " << b << "\nloss = " << loss << "\n";
  return loss < 1e-8 ? 0 : 1;
}
