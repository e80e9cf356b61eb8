// Positions and QK-norm inside attention (GPTOptions::positions, TransformerBlockOptions::rotary,
// MultiHeadAttentionOptions::rotary, MultiHeadAttentionForward::position_offset): the modules and
// state-dict keys each choice builds, the sinusoidal table added in the embedding, rotary q and k
// against nn::RotaryEmbedding by hand, offsets through the KV cache (MHA, GQA, unbatched,
// sequence-first), cached decoding against the full forward for every choice, float64 gradcheck
// of rotary attention, and the errors.
#include <optional>
#include <string>
#include <vector>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {

nn::GPTOptions tiny(nn::PositionEncoding positions, int64_t ctx = 8) {
  return nn::GPTOptions(11, ctx).n_layer(2).n_embd(16).n_head(2).positions(positions);
}

double max_abs(const Tensor& t) { return t.detach().abs().max().item<double>(); }

std::vector<std::string> keys(const nn::Module& m) { return m.state_dict().keys(); }

bool has_key(const nn::Module& m, const std::string& key) { return m.state_dict().contains(key); }

}  // namespace

TEST_CASE("GPT positions: the modules and state-dict keys of each choice", "[nn][transformer][positions]") {
  manual_seed(2101);
  nn::GPT learned(tiny(nn::PositionEncoding::kLearned));
  nn::GPT sinusoidal(tiny(nn::PositionEncoding::kSinusoidal));
  nn::GPT rotary(tiny(nn::PositionEncoding::kRotary));
  // The default is learned: checkpoints written before the option existed still load.
  CHECK(nn::GPTOptions(11, 8).positions() == nn::PositionEncoding::kLearned);
  CHECK(learned.pos_emb);
  CHECK_FALSE(learned.pos_enc);
  CHECK(has_key(learned, "pos_emb.weight"));
  CHECK_FALSE(learned.blocks->ptr<nn::TransformerBlock>(0)->attn->rotary);

  CHECK_FALSE(sinusoidal.pos_emb);
  REQUIRE(sinusoidal.pos_enc);
  CHECK_FALSE(has_key(sinusoidal, "pos_emb.weight"));
  REQUIRE(has_key(sinusoidal, "pos_enc.pe"));  // a buffer: saved, not trained
  CHECK_ALLCLOSE(sinusoidal.state_dict()["pos_enc.pe"], nn::sinusoidal_positions(8, 16), 0.0, 0.0);
  CHECK(sinusoidal.num_parameters() == learned.num_parameters() - 8 * 16);

  CHECK_FALSE(rotary.pos_emb);
  CHECK_FALSE(rotary.pos_enc);
  CHECK(rotary.num_parameters() == learned.num_parameters() - 8 * 16);
  for (size_t i = 0; i < 2; ++i) {
    auto attn = rotary.blocks->ptr<nn::TransformerBlock>(int64_t(i))->attn;
    REQUIRE(attn->rotary);
    CHECK(attn->rotary->options.head_dim() == 8);
    CHECK(attn->extra_repr().find("rotary=True") != std::string::npos);
  }
  // Rotary keys are learned's without pos_emb.weight: no table, and RoPE holds no state.
  std::vector<std::string> want = keys(learned);
  want.erase(want.begin() + 1);
  CHECK(want.front() == "tok_emb.weight");
  CHECK(keys(rotary) == want);

  CHECK(std::string(nn::to_string(nn::PositionEncoding::kSinusoidal)) == "sinusoidal");
  for (const char* name : {"learned", "sinusoidal", "rotary"})
    CHECK(std::string(nn::to_string(nn::position_encoding(name))) == name);
}

TEST_CASE("Sinusoidal GPT adds the fixed table to the token vectors times sqrt(E)", "[nn][transformer][positions]") {
  manual_seed(2102);
  nn::GPT gpt(tiny(nn::PositionEncoding::kSinusoidal));
  gpt.eval();
  NoGradGuard no_grad;
  Tensor ids = tensor({{1, 2, 3, 4, 5}, {10, 0, 7, 7, 7}});
  Tensor h = gpt.tok_emb->forward(ids) * 4.0 + nn::sinusoidal_positions(5, 16);  // sqrt(16) = 4
  for (size_t i = 0; i < gpt.blocks->size(); ++i) h = gpt.blocks->ptr<nn::TransformerBlock>(int64_t(i))->forward(h);
  CHECK_ALLCLOSE(gpt(ids), gpt.head->forward(gpt.ln_f->forward(h)), 1e-5, 1e-6);
}

TEST_CASE("Rotary attention turns q and k per head, counting from the offset and the cache",
          "[nn][attention][positions]") {
  manual_seed(2103);
  const int64_t E = 16, H = 4, Hkv = 2, D = 4, T = 5;
  nn::MultiHeadAttention mha(E, H, nn::MultiHeadAttentionOptions().num_kv_heads(Hkv).rotary(true));
  nn::RotaryEmbedding rope(D);
  Tensor x = randn({2, T, E});
  // By hand: project, split into heads, rotate q and k from position `first`, attend, merge.
  auto by_hand = [&](int64_t first) {
    auto heads = [](const Tensor& t, int64_t h) { return t.view({2, T, h, D}).transpose(1, 2); };
    Tensor q = rope.apply(heads(mha.q_proj->forward(x), H), first);
    Tensor k = rope.apply(heads(mha.k_proj->forward(x), Hkv), first);
    Tensor v = heads(mha.v_proj->forward(x), Hkv);
    Tensor o = scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true, std::nullopt,
                                            /*enable_gqa=*/true);  // [B, H, T, D]
    return mha.out_proj->forward(o.transpose(1, 2).reshape({2, T, E}));
  };
  nn::MultiHeadAttentionForward args;
  args.is_causal = true;
  args.need_weights = false;
  CHECK_ALLCLOSE(mha(x, x, x, args).first, by_hand(0), 1e-5, 1e-6);
  args.position_offset = 3;
  CHECK_ALLCLOSE(mha(x, x, x, args).first, by_hand(0), 1e-5, 1e-6);  // relative: the same output
  // Each head's q and k alone do move with the offset: scores of q at i against k at j equal
  // those of q at i + 3 against k at j + 3, but not those of q at i against k at j + 3.
  Tensor xh = x.view({2, T, H, D}).transpose(1, 2);  // [B, H, T, D]
  Tensor q0 = rope.apply(xh, 0), q3 = rope.apply(xh, 3);
  CHECK_ALLCLOSE(q0.matmul(q0.transpose(-2, -1)), q3.matmul(q3.transpose(-2, -1)), 1e-5, 1e-5);
  CHECK(max_abs(q0.matmul(q3.transpose(-2, -1)) - q0.matmul(q0.transpose(-2, -1))) > 1e-2);

  // Decoding through a KV cache: chunk [0, 2) then one token at a time, each at its absolute
  // position; every chunk's output equals the full forward's rows (with or without need_weights).
  for (bool need_weights : {false, true}) {
    INFO("need_weights " << need_weights);
    NoGradGuard no_grad;
    args.position_offset = 0;
    args.need_weights = need_weights;
    Tensor full = mha(x, x, x, args).first;
    nn::KVCache cache(T);
    args.kv_cache = &cache;
    Tensor first = x.slice(1, 0, 2);
    Tensor out = mha(first, first, first, args).first;  // (CHECK_ALLCLOSE reads its arguments twice)
    CHECK_ALLCLOSE(out, full.slice(1, 0, 2), 1e-5, 1e-6);
    for (int64_t t = 2; t < T; ++t) {
      Tensor one = x.slice(1, t, t + 1);
      out = mha(one, one, one, args).first;
      CHECK_ALLCLOSE(out, full.slice(1, t, t + 1), 1e-5, 1e-6);
    }
    args.kv_cache = nullptr;
  }
}

TEST_CASE("Rotary attention: unbatched and sequence-first inputs, float64 gradcheck", "[nn][attention][positions]") {
  manual_seed(2104);
  nn::MultiHeadAttention mha(8, 2, nn::MultiHeadAttentionOptions().rotary(true).qk_norm(true));
  nn::MultiHeadAttentionForward args;
  args.is_causal = true;
  Tensor x = randn({4, 8});
  CHECK_ALLCLOSE(mha(x, x, x, args).first, mha(x.unsqueeze(0), x.unsqueeze(0), x.unsqueeze(0), args).first.squeeze(0),
                 1e-5, 1e-6);
  nn::MultiHeadAttention seq_first(8, 2, nn::MultiHeadAttentionOptions().rotary(true).qk_norm(true).batch_first(false));
  seq_first.load_state_dict(mha.state_dict());
  Tensor xb = randn({3, 4, 8});  // [B, T, E]
  Tensor tb = xb.transpose(0, 1);  // [T, B, E]
  CHECK_ALLCLOSE(seq_first(tb, tb, tb, args).first.transpose(0, 1), mha(xb, xb, xb, args).first, 1e-5, 1e-6);

  mha.to(kFloat64);
  args.need_weights = false;
  autograd::GradcheckResult r = autograd::gradcheck(
      [&](const autograd::TensorList& in) {
        nn::MultiHeadAttentionForward a = args;
        a.position_offset = 2;
        return mha(in[0], in[0], in[0], a).first;
      },
      {randn({2, 3, 8}, kFloat64).requires_grad_()});
  INFO(r.message);
  CHECK(r.ok);
}

TEST_CASE("Every position choice: cached decoding equals the full forward, generate equals recomputing",
          "[nn][transformer][positions]") {
  for (nn::PositionEncoding p : {nn::PositionEncoding::kLearned, nn::PositionEncoding::kSinusoidal,
                                 nn::PositionEncoding::kRotary}) {
    for (int64_t kv_heads : {0, 1}) {
      INFO(nn::to_string(p) << ", n_kv_head " << kv_heads);
      manual_seed(2105);
      nn::GPT gpt(tiny(p).n_kv_head(kv_heads).qk_norm(kv_heads == 1));
      gpt.eval();
      NoGradGuard no_grad;
      Tensor ids = randint(11, {2, 8});
      Tensor full = gpt(ids);
      std::vector<nn::KVCache> caches(2, nn::KVCache(8));
      Tensor out = gpt.forward_cached(ids.slice(1, 0, 3), caches);  // (CHECK_ALLCLOSE reads it twice)
      CHECK_ALLCLOSE(out, full.slice(1, 0, 3), 1e-5, 1e-5);
      for (int64_t t = 3; t < 8; ++t) {
        out = gpt.forward_cached(ids.slice(1, t, t + 1), caches);
        CHECK_ALLCLOSE(out, full.slice(1, t, t + 1), 1e-5, 1e-5);
      }
      Tensor prompt = tensor({{1, 2}, {9, 9}});
      Tensor cached = gpt.generate(prompt, 12, nn::GenerateOptions().greedy(true));
      Tensor recomputed = gpt.generate(prompt, 12, nn::GenerateOptions().greedy(true).use_cache(false));
      CHECK(cached.to_vector<int64_t>() == recomputed.to_vector<int64_t>());
    }
  }
}

TEST_CASE("Position options: errors", "[nn][transformer][positions]") {
  REQUIRE_THROWS_WITH(nn::position_encoding("Rotary"),
                      Contains("expected learned, sinusoidal or rotary, got 'Rotary'"));
  REQUIRE_THROWS_WITH(nn::MultiHeadAttention(6, 2, nn::MultiHeadAttentionOptions().rotary(true)),
                      Contains("rotary positions need an even head dim (embed_dim / num_heads = 6 / 2 = 3)"));
  REQUIRE_THROWS_WITH(nn::GPT(nn::GPTOptions(11, 8).n_embd(6).n_head(2).positions(nn::PositionEncoding::kRotary)),
                      Contains("n_embd / n_head = 6 / 2 = 3"));
  nn::MultiHeadAttention mha(8, 2, nn::MultiHeadAttentionOptions().rotary(true));
  nn::MultiHeadAttentionForward args;
  args.position_offset = -1;
  Tensor x = randn({1, 3, 8});
  REQUIRE_THROWS_WITH(mha(x, x, x, args), Contains("position_offset must be >= 0, got -1"));
  // Sinusoidal and rotary checkpoints do not load into each other, nor into learned.
  manual_seed(2106);
  nn::GPT sinusoidal(tiny(nn::PositionEncoding::kSinusoidal));
  nn::GPT rotary(tiny(nn::PositionEncoding::kRotary));
  nn::GPT learned(tiny(nn::PositionEncoding::kLearned));
  REQUIRE_THROWS_WITH(rotary.load_state_dict(sinusoidal.state_dict()), Contains("unexpected keys: pos_enc.pe"));
  REQUIRE_THROWS_WITH(learned.load_state_dict(sinusoidal.state_dict()),
                      Contains("missing keys: pos_emb.weight") && Contains("unexpected keys: pos_enc.pe"));
  // A sinusoidal table has context_length rows, as the learned one.
  REQUIRE_THROWS_WITH(sinusoidal(randint(11, {1, 9})), Contains("exceeds context_length 8"));
}
