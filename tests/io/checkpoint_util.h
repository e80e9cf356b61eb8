// A training checkpoint carried between devices, shared by tests/io (CPU) and tests/cuda (CPU <->
// GPU): a small model and its optimizer (AdamW with amsgrad: step, exp_avg, exp_avg_sq,
// max_exp_avg_sq; SGD with momentum: momentum_buffer), trained a few steps, written as two
// safetensors files (the model's state_dict and the optimizer's), read back into a fresh model and
// optimizer that may live on another device or in another dtype, and compared.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/io_test_util.h"

namespace tt::testing {

// x [N, 6] -> tanh(fc1) [N, 16] -> fc2 -> logits [N, 3]; a buffer too (an int64 count).
struct CheckpointNet : nn::Module {
  CheckpointNet() : nn::Module("CheckpointNet") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(6, 16));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(16, 3));
    count = register_buffer("count", tt::tensor({int64_t(7)}));
  }
  Tensor forward(const Tensor& x) { return fc2->forward(fc1->forward(x).tanh()); }
  std::shared_ptr<nn::Linear> fc1, fc2;
  Tensor count;
};

// The optimizers a checkpoint must carry, by name: "adamw" (amsgrad, weight decay) or "sgd"
// (momentum, nesterov).
inline std::unique_ptr<optim::Optimizer> make_checkpoint_optimizer(const std::string& kind,
                                                                    const std::vector<Tensor>& params) {
  if (kind == "adamw")
    return std::make_unique<optim::AdamW>(params, optim::AdamWOptions(1e-2).amsgrad(true).weight_decay(1e-2));
  return std::make_unique<optim::SGD>(params, optim::SGDOptions(5e-2).momentum(0.9).nesterov(true));
}

// A fixed batch on the CPU: x [8, 6], labels [8] in 0..2.
struct CheckpointBatch {
  Tensor x, y;
};
inline CheckpointBatch checkpoint_batch() {
  Generator gen(123);
  return {randn({8, 6}, TensorOptions(), &gen), randint(0, 3, {8}, TensorOptions().dtype(kInt64), &gen)};
}

// One optimizer step on the batch, moved to the model's device and dtype; returns the loss.
inline double checkpoint_step(CheckpointNet& net, optim::Optimizer& opt, const CheckpointBatch& batch) {
  const Tensor& w = net.fc1->weight;
  opt.zero_grad();
  Tensor loss = F::cross_entropy(net.forward(batch.x.to(w.device()).to(w.dtype())), batch.y.to(w.device()));
  loss.backward();
  opt.step();
  return loss.item<double>();
}

// <dir>/model.safetensors and <dir>/optimizer.safetensors.
inline void save_checkpoint(const nn::Module& net, const optim::Optimizer& opt, const TempDir& dir) {
  save(net, dir.file("model.safetensors"));
  save(opt.state_dict(), dir.file("optimizer.safetensors"));
}
inline void load_checkpoint(nn::Module& net, optim::Optimizer& opt, const TempDir& dir) {
  load(net, dir.file("model.safetensors"));
  opt.load_state_dict(load(dir.file("optimizer.safetensors")));
}

// `to` (model and optimizer) holds what `from` held, bit for bit once converted to `to`'s dtype,
// and every tensor sits where it belongs: parameters, buffers and optimizer buffers on `device`,
// the step counts on the CPU (0-d int64, as PyTorch keeps them).
inline void check_same_checkpoint(const CheckpointNet& from, const optim::Optimizer& from_opt, const CheckpointNet& to,
                                  const optim::Optimizer& to_opt, const Device& device) {
  const nn::StateDict a = from.state_dict(), b = to.state_dict();
  REQUIRE(a.keys() == b.keys());
  for (const auto& [name, t] : a) {
    INFO(name);
    CHECK(b[name].device() == device);
    CHECK(same_tensor(b[name], t.to(b[name].dtype())));
  }
  const std::vector<Tensor> pa = from_opt.parameters(), pb = to_opt.parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    const nn::StateDict& sa = from_opt.state(pa[i]);
    const nn::StateDict& sb = to_opt.state(pb[i]);
    REQUIRE(sa.keys() == sb.keys());
    REQUIRE(!sa.keys().empty());  // the optimizer has stepped: its state must have travelled
    for (const auto& [key, t] : sa) {
      INFO("parameter " << i << ", " << key);
      if (key == "step") {
        CHECK(sb[key].device() == Device(kCPU));
        CHECK(sb[key].item<int64_t>() == t.item<int64_t>());
      } else {
        CHECK(sb[key].device() == device);
        CHECK(sb[key].dtype() == pb[i].dtype());
        CHECK(same_tensor(sb[key], t.to(pb[i].dtype())));
      }
    }
  }
}

}  // namespace tt::testing
