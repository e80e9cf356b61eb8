// LibTorch's side of the attention workloads of issue 5 (mha_fb): torch::nn::MultiheadAttention
// as a LibTorch user calls it (sequence first, [T, B, E]; a causal float mask; need_weights =
// false). Same values as attention_tinytorch.cpp.
#include <torch/torch.h>

#include <limits>

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

Factory mha_fb() {
  return [] {
    torch::nn::MultiheadAttention mha(torch::nn::MultiheadAttentionOptions(512, 8));
    {
      torch::NoGradGuard no_grad;
      const float a = 0.05f;
      mha->in_proj_weight.copy_(uniform({1536, 512}, 21, -a, a));
      mha->in_proj_bias.copy_(uniform({1536}, 23, -a, a));
      mha->out_proj->weight.copy_(uniform({512, 512}, 22, -a, a));
      mha->out_proj->bias.copy_(uniform({512}, 24, -a, a));
    }
    // The same x as tinytorch's [8, 256, 512], handed over as [T, B, E] = [256, 8, 512].
    torch::Tensor x = uniform({8, 256, 512}, 25, -1, 1).transpose(0, 1).contiguous().requires_grad_(true);
    const torch::Tensor dy = uniform({8, 256, 512}, 26, -1, 1).transpose(0, 1).contiguous();
    const torch::Tensor mask =
        torch::full({256, 256}, -std::numeric_limits<float>::infinity()).triu(1);  // causal, additive
    std::vector<torch::Tensor> leaves = mha->parameters();
    leaves.push_back(x);
    auto step = [=]() mutable {
      torch::Tensor y = std::get<0>(mha->forward(x, x, x, /*key_padding_mask=*/{}, /*need_weights=*/false, mask));
      y.backward(dy);
      return y;
    };
    auto clear = [=] {
      for (const torch::Tensor& l : leaves) l.mutable_grad().reset();
    };
    Prepared p;
    p.run = [=]() mutable {
      step();
      clear();
    };
    p.check = [=]() mutable {
      double c = abs_sum(step());
      c += abs_sum(x.grad()) + abs_sum(mha->in_proj_weight.grad().slice(0, 0, 512)) +
           abs_sum(mha->out_proj->weight.grad());
      clear();
      return c;
    };
    return p;
  };
}

}  // namespace

void add_attention_workloads_libtorch(Impl& impl) { impl.factories["mha_fb"] = mha_fb(); }

}  // namespace ttbench
