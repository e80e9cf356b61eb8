// tinytorch's side of the training-step workloads of issue 4 (mlp_step, adamw_step), written as a
// user of nn/optim writes a training step: forward, loss, zero_grad, backward, step.
#include <memory>
#include <vector>

#include "harness.h"
#include "tinytorch/tinytorch.h"

namespace ttbench {

namespace {

tt::Tensor uniform(const tt::Shape& shape, uint64_t seed, float lo, float hi) {
  tt::Tensor t = tt::empty(shape, tt::kFloat32);
  fill_uniform(t.data_ptr<float>(), t.numel(), seed, lo, hi);
  return t;
}

double abs_sum(const tt::Tensor& t) {
  tt::Tensor c = t.detach().contiguous();
  return abs_checksum(c.data_ptr<float>(), c.numel());
}

// Integer labels 0..9 from the same uniform stream every impl uses.
tt::Tensor labels(int64_t n, uint64_t seed) {
  std::vector<float> u(size_t(n), 0.0f);
  fill_uniform(u.data(), n, seed);
  std::vector<int64_t> y(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) y[size_t(i)] = int64_t(u[size_t(i)] * 10.0f) % 10;
  return tt::tensor(y, tt::Shape{n}, tt::kInt64);
}

// mlp_step: Linear(784, 256) -> ReLU -> Linear(256, 10), cross-entropy on a fixed batch of 128,
// SGD(lr 0.01, momentum 0.9). One op is one whole training step.
Factory mlp_step() {
  return [] {
    auto fc1 = std::make_shared<tt::nn::Linear>(784, 256);
    auto fc2 = std::make_shared<tt::nn::Linear>(256, 10);
    {
      tt::NoGradGuard no_grad;
      const float b1 = 1.0f / 28.0f, b2 = 1.0f / 16.0f;
      fc1->weight.copy_(uniform({256, 784}, 11, -b1, b1));
      fc1->bias.copy_(uniform({256}, 12, -b1, b1));
      fc2->weight.copy_(uniform({10, 256}, 13, -b2, b2));
      fc2->bias.copy_(uniform({10}, 14, -b2, b2));
    }
    auto model = std::make_shared<tt::nn::Sequential>(fc1, tt::nn::ReLU(), fc2);
    auto opt = std::make_shared<tt::optim::SGD>(model->parameters(), tt::optim::SGDOptions(0.01).momentum(0.9));
    tt::Tensor x = uniform({128, 784}, 1, 0.0f, 1.0f), y = labels(128, 2);
    auto step = [=] {
      tt::Tensor loss = tt::F::cross_entropy(model->forward(x), y);
      opt->zero_grad();
      loss.backward();
      opt->step();
      return loss;
    };
    Prepared p;
    p.run = [=] { step(); };
    p.check = [=] {
      double c = step().item<double>();
      for (const tt::Tensor& w : model->parameters()) c += abs_sum(w);
      return c;
    };
    return p;
  };
}

// adamw_step: AdamW(lr 1e-3, weight_decay 0.01) over 10 parameters of [1000, 1000] (10M in all)
// with fixed gradients. One op is one optimizer.step().
Factory adamw_step() {
  return [] {
    std::vector<tt::Tensor> params;
    for (uint64_t i = 0; i < 10; ++i) {
      tt::Tensor w = uniform({1000, 1000}, 100 + i, -0.05f, 0.05f).requires_grad_(true);
      w.set_grad(uniform({1000, 1000}, 200 + i, -1.0f, 1.0f));
      params.push_back(w);
    }
    auto opt = std::make_shared<tt::optim::AdamW>(params, tt::optim::AdamWOptions(1e-3).weight_decay(0.01));
    Prepared p;
    p.run = [=] { opt->step(); };
    p.check = [=] {
      opt->step();
      double c = 0;
      for (const tt::Tensor& w : params) c += abs_sum(w);
      return c;
    };
    return p;
  };
}

}  // namespace

void add_training_workloads_tinytorch(Impl& impl) {
  impl.factories["mlp_step"] = mlp_step();
  impl.factories["adamw_step"] = adamw_step();
}

}  // namespace ttbench
