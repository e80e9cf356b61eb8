// The README's library example: fit a line with autograd and plain gradient descent.
#include <tinytorch/tinytorch.h>

#include <iostream>

int main() {
  tt::manual_seed(0);
  const int64_t N = 256;
  tt::Tensor X = tt::randn({N, 2});                         // inputs: [N, 2]
  tt::Tensor y = X.matmul(tt::tensor({3.0, -2.0})) + 0.5;   // targets: [N]

  tt::Tensor w = tt::zeros({2}).requires_grad_();           // parameters: leaves of the graph
  tt::Tensor b = tt::zeros({1}).requires_grad_();
  for (int step = 0; step < 200; ++step) {
    tt::Tensor loss = (X.matmul(w) + b - y).pow(2).mean();  // [N] -> []; b broadcasts
    loss.backward();                                        // fills w.grad() and b.grad()
    {
      tt::NoGradGuard no_grad;                              // the update is not part of the graph
      w -= w.grad() * 0.1;
      b -= b.grad() * 0.1;
    }
    w.set_grad(tt::Tensor());                               // gradients add up: clear them
    b.set_grad(tt::Tensor());
  }
  double loss = (X.matmul(w) + b - y).pow(2).mean().item<double>();
  std::cout << "w = " << w << "\nb = " << b << "\nloss = " << loss << "\n";
  return loss < 1e-8 ? 0 : 1;
}
