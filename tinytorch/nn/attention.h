// MultiHeadAttention (self and cross attention, GQA/MQA, optional QK-norm) and KVCache, the
// per-layer store of past keys and values for incremental decoding.
//
//   tt::nn::MultiHeadAttention mha(512, 8, tt::nn::MultiHeadAttentionOptions().num_kv_heads(2));
//   tt::nn::MultiHeadAttentionForward args;
//   args.is_causal = true;
//   args.need_weights = false;
//   auto [y, w] = mha(x, x, x, args);   // x: [B, T, 512] -> y: [B, T, 512], w undefined
//
// Options: qk_norm (RMSNorm on each head's q and k) and rotary (RoPE: each head's q and k rotated
// for their positions, after QK-norm, before the scores; Note [rotary in attention]).
//
// Parameters: q_proj [E -> E], k_proj [kdim -> Hkv*D], v_proj [vdim -> Hkv*D], out_proj [E -> E]
// (each a Linear, D = E / num_heads the head dim), plus q_norm and k_norm (RMSNorm over D) with
// qk_norm. Self-attention with equal dims runs the three input projections as one GEMM against
// their weights stacked (still three parameters, as above).
//
// Masks follow torch.nn.MultiheadAttention, which is the OPPOSITE of
// F::scaled_dot_product_attention for bool masks:
//   * attn_mask: bool, true where attention is NOT allowed; or float, added to the scores.
//     [Tq, Tk], [B*H, Tq, Tk] (PyTorch's layout) or anything that broadcasts to [B, H, Tq, Tk].
//   * key_padding_mask: [B, Tk], bool true = padding (ignored), or float added.
//   * is_causal: query i attends to keys j <= i (with a KV cache: to every cached key and to the
//     new keys up to its own position). May be combined with the masks above.
// A query with no key left to attend to gets an output of zeros (PyTorch gives NaN).
//
// Cost of a self-attention forward on [B, T, E]: 8·B·T·E² FLOPs for the projections plus
// 4·B·T²·E for scores and output (half of that causal). Memory: B·H·T² weights kept for the
// backward by the composed path (need_weights, dropout) and by the math kernel (F::scaled_dot_
// product_attention's default while they fit in 16 MiB; its backward adds a T² scratch per
// thread); O(T) per head with the flash kernel beyond that.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "tinytorch/nn/linear.h"
#include "tinytorch/nn/module.h"
#include "tinytorch/nn/normalization.h"
#include "tinytorch/nn/positional.h"

namespace tt::nn {

// Past keys and values of one attention layer, [B, Hkv, length, D] each, stored in buffers of
// `capacity` positions allocated once (on the first append), so decoding one token at a time
// copies only the new keys. Not a Module: a cache is per generation, not part of a checkpoint.
// Appending is not differentiable (decode under tt::NoGradGuard).
class KVCache {
 public:
  // capacity: the most positions this cache will ever hold (e.g. the model's context length).
  explicit KVCache(int64_t capacity) : capacity_(capacity) {}
  // Appends k: [B, Hkv, t, D] and v: [B, Hkv, t, Dv] and returns views of everything cached so
  // far ([B, Hkv, length, *]). Throws tt::Error when length + t > capacity, or when shapes, dtypes
  // or devices differ from what the cache already holds.
  std::pair<Tensor, Tensor> append(const Tensor& k, const Tensor& v);
  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }
  // Bytes held by the two buffers (allocated for the full capacity), 0 before the first append.
  int64_t memory_bytes() const;
  // Forgets the cached positions (keeps the buffers).
  void clear() { length_ = 0; }

 private:
  int64_t capacity_, length_ = 0;
  Tensor k_, v_;  // [B, Hkv, capacity, D], [B, Hkv, capacity, Dv]
};

struct MultiHeadAttentionOptions {
  MultiHeadAttentionOptions& bias(bool v) { bias_ = v; return *this; }
  MultiHeadAttentionOptions& dropout(double v) { dropout_ = v; return *this; }
  MultiHeadAttentionOptions& kdim(int64_t v) { kdim_ = v; return *this; }
  MultiHeadAttentionOptions& vdim(int64_t v) { vdim_ = v; return *this; }
  MultiHeadAttentionOptions& num_kv_heads(int64_t v) { num_kv_heads_ = v; return *this; }
  MultiHeadAttentionOptions& batch_first(bool v) { batch_first_ = v; return *this; }
  MultiHeadAttentionOptions& qk_norm(bool v) { qk_norm_ = v; return *this; }
  MultiHeadAttentionOptions& rotary(bool v) { rotary_ = v; return *this; }
  bool bias() const { return bias_; }
  double dropout() const { return dropout_; }
  int64_t kdim() const { return kdim_; }              // 0: embed_dim
  int64_t vdim() const { return vdim_; }              // 0: embed_dim
  int64_t num_kv_heads() const { return num_kv_heads_; }  // 0: num_heads
  bool batch_first() const { return batch_first_; }
  bool qk_norm() const { return qk_norm_; }
  bool rotary() const { return rotary_; }

 private:
  bool bias_ = true;
  double dropout_ = 0.0;  // on the attention weights, in training mode only
  int64_t kdim_ = 0, vdim_ = 0, num_kv_heads_ = 0;
  bool batch_first_ = true;  // [B, T, E]; false: [T, B, E] as PyTorch's default
  bool qk_norm_ = false;     // RMSNorm over the head dim on q and k (learned weight [D] each)
  bool rotary_ = false;      // RoPE on q and k (base 10000; the head dim must be even); no parameters
};

// What one forward call may add besides query, key and value.
struct MultiHeadAttentionForward {
  Tensor attn_mask;          // see the top of this file: bool true = NOT allowed, float added
  Tensor key_padding_mask;   // [B, Tk]: bool true = padding, float added
  bool is_causal = false;
  bool need_weights = true;  // PyTorch's default; pass false for speed (the fused kernel)
  bool average_attn_weights = true;  // weights averaged over heads: [B, Tq, Tk], else [B, H, Tq, Tk]
  KVCache* kv_cache = nullptr;       // append this call's keys/values and attend to all cached
  int64_t position_offset = 0;       // rotary only: the first new token sits at offset + cached length
};

class MultiHeadAttention : public Module {
 public:
  // Throws tt::Error when embed_dim is not divisible by num_heads, num_heads by num_kv_heads,
  // or a size is not positive, or dropout is outside [0, 1), or rotary is asked for with an odd head dim.
  MultiHeadAttention(int64_t embed_dim, int64_t num_heads,
                     const MultiHeadAttentionOptions& options = MultiHeadAttentionOptions());
  // query: [B, Tq, E], key: [B, Tk, kdim], value: [B, Tk, vdim] (batch_first; [T, B, *] otherwise;
  // unbatched [T, *] also works). Returns {output [B, Tq, E], weights} where weights (need_weights
  // only, else undefined) are [B, Tq, Tk] averaged over heads or [B, H, Tq, Tk], taken after
  // dropout as PyTorch does. Errors name the rule and both shapes (masks that do not broadcast,
  // sizes that do not match the layer, wrong dtypes).
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const MultiHeadAttentionForward& args = {}) const;
  std::pair<Tensor, Tensor> operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                       const MultiHeadAttentionForward& args = {}) const {
    return forward(query, key, value, args);
  }
  void reset_parameters();
  std::string extra_repr() const override;

  int64_t embed_dim, num_heads, num_kv_heads, head_dim;
  MultiHeadAttentionOptions options;
  std::shared_ptr<Linear> q_proj, k_proj, v_proj, out_proj;
  std::shared_ptr<RMSNorm> q_norm, k_norm;  // null without qk_norm
  std::shared_ptr<RotaryEmbedding> rotary;  // null without rotary
};

}  // namespace tt::nn
