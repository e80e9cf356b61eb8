// TransformerBlock (pre-norm: attention and a GELU MLP, each around a residual) and GPT, a small
// decoder-only language model with greedy / temperature / top-k generation through KV caches.
//
//   tt::nn::GPT gpt(tt::nn::GPTOptions(65, 128).n_layer(4).n_embd(128).n_head(4));
//   Tensor logits = gpt(ids);                 // ids: int64 [B, T] -> [B, T, vocab]
//   Tensor more = gpt.generate(ids, 100, tt::nn::GenerateOptions().temperature(0.8).top_k(10));
//
// Block:  x = x + dropout(attn(ln1(x)));  x = x + dropout(fc2(gelu(fc1(ln2(x)))))
// GPT:    h = tok_emb(ids) + pos_emb(0..T-1); h = blocks(h); logits = head(ln_f(h))
//         (positions learned, the default; sinusoidal adds a fixed table instead, to token vectors
//         scaled by sqrt(E); rotary adds nothing and rotates q and k inside every attention:
//         GPTOptions::positions)
// Parameter names: ln1, attn.{q,k,v,out}_proj, ln2, fc1, fc2 per block; tok_emb, pos_emb,
// blocks.N.*, ln_f, head (head.weight is tok_emb.weight when tied: one tensor, listed once by
// parameters(), saved under both names). Sinusoidal models have a buffer pos_enc.pe instead of
// pos_emb.weight, rotary models neither; qk_norm adds attn.q_norm.weight and attn.k_norm.weight.
// A checkpoint therefore loads only into a model built with the same positions and qk_norm
// (load_state_dict names the missing and unexpected keys).
// Init as GPT-2: Linear weights and embeddings ~ N(0, 0.02), biases 0, and the two projections
// into the residual stream (attn.out_proj, fc2) ~ N(0, 0.02 / sqrt(2 * n_layer)).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tinytorch/core/generator.h"
#include "tinytorch/nn/attention.h"
#include "tinytorch/nn/container.h"
#include "tinytorch/nn/dropout.h"
#include "tinytorch/nn/embedding.h"
#include "tinytorch/nn/linear.h"
#include "tinytorch/nn/module.h"
#include "tinytorch/nn/normalization.h"
#include "tinytorch/nn/positional.h"

namespace tt::nn {

// Where a GPT's tokens learn their positions (Note [GPT positions] in transformer.cpp).
enum class PositionEncoding {
  kLearned,     // a trained table pos_emb [context_length, E] added to the token vectors (GPT-2)
  kSinusoidal,  // the fixed sin/cos table of Vaswani et al. (buffer pos_enc.pe) added instead,
                //   to the token vectors times sqrt(E) (as theirs)
  kRotary,      // nothing added: every attention rotates its q and k (RoPE, LLaMA); no table
};
// "learned", "sinusoidal", "rotary".
const char* to_string(PositionEncoding p);
// The inverse of to_string; throws tt::Error naming the three choices for any other name.
PositionEncoding position_encoding(const std::string& name);

struct TransformerBlockOptions {
  TransformerBlockOptions& mlp_ratio(int64_t v) { mlp_ratio_ = v; return *this; }
  TransformerBlockOptions& dropout(double v) { dropout_ = v; return *this; }
  TransformerBlockOptions& bias(bool v) { bias_ = v; return *this; }
  TransformerBlockOptions& num_kv_heads(int64_t v) { num_kv_heads_ = v; return *this; }
  TransformerBlockOptions& qk_norm(bool v) { qk_norm_ = v; return *this; }
  TransformerBlockOptions& rotary(bool v) { rotary_ = v; return *this; }
  TransformerBlockOptions& norm_eps(double v) { norm_eps_ = v; return *this; }
  int64_t mlp_ratio() const { return mlp_ratio_; }
  double dropout() const { return dropout_; }
  bool bias() const { return bias_; }
  int64_t num_kv_heads() const { return num_kv_heads_; }
  bool qk_norm() const { return qk_norm_; }
  bool rotary() const { return rotary_; }
  double norm_eps() const { return norm_eps_; }

 private:
  int64_t mlp_ratio_ = 4;  // hidden width of the MLP = mlp_ratio * embed_dim
  double dropout_ = 0.0;   // on the attention weights and after each residual branch
  bool bias_ = true;       // in every Linear and LayerNorm
  int64_t num_kv_heads_ = 0;
  bool qk_norm_ = false;   // RMSNorm on each head's q and k (MultiHeadAttentionOptions::qk_norm)
  bool rotary_ = false;    // RoPE on q and k; the head dim must be even
  double norm_eps_ = 1e-5;
};

class TransformerBlock : public Module {
 public:
  TransformerBlock(int64_t embed_dim, int64_t num_heads,
                   const TransformerBlockOptions& options = TransformerBlockOptions());
  // x: [B, T, E] -> [B, T, E]. attn_mask: as MultiHeadAttention's (bool true = NOT allowed).
  // kv_cache: this block's cache when decoding (see GPT::generate). position_offset: where the
  // rotary positions of x start (MultiHeadAttentionForward::position_offset; no effect without
  // rotary).
  Tensor forward(const Tensor& x, const Tensor& attn_mask = {}, bool is_causal = true,
                 KVCache* kv_cache = nullptr, int64_t position_offset = 0) const;
  Tensor operator()(const Tensor& x, const Tensor& attn_mask = {}, bool is_causal = true,
                    KVCache* kv_cache = nullptr, int64_t position_offset = 0) const {
    return forward(x, attn_mask, is_causal, kv_cache, position_offset);
  }
  // The attention weights [B, H, T, T] (detached) of the last forward run while recording (the
  // attention maps of a sample); undefined before one, and cleared by record_attention(false).
  // Recording costs the composed math path instead of the fused kernel. With a KV cache the maps
  // are [B, H, t, length] (the new queries against every cached key).
  void record_attention(bool on) {
    record_ = on;
    if (!on) last_attention_ = Tensor();
  }
  Tensor last_attention() const { return last_attention_; }

  TransformerBlockOptions options;
  std::shared_ptr<LayerNorm> ln1, ln2;
  std::shared_ptr<MultiHeadAttention> attn;
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<Dropout> drop;

 private:
  bool record_ = false;
  mutable Tensor last_attention_;
};

struct GPTOptions {
  GPTOptions(int64_t vocab_size, int64_t context_length) : vocab_size_(vocab_size), context_length_(context_length) {}
  GPTOptions& n_layer(int64_t v) { n_layer_ = v; return *this; }
  GPTOptions& n_embd(int64_t v) { n_embd_ = v; return *this; }
  GPTOptions& n_head(int64_t v) { n_head_ = v; return *this; }
  GPTOptions& n_kv_head(int64_t v) { n_kv_head_ = v; return *this; }
  GPTOptions& mlp_ratio(int64_t v) { mlp_ratio_ = v; return *this; }
  GPTOptions& dropout(double v) { dropout_ = v; return *this; }
  GPTOptions& bias(bool v) { bias_ = v; return *this; }
  GPTOptions& tie_weights(bool v) { tie_weights_ = v; return *this; }
  GPTOptions& qk_norm(bool v) { qk_norm_ = v; return *this; }
  GPTOptions& positions(PositionEncoding v) { positions_ = v; return *this; }
  int64_t vocab_size() const { return vocab_size_; }
  int64_t context_length() const { return context_length_; }
  int64_t n_layer() const { return n_layer_; }
  int64_t n_embd() const { return n_embd_; }
  int64_t n_head() const { return n_head_; }
  int64_t n_kv_head() const { return n_kv_head_; }
  int64_t mlp_ratio() const { return mlp_ratio_; }
  double dropout() const { return dropout_; }
  bool bias() const { return bias_; }
  bool tie_weights() const { return tie_weights_; }
  bool qk_norm() const { return qk_norm_; }
  PositionEncoding positions() const { return positions_; }

 private:
  int64_t vocab_size_, context_length_;
  int64_t n_layer_ = 4, n_embd_ = 128, n_head_ = 4, n_kv_head_ = 0, mlp_ratio_ = 4;
  double dropout_ = 0.0;
  bool bias_ = true, tie_weights_ = true, qk_norm_ = false;
  PositionEncoding positions_ = PositionEncoding::kLearned;  // rotary needs an even n_embd / n_head
};

struct GenerateOptions {
  GenerateOptions& temperature(double v) { temperature_ = v; return *this; }
  GenerateOptions& top_k(int64_t v) { top_k_ = v; return *this; }
  GenerateOptions& greedy(bool v) { greedy_ = v; return *this; }
  GenerateOptions& use_cache(bool v) { use_cache_ = v; return *this; }
  GenerateOptions& generator(Generator* g) { generator_ = g; return *this; }
  double temperature() const { return temperature_; }
  int64_t top_k() const { return top_k_; }
  bool greedy() const { return greedy_; }
  bool use_cache() const { return use_cache_; }
  Generator* generator() const { return generator_; }

 private:
  double temperature_ = 1.0;  // > 0; logits are divided by it before sampling
  int64_t top_k_ = 0;         // 0: all tokens; else sample among the k most likely
  bool greedy_ = false;       // argmax instead of sampling
  bool use_cache_ = true;     // false: recompute the whole prefix at every step (for tests)
  Generator* generator_ = nullptr;  // null: tt's default generator
};

class GPT : public Module {
 public:
  // Throws tt::Error for sizes that are not positive, n_embd not divisible by n_head, dropout
  // outside [0, 1), and rotary positions with an odd head dim n_embd / n_head.
  explicit GPT(const GPTOptions& options);
  // ids: int64 [B, T], T <= context_length -> logits [B, T, vocab_size]. Causal.
  Tensor forward(const Tensor& ids) const;
  Tensor operator()(const Tensor& ids) const { return forward(ids); }
  // Appends max_new_tokens tokens to ids [B, T] and returns [B, T + max_new_tokens], with eval
  // behaviour and without grad on this thread (EvalModeGuard, NoGradGuard): no module's training
  // flag is touched, so several threads may generate from one model at once. Throws tt::Error
  // for max_new_tokens < 0, temperature <= 0 (also when greedy), top_k < 0 (top_k >= vocab_size
  // means all tokens). The prompt may be longer than context_length (only its last
  // context_length tokens are seen). Sampling draws one uniform per row and step from
  // options.generator() (default: tt's global one), so a seed fixes the samples. With the
  // cache, the prompt is run once and each new token costs one query against the cached keys;
  // when the sequence outgrows context_length, the window slides: the caches are rebuilt from the
  // last context_length ids at every step from then on (positions are absolute), so the tokens
  // are those of use_cache(false).
  Tensor generate(const Tensor& ids, int64_t max_new_tokens, const GenerateOptions& options = GenerateOptions());
  // Decoding one step at a time: logits [B, t, vocab] for ids [B, t] at positions
  // caches[0].length() .. + t - 1, appending to one cache per block (caches.size() == n_layer,
  // each of capacity >= the positions it will hold, e.g. KVCache(context_length)). Inference only:
  // it runs under NoGradGuard (the caches are written in place), in the module's current mode.
  // Throws when the positions would pass context_length: clear the caches and start again.
  Tensor forward_cached(const Tensor& ids, std::vector<KVCache>& caches) const;

  GPTOptions options;
  std::shared_ptr<Embedding> tok_emb;
  std::shared_ptr<Embedding> pos_emb;                    // learned positions only, else null
  std::shared_ptr<SinusoidalPositionalEncoding> pos_enc;  // sinusoidal positions only, else null
  std::shared_ptr<ModuleList> blocks;
  std::shared_ptr<LayerNorm> ln_f;
  std::shared_ptr<Linear> head;
  std::shared_ptr<Dropout> drop;
};

}  // namespace tt::nn
