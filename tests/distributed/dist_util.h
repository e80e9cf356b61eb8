// Helpers of the multi-rank suite (tests/distributed, run alone and under mpiexec -np 2 and 3).
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "tinytorch/distributed/data_parallel.h"
#include "tinytorch/distributed/distributed.h"

namespace tt_test {

inline int rank() { return tt::distributed::get_rank(); }
inline int world() { return tt::distributed::get_world_size(); }

// Every rank's copy of `t` [*] -> [W, *] (a world of one without a group).
inline tt::Tensor gather(const tt::Tensor& t) {
  tt::Shape s = t.shape();
  s.insert(0, world());
  tt::Tensor out = tt::empty(s, tt::TensorOptions().dtype(t.dtype()));
  tt::distributed::allgather(out, t.contiguous());
  return out;
}

// max |t - v| over t's elements, in float64.
inline double dist_to(const tt::Tensor& t, double v) { return (t.to(tt::kFloat64) - v).abs().max().item<double>(); }

// True when every rank holds exactly the same bits in every parameter of `m`.
inline bool identical_on_every_rank(const tt::nn::Module& m) {
  for (const tt::Tensor& p : m.parameters()) {
    tt::Tensor all = gather(p.detach().reshape({-1}));
    std::vector<float> v = all.to_vector<float>();
    const size_t n = size_t(p.numel());
    for (int r = 1; r < world(); ++r)
      if (std::memcmp(v.data(), v.data() + size_t(r) * n, n * sizeof(float)) != 0) return false;
  }
  return true;
}

inline double max_param_diff(const tt::nn::Module& a, const tt::nn::Module& b) {
  std::vector<tt::Tensor> pa = a.parameters(), pb = b.parameters();
  double m = 0.0;
  for (size_t i = 0; i < pa.size(); ++i)
    m = std::max(m, (pa[i].detach() - pb[i].detach()).abs().max().item<double>());
  return m;
}

// The largest difference between a's and b's gradients, relative to the largest gradient element
// in b (an undefined gradient on one side only: 1). Relative to the whole model's scale, not each
// parameter's: some gradients are 0 up to rounding (attention's key bias: softmax ignores a
// constant added to a row), and their last bits differ by summation order. This checks DDP's
// averaging itself, which an Adam step would hide (its update does not change when every
// gradient is scaled by one factor).
inline double max_grad_rel_diff(const tt::nn::Module& a, const tt::nn::Module& b) {
  std::vector<tt::Tensor> pa = a.parameters(), pb = b.parameters();
  double diff = 0.0, scale = 1e-30;
  for (size_t i = 0; i < pa.size(); ++i) {
    const tt::Tensor ga = pa[i].grad(), gb = pb[i].grad();
    if (ga.defined() != gb.defined()) return 1.0;
    if (!ga.defined()) continue;
    scale = std::max(scale, gb.abs().max().item<double>());
    diff = std::max(diff, (ga - gb).abs().max().item<double>());
  }
  return diff / scale;
}

// DDP's options on the job's group, or on world_of_one() when the suite runs alone, so that the
// Reducer always runs.
inline tt::nn::DistributedDataParallelOptions on_some_group() {
  return tt::nn::DistributedDataParallelOptions().process_group(
      tt::distributed::is_initialized() ? tt::distributed::default_group() : tt::distributed::world_of_one());
}

// Two heads on one input [N, 4] -> [N, 2]; the second only when asked for.
struct TwoHeads : tt::nn::Module {
  TwoHeads() {
    a = register_module("a", std::make_shared<tt::nn::Linear>(4, 2));
    b = register_module("b", std::make_shared<tt::nn::Linear>(4, 2));
  }
  tt::Tensor forward(const tt::Tensor& x, bool use_b) const {
    return use_b ? a->forward(x) + b->forward(x) : a->forward(x);
  }
  std::shared_ptr<tt::nn::Linear> a, b;
};

// A two-layer perceptron [N, 4] -> [N, 2].
struct Mlp : tt::nn::Module {
  explicit Mlp(int64_t hidden = 8) {
    fc1 = register_module("fc1", std::make_shared<tt::nn::Linear>(4, hidden));
    fc2 = register_module("fc2", std::make_shared<tt::nn::Linear>(hidden, 2));
  }
  tt::Tensor forward(const tt::Tensor& x) const { return fc2->forward(tt::relu(fc1->forward(x))); }
  std::shared_ptr<tt::nn::Linear> fc1, fc2;
};

}  // namespace tt_test
