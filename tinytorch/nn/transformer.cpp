// TransformerBlock and GPT: layers composed of LayerNorm, MultiHeadAttention, Linear, Embedding
// and Dropout, plus the host loop of generation (sampling from the last position's logits).
// Not here: the attention math (nn/attention.cpp, ops/attention.cpp), training loops (examples/).
#include "tinytorch/nn/transformer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/nn/init.h"
#include "tinytorch/ops/activation.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/join.h"
#include "tinytorch/ops/reduction.h"
#include "tinytorch/ops/view.h"

namespace tt::nn {

// --- positions -------------------------------------------------------------------------------

const char* to_string(PositionEncoding p) {
  switch (p) {
    case PositionEncoding::kLearned: return "learned";
    case PositionEncoding::kSinusoidal: return "sinusoidal";
    case PositionEncoding::kRotary: return "rotary";
  }
  return "?";
}

PositionEncoding position_encoding(const std::string& name) {
  for (PositionEncoding p : {PositionEncoding::kLearned, PositionEncoding::kSinusoidal, PositionEncoding::kRotary})
    if (name == to_string(p)) return p;
  TT_CHECK(false, "nn::position_encoding: expected learned, sinusoidal or rotary, got '", name, "'");
  return PositionEncoding::kLearned;  // not reached
}

// --- TransformerBlock ------------------------------------------------------------------------

TransformerBlock::TransformerBlock(int64_t embed_dim, int64_t num_heads, const TransformerBlockOptions& options)
    : options(options) {
  TT_CHECK(embed_dim > 0 && num_heads > 0, "nn::TransformerBlock: embed_dim and num_heads must be > 0, got ",
           embed_dim, " and ", num_heads);
  TT_CHECK(options.mlp_ratio() > 0, "nn::TransformerBlock: mlp_ratio must be > 0, got ", options.mlp_ratio());
  TT_CHECK(options.dropout() >= 0.0 && options.dropout() < 1.0, "nn::TransformerBlock: dropout must be in [0, 1), got ",
           options.dropout());
  LayerNormOptions norm = LayerNormOptions({embed_dim}).eps(options.norm_eps()).bias(options.bias());
  ln1 = register_module("ln1", std::make_shared<LayerNorm>(norm));
  attn = register_module("attn", std::make_shared<MultiHeadAttention>(embed_dim, num_heads,
                                                                      MultiHeadAttentionOptions()
                                                                          .bias(options.bias())
                                                                          .dropout(options.dropout())
                                                                          .num_kv_heads(options.num_kv_heads())
                                                                          .qk_norm(options.qk_norm())
                                                                          .rotary(options.rotary())));
  ln2 = register_module("ln2", std::make_shared<LayerNorm>(norm));
  int64_t hidden = options.mlp_ratio() * embed_dim;
  fc1 = register_module("fc1", std::make_shared<Linear>(LinearOptions(embed_dim, hidden).bias(options.bias())));
  fc2 = register_module("fc2", std::make_shared<Linear>(LinearOptions(hidden, embed_dim).bias(options.bias())));
  drop = register_module("drop", std::make_shared<Dropout>(options.dropout()));
}

// x: [B, T, E] -> [B, T, E]
Tensor TransformerBlock::forward(const Tensor& x, const Tensor& attn_mask, bool is_causal, KVCache* kv_cache,
                                 int64_t position_offset) const {
  TT_CHECK_SHAPE(x.dim() == 3 && x.size(2) == attn->embed_dim, "nn::TransformerBlock: expected input [B, T, ",
                 attn->embed_dim, "], got ", x.shape());
  // TT_EXERCISE_BEGIN(14, 1)
  MultiHeadAttentionForward args;
  args.attn_mask = attn_mask;
  args.is_causal = is_causal;
  args.kv_cache = kv_cache;
  args.position_offset = position_offset;
  args.need_weights = record_;          // false: the fused kernel, no [B, H, T, T] weights kept
  args.average_attn_weights = false;    // per-head maps when recording
  Tensor h = ln1->forward(x);
  auto [a, weights] = attn->forward(h, h, h, args);
  if (record_) last_attention_ = weights.detach();
  Tensor y = x + drop->forward(a);                                   // attention residual
  Tensor m = fc2->forward(gelu(fc1->forward(ln2->forward(y))));  // GELU MLP, exact erf
  return y + drop->forward(m);                                       // MLP residual
  // TT_EXERCISE_END
}

// --- GPT: construction -----------------------------------------------------------------------

namespace {

// GPT-2's initialization (Note [GPT init]).
void init_gpt(GPT& gpt) {
  // Note [GPT init]: every Linear weight and both embeddings ~ N(0, 0.02), biases 0, LayerNorms
  // at (1, 0). The two projections that write into the residual stream (attn.out_proj and fc2)
  // get std 0.02 / sqrt(2 * n_layer): each block adds two branches to the stream, so its
  // variance grows with 2 * n_layer terms and this keeps it independent of depth (GPT-2 paper,
  // section 2.3; nanoGPT's c_proj).
  gpt.apply([](Module& m) {
    if (auto* linear = dynamic_cast<Linear*>(&m)) {
      init::normal_(linear->weight, 0.0, 0.02);
      if (linear->bias.defined()) init::zeros_(linear->bias);
    } else if (auto* emb = dynamic_cast<Embedding*>(&m)) {
      init::normal_(emb->weight, 0.0, 0.02);
    }
  });
  double residual_std = 0.02 / std::sqrt(2.0 * double(gpt.options.n_layer()));
  for (size_t i = 0; i < gpt.blocks->size(); ++i) {
    auto block = gpt.blocks->ptr<TransformerBlock>(int64_t(i));
    init::normal_(block->attn->out_proj->weight, 0.0, residual_std);
    init::normal_(block->fc2->weight, 0.0, residual_std);
  }
}

}  // namespace

GPT::GPT(const GPTOptions& options) : options(options) {
  const GPTOptions& o = options;
  TT_CHECK(o.vocab_size() > 0 && o.context_length() > 0, "nn::GPT: vocab_size and context_length must be > 0, got ",
           o.vocab_size(), " and ", o.context_length());
  TT_CHECK(o.n_layer() > 0 && o.n_embd() > 0 && o.n_head() > 0,
           "nn::GPT: n_layer, n_embd and n_head must be > 0, got ", o.n_layer(), ", ", o.n_embd(), " and ",
           o.n_head());
  TT_CHECK(o.n_embd() % o.n_head() == 0, "nn::GPT: n_embd must be divisible by n_head, got ", o.n_embd(), " and ",
           o.n_head());
  TT_CHECK(o.dropout() >= 0.0 && o.dropout() < 1.0, "nn::GPT: dropout must be in [0, 1), got ", o.dropout());
  const bool rotary = o.positions() == PositionEncoding::kRotary;
  TT_CHECK_SHAPE(!rotary || (o.n_embd() / o.n_head()) % 2 == 0,
                 "nn::GPT: rotary positions need an even head dim (n_embd / n_head = ", o.n_embd(), " / ", o.n_head(),
                 " = ", o.n_embd() / o.n_head(), "): RoPE turns the coordinates in pairs");
  tok_emb = register_module("tok_emb", std::make_shared<Embedding>(o.vocab_size(), o.n_embd()));
  // Note [GPT positions]: learned (GPT-2) adds a trained row per position to the token vectors;
  // sinusoidal adds the fixed table of Vaswani et al. (a buffer: saved, never trained); rotary adds
  // nothing to the stream and rotates q and k in every attention instead (Note [rotary in
  // attention] in nn/attention.cpp), so attention sees only distances between positions.
  // Sinusoidal also multiplies the token vectors by sqrt(E), as Vaswani et al. do: the table's
  // entries are sines and cosines of size 1, the token vectors start at std 0.02 (Note [GPT
  // init]), and added as they are the stream is almost all position. Measured on module 14's
  // reversal task (its walkthrough, section 11): without the factor the loss stayed at ln 10 for
  // 300 steps; with it the model learns the task.
  if (o.positions() == PositionEncoding::kLearned)
    pos_emb = register_module("pos_emb", std::make_shared<Embedding>(o.context_length(), o.n_embd()));
  if (o.positions() == PositionEncoding::kSinusoidal)
    pos_enc = register_module("pos_enc",
                              std::make_shared<SinusoidalPositionalEncoding>(o.context_length(), o.n_embd()));
  drop = register_module("drop", std::make_shared<Dropout>(o.dropout()));
  blocks = register_module("blocks", std::make_shared<ModuleList>());
  TransformerBlockOptions block_options = TransformerBlockOptions()
                                              .mlp_ratio(o.mlp_ratio())
                                              .dropout(o.dropout())
                                              .bias(o.bias())
                                              .num_kv_heads(o.n_kv_head())
                                              .qk_norm(o.qk_norm())
                                              .rotary(rotary);
  for (int64_t i = 0; i < o.n_layer(); ++i)
    blocks->push_back(std::make_shared<TransformerBlock>(o.n_embd(), o.n_head(), block_options));
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(LayerNormOptions({o.n_embd()}).bias(o.bias())));
  head = register_module("head", std::make_shared<Linear>(LinearOptions(o.n_embd(), o.vocab_size()).bias(false)));
  init_gpt(*this);
  // Weight tying (Press & Wolf 2017): the output head reads logits as dot products with the token
  // embeddings. One tensor under two names: parameters() lists it once (as tok_emb.weight), so an
  // optimizer steps it once with the sum of both gradients; state_dict() saves both names.
  if (o.tie_weights()) head->weight = head->replace_parameter("weight", tok_emb->weight);
}

// --- GPT: forward ----------------------------------------------------------------------------

namespace {

void check_ids(const Tensor& ids, const char* who) {
  TT_CHECK(ids.defined(), who, ": ids is an undefined tensor");
  TT_CHECK_DTYPE(ids.dtype() == kInt64, who, ": ids must be int64 token ids, got ", ids.dtype());
  TT_CHECK_SHAPE(ids.dim() == 2 && ids.size(0) > 0 && ids.size(1) > 0, who,
                 ": ids must be [B, T] with B, T > 0, got ", ids.shape());
}

// Token plus position embeddings of ids [B, T] at positions offset .. offset + T - 1: [B, T, E]
// (Note [GPT positions]: rotary adds none here, its attention layers count from the cache length;
// sinusoidal scales the token vectors by sqrt(E) first).
Tensor embed(const GPT& gpt, const Tensor& ids, int64_t offset) {
  int64_t T = ids.size(1);
  Tensor h = gpt.tok_emb->forward(ids);
  if (gpt.pos_emb) {
    Tensor positions = arange(offset, offset + T, 1, TensorOptions().dtype(kInt64).device(ids.device()));
    h = h + gpt.pos_emb->forward(positions);
  } else if (gpt.pos_enc) {  // sqrt(E) tok_emb(ids) + pe[offset : offset + T] (Note [GPT positions])
    h = gpt.pos_enc->forward(h * std::sqrt(double(gpt.options.n_embd())), offset);
  }
  return gpt.drop->forward(h);
}

// Final norm and head: h [B, T, E] -> logits [B, T, V].
Tensor logits_of(const GPT& gpt, const Tensor& h) { return gpt.head->forward(gpt.ln_f->forward(h)); }

}  // namespace

// ids: int64 [B, T] -> logits [B, T, V]
Tensor GPT::forward(const Tensor& ids) const {
  check_ids(ids, "nn::GPT::forward");
  int64_t T = ids.size(1);
  TT_CHECK_SHAPE(T <= options.context_length(), "nn::GPT::forward: sequence length ", T,
                 " exceeds context_length ", options.context_length(), " (ids ", ids.shape(),
                 "); crop to the last context_length tokens");
  // TT_EXERCISE_BEGIN(14, 2)
  Tensor h = embed(*this, ids, 0);
  for (size_t i = 0; i < blocks->size(); ++i) h = blocks->ptr<TransformerBlock>(int64_t(i))->forward(h, {}, true);
  return logits_of(*this, h);
  // TT_EXERCISE_END
}

// ids: int64 [B, t] -> logits [B, t, V], appending t positions to every cache.
Tensor GPT::forward_cached(const Tensor& ids, std::vector<KVCache>& caches) const {
  check_ids(ids, "nn::GPT::forward_cached");
  TT_CHECK(int64_t(caches.size()) == options.n_layer(), "nn::GPT::forward_cached: expected one KVCache per block (",
           options.n_layer(), "), got ", caches.size());
  int64_t offset = caches[0].length(), t = ids.size(1);
  for (size_t i = 1; i < caches.size(); ++i)
    TT_CHECK(caches[i].length() == offset, "nn::GPT::forward_cached: the caches hold different lengths (block 0: ",
             offset, ", block ", i, ": ", caches[i].length(), ")");
  TT_CHECK_SHAPE(offset + t <= options.context_length(), "nn::GPT::forward_cached: positions ", offset, " .. ",
                 offset + t - 1, " exceed context_length ", options.context_length(),
                 "; clear the caches and feed the last context_length tokens again");
  for (size_t i = 0; i < caches.size(); ++i)  // checked before any block appends: all or nothing
    TT_CHECK(offset + t <= caches[i].capacity(), "nn::GPT::forward_cached: block ", i, "'s cache holds at most ",
             caches[i].capacity(), " positions, and ", offset, " + ", t, " were asked for");
  NoGradGuard no_grad;  // the cache is written in place: decoding is inference only
  // TT_EXERCISE_BEGIN(14, 3)
  Tensor h = embed(*this, ids, offset);
  for (size_t i = 0; i < blocks->size(); ++i)
    h = blocks->ptr<TransformerBlock>(int64_t(i))->forward(h, {}, true, &caches[i]);
  return logits_of(*this, h);
  // TT_EXERCISE_END
}

// --- GPT: generation -------------------------------------------------------------------------

namespace {

// logits: [B, V]. Greedy decoding refuses logits that are not finite, as sampling does below:
// argmax over a row of NaN would return token 0 as if it were an answer. One number is read back per
// step (the largest |logit|, NaN when any is); the whole row only when something is wrong.
void check_greedy_logits(const Tensor& logits) {
  if (std::isfinite(logits.abs().max().item<double>())) return;
  const int64_t V = logits.size(1);
  const std::vector<double> values = logits.to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i)
    TT_CHECK(std::isfinite(values[i]), "nn::GPT::generate: the logits are not finite (", values[i], " for token ",
             int64_t(i) % V, " in row ", int64_t(i) / V, "); the model has diverged");
}

// One next token per row of the last position's logits [B, V] -> int64 [B, 1] on `device`.
// Note [sampling]: greedy takes the argmax (the first on ties). Otherwise the candidates are
// all tokens, or the top_k largest logits (ties broken towards the lower id, so top_k = 1 is
// greedy); each gets weight exp((logit - max) / temperature), and one uniform u per row picks
// the first token whose running sum of weights exceeds u * total (inverse CDF). The work is a
// host loop over V per row: small next to the forward that produced the logits.
Tensor next_tokens(const Tensor& logits, const GenerateOptions& opts, Device device) {
  if (opts.greedy()) {
    check_greedy_logits(logits);
    return argmax(logits, -1, /*keepdim=*/true);
  }
  // TT_EXERCISE_BEGIN(14, 4)
  int64_t B = logits.size(0), V = logits.size(1);
  std::vector<double> values = logits.to_vector<double>();
  std::vector<double> u = rand({B}, TensorOptions().dtype(kFloat64), opts.generator()).to_vector<double>();
  int64_t k = (opts.top_k() > 0 && opts.top_k() < V) ? opts.top_k() : V;
  std::vector<int64_t> out(static_cast<size_t>(B), 0), order(static_cast<size_t>(V));
  for (int64_t b = 0; b < B; ++b) {
    const double* row = values.data() + b * V;
    for (int64_t v = 0; v < V; ++v) {
      TT_CHECK(std::isfinite(row[v]), "nn::GPT::generate: the logits are not finite (", row[v], " for token ", v,
               " in row ", b, "); the model has diverged");
      order[size_t(v)] = v;
    }
    // Candidates: the k largest logits, in descending order (lower id first on ties).
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int64_t i, int64_t j) {
      return row[i] > row[j] || (row[i] == row[j] && i < j);
    });
    double top = row[order[0]], total = 0.0;
    std::vector<double> weight(static_cast<size_t>(k));
    for (int64_t c = 0; c < k; ++c) {
      weight[size_t(c)] = std::exp((row[order[size_t(c)]] - top) / opts.temperature());
      total += weight[size_t(c)];
    }
    double target = u[size_t(b)] * total, running = 0.0;
    int64_t pick = order[size_t(k - 1)];  // when rounding leaves the target past the last sum
    for (int64_t c = 0; c < k; ++c) {
      running += weight[size_t(c)];
      if (running > target) {
        pick = order[size_t(c)];
        break;
      }
    }
    out[size_t(b)] = pick;
  }
  return tensor(out, {B, 1}).to(device);
  // TT_EXERCISE_END
}

}  // namespace

// ids: int64 [B, T] -> [B, T + max_new_tokens]
Tensor GPT::generate(const Tensor& ids, int64_t max_new_tokens, const GenerateOptions& opts) {
  check_ids(ids, "nn::GPT::generate");
  TT_CHECK(max_new_tokens >= 0, "nn::GPT::generate: max_new_tokens must be >= 0, got ", max_new_tokens);
  TT_CHECK(opts.temperature() > 0.0 && std::isfinite(opts.temperature()),
           "nn::GPT::generate: temperature must be a finite number > 0, got ", opts.temperature(),
           " (use greedy(true) for argmax decoding)");
  TT_CHECK(opts.top_k() >= 0, "nn::GPT::generate: top_k must be >= 0 (0 = all tokens), got ", opts.top_k());
  // Eval behaviour and no grad for this thread only: the modules' flags are left alone, so one
  // model may generate on several threads at once (Note [threads] in autograd/node.cpp).
  EvalModeGuard eval_mode;
  NoGradGuard no_grad;

  const int64_t ctx = options.context_length();
  // The last min(length, ctx) tokens of seq: what the model may see.
  auto window = [ctx](const Tensor& seq) {
    int64_t L = seq.size(1);
    return L <= ctx ? seq : slice(seq, 1, L - ctx, L);
  };
  // [B, t, V] -> the last position's logits [B, V]
  auto last = [](const Tensor& logits) { return select(logits, 1, logits.size(1) - 1); };

  Tensor seq = ids.clone();
  if (max_new_tokens == 0) return seq;
  std::vector<KVCache> caches;
  Tensor logits;
  if (opts.use_cache()) {
    caches.assign(size_t(options.n_layer()), KVCache(ctx));
    logits = last(forward_cached(window(seq), caches));
  } else {
    logits = last(forward(window(seq)));
  }
  for (int64_t n = 0; n < max_new_tokens; ++n) {
    Tensor next = next_tokens(logits, opts, ids.device());
    seq = cat({seq, next}, 1);
    if (n + 1 == max_new_tokens) break;  // no forward for a token nobody will sample
    if (!opts.use_cache()) {
      logits = last(forward(window(seq)));
    } else if (caches[0].length() < ctx) {
      logits = last(forward_cached(next, caches));  // one query against the cached keys
    } else {
      // Note [sliding window]: positions are absolute (learned pos_emb), so once the sequence
      // outgrows the context every cached key sits at the wrong position: clear the caches and
      // run the last ctx tokens again. From here on each token costs a full window, as without
      // a cache, and the logits stay those of forward(window(seq)). Rotary positions are
      // relative and could keep their rotated keys, but a KVCache cannot drop its oldest
      // entry, so they take the same path (and give the same tokens as without a cache).
      for (KVCache& c : caches) c.clear();
      logits = last(forward_cached(window(seq), caches));
    }
  }
  return seq;
}

}  // namespace tt::nn
