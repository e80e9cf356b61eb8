// LibTorch's side of the attention workloads of issue 5, as a LibTorch user writes them: mha_fb
// (torch::nn::MultiheadAttention, sequence first [T, B, E], a causal float mask, need_weights =
// false) and gpt_step (the same GPT as tt::nn::GPT built from torch::nn modules, trained one step
// with torch::optim::AdamW). Same values as attention_tinytorch.cpp.
#include <torch/torch.h>

#include <limits>
#include <memory>
#include <vector>

#include "harness.h"
#include "libtorch_autocast.h"

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

// gpt_step: the model, values and checksum of Note [gpt_step values] and Note [gpt_step checksum]
// (attention_tinytorch.cpp). It runs sequence first ([T, B, E], the layout
// torch::nn::MultiheadAttention takes): the ids are transposed once when the batch is made, so no
// block transposes anything, and the loss is the mean over the same 4096 (position, target) pairs
// in another order.
constexpr int64_t kGptVocab = 65, kGptT = 128, kGptLayers = 4, kGptE = 128, kGptHeads = 4, kGptB = 32;
constexpr float kGptW = 0.0346f, kGptBias = 0.01f;

// ids: [T, B], targets: [T * B] (targets[t * B + b] is the token after ids[t, b]).
void gpt_batch(torch::Tensor& ids, torch::Tensor& targets) {
  const int64_t row = kGptT + 1;
  std::vector<float> u(size_t(kGptB * row), 0.0f);
  fill_uniform(u.data(), int64_t(u.size()), 450);
  torch::Tensor toks = torch::empty({kGptB, row}, torch::kLong);
  int64_t* d = toks.data_ptr<int64_t>();
  for (int64_t i = 0; i < kGptB * row; ++i) d[i] = int64_t(u[size_t(i)] * float(kGptVocab)) % kGptVocab;
  ids = toks.slice(1, 0, kGptT).t().contiguous();
  targets = toks.slice(1, 1, row).t().contiguous().view({kGptT * kGptB});
}

// Pre-norm block: x = x + attn(ln1(x)); x = x + fc2(gelu(fc1(ln2(x)))). x: [T, B, E].
struct GptBlockImpl : torch::nn::Module {
  GptBlockImpl(int64_t E, int64_t H)
      : ln1(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({E})))),
        attn(register_module("attn", torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(E, H)))),
        ln2(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({E})))),
        fc1(register_module("fc1", torch::nn::Linear(E, 4 * E))),
        gelu(register_module("gelu", torch::nn::GELU())),
        fc2(register_module("fc2", torch::nn::Linear(4 * E, E))) {}
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& causal_mask) {
    torch::Tensor h = ln1(x);
    x = x + std::get<0>(attn->forward(h, h, h, /*key_padding_mask=*/{}, /*need_weights=*/false, causal_mask));
    return x + fc2(gelu(fc1(ln2(x))));
  }
  torch::nn::LayerNorm ln1;
  torch::nn::MultiheadAttention attn;
  torch::nn::LayerNorm ln2;
  torch::nn::Linear fc1;
  torch::nn::GELU gelu;  // exact (erf), the default
  torch::nn::Linear fc2;
};
TORCH_MODULE(GptBlock);

// ids [T, B] -> logits [T, B, V]; the head is the token embedding (tied weights).
struct GptImpl : torch::nn::Module {
  GptImpl()
      : tok_emb(register_module("tok_emb", torch::nn::Embedding(kGptVocab, kGptE))),
        pos_emb(register_module("pos_emb", torch::nn::Embedding(kGptT, kGptE))),
        ln_f(register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kGptE})))) {
    for (int64_t i = 0; i < kGptLayers; ++i)
      blocks.push_back(register_module("block" + std::to_string(i), GptBlock(kGptE, kGptHeads)));
  }
  torch::Tensor forward(const torch::Tensor& ids) {
    const int64_t T = ids.size(0);
    const torch::Tensor mask =
        torch::full({T, T}, -std::numeric_limits<float>::infinity()).triu(1);  // causal, additive
    torch::Tensor h = tok_emb(ids) + pos_emb(torch::arange(T, torch::kLong)).unsqueeze(1);
    for (GptBlock& block : blocks) h = block(h, mask);
    return torch::nn::functional::linear(ln_f(h), tok_emb->weight);
  }
  torch::nn::Embedding tok_emb, pos_emb;
  std::vector<GptBlock> blocks;
  torch::nn::LayerNorm ln_f;
};
TORCH_MODULE(Gpt);

void gpt_fill(Gpt& gpt) {
  torch::NoGradGuard no_grad;
  const float w = kGptW, bb = kGptBias;
  const int64_t E = kGptE;
  gpt->tok_emb->weight.copy_(uniform({kGptVocab, E}, 400, -w, w));
  gpt->pos_emb->weight.copy_(uniform({kGptT, E}, 401, -w, w));
  for (int64_t i = 0; i < kGptLayers; ++i) {
    GptBlock& block = gpt->blocks[size_t(i)];
    const uint64_t seed = 410 + 10 * uint64_t(i);
    block->attn->in_proj_weight.copy_(uniform({3 * E, E}, seed, -w, w));  // q, k, v rows
    block->attn->in_proj_bias.copy_(uniform({3 * E}, seed + 1, -bb, bb));
    block->attn->out_proj->weight.copy_(uniform({E, E}, seed + 2, -w, w));
    block->attn->out_proj->bias.copy_(uniform({E}, seed + 3, -bb, bb));
    block->fc1->weight.copy_(uniform({4 * E, E}, seed + 4, -w, w));
    block->fc1->bias.copy_(uniform({4 * E}, seed + 5, -bb, bb));
    block->fc2->weight.copy_(uniform({E, 4 * E}, seed + 6, -w, w));
    block->fc2->bias.copy_(uniform({E}, seed + 7, -bb, bb));
  }
}

// gpt_step; with `bf16` the logits and the loss under LibTorch's CPU autocast (gpt_step_bf16).
Factory gpt_step(bool bf16 = false) {
  return [bf16] {
    Gpt gpt;
    gpt_fill(gpt);
    torch::Tensor ids, targets;
    gpt_batch(ids, targets);
    auto opt = std::make_shared<torch::optim::AdamW>(gpt->parameters(),
                                                     torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
    auto loss_of = [=]() mutable {
      CpuAutocast autocast(bf16);
      return torch::nn::functional::cross_entropy(gpt->forward(ids).view({kGptT * kGptB, kGptVocab}), targets);
    };
    auto step = [=]() mutable {
      torch::Tensor loss = loss_of();
      opt->zero_grad();
      loss.backward();
      opt->step();
      return loss;
    };
    Prepared p;
    p.run = [=]() mutable { step(); };
    p.check = [=]() mutable {
      double c = step().item<double>();  // Note [gpt_step checksum]
      {
        torch::NoGradGuard no_grad;
        c += loss_of().item<double>();
      }
      const torch::Tensor q_rows = gpt->blocks[0]->attn->in_proj_weight.grad().slice(0, 0, kGptE);
      c += abs_sum(gpt->tok_emb->weight.grad()) + abs_sum(q_rows) +
           abs_sum(gpt->blocks[size_t(kGptLayers - 1)]->fc1->weight.grad()) + abs_sum(gpt->ln_f->weight.grad());
      return c;
    };
    return p;
  };
}

}  // namespace

void add_attention_workloads_libtorch(Impl& impl) {
  impl.factories["mha_fb"] = mha_fb();
  impl.factories["gpt_step"] = gpt_step();
  impl.factories["gpt_step_bf16"] = gpt_step(/*bf16=*/true);
}

}  // namespace ttbench
