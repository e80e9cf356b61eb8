// tinytorch's side of the attention workloads of issue 5, written as a user writes them:
// mha_fb (nn::MultiHeadAttention self-attention, causal, need_weights = false, y.backward(dy)) and
// gpt_step (one AdamW training step of nn::GPT on a fixed batch of token ids).
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

// Note [gpt_step values]: both impls build the same model from the same streams. Every Linear
// weight and both embeddings are uniform in +-0.0346 (std 0.02, GPT-2's), biases in +-0.01,
// LayerNorms at (1, 0). Seeds: tok_emb 400, pos_emb 401; block i from 410 + 10 i: the q, k, v
// weights are the rows of one [3E, E] stream (LibTorch's in_proj_weight), +1 their biases, +2 / +3
// out_proj, +4 / +5 fc1, +6 / +7 fc2. Tokens: one stream (seed 450) of B rows of T + 1.
// Each side uses its own optimizer's zero_grad() as its users get it: tinytorch sets the grads to
// none, LibTorch 1.13's zero_grad() (it takes no argument) zeroes them in place.
//
// Note [gpt_step checksum]: the loss of the step, the loss after it (did the update move the
// weights alike?) and sum |grad| of four parameters spread through the model: the tied embedding
// (gathered rows plus the head), block 0's q rows, the last block's fc1 and ln_f's weight.
constexpr int64_t kGptVocab = 65, kGptT = 128, kGptLayers = 4, kGptE = 128, kGptHeads = 4, kGptB = 32;
constexpr float kGptW = 0.0346f, kGptBias = 0.01f;

// Token ids from one uniform stream of B * (T + 1) tokens: inputs are the first T of each row,
// targets the last T (the next token at every position). ids: [B, T], targets: [B * T].
void gpt_batch(tt::Tensor& ids, tt::Tensor& targets) {
  const int64_t row = kGptT + 1;
  std::vector<float> u(size_t(kGptB * row), 0.0f);
  fill_uniform(u.data(), int64_t(u.size()), 450);
  std::vector<int64_t> x, y;
  for (int64_t b = 0; b < kGptB; ++b)
    for (int64_t t = 0; t < row; ++t) {
      int64_t tok = int64_t(u[size_t(b * row + t)] * float(kGptVocab)) % kGptVocab;
      if (t < kGptT) x.push_back(tok);
      if (t > 0) y.push_back(tok);
    }
  ids = tt::tensor(x, tt::Shape{kGptB, kGptT}, tt::kInt64);
  targets = tt::tensor(y, tt::Shape{kGptB * kGptT}, tt::kInt64);
}

void gpt_fill(tt::nn::GPT& gpt) {
  tt::NoGradGuard no_grad;
  const float w = kGptW, bb = kGptBias;
  const int64_t E = kGptE;
  gpt.tok_emb->weight.copy_(uniform({kGptVocab, E}, 400, -w, w));
  gpt.pos_emb->weight.copy_(uniform({kGptT, E}, 401, -w, w));
  for (int64_t i = 0; i < kGptLayers; ++i) {
    auto block = gpt.blocks->ptr<tt::nn::TransformerBlock>(i);
    const uint64_t seed = 410 + 10 * uint64_t(i);
    const tt::Tensor in_w = uniform({3 * E, E}, seed, -w, w), in_b = uniform({3 * E}, seed + 1, -bb, bb);
    tt::nn::MultiHeadAttention& attn = *block->attn;
    attn.q_proj->weight.copy_(in_w.slice(0, 0, E));
    attn.k_proj->weight.copy_(in_w.slice(0, E, 2 * E));
    attn.v_proj->weight.copy_(in_w.slice(0, 2 * E, 3 * E));
    attn.q_proj->bias.copy_(in_b.slice(0, 0, E));
    attn.k_proj->bias.copy_(in_b.slice(0, E, 2 * E));
    attn.v_proj->bias.copy_(in_b.slice(0, 2 * E, 3 * E));
    attn.out_proj->weight.copy_(uniform({E, E}, seed + 2, -w, w));
    attn.out_proj->bias.copy_(uniform({E}, seed + 3, -bb, bb));
    block->fc1->weight.copy_(uniform({4 * E, E}, seed + 4, -w, w));
    block->fc1->bias.copy_(uniform({4 * E}, seed + 5, -bb, bb));
    block->fc2->weight.copy_(uniform({E, 4 * E}, seed + 6, -w, w));
    block->fc2->bias.copy_(uniform({E}, seed + 7, -bb, bb));
  }
}

// gpt_step: nn::GPT(vocab 65, context 128, 4 layers, E 128, 4 heads, MLP 4x, tied head) on ids
// [32, 128]; one op: logits, cross-entropy over all 4096 positions, zero_grad, backward,
// AdamW(lr 1e-3, weight_decay 0.01) step. With `bf16` the logits and the loss are computed under
// tt::AutocastGuard(kCPU, kBFloat16) (gpt_step_bf16); parameters and the optimizer stay float32.
Factory gpt_step(bool bf16 = false) {
  return [bf16] {
    auto gpt = std::make_shared<tt::nn::GPT>(tt::nn::GPTOptions(kGptVocab, kGptT)
                                                 .n_layer(kGptLayers)
                                                 .n_embd(kGptE)
                                                 .n_head(kGptHeads)
                                                 .mlp_ratio(4)
                                                 .tie_weights(true));
    gpt_fill(*gpt);
    tt::Tensor ids, targets;
    gpt_batch(ids, targets);
    auto opt = std::make_shared<tt::optim::AdamW>(gpt->parameters(),
                                                  tt::optim::AdamWOptions(1e-3).weight_decay(0.01));
    auto loss_of = [=] {
      tt::AutocastGuard autocast(tt::kCPU, tt::kBFloat16, bf16);
      return tt::F::cross_entropy(gpt->forward(ids).reshape({kGptB * kGptT, kGptVocab}), targets);
    };
    auto step = [=] {
      tt::Tensor loss = loss_of();
      opt->zero_grad();
      loss.backward();
      opt->step();
      return loss;
    };
    Prepared p;
    p.run = [=] { step(); };
    p.check = [=] {
      double c = step().item<double>();  // Note [gpt_step checksum]
      {
        tt::NoGradGuard no_grad;
        c += loss_of().item<double>();
      }
      auto first = gpt->blocks->ptr<tt::nn::TransformerBlock>(0);
      auto last = gpt->blocks->ptr<tt::nn::TransformerBlock>(kGptLayers - 1);
      c += abs_sum(gpt->tok_emb->weight.grad()) + abs_sum(first->attn->q_proj->weight.grad()) +
           abs_sum(last->fc1->weight.grad()) + abs_sum(gpt->ln_f->weight.grad());
      return c;
    };
    return p;
  };
}

}  // namespace

void add_attention_workloads_tinytorch(Impl& impl) {
  impl.factories["mha_fb"] = mha_fb();
  impl.factories["gpt_step"] = gpt_step();
  impl.factories["gpt_step_bf16"] = gpt_step(/*bf16=*/true);
}

void add_bf16_baselines_tinytorch(Impl& impl) { impl.factories["gpt_step_bf16"] = gpt_step(/*bf16=*/false); }

}  // namespace ttbench
