// MultiHeadAttention and KVCache (nn/attention.h): projections, the split into heads, PyTorch's
// masks turned into one additive bias for F::scaled_dot_product_attention, and the merge back.
//
// Note [heads as views]: a projection [B, T, H*D] is split into heads by reshape to [B, T, H, D]
// and transpose to [B, H, T, D]: no copy, the attention kernel reads the strided heads directly,
// and writes its output as [B, T, H, D] memory, so merging the heads back is a view too.
#include "tinytorch/nn/attention.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/nn/functional.h"
#include "tinytorch/nn/init.h"
#include "tinytorch/ops/ops.h"

namespace tt::nn {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool needs_grad(const Tensor& t) { return GradMode::is_enabled() && t.defined() && t.requires_grad(); }

// x: [B, T, H*D] -> [B, H, T, D] (Note [heads as views]).
Tensor split_heads(const Tensor& x, int64_t H) {
  // TT_EXERCISE_BEGIN(12, 3)
  const int64_t B = x.size(0), T = x.size(1);
  return x.reshape({B, T, H, x.size(2) / H}).transpose(1, 2);
  // TT_EXERCISE_END
}

// x: [B, H, T, D] -> [B, T, H*D], each token's heads side by side: split_heads undone (a view
// when x is laid out as [B, T, H, D], as the attention kernels write it; Note [heads as views]).
Tensor concat_heads(const Tensor& x) {
  // TT_EXERCISE_BEGIN(12, 4)
  return x.transpose(1, 2).reshape({x.size(0), x.size(2), x.size(1) * x.size(3)});
  // TT_EXERCISE_END
}

// A MultiHeadAttention mask (bool true = NOT allowed, or float) as an additive float bias.
Tensor mha_bias(const Tensor& mask, ScalarType dtype) {
  if (mask.dtype() != kBool) return mask;
  return where(mask, full({}, -kInf, TensorOptions().dtype(dtype).device(mask.device())), 0.0);
}

// Sum of two additive biases, either possibly undefined.
Tensor add_bias(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a + b;
}

}  // namespace

// --- KVCache -------------------------------------------------------------------------------------

std::pair<Tensor, Tensor> KVCache::append(const Tensor& k, const Tensor& v) {
  TT_CHECK_SHAPE(k.dim() == 4 && v.dim() == 4, "KVCache::append: expected k and v of shape [B, Hkv, t, D], got ",
                 k.shape(), " and ", v.shape());
  TT_CHECK(!needs_grad(k) && !needs_grad(v),
           "KVCache::append: the cache is not differentiable; decode under tt::NoGradGuard");
  const int64_t t = k.size(2);
  TT_CHECK_SHAPE(v.size(0) == k.size(0) && v.size(1) == k.size(1) && v.size(2) == t,
                 "KVCache::append: k and v must agree on batch, heads and length, got ", k.shape(), " and ",
                 v.shape());
  TT_CHECK(length_ + t <= capacity_, "KVCache::append: capacity is ", capacity_, " positions, ", length_,
           " are cached and ", t, " more were appended");
  if (length_ > 0) {  // what is appended must match what is cached
    TT_CHECK_SHAPE(k_.size(0) == k.size(0) && k_.size(1) == k.size(1) && k_.size(3) == k.size(3) &&
                       v_.size(3) == v.size(3),
                   "KVCache::append: the cache holds [B, Hkv, *, D] = ", k_.shape(), " and values ", v_.shape(),
                   ", got k ", k.shape(), " and v ", v.shape());
    TT_CHECK_DTYPE(k.dtype() == k_.dtype() && v.dtype() == v_.dtype(), "KVCache::append: the cache holds ",
                   k_.dtype(), ", got ", k.dtype());
    TT_CHECK_DEVICE(k.device() == k_.device() && v.device() == v_.device(), "KVCache::append: the cache is on ",
                    k_.device(), ", got k on ", k.device(), " and v on ", v.device());
  }
  // TT_EXERCISE_BEGIN(12, 5)
  if (length_ == 0) {  // the first append, or the first after clear(): (re)allocate unless the buffers fit
    const bool same = k_.defined() && k_.size(0) == k.size(0) && k_.size(1) == k.size(1) &&
                      k_.size(3) == k.size(3) && v_.size(3) == v.size(3) && k_.dtype() == k.dtype() &&
                      v_.dtype() == v.dtype() && k_.device() == k.device() && v_.device() == v.device();
    if (!same) {
      k_ = empty({k.size(0), k.size(1), capacity_, k.size(3)}, k.options());
      v_ = empty({v.size(0), v.size(1), capacity_, v.size(3)}, v.options());
    }
  }
  k_.slice(2, length_, length_ + t).copy_(k);
  v_.slice(2, length_, length_ + t).copy_(v);
  length_ += t;
  return {k_.slice(2, 0, length_), v_.slice(2, 0, length_)};
  // TT_EXERCISE_END
}

int64_t KVCache::memory_bytes() const {
  if (!k_.defined()) return 0;
  return (k_.numel() + v_.numel()) * int64_t(element_size(k_.dtype()));
}

// --- MultiHeadAttention --------------------------------------------------------------------------

MultiHeadAttention::MultiHeadAttention(int64_t embed_dim_, int64_t num_heads_, const MultiHeadAttentionOptions& opts)
    : Module("MultiHeadAttention"), embed_dim(embed_dim_), num_heads(num_heads_), options(opts) {
  TT_CHECK(embed_dim > 0 && num_heads > 0, "MultiHeadAttention: embed_dim and num_heads must be positive, got ",
           embed_dim, " and ", num_heads);
  TT_CHECK(embed_dim % num_heads == 0, "MultiHeadAttention: embed_dim must be divisible by num_heads, got ",
           embed_dim, " and ", num_heads);
  num_kv_heads = opts.num_kv_heads() == 0 ? num_heads : opts.num_kv_heads();
  TT_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0,
           "MultiHeadAttention: num_kv_heads must divide num_heads, got ", num_kv_heads, " and ", num_heads);
  TT_CHECK(opts.kdim() >= 0 && opts.vdim() >= 0, "MultiHeadAttention: kdim and vdim must be >= 0, got ", opts.kdim(),
           " and ", opts.vdim());
  TT_CHECK(opts.dropout() >= 0.0 && opts.dropout() < 1.0, "MultiHeadAttention: dropout must be in [0, 1), got ",
           opts.dropout());
  head_dim = embed_dim / num_heads;
  const int64_t kdim = opts.kdim() == 0 ? embed_dim : opts.kdim();
  const int64_t vdim = opts.vdim() == 0 ? embed_dim : opts.vdim();
  const int64_t kv_width = num_kv_heads * head_dim;
  q_proj = register_module("q_proj", std::make_shared<Linear>(LinearOptions(embed_dim, embed_dim).bias(opts.bias())));
  k_proj = register_module("k_proj", std::make_shared<Linear>(LinearOptions(kdim, kv_width).bias(opts.bias())));
  v_proj = register_module("v_proj", std::make_shared<Linear>(LinearOptions(vdim, kv_width).bias(opts.bias())));
  out_proj =
      register_module("out_proj", std::make_shared<Linear>(LinearOptions(embed_dim, embed_dim).bias(opts.bias())));
  if (opts.qk_norm()) {
    q_norm = register_module("q_norm", std::make_shared<RMSNorm>(RMSNormOptions({head_dim})));
    k_norm = register_module("k_norm", std::make_shared<RMSNorm>(RMSNormOptions({head_dim})));
  }
  if (opts.rotary()) {
    TT_CHECK_SHAPE(head_dim % 2 == 0, "MultiHeadAttention: rotary positions need an even head dim (embed_dim / ",
                   "num_heads = ", embed_dim, " / ", num_heads, " = ", head_dim, "): coordinates turn in pairs");
    rotary = register_module("rotary", std::make_shared<RotaryEmbedding>(RotaryOptions(head_dim)));
  }
  reset_parameters();
}

// PyTorch's MultiheadAttention: Xavier-uniform input projections, zero biases; out_proj keeps
// Linear's default weight with a zero bias.
void MultiHeadAttention::reset_parameters() {
  NoGradGuard no_grad;
  for (const auto& lin : {q_proj, k_proj, v_proj}) {
    init::xavier_uniform_(lin->weight);
    if (lin->bias.defined()) lin->bias.zero_();
  }
  out_proj->reset_parameters();
  if (out_proj->bias.defined()) out_proj->bias.zero_();
}

std::string MultiHeadAttention::extra_repr() const {
  std::ostringstream os;
  os << "embed_dim=" << embed_dim << ", num_heads=" << num_heads;
  if (num_kv_heads != num_heads) os << ", num_kv_heads=" << num_kv_heads;
  if (options.dropout() > 0) os << ", dropout=" << options.dropout();
  if (options.qk_norm()) os << ", qk_norm=True";
  if (options.rotary()) os << ", rotary=True";
  return os.str();
}

// --- MultiHeadAttention::forward, step by step ------------------------------------------------------

namespace {

constexpr const char* kOp = "MultiHeadAttention";

// One call's inputs, checked and made batch-first [B, T, *].
struct MhaInputs {
  Tensor q, k, v;  // [B, Tq, E], [B, Tk, kdim], [B, Tk, vdim]
  int64_t B, Tq, Tk;
  bool unbatched;  // the caller passed 2-D [T, *] inputs
};

// The heads attention runs on: q [B, H, Tq, D], k and v [B, Hkv, Tkv, D] (Tkv: every key attended
// to, cached ones included).
struct Heads {
  Tensor q, k, v;
};

// The masks as one additive bias broadcastable to [B, H, Tq, Tkv] (undefined when there is none),
// and whether the kernel's own causal mask applies on top.
struct Mask {
  Tensor bias;
  bool causal;
};

MhaInputs check_inputs(const MultiHeadAttention& mha, const Tensor& query, const Tensor& key, const Tensor& value) {
  for (const Tensor* t : {&query, &key, &value}) {
    TT_CHECK(t->defined(), kOp, ": query, key and value must be defined");
    TT_CHECK_DTYPE(t->is_floating_point() && t->dtype() == mha.q_proj->weight.dtype(), kOp,
                   ": inputs must have the layer's dtype ", mha.q_proj->weight.dtype(), ", got ", t->dtype());
  }
  const int nd = query.dim();
  TT_CHECK_SHAPE((nd == 2 || nd == 3) && key.dim() == nd && value.dim() == nd, kOp,
                 ": query, key and value must all be 3-D (batched) or 2-D (unbatched), got ", query.shape(), ", ",
                 key.shape(), " and ", value.shape());
  auto batch_first = [&](const Tensor& t) {
    if (nd == 2) return t.unsqueeze(0);
    return mha.options.batch_first() ? t : t.transpose(0, 1);
  };
  MhaInputs in{batch_first(query), batch_first(key), batch_first(value), 0, 0, 0, nd == 2};
  in.B = in.q.size(0);
  in.Tq = in.q.size(1);
  in.Tk = in.k.size(1);
  const int64_t E = mha.embed_dim, kdim = mha.k_proj->options.in_features(), vdim = mha.v_proj->options.in_features();
  TT_CHECK_SHAPE(in.q.size(2) == E && in.k.size(2) == kdim && in.v.size(2) == vdim, kOp, ": expected query [.., ", E,
                 "], key [.., ", kdim, "] and value [.., ", vdim, "], got ", query.shape(), ", ", key.shape(), " and ",
                 value.shape());
  TT_CHECK_SHAPE(in.k.size(0) == in.B && in.v.size(0) == in.B && in.v.size(1) == in.Tk, kOp,
                 ": query, key and value must share the batch size, and key and value the length, got ", query.shape(),
                 ", ", key.shape(), " and ", value.shape());
  return in;
}

// The projections split into heads (Note [heads as views]), then QK-norm. Self-attention (one
// tensor as query, key and value) runs one GEMM against the stacked weights.
Heads project_heads(const MultiHeadAttention& mha, const MhaInputs& in, bool self_attention) {
  const int64_t E = mha.embed_dim;
  Tensor q, k, v;
  if (self_attention && mha.k_proj->options.in_features() == E && mha.v_proj->options.in_features() == E) {
    const Tensor w = cat({mha.q_proj->weight, mha.k_proj->weight, mha.v_proj->weight}, 0);
    const Tensor b = mha.options.bias() ? cat({mha.q_proj->bias, mha.k_proj->bias, mha.v_proj->bias}, 0) : Tensor();
    const Tensor qkv = F::linear(in.q, w, b);  // [B, T, E + 2 * Hkv * D]
    const int64_t kv = mha.num_kv_heads * mha.head_dim;
    // One split, not three slices: the three gradients meet in one node and are joined by one cat
    // (Note [split backward] in ops/join.cpp), with no zero-filled [B, T, E + 2 kv] buffer per piece.
    const std::vector<Tensor> qkv_parts = split(qkv, std::vector<int64_t>{E, kv, kv}, 2);
    q = qkv_parts[0];
    k = qkv_parts[1];
    v = qkv_parts[2];
  } else {
    q = mha.q_proj->forward(in.q);
    k = mha.k_proj->forward(in.k);
    v = mha.v_proj->forward(in.v);
  }
  Heads h{split_heads(q, mha.num_heads), split_heads(k, mha.num_kv_heads), split_heads(v, mha.num_kv_heads)};
  if (mha.q_norm) {
    h.q = mha.q_norm->forward(h.q);
    h.k = mha.k_norm->forward(h.k);
  }
  return h;
}

// Appends this call's keys and values to the cache, if any, so that h.k and h.v hold every key
// attended to. Returns how many positions were cached before: the offset of this call's queries.
int64_t append_to_cache(KVCache* cache, Heads& h) {
  if (cache == nullptr) return 0;
  const int64_t past = cache->length();
  std::tie(h.k, h.v) = cache->append(h.k, h.v);
  return past;
}

// attn_mask as a bias: PyTorch's [B*H, Tq, Tk] is viewed as [B, H, Tq, Tk]; the rest must broadcast.
Tensor attn_mask_bias(const Tensor& m, const MhaInputs& in, int64_t H, int64_t Tkv, ScalarType dtype) {
  TT_CHECK_DTYPE(m.dtype() == kBool || m.dtype() == dtype, kOp,
                 ": attn_mask must be bool (true = not allowed) or the query's dtype ", dtype, ", got ", m.dtype());
  const int64_t B = in.B, Tq = in.Tq;
  Tensor m4 = m;
  if (m.dim() == 3 && m.size(0) == B * H && B * H > 1) m4 = m.reshape({B, H, Tq, m.size(2)});
  bool ok = m4.dim() >= 2 && m4.dim() <= 4;
  const int64_t target[4] = {B, H, Tq, Tkv};
  for (int i = 1; ok && i <= m4.dim(); ++i) ok = m4.size(m4.dim() - i) == target[4 - i] || m4.size(m4.dim() - i) == 1;
  TT_CHECK_SHAPE(ok, kOp, ": attn_mask of shape ", m.shape(), " does not fit the scores [B, H, Tq, Tk] = ",
                 Shape{B, H, Tq, Tkv}, " (expected [Tq, Tk], [B*H, Tq, Tk] or a shape that broadcasts)");
  return mha_bias(m4, dtype);
}

// key_padding_mask [B, Tkv] ([Tkv] unbatched) as a bias [B, 1, 1, Tkv].
Tensor key_padding_bias(const Tensor& m, const MhaInputs& in, int64_t Tkv, ScalarType dtype) {
  TT_CHECK_DTYPE(m.dtype() == kBool || m.dtype() == dtype, kOp,
                 ": key_padding_mask must be bool (true = padding) or the query's dtype ", dtype, ", got ", m.dtype());
  const Shape want = in.unbatched ? Shape{Tkv} : Shape{in.B, Tkv};
  TT_CHECK_SHAPE(m.shape() == want, kOp, ": key_padding_mask must have shape ", want, " ([B, Tk]), got ", m.shape());
  return mha_bias(m, dtype).reshape({in.B, 1, 1, Tkv});
}

Mask build_mask(const MultiHeadAttention& mha, const MultiHeadAttentionForward& args, const MhaInputs& in,
                const Heads& h, int64_t past) {
  const int64_t Tq = in.Tq, Tkv = h.k.size(2);
  const ScalarType dtype = h.q.dtype();
  Mask mask{Tensor(), args.is_causal};
  if (args.attn_mask.defined()) mask.bias = attn_mask_bias(args.attn_mask, in, mha.num_heads, Tkv, dtype);
  if (args.key_padding_mask.defined())
    mask.bias = add_bias(mask.bias, key_padding_bias(args.key_padding_mask, in, Tkv, dtype));
  // Causal with cached keys: query i (at position past + i) sees keys j <= past + i; the kernel's
  // causal flag is top-left aligned, which is that only when nothing is cached.
  if (mask.causal && past > 0) {
    mask.causal = false;
    if (Tq > 1) {
      const Tensor i = arange(Tq, TensorOptions().dtype(kInt64).device(h.q.device())).reshape({Tq, 1});
      const Tensor j = arange(Tkv, TensorOptions().dtype(kInt64).device(h.q.device())).reshape({1, Tkv});
      mask.bias = add_bias(mask.bias, mha_bias(gt(j, i + past), dtype));
    }
  }
  return mask;
}

// Attention through the explicit weights (need_weights): out [B, H, Tq, D] and the weights after
// dropout, averaged over the heads ([B, Tq, Tkv]) or not ([B, H, Tq, Tkv]), unbatched as the input.
std::pair<Tensor, Tensor> attend_with_weights(const MultiHeadAttention& mha, const Heads& h, const Mask& mask,
                                              const MultiHeadAttentionForward& args, const MhaInputs& in, double p) {
  const int64_t B = in.B, Tq = in.Tq, Tkv = h.k.size(2);
  Tensor weights = F::attention_weights(h.q, h.k, mask.bias, mask.causal, std::nullopt, /*enable_gqa=*/true);
  if (p > 0) weights = F::dropout(weights, p, true);
  const int64_t G = mha.num_heads / mha.num_kv_heads;
  Tensor out = G == 1 ? matmul(weights, h.v)
                      : matmul(weights.reshape({B, mha.num_kv_heads, G, Tq, Tkv}), h.v.unsqueeze(2))
                            .reshape({B, mha.num_heads, Tq, mha.head_dim});
  if (args.average_attn_weights) weights = mean(weights, Shape{1});
  if (in.unbatched) weights = weights.squeeze(0);
  return {out, weights};
}

// The heads merged back (a view, Note [heads as views]) through out_proj, in the caller's layout.
Tensor merge_heads(const MultiHeadAttention& mha, const Tensor& out, const MhaInputs& in) {
  Tensor y = mha.out_proj->forward(concat_heads(out));
  if (in.unbatched) return y.squeeze(0);
  return mha.options.batch_first() ? y : y.transpose(0, 1);
}

}  // namespace

// --- rotary positions ----------------------------------------------------------------------------

namespace {

// Note [rotary in attention]
// With options.rotary(), each head's q and k are rotated for their positions (Note [rotary
// pairing] in nn/positional.h) after the split into heads and QK-norm, before the scores; v is
// left alone. This call's queries and keys sit at positions first, first + 1, ..., where first
// is args.position_offset plus the length of the KV cache, if any: a token decoded with a cache
// gets the rotation it gets in one full forward, and the keys are cached already rotated, so they
// are turned once. The scores then depend only on the distance between query and key positions:
// the same offset added to every position leaves the output unchanged. (Cross-attention counts
// its keys from `first` too; RoPE is meant for self-attention.)
void rotate_heads(const MultiHeadAttention& mha, Heads& h, int64_t first) {
  if (!mha.rotary) return;
  TT_CHECK(first >= 0, kOp, ": position_offset must be >= 0, got ", first);
  h.q = mha.rotary->apply(h.q, first);  // [B, H, Tq, D]
  h.k = mha.rotary->apply(h.k, first);  // [B, Hkv, Tk, D]
}

}  // namespace

std::pair<Tensor, Tensor> MultiHeadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                      const MultiHeadAttentionForward& args) const {
  const MhaInputs in = check_inputs(*this, query, key, value);
  Heads h = project_heads(*this, in, query.is_same(key) && key.is_same(value));
  rotate_heads(*this, h, args.position_offset + (args.kv_cache ? args.kv_cache->length() : 0));
  const int64_t past = append_to_cache(args.kv_cache, h);
  const Mask mask = build_mask(*this, args, in, h, past);
  const double p = is_training() ? options.dropout() : 0.0;
  Tensor out, weights;  // out: [B, H, Tq, D]
  if (args.need_weights) {
    std::tie(out, weights) = attend_with_weights(*this, h, mask, args, in, p);
  } else {
    out = F::scaled_dot_product_attention(h.q, h.k, h.v, mask.bias, p, mask.causal, std::nullopt,
                                          /*enable_gqa=*/true);
  }
  return {merge_heads(*this, out, in), weights};
}

}  // namespace tt::nn
