// Positional encodings: how a model that sees a set of tokens learns their order.
//   LearnedPositionalEmbedding   a trained table [max_len, dim] added to the token vectors (GPT-2)
//   sinusoidal_positions /       the fixed sin/cos table of "Attention Is All You Need"
//   SinusoidalPositionalEncoding
//   RotaryEmbedding              RoPE (Su et al. 2021): rotates q and k so that their dot product
//                                depends only on the distance between the two positions
// Not here: ALiBi, relative-position biases, RoPE scaling (NTK, YaRN).
#pragma once

#include <cstdint>
#include <mutex>
#include <utility>

#include "tinytorch/nn/module.h"

namespace tt::nn {

// A trained position table, as GPT-2's wpe: weight [max_len, dim] drawn from N(0, 1) (the
// nn::Embedding default; GPT-2 re-draws it with std 0.02). Positions >= max_len are an error:
// the table has no row for them.
class LearnedPositionalEmbedding : public Module {
 public:
  LearnedPositionalEmbedding(int64_t max_len, int64_t dim);
  // Positions offset .. offset + seq_len - 1 -> [seq_len, dim] (a slice of the table; offset is
  // the number of tokens already decoded, for a KV cache).
  Tensor forward(int64_t seq_len, int64_t offset = 0) const;
  // positions: int64 [*] -> [*, dim]
  Tensor forward(const Tensor& positions) const;
  Tensor operator()(int64_t seq_len, int64_t offset = 0) const { return forward(seq_len, offset); }
  Tensor operator()(const Tensor& positions) const { return forward(positions); }
  std::string extra_repr() const override;

  int64_t max_len, dim;
  Tensor weight;  // [max_len, dim]
};

// Note [sinusoidal layout]
// The table of Vaswani et al. 2017, interleaved as in the paper: for position t and i in [0, dim/2)
//   pe[t, 2i]     = sin(t / base^(2i / dim))
//   pe[t, 2i + 1] = cos(t / base^(2i / dim))
// so column pairs (2i, 2i + 1) share one frequency, from 1 (columns 0, 1) down to about 1/base.
// An odd dim ends with one sin column. Computed in float64, returned as float32 [T, dim].
Tensor sinusoidal_positions(int64_t seq_len, int64_t dim, double base = 10000.0);

// The fixed table held as a buffer "pe" [max_len, dim] (saved with the module, never trained;
// to() converts it like any floating-point buffer).
class SinusoidalPositionalEncoding : public Module {
 public:
  SinusoidalPositionalEncoding(int64_t max_len, int64_t dim, double base = 10000.0);
  // x: [*, T, dim] -> x + pe[offset : offset + T] (broadcast over the leading dims)
  Tensor forward(const Tensor& x, int64_t offset = 0) const;
  Tensor operator()(const Tensor& x, int64_t offset = 0) const { return forward(x, offset); }
  // pe[offset : offset + seq_len]: [seq_len, dim]
  Tensor encoding(int64_t seq_len, int64_t offset = 0) const;
  std::string extra_repr() const override;

  int64_t max_len, dim;
  double base;
  Tensor pe;  // [max_len, dim], float32
};

struct RotaryOptions {
  RotaryOptions(int64_t head_dim) : head_dim_(head_dim) {}  // NOLINT: implicit, RotaryEmbedding(64) reads well
  // θ_i = base^(-2i / head_dim); 10000 in the paper and LLaMA 1/2, 500000 in LLaMA 3.
  RotaryOptions& base(double v) {
    base_ = v;
    return *this;
  }
  int64_t head_dim() const { return head_dim_; }
  double base() const { return base_; }

 private:
  int64_t head_dim_;
  double base_ = 10000.0;
};

// Note [rotary pairing]
// RoPE rotates pairs of coordinates of each query and key vector by an angle proportional to
// the token's position t: pair i turns by t·θ_i with θ_i = base^(-2i / D), i in [0, D/2).
// Which coordinates form a pair is a convention. We use GPT-NeoX / LLaMA (Hugging Face)'s
// "rotate_half": pair i is (x[i], x[i + D/2]), the two halves of the vector, so
//   rope(x, t) = x * cos + rotate_half(x) * sin,   rotate_half(x) = cat(-x[D/2:], x[:D/2])
// with cos = cat(cos(t·θ), cos(t·θ)) and sin likewise, each [T, D]. (The paper and Meta's LLaMA
// code pair adjacent coordinates (x[2i], x[2i + 1]) instead; the two differ by a fixed
// permutation of the head dim, so weights trained with one need their q/k projections permuted
// to use the other.)
// Each pair is a 2-D rotation R(t·θ_i), and R(mθ)ᵀR(nθ) = R((n - m)θ), so
//   <rope(q, m), rope(k, n)> = <q, rope(k, n - m)>
// depends only on the distance n - m: attention scores see relative positions.
//
// The cos/sin tables are cached per dtype and device and grown on demand (to at least twice
// their length, so a decoding loop rebuilds them O(log T) times). They are kept out of the
// module's buffers on purpose, as PyTorch code marks them persistent=False: they are a
// deterministic function of the options, and a cache whose length depends on how far a model
// has decoded would make state dicts of the same model differ in shape. Not thread-safe: apply()
// may grow the cache.
class RotaryEmbedding : public Module {
 public:
  explicit RotaryEmbedding(const RotaryOptions& options);  // head_dim must be even and > 0
  using Module::apply;  // Module::apply(fn) stays visible beside the tensor overloads
  // x: [*, T, D] (usually [B, H, T, D]) -> the same shape, the token at row t rotated for
  // position offset + t. With a KV cache, decode one token at position t with offset = t: it
  // gets the same rotation as row t of the full sequence.
  Tensor apply(const Tensor& x, int64_t offset = 0) const;
  // positions: int64 [T] (every batch the same) or [B, T] (x: [B, H, T, D]), each >= 0.
  Tensor apply(const Tensor& x, const Tensor& positions) const;
  // q, k: [B, H, T, D] (their H may differ, as with grouped-query attention) -> rotated {q, k}.
  std::pair<Tensor, Tensor> forward(const Tensor& q, const Tensor& k, int64_t offset = 0) const;
  // The tables for positions offset .. offset + seq_len - 1: {cos, sin}, each [seq_len, D].
  std::pair<Tensor, Tensor> cos_sin(int64_t seq_len, int64_t offset, ScalarType dtype, Device device) const;
  std::string extra_repr() const override;

  RotaryOptions options;

 private:
  // Positions cached at most; a window past them is computed alone (cos_sin).
  static constexpr int64_t kMaxCachedPositions = int64_t(1) << 16;
  mutable std::mutex cache_mu_;
  mutable Tensor cos_cached_, sin_cached_;  // [L, D] in the dtype and on the device last asked for
};

// GPT-NeoX's rotate_half: x: [*, D] -> cat(-x[..., D/2:], x[..., :D/2]) (D even).
Tensor rotate_half(const Tensor& x);
// x * cos + rotate_half(x) * sin, with cos and sin broadcastable to x ([T, D] for x [*, T, D]).
Tensor apply_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin);

}  // namespace tt::nn
