// LibTorch's side of the training-step workloads of issue 4 (mlp_step, adamw_step), written as a
// LibTorch user writes them: torch::nn modules, torch::nn::functional::cross_entropy and
// torch::optim. Same values as training_tinytorch.cpp.
#include <torch/torch.h>

#include <vector>

#include "harness.h"

namespace ttbench {

namespace {

torch::Tensor uniform(at::IntArrayRef shape, uint64_t seed, float lo, float hi) {
  torch::Tensor t = torch::empty(shape, torch::kFloat);
  fill_uniform(t.data_ptr<float>(), t.numel(), seed, lo, hi);
  return t;
}

double abs_sum(const torch::Tensor& t) {
  torch::Tensor c = t.detach().contiguous();
  return abs_checksum(c.data_ptr<float>(), c.numel());
}

torch::Tensor labels(int64_t n, uint64_t seed) {
  std::vector<float> u(size_t(n), 0.0f);
  fill_uniform(u.data(), n, seed);
  torch::Tensor y = torch::empty({n}, torch::kLong);
  for (int64_t i = 0; i < n; ++i) y[i] = int64_t(u[size_t(i)] * 10.0f) % 10;
  return y;
}

Factory mlp_step() {
  return [] {
    torch::nn::Linear fc1(784, 256), fc2(256, 10);
    {
      torch::NoGradGuard no_grad;
      const float b1 = 1.0f / 28.0f, b2 = 1.0f / 16.0f;
      fc1->weight.copy_(uniform({256, 784}, 11, -b1, b1));
      fc1->bias.copy_(uniform({256}, 12, -b1, b1));
      fc2->weight.copy_(uniform({10, 256}, 13, -b2, b2));
      fc2->bias.copy_(uniform({10}, 14, -b2, b2));
    }
    torch::nn::Sequential model(fc1, torch::nn::ReLU(), fc2);
    auto opt = std::make_shared<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
    torch::Tensor x = uniform({128, 784}, 1, 0.0f, 1.0f), y = labels(128, 2);
    auto step = [=]() mutable {
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
      opt->zero_grad();
      loss.backward();
      opt->step();
      return loss;
    };
    Prepared p;
    p.run = [=]() mutable { step(); };
    p.check = [=]() mutable {
      double c = step().item<double>();
      for (const torch::Tensor& w : model->parameters()) c += abs_sum(w);
      return c;
    };
    return p;
  };
}

Factory adamw_step() {
  return [] {
    std::vector<torch::Tensor> params;
    for (uint64_t i = 0; i < 10; ++i) {
      torch::Tensor w = uniform({1000, 1000}, 100 + i, -0.05f, 0.05f).requires_grad_(true);
      w.mutable_grad() = uniform({1000, 1000}, 200 + i, -1.0f, 1.0f);
      params.push_back(w);
    }
    auto opt = std::make_shared<torch::optim::AdamW>(params, torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
    Prepared p;
    p.run = [=] { opt->step(); };
    p.check = [=] {
      opt->step();
      double c = 0;
      for (const torch::Tensor& w : params) c += abs_sum(w);
      return c;
    };
    return p;
  };
}

}  // namespace

void add_training_workloads_libtorch(Impl& impl) {
  impl.factories["mlp_step"] = mlp_step();
  impl.factories["adamw_step"] = adamw_step();
}

}  // namespace ttbench
