// tinytorch's side of the attention workloads of issue 5 (mha_fb), written as a user writes
// self-attention: nn::MultiHeadAttention, causal, need_weights = false, y.backward(dy).
#include <memory>

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

// mha_fb: MultiHeadAttention(512, 8) self-attention on x [8, 256, 512] (batch first) requiring
// grad, causal, no weights returned; y.backward(dy). Weights: the q, k, v rows of one [1536, 512]
// stream (seed 21) as LibTorch's in_proj_weight, out_proj seed 22, biases seeds 23 and 24.
Factory mha_fb() {
  return [] {
    auto mha = std::make_shared<tt::nn::MultiHeadAttention>(512, 8);
    {
      tt::NoGradGuard no_grad;
      const float a = 0.05f;
      const tt::Tensor in_w = uniform({1536, 512}, 21, -a, a), in_b = uniform({1536}, 23, -a, a);
      mha->q_proj->weight.copy_(in_w.slice(0, 0, 512));
      mha->k_proj->weight.copy_(in_w.slice(0, 512, 1024));
      mha->v_proj->weight.copy_(in_w.slice(0, 1024, 1536));
      mha->q_proj->bias.copy_(in_b.slice(0, 0, 512));
      mha->k_proj->bias.copy_(in_b.slice(0, 512, 1024));
      mha->v_proj->bias.copy_(in_b.slice(0, 1024, 1536));
      mha->out_proj->weight.copy_(uniform({512, 512}, 22, -a, a));
      mha->out_proj->bias.copy_(uniform({512}, 24, -a, a));
    }
    tt::Tensor x = uniform({8, 256, 512}, 25, -1, 1).requires_grad_(true);
    const tt::Tensor dy = uniform({8, 256, 512}, 26, -1, 1);
    std::vector<tt::Tensor> leaves = mha->parameters();
    leaves.push_back(x);
    auto step = [=] {
      tt::nn::MultiHeadAttentionForward args;
      args.is_causal = true;
      args.need_weights = false;
      tt::Tensor y = mha->forward(x, x, x, args).first;
      y.backward(dy);
      return y;
    };
    auto clear = [=] {
      for (const tt::Tensor& l : leaves) l.set_grad(tt::Tensor());
    };
    Prepared p;
    p.run = [=] {
      step();
      clear();
    };
    p.check = [=] {
      double c = abs_sum(step());
      c += abs_sum(x.grad()) + abs_sum(mha->q_proj->weight.grad()) + abs_sum(mha->out_proj->weight.grad());
      clear();
      return c;
    };
    return p;
  };
}

}  // namespace

void add_attention_workloads_tinytorch(Impl& impl) { impl.factories["mha_fb"] = mha_fb(); }

}  // namespace ttbench
