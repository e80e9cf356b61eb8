// MultiHeadAttention and KVCache (nn/attention.h): parameters and shapes, the stacked self-attention
// projection against separate ones, PyTorch's mask meanings (bool true = not allowed), need_weights,
// GQA/MQA, QK-norm, batch_first = false and unbatched inputs, dropout in train vs eval, KV-cache
// decoding against recomputation, and errors. (Against torch.nn.MultiheadAttention itself:
// tests/reference/test_ref_attention.cpp.)
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace tt;
using Catch::Matchers::Contains;
using tt::testing::allclose;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

nn::MultiHeadAttentionForward fwd(bool causal = false, bool need_weights = false) {
  nn::MultiHeadAttentionForward a;
  a.is_causal = causal;
  a.need_weights = need_weights;
  return a;
}

}  // namespace

TEST_CASE("MultiHeadAttention: parameters, shapes and printing", "[nn][attention]") {
  manual_seed(0);
  nn::MultiHeadAttention mha(16, 4, nn::MultiHeadAttentionOptions().num_kv_heads(2).kdim(6).vdim(5));
  const auto names = mha.named_parameters().keys();
  CHECK(names == std::vector<std::string>{"q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias",
                                          "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias"});
  CHECK(mha.k_proj->weight.shape() == Shape{8, 6});  // Hkv * D = 2 * 4
  CHECK(mha.v_proj->weight.shape() == Shape{8, 5});
  const Tensor q = randn({3, 7, 16}), k = randn({3, 9, 6}), v = randn({3, 9, 5});
  auto [y, w] = mha(q, k, v, fwd(false, true));
  CHECK(y.shape() == Shape{3, 7, 16});
  CHECK(w.shape() == Shape{3, 7, 9});
  CHECK_ALLCLOSE(w.sum(Shape{-1}), ones({3, 7}), 1e-5, 1e-5);
  nn::MultiHeadAttentionForward per_head = fwd(false, true);
  per_head.average_attn_weights = false;
  CHECK(mha(q, k, v, per_head).second.shape() == Shape{3, 4, 7, 9});
  CHECK_FALSE(mha(q, k, v, fwd()).second.defined());
  std::ostringstream os;
  os << mha;
  CHECK_THAT(os.str(), Contains("MultiHeadAttention(embed_dim=16, num_heads=4, num_kv_heads=2") &&
                           Contains("(k_proj): Linear(in_features=6, out_features=8"));
  nn::MultiHeadAttention normed(16, 4, nn::MultiHeadAttentionOptions().qk_norm(true).bias(false));
  CHECK(normed.named_parameters().keys() ==
        std::vector<std::string>{"q_proj.weight", "k_proj.weight", "v_proj.weight", "out_proj.weight",
                                 "q_norm.weight", "k_norm.weight"});
}

TEST_CASE("MultiHeadAttention: stacked self-attention projection equals separate projections",
          "[nn][attention]") {
  manual_seed(1);
  nn::MultiHeadAttention mha(12, 3, nn::MultiHeadAttentionOptions().num_kv_heads(1));
  const Tensor x0 = randn({2, 5, 12});
  Tensor x = x0.detach().requires_grad_();
  auto [y1, w1] = mha(x, x, x, fwd(true));  // same tensor three times: one stacked GEMM
  y1.pow(2).sum().backward();
  const Tensor gx1 = x.grad(), gq1 = mha.q_proj->weight.grad().clone(), gv1 = mha.v_proj->bias.grad().clone();
  mha.zero_grad();
  Tensor a = x0.detach().requires_grad_(), b = x0.detach().clone().requires_grad_();
  auto [y2, w2] = mha(a, b, b, fwd(true));  // different tensors: three projections
  y2.pow(2).sum().backward();
  CHECK_ALLCLOSE(y1, y2, 1e-5, 1e-6);
  CHECK_ALLCLOSE(gx1, a.grad() + b.grad(), 1e-4, 1e-5);
  CHECK_ALLCLOSE(gq1, mha.q_proj->weight.grad(), 1e-4, 1e-5);
  CHECK_ALLCLOSE(gv1, mha.v_proj->bias.grad(), 1e-4, 1e-5);
}

TEST_CASE("MultiHeadAttention: bool masks mean NOT allowed, as in PyTorch", "[nn][attention]") {
  manual_seed(2);
  nn::MultiHeadAttention mha(8, 2);
  const Tensor x = randn({2, 5, 8});
  const Tensor blocked = rand({5, 5}) > 0.6;  // true = not allowed
  const Tensor as_float = where(blocked, full({}, -kInf), 0.0);
  nn::MultiHeadAttentionForward a = fwd(false, true), b = fwd(false, true);
  a.attn_mask = blocked;
  b.attn_mask = as_float;
  auto [ya, wa] = mha(x, x, x, a);
  auto [yb, wb] = mha(x, x, x, b);
  CHECK_ALLCLOSE(ya, yb, 1e-6, 1e-6);
  CHECK(masked_fill(wa, eq(blocked, scalar_tensor(false, kBool)), 0.0).sum().item<float>() == 0.0f);
  // The same mask per batch x head in PyTorch's [B*H, Tq, Tk] layout.
  nn::MultiHeadAttentionForward c = fwd(false, true);
  c.attn_mask = blocked.unsqueeze(0).expand({4, 5, 5}).contiguous();
  CHECK_ALLCLOSE(mha(x, x, x, c).first, ya, 1e-6, 1e-6);
  // A different mask per (b, h): entry b*H + h belongs to batch b, head h (PyTorch's order).
  nn::MultiHeadAttentionForward per = fwd(false, true);
  per.average_attn_weights = false;
  per.attn_mask = rand({4, 5, 5}) > 0.6;
  for (int64_t i = 0; i < 4; ++i) per.attn_mask.select(0, i).select(1, 0).fill_(false);  // key 0 always allowed
  const Tensor w4 = mha(x, x, x, per).second;  // [B, H, Tq, Tk]
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h) {
      const Tensor blocked_bh = per.attn_mask.select(0, b * 2 + h);
      CHECK(masked_fill(w4.select(0, b).select(0, h), eq(blocked_bh, scalar_tensor(false, kBool)), 0.0)
                .abs().sum().item<float>() == 0.0f);
    }
  // key_padding_mask: padded keys get no weight.
  nn::MultiHeadAttentionForward d = fwd(false, true);
  d.key_padding_mask = tensor({false, false, false, true, true}).reshape({1, 5}).expand({2, 5}).contiguous();
  auto [yd, wd] = mha(x, x, x, d);
  CHECK(wd.slice(2, 3, 5).abs().sum().item<float>() == 0.0f);
  // The fused path (no weights) gives the same output as the weights path.
  d.need_weights = false;
  CHECK_ALLCLOSE(mha(x, x, x, d).first, yd, 1e-5, 1e-6);
  // is_causal equals an explicit upper-triangular "not allowed" mask.
  nn::MultiHeadAttentionForward e = fwd(false, false);
  e.attn_mask = gt(reshape(arange(5), {1, 5}), reshape(arange(5), {5, 1}));
  CHECK_ALLCLOSE(mha(x, x, x, fwd(true)).first, mha(x, x, x, e).first, 1e-5, 1e-6);
}

TEST_CASE("MultiHeadAttention: batch_first = false and unbatched inputs", "[nn][attention]") {
  manual_seed(3);
  nn::MultiHeadAttention bf(8, 2);
  nn::MultiHeadAttention tf(8, 2, nn::MultiHeadAttentionOptions().batch_first(false));
  tf.load_state_dict(bf.state_dict());
  const Tensor x = randn({3, 4, 8});  // [B, T, E]
  const Tensor y = bf(x, x, x, fwd(true)).first;
  const Tensor xt = x.transpose(0, 1).contiguous();  // [T, B, E]
  CHECK_ALLCLOSE(tf(xt, xt, xt, fwd(true)).first, y.transpose(0, 1), 1e-5, 1e-6);
  const Tensor x0 = x.select(0, 1);
  auto [y0, w0] = bf(x0, x0, x0, fwd(true, true));
  CHECK_ALLCLOSE(y0, y.select(0, 1), 1e-5, 1e-6);
  CHECK(w0.shape() == Shape{4, 4});
}

TEST_CASE("MultiHeadAttention: dropout acts in training only", "[nn][attention]") {
  manual_seed(4);
  nn::MultiHeadAttention mha(8, 2, nn::MultiHeadAttentionOptions().dropout(0.5));
  const Tensor x = randn({2, 6, 8});
  const Tensor train_out = mha(x, x, x, fwd()).first;
  mha.eval();
  const Tensor eval_a = mha(x, x, x, fwd()).first, eval_b = mha(x, x, x, fwd()).first;
  CHECK(allclose(eval_a, eval_b, 0.0, 0.0));
  CHECK_FALSE(allclose(train_out, eval_a));
}

TEST_CASE("KVCache: decoding one token at a time equals recomputing the prefix", "[nn][attention]") {
  manual_seed(5);
  for (int64_t kv_heads : {4, 2, 1}) {
    nn::MultiHeadAttention mha(16, 4, nn::MultiHeadAttentionOptions().num_kv_heads(kv_heads).qk_norm(kv_heads == 2));
    mha.eval();
    NoGradGuard no_grad;
    const Tensor x = randn({2, 9, 16});
    const Tensor full_out = mha(x, x, x, fwd(true)).first;
    nn::KVCache cache(16);
    nn::MultiHeadAttentionForward step = fwd(true);
    step.kv_cache = &cache;
    // A prompt of 3 tokens, then one at a time, then a chunk of 2 (Tq > 1 with a cache).
    std::vector<Tensor> outs{mha(x.slice(1, 0, 3), x.slice(1, 0, 3), x.slice(1, 0, 3), step).first};
    for (int64_t t = 3; t < 7; ++t) {
      const Tensor xt = x.slice(1, t, t + 1);
      outs.push_back(mha(xt, xt, xt, step).first);
    }
    const Tensor chunk = x.slice(1, 7, 9);
    outs.push_back(mha(chunk, chunk, chunk, step).first);
    CHECK(cache.length() == 9);
    CHECK_ALLCLOSE(cat(outs, 1), full_out, 1e-5, 1e-5);
    // Two buffers [B, Hkv, capacity, D] of float32.
    CHECK(cache.memory_bytes() == 2 * 2 * kv_heads * 16 * 4 * 4);
  }
}

TEST_CASE("KVCache: capacity, shapes and grad mode are checked", "[nn][attention]") {
  nn::KVCache cache(4);
  CHECK(cache.memory_bytes() == 0);
  cache.append(zeros({1, 2, 3, 8}), zeros({1, 2, 3, 8}));
  CHECK_THROWS_WITH(cache.append(zeros({1, 2, 2, 8}), zeros({1, 2, 2, 8})), Contains("capacity is 4"));
  CHECK_THROWS_WITH(cache.append(zeros({1, 3, 1, 8}), zeros({1, 3, 1, 8})), Contains("the cache holds"));
  CHECK(cache.length() == 3);
  cache.clear();
  CHECK(cache.length() == 0);
  const Tensor k = zeros({1, 2, 1, 8}).requires_grad_();
  CHECK_THROWS_WITH(cache.append(k, k), Contains("NoGradGuard"));
}

TEST_CASE("MultiHeadAttention: bad configurations and inputs throw clearly", "[nn][attention]") {
  CHECK_THROWS_WITH(nn::MultiHeadAttention(10, 3), Contains("embed_dim must be divisible by num_heads"));
  CHECK_THROWS_WITH(nn::MultiHeadAttention(12, 4, nn::MultiHeadAttentionOptions().num_kv_heads(3)),
                    Contains("num_kv_heads must divide num_heads"));
  CHECK_THROWS_WITH(nn::MultiHeadAttention(12, 4, nn::MultiHeadAttentionOptions().dropout(1.0)),
                    Contains("dropout must be in [0, 1)"));
  nn::MultiHeadAttention mha(8, 2);
  const Tensor x = randn({2, 5, 8});
  CHECK_THROWS_WITH(mha(randn({2, 5, 6}), x, x), Contains("expected query [.., 8]"));
  nn::MultiHeadAttentionForward a;
  a.attn_mask = ones({4, 5}, kBool);
  CHECK_THROWS_WITH(mha(x, x, x, a), Contains("does not fit") && Contains("[4, 5]") && Contains("[2, 2, 5, 5]"));
  nn::MultiHeadAttentionForward b;
  b.key_padding_mask = ones({2, 4}, kBool);
  CHECK_THROWS_WITH(mha(x, x, x, b), Contains("key_padding_mask must have shape [2, 5]"));
  nn::MultiHeadAttentionForward c;
  c.attn_mask = ones({5, 5}, kInt64);
  CHECK_THROWS_WITH(mha(x, x, x, c), Contains("attn_mask must be bool"));
  CHECK_THROWS_WITH(mha(x.to(kFloat64), x, x), Contains("layer's dtype"));
}
