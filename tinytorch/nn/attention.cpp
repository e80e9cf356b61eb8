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
  const int64_t B = x.size(0), T = x.size(1);
  return x.reshape({B, T, H, x.size(2) / H}).transpose(1, 2);
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
  if (!k_.defined() || length_ == 0) {
    const bool same = k_.defined() && k_.size(0) == k.size(0) && k_.size(1) == k.size(1) &&
                      k_.size(3) == k.size(3) && v_.size(3) == v.size(3) && k_.dtype() == k.dtype() &&
                      v_.dtype() == v.dtype() && k_.device() == k.device() && v_.device() == v.device();
    if (!same) {
      k_ = empty({k.size(0), k.size(1), capacity_, k.size(3)}, k.options());
      v_ = empty({v.size(0), v.size(1), capacity_, v.size(3)}, v.options());
    }
  } else {
    TT_CHECK_SHAPE(k_.size(0) == k.size(0) && k_.size(1) == k.size(1) && k_.size(3) == k.size(3) &&
                       v_.size(3) == v.size(3),
                   "KVCache::append: the cache holds [B, Hkv, *, D] = ", k_.shape(), " and values ", v_.shape(),
                   ", got k ", k.shape(), " and v ", v.shape());
    TT_CHECK_DTYPE(k.dtype() == k_.dtype() && v.dtype() == v_.dtype(), "KVCache::append: the cache holds ",
                   k_.dtype(), ", got ", k.dtype());
    TT_CHECK_DEVICE(k.device() == k_.device() && v.device() == v_.device(), "KVCache::append: the cache is on ",
                    k_.device(), ", got k on ", k.device(), " and v on ", v.device());
  }
  k_.slice(2, length_, length_ + t).copy_(k);
  v_.slice(2, length_, length_ + t).copy_(v);
  length_ += t;
  return {k_.slice(2, 0, length_), v_.slice(2, 0, length_)};
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
  return os.str();
}

std::pair<Tensor, Tensor> MultiHeadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                      const MultiHeadAttentionForward& args) const {
  const char* op = "MultiHeadAttention";
  for (const Tensor* t : {&query, &key, &value}) {
    TT_CHECK(t->defined(), op, ": query, key and value must be defined");
    TT_CHECK_DTYPE(t->is_floating_point() && t->dtype() == q_proj->weight.dtype(), op,
                   ": inputs must have the layer's dtype ", q_proj->weight.dtype(), ", got ", t->dtype());
  }
  const int nd = query.dim();
  TT_CHECK_SHAPE((nd == 2 || nd == 3) && key.dim() == nd && value.dim() == nd, op,
                 ": query, key and value must all be 3-D (batched) or 2-D (unbatched), got ", query.shape(), ", ",
                 key.shape(), " and ", value.shape());
  // Everything below works on batch-first [B, T, *].
  auto batch_first = [&](const Tensor& t) {
    if (nd == 2) return t.unsqueeze(0);
    return options.batch_first() ? t : t.transpose(0, 1);
  };
  const Tensor q_in = batch_first(query), k_in = batch_first(key), v_in = batch_first(value);
  const int64_t B = q_in.size(0), Tq = q_in.size(1), Tk = k_in.size(1), E = embed_dim;
  TT_CHECK_SHAPE(q_in.size(2) == E && k_in.size(2) == k_proj->options.in_features() &&
                     v_in.size(2) == v_proj->options.in_features(),
                 op, ": expected query [.., ", E, "], key [.., ", k_proj->options.in_features(), "] and value [.., ",
                 v_proj->options.in_features(), "], got ", query.shape(), ", ", key.shape(), " and ", value.shape());
  TT_CHECK_SHAPE(k_in.size(0) == B && v_in.size(0) == B && v_in.size(1) == Tk, op,
                 ": query, key and value must share the batch size, and key and value the length, got ", query.shape(),
                 ", ", key.shape(), " and ", value.shape());

  // Projections: one GEMM against the stacked weights for self-attention.
  Tensor q, k, v;
  const bool self_attention = query.is_same(key) && key.is_same(value) &&
                              k_proj->options.in_features() == E && v_proj->options.in_features() == E;
  if (self_attention) {
    const Tensor w = cat({q_proj->weight, k_proj->weight, v_proj->weight}, 0);
    const Tensor b = options.bias() ? cat({q_proj->bias, k_proj->bias, v_proj->bias}, 0) : Tensor();
    const Tensor qkv = F::linear(q_in, w, b);  // [B, T, E + 2 * Hkv * D]
    const int64_t kv = num_kv_heads * head_dim;
    q = qkv.slice(2, 0, E);
    k = qkv.slice(2, E, E + kv);
    v = qkv.slice(2, E + kv, E + 2 * kv);
  } else {
    q = q_proj->forward(q_in);
    k = k_proj->forward(k_in);
    v = v_proj->forward(v_in);
  }
  q = split_heads(q, num_heads);  // [B, H, Tq, D]
  k = split_heads(k, num_kv_heads);
  v = split_heads(v, num_kv_heads);
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  int64_t past = 0;
  if (args.kv_cache != nullptr) {
    past = args.kv_cache->length();
    std::tie(k, v) = args.kv_cache->append(k, v);
  }
  const int64_t Tkv = k.size(2);  // all keys attended to (cached ones included)

  // Masks -> one additive bias broadcastable to [B, H, Tq, Tkv].
  Tensor bias;
  if (args.attn_mask.defined()) {
    const Tensor& m = args.attn_mask;
    TT_CHECK_DTYPE(m.dtype() == kBool || m.dtype() == q.dtype(), op,
                   ": attn_mask must be bool (true = not allowed) or the query's dtype ", q.dtype(), ", got ",
                   m.dtype());
    Tensor m4 = m;
    if (m.dim() == 3 && m.size(0) == B * num_heads && B * num_heads > 1) m4 = m.reshape({B, num_heads, Tq, m.size(2)});
    bool ok = m4.dim() >= 2 && m4.dim() <= 4;
    const int64_t target[4] = {B, num_heads, Tq, Tkv};
    for (int i = 1; ok && i <= m4.dim(); ++i) ok = m4.size(m4.dim() - i) == target[4 - i] || m4.size(m4.dim() - i) == 1;
    TT_CHECK_SHAPE(ok, op, ": attn_mask of shape ", m.shape(), " does not fit the scores [B, H, Tq, Tk] = ",
                   Shape{B, num_heads, Tq, Tkv}, " (expected [Tq, Tk], [B*H, Tq, Tk] or a shape that broadcasts)");
    bias = mha_bias(m4, q.dtype());
  }
  if (args.key_padding_mask.defined()) {
    const Tensor& m = args.key_padding_mask;
    TT_CHECK_DTYPE(m.dtype() == kBool || m.dtype() == q.dtype(), op,
                   ": key_padding_mask must be bool (true = padding) or the query's dtype ", q.dtype(), ", got ",
                   m.dtype());
    const Shape want = nd == 2 ? Shape{Tkv} : Shape{B, Tkv};
    TT_CHECK_SHAPE(m.shape() == want, op, ": key_padding_mask must have shape ", want, " ([B, Tk]), got ",
                   m.shape());
    bias = add_bias(bias, mha_bias(m, q.dtype()).reshape({B, 1, 1, Tkv}));
  }
  // Causal with cached keys: query i (at position past + i) sees keys j <= past + i; the kernel's
  // causal flag is top-left aligned, which is that only when nothing is cached.
  bool causal = args.is_causal;
  if (causal && past > 0) {
    causal = false;
    if (Tq > 1) {
      const Tensor i = arange(Tq, TensorOptions().dtype(kInt64).device(q.device())).reshape({Tq, 1});
      const Tensor j = arange(Tkv, TensorOptions().dtype(kInt64).device(q.device())).reshape({1, Tkv});
      bias = add_bias(bias, mha_bias(gt(j, i + past), q.dtype()));
    }
  }

  const double p = is_training() ? options.dropout() : 0.0;
  Tensor out, weights;  // out: [B, H, Tq, D]
  if (args.need_weights) {
    weights = F::attention_weights(q, k, bias, causal, std::nullopt, /*enable_gqa=*/true);
    if (p > 0) weights = F::dropout(weights, p, true);
    const int64_t G = num_heads / num_kv_heads;
    out = G == 1 ? matmul(weights, v)
                 : matmul(weights.reshape({B, num_kv_heads, G, Tq, Tkv}), v.unsqueeze(2))
                       .reshape({B, num_heads, Tq, head_dim});
    if (args.average_attn_weights) weights = mean(weights, Shape{1});
    if (nd == 2) weights = weights.squeeze(0);
  } else {
    out = F::scaled_dot_product_attention(q, k, v, bias, p, causal, std::nullopt, /*enable_gqa=*/true);
  }
  Tensor y = out_proj->forward(out.transpose(1, 2).reshape({B, Tq, E}));
  if (nd == 2) y = y.squeeze(0);
  else if (!options.batch_first()) y = y.transpose(0, 1);
  return {y, weights};
}

}  // namespace tt::nn
