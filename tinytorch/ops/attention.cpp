// scaled_dot_product_attention and attention_weights: the checks, the masks turned into one
// additive bias, the choice between the fused kernel and the composed math, and the fused op's
// forward and backward side by side. The kernels are backend attention_forward/_backward
// (cpu/attention.cpp). No device code.
//
// Note [attention as 4-D]: every input is seen as [B, H, T, X]: a 2-D [T, X] as [1, 1, T, X], a
// 3-D [H, T, X] as [1, H, T, X], and more leading dims folded into B by reshape (a view when the
// layout allows). The fused op works on those 4-D views; the public functions reshape the result
// back, so autograd routes gradients through the reshapes as usual.
//
// Note [attention paths]: the fused op runs when no dropout is asked for and the mask (if any)
// needs no gradient, and every size is > 0. Otherwise the op is composed from tensor ops, which
// also makes it differentiable in a float mask. Both give weights exactly 0 where masked, so a row
// with nothing to attend to yields zeros forward and backward (see the softmax of an all -inf row
// in ops/activation.h).
//
// Note [double backward of attention]: as for normalization, the fused backward is a black box; a
// backward that runs under grad mode (create_graph) with inputs that need grad is built from tensor
// ops instead, recomputing P from q and k so that P too is differentiated:
//   dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dP * P)) * scale, dQ = dS K, dK = dS^T Q
// with K and V repeated over each group of query heads (GQA) and dK, dV summed back over it.
#include "tinytorch/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "tinytorch/ops/autocast_hook.h"
#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/ops/activation.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/dropout.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/indexing.h"
#include "tinytorch/ops/linalg.h"
#include "tinytorch/ops/reduction.h"
#include "tinytorch/ops/view.h"

namespace tt {

namespace {

using autograd::SavedVariable;
using autograd::TensorList;

constexpr double kInf = std::numeric_limits<double>::infinity();

// What the checks found: the 4-D geometry of Note [attention as 4-D].
struct Geometry {
  int64_t B = 1, Hq = 1, Hkv = 1, Tq = 0, Tk = 0, D = 0, Dv = 0;
  int64_t groups() const { return Hq / Hkv; }
  Shape scores_shape(const Shape& q_shape) const {  // [*, Hq, Tq, Tk]
    Shape s = q_shape;
    s[s.size() - 1] = Tk;
    return s;
  }
};

Geometry check_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor* v, const Tensor& mask,
                      bool enable_gqa, double dropout_p, std::optional<double> scale) {
  const Tensor* all[] = {&q, &k, v};
  const char* names[] = {"query", "key", "value"};
  detail::check_same_device(op, {&q, &k, v, &mask});  // v may be null: skipped
  for (int i = 0; i < 3; ++i) {
    if (all[i] == nullptr) continue;
    const Tensor& t = *all[i];
    TT_CHECK(t.defined(), op, ": ", names[i], " is undefined");
    TT_CHECK_SHAPE(t.dim() >= 2, op, ": ", names[i], " must have at least 2 dims [..., T, D], got shape ", t.shape());
    TT_CHECK_DTYPE(t.is_floating_point(), op, ": expected floating-point ", names[i],
                   " (float32, float64 or bfloat16), got ",
                   t.dtype());
    TT_CHECK_DTYPE(t.dtype() == q.dtype(), op, ": query, key and value must have one dtype, got ", q.dtype(),
                   " and ", t.dtype(), " (", names[i], ")");
    TT_CHECK_SHAPE(t.dim() == q.dim(), op, ": query, key and value must have the same number of dims, got ",
                   q.shape(), " and ", t.shape(), " (", names[i], ")");
  }
  const int n = q.dim();
  Geometry g;
  g.Tq = q.size(n - 2);
  g.D = q.size(n - 1);
  g.Tk = k.size(n - 2);
  TT_CHECK_SHAPE(k.size(n - 1) == g.D, op, ": query and key must have the same last dim (the head dim), got ",
                 q.shape(), " and ", k.shape());
  if (v != nullptr) {
    g.Dv = v->size(n - 1);
    TT_CHECK_SHAPE(v->size(n - 2) == g.Tk, op, ": key and value must have the same length (dim -2), got ",
                   k.shape(), " and ", v->shape());
  }
  if (n >= 3) {
    g.Hq = q.size(n - 3);
    g.Hkv = k.size(n - 3);
    TT_CHECK_SHAPE(v == nullptr || v->size(n - 3) == g.Hkv, op,
                   ": key and value must have the same number of heads (dim -3), got ", k.shape(), " and ",
                   v->shape());
    if (enable_gqa) {
      TT_CHECK_SHAPE(g.Hkv > 0 && g.Hq % g.Hkv == 0, op,
                     ": with enable_gqa the key/value heads (dim -3) must divide the query heads, got query ",
                     q.shape(), " and key ", k.shape());
    } else {
      TT_CHECK_SHAPE(g.Hq == g.Hkv, op, ": query and key must have the same dims before the last two, got ",
                     q.shape(), " and ", k.shape(), " (different head counts need enable_gqa = true)");
    }
    for (int d = 0; d < n - 3; ++d) {
      g.B *= q.size(d);
      const bool same = k.size(d) == q.size(d) && (v == nullptr || v->size(d) == q.size(d));
      TT_CHECK_SHAPE(same, op, ": query, key and value must have the same leading dims, got ", q.shape(), ", ",
                     k.shape(), v != nullptr ? " and " : "", v != nullptr ? v->shape() : Shape());
    }
  }
  if (mask.defined()) {
    TT_CHECK_DTYPE(mask.dtype() == kBool || mask.dtype() == q.dtype(), op,
                   ": attn_mask must be bool (true = may attend) or the query's dtype ", q.dtype(),
                   " (added to the scores), got ", mask.dtype());
    const Shape target = g.scores_shape(q.shape());
    bool ok = mask.dim() <= target.size();
    for (int i = 1; ok && i <= mask.dim(); ++i) {
      const int64_t m = mask.size(mask.dim() - i), t = target[target.size() - i];
      ok = m == t || m == 1;
    }
    TT_CHECK_SHAPE(ok, op, ": attn_mask of shape ", mask.shape(), " does not broadcast to the scores' shape ",
                   target, " ([..., heads, Tq, Tk])");
  }
  TT_CHECK(dropout_p >= 0.0 && dropout_p < 1.0, op, ": dropout_p must be in [0, 1), got ", dropout_p);
  TT_CHECK(!scale || std::isfinite(*scale), op, ": scale must be finite, got ", scale.value_or(0.0));
  return g;
}

double scale_or_default(std::optional<double> scale, int64_t D) {
  return scale ? *scale : 1.0 / std::sqrt(double(std::max<int64_t>(D, 1)));
}

// t as [B, H, T, X] (Note [attention as 4-D]); no node when it already has that shape.
Tensor as_4d(const Tensor& t, int64_t B, int64_t H) {
  const Shape s{B, H, t.size(t.dim() - 2), t.size(t.dim() - 1)};
  return t.shape() == s ? t : reshape(t, s);
}

// k [*, Hkv, T, X] with each head repeated G times in place: [*, Hkv*G, T, X] (repeat_interleave).
Tensor repeat_kv(const Tensor& t, int64_t G) {
  if (G == 1) return t;
  const int n = t.dim();
  Shape grouped = t.shape();
  grouped.insert(n - 2, 1);  // [*, Hkv, 1, T, X]
  Shape expanded = grouped;
  expanded[n - 2] = G;
  Shape merged = t.shape();
  merged[n - 3] *= G;
  return reshape(expand(reshape(t, grouped), expanded), merged);
}

// [Tq, Tk] bool: true where key j <= query i (top-left aligned causal mask).
Tensor causal_allowed(int64_t Tq, int64_t Tk, Device device) {
  // TT_EXERCISE_BEGIN(12, 2)
  const Tensor i = reshape(arange(Tq, TensorOptions().dtype(kInt64).device(device)), {Tq, 1});
  const Tensor j = reshape(arange(Tk, TensorOptions().dtype(kInt64).device(device)), {1, Tk});
  return le(j, i);
  // TT_EXERCISE_END
}

// The composed math path: softmax(q k^T * scale + mask) from tensor ops.
Tensor weights_composed(const Tensor& q, const Tensor& k, const Tensor& mask, bool is_causal, double scale,
                        int64_t G) {
  // TT_EXERCISE_BEGIN(12, 1)
  Tensor scores = mul(matmul(q, transpose(repeat_kv(k, G), -2, -1)), scale);  // [*, Hq, Tq, Tk]
  if (mask.defined()) {
    scores = mask.dtype() == kBool ? masked_fill(scores, eq(mask, scalar_tensor(false, kBool)), -kInf)
                                   : add(scores, mask);
  }
  if (is_causal) {
    const int n = q.dim();
    scores = masked_fill(scores, eq(causal_allowed(q.size(n - 2), k.size(n - 2), q.device()),
                                    scalar_tensor(false, kBool)), -kInf);
  }
  return softmax(scores, -1);
  // TT_EXERCISE_END
}

// The mask as an additive bias in `dtype` (bool false -> -inf, true -> 0), at the mask's own shape.
Tensor additive_bias(const Tensor& mask, ScalarType dtype) {
  if (!mask.defined() || mask.dtype() != kBool) return mask;
  return where(mask, zeros({}, TensorOptions().dtype(dtype).device(mask.device())), -kInf);
}

// --- the fused op ------------------------------------------------------------------------------------

// The differentiable backward (Note [double backward of attention]). All 4-D. -> {dq, dk, dv}.
TensorList attention_grad_composite(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& bias, bool causal, double scale, int64_t G) {
  const Tensor P = weights_composed(q, k, bias, causal, scale, G);  // [B, Hq, Tq, Tk]
  const Tensor ke = repeat_kv(k, G), ve = repeat_kv(v, G);
  Tensor dv = matmul(transpose(P, -2, -1), dout);                    // [B, Hq, Tk, Dv]
  const Tensor dP = matmul(dout, transpose(ve, -2, -1));            // [B, Hq, Tq, Tk]
  const Tensor dS = mul(mul(P, sub(dP, sum(mul(dP, P), Shape{-1}, true))), scale);
  const Tensor dq = matmul(dS, ke);                                  // [B, Hq, Tq, D]
  Tensor dk = matmul(transpose(dS, -2, -1), q);                      // [B, Hq, Tk, D]
  if (G > 1) {  // sum each group of query heads back onto its key/value head
    const int64_t B = q.size(0), Hkv = k.size(1);
    dk = sum(reshape(dk, {B, Hkv, G, k.size(2), k.size(3)}), Shape{2});
    dv = sum(reshape(dv, {B, Hkv, G, v.size(2), v.size(3)}), Shape{2});
  }
  return {dq, dk, dv};
}

// An empty [B, H, T, X] tensor laid out as [B, T, H, X] when `like` is (the heads of a projection
// split by a view), so that merging the heads back is free; contiguous [B, H, T, X] otherwise.
Tensor empty_heads(int64_t B, int64_t H, int64_t T, int64_t X, const Tensor& like) {
  const bool token_major = like.dim() == 4 && H > 1 && T > 1 && like.stride(1) < like.stride(2);
  if (!token_major) return empty({B, H, T, X}, like.options());
  return transpose(empty({B, T, H, X}, like.options()), 1, 2);
}

// t itself when BLAS can read its rows as they are (last dim stride 1, rows at least a row
// apart: an expanded dout, e.g. from out.sum(-2), has row stride 0), else a contiguous copy.
Tensor last_dim_dense(const Tensor& t) {
  const Tensor d = t.detach();
  const int n = d.dim();
  const bool rows_ok = (d.stride(n - 1) == 1 || d.size(n - 1) == 1) &&
                       (d.size(n - 2) <= 1 || d.stride(n - 2) >= std::max<int64_t>(1, d.size(n - 1)));
  return rows_ok ? d : d.contiguous();
}

// The backward both fused ops share: the composed one under create_graph (Note [double backward
// of attention]); otherwise gradients in the inputs' layouts (dk, dv zeroed, and dq too when the
// kernel accumulates into it), which kernel(be, dq, dk, dv, dout, q, k, v) fills.
template <typename Saved, typename Kernel>
TensorList fused_backward(const Saved& s, const TensorList& g, bool zero_dq, Kernel kernel) {
  if (!g[0].defined()) return {Tensor(), Tensor(), Tensor()};
  const Tensor q = s.q.unpack(), k = s.k.unpack(), v = s.v.unpack();
  const Tensor dout = g[0].dtype() == q.dtype() ? g[0] : g[0].to(q.dtype());
  TensorList r;
  if (GradMode::is_enabled() &&
      (dout.requires_grad() || q.requires_grad() || k.requires_grad() || v.requires_grad())) {
    r = attention_grad_composite(dout, q, k, v, s.bias.unpack(), s.args.causal, s.args.scale, q.size(1) / k.size(1));
  } else {
    const int64_t B = q.size(0);
    r = {empty_heads(B, q.size(1), q.size(2), q.size(3), q), empty_heads(B, k.size(1), k.size(2), k.size(3), k),
         empty_heads(B, v.size(1), v.size(2), v.size(3), v)};
    Backend& be = backend_for(q.device());
    for (size_t i = zero_dq ? 0 : 1; i < 3; ++i) be.fill(r[i], 0);
    kernel(be, r[0], r[1], r[2], last_dim_dense(dout), last_dim_dense(q), last_dim_dense(k), last_dim_dense(v));
  }
  for (int i = 0; i < 3; ++i)
    if (!s.needs[i]) r[i] = Tensor();
  return r;
}

struct AttentionOp {
  static constexpr const char* kName = "ScaledDotProductAttentionBackward0";
  struct Saved {
    SavedVariable q, k, v, bias, weights;
    AttentionArgs args;
    bool needs[3] = {false, false, false};
  };
  // q: [B, Hq, Tq, D], k: [B, Hkv, Tk, D], v: [B, Hkv, Tk, Dv], bias: [B, Hq, Tq, Tk] (expanded) or
  // undefined -> out: [B, Hq, Tq, Dv] (laid out as [B, Tq, Hq, Dv]), weights: [B, Hq, Tq, Tk].
  static Tensor forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                        const AttentionArgs& args, Tensor& weights) {
    const int64_t B = q.size(0), Hq = q.size(1), Tq = q.size(2), Tk = k.size(2), Dv = v.size(3);
    Tensor out = empty({B, Tq, Hq, Dv}, q.options()).transpose(1, 2);
    weights = empty({B, Hq, Tq, Tk}, q.options());
    backend_for(q.device())
        .attention_forward(out, weights, last_dim_dense(q), last_dim_dense(k), last_dim_dense(v),
                           bias.defined() ? bias.detach() : Tensor(), args);
    return out;
  }
  static TensorList backward(const Saved& s, const TensorList& g) {
    return fused_backward(s, g, /*zero_dq=*/false, [&](Backend& be, const Tensor& dq, const Tensor& dk,
                                                        const Tensor& dv, const Tensor& dout, const Tensor& q,
                                                        const Tensor& k, const Tensor& v) {
      be.attention_backward(dq, dk, dv, dout, q, k, v, s.weights.unpack(), s.args);
    });
  }
};

// The flash op: the same inputs, output and layouts as AttentionOp; saves out and the row
// logsumexp [B, Hq, Tq] instead of the weights (Note [flash attention on the CPU]).
struct FlashAttentionOp {
  static constexpr const char* kName = "ScaledDotProductFlashAttentionBackward0";
  struct Saved {
    SavedVariable q, k, v, bias, out, lse;
    AttentionArgs args;
    bool needs[3] = {false, false, false};
  };
  static Tensor forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                        const AttentionArgs& args, Tensor& lse) {
    const int64_t B = q.size(0), Hq = q.size(1), Tq = q.size(2), Dv = v.size(3);
    Tensor out = empty({B, Tq, Hq, Dv}, q.options()).transpose(1, 2);
    // float32 for bf16 inputs: the backward's P = exp(S - lse) needs lse to float32 accuracy.
    lse = empty({B, Hq, Tq}, q.options().dtype(compute_dtype(q.dtype())));
    backend_for(q.device())
        .flash_attention_forward(out, lse, last_dim_dense(q), last_dim_dense(k),
                                 last_dim_dense(v), bias.defined() ? bias.detach() : Tensor(), args);
    return out;
  }
  static TensorList backward(const Saved& s, const TensorList& g) {
    return fused_backward(s, g, /*zero_dq=*/true, [&](Backend& be, const Tensor& dq, const Tensor& dk,
                                                       const Tensor& dv, const Tensor& dout, const Tensor& q,
                                                       const Tensor& k, const Tensor& v) {
      be.flash_attention_backward(dq, dk, dv, dout, q, k, v, s.out.unpack(), s.lse.unpack(), s.bias.unpack(),
                                  s.args);
    });
  }
};

bool requires(const Tensor& t) { return t.defined() && t.requires_grad(); }

// The fused paths on 4-D inputs (Note [attention paths]); bias already [B, Hq, Tq, Tk] (expanded).
template <typename Op>
Tensor attention_kernel(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias, bool is_causal,
                        double scale, bool exact = false) {
  AttentionArgs args;
  args.scale = scale;
  args.causal = is_causal;
  args.exact = exact;  // flash: FFMA instead of tensor cores on CUDA (SDPBackend::FlashExact)
  Tensor extra;  // the weights (AttentionOp) or the logsumexp (FlashAttentionOp)
  Tensor out = Op::forward(q, k, v, bias, args, extra);
  if (auto node = autograd::make_node<Op>({&q, &k, &v})) {
    node->saved.q = SavedVariable(q);
    node->saved.k = SavedVariable(k);
    node->saved.v = SavedVariable(v);
    node->saved.bias = SavedVariable(bias.defined() ? bias.detach() : bias);
    if constexpr (std::is_same<Op, FlashAttentionOp>::value) {
      node->saved.out = SavedVariable(out.detach());
      node->saved.lse = SavedVariable(extra);
    } else {
      node->saved.weights = SavedVariable(extra);
    }
    node->saved.args = args;
    node->saved.needs[0] = requires(q);
    node->saved.needs[1] = requires(k);
    node->saved.needs[2] = requires(v);
    autograd::set_history(out, node);
  }
  return out;
}

thread_local SDPBackend t_sdpa_backend = SDPBackend::Auto;

// Note [choosing the kernel]: the largest weights tensor [B, Hq, Tq, Tk] Auto materializes.
constexpr double kMathWeightsBudget = 16.0 * 1024 * 1024;

}  // namespace

Tensor attention_weights(const Tensor& q, const Tensor& k, const Tensor& attn_mask, bool is_causal,
                         std::optional<double> scale, bool enable_gqa) {
  const Geometry g = check_inputs("attention_weights", q, k, nullptr, attn_mask, enable_gqa, 0.0, scale);
  return weights_composed(q, k, attn_mask, is_causal, scale_or_default(scale, g.D), g.groups());
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa,
                                    Generator* gen) {
  if (auto cast = amp::autocast(AutocastOp::scaled_dot_product_attention, {q, k, v, attn_mask}))
    return scaled_dot_product_attention(cast[0], cast[1], cast[2], cast[3], dropout_p, is_causal, scale, enable_gqa,
                                        gen);
  const char* op = "scaled_dot_product_attention";
  const Geometry g = check_inputs(op, q, k, &v, attn_mask, enable_gqa, dropout_p, scale);
  const double s = scale_or_default(scale, g.D);
  const int64_t G = g.groups();
  const bool mask_grad = GradMode::is_enabled() && requires(attn_mask);
  const bool fusable = dropout_p == 0.0 && !mask_grad && g.B * g.Hq * g.Tq * g.Tk * g.D * g.Dv > 0;
  const SDPBackend choice = t_sdpa_backend;
  const bool forced_flash = choice == SDPBackend::Flash || choice == SDPBackend::FlashExact;
  TT_CHECK(!forced_flash || fusable, op,
           ": the flash kernel was forced (SdpaKernelGuard) but cannot run this call: it needs dropout_p = 0, a mask "
           "that does not require grad, and non-empty inputs; got dropout_p = ", dropout_p,
           ", mask requires grad: ", mask_grad ? "true" : "false", ", query ", q.shape(), ", key ",
           k.shape());
  if (!fusable) {
    Tensor P = weights_composed(q, k, attn_mask, is_causal, s, G);  // [*, Hq, Tq, Tk]
    if (dropout_p > 0.0) P = dropout(P, dropout_p, /*train=*/true, gen);
    if (G == 1) return matmul(P, v);
    // [*, Hkv, G, Tq, Tk] @ [*, Hkv, 1, Tk, Dv]: each key/value head serves its group.
    const int n = q.dim();
    Shape pg = P.shape(), vg = v.shape(), out_shape = q.shape();
    pg[n - 3] = g.Hkv;
    pg.insert(n - 2, G);
    vg.insert(n - 2, 1);
    out_shape[n - 1] = g.Dv;
    return reshape(matmul(reshape(P, pg), reshape(v, vg)), out_shape);
  }
  const Tensor q4 = as_4d(q, g.B, g.Hq), k4 = as_4d(k, g.B, g.Hkv), v4 = as_4d(v, g.B, g.Hkv);
  Tensor bias;
  if (attn_mask.defined()) {
    const Shape full = g.scores_shape(q.shape());
    bias = as_4d(expand(additive_bias(attn_mask, q.dtype()), full), g.B, g.Hq);
  }
  // Note [choosing the kernel]: flash never does less arithmetic than the math kernel (its
  // backward rebuilds the scores: one more GEMM per tile) and on a CPU its tiles cost about as
  // much time as the materialized weights while those stay small; it wins on memory. So Auto runs
  // the math kernel while the weights it would keep fit in kMathWeightsBudget, and flash beyond.
  const double weights_bytes =
      double(g.B * g.Hq) * double(g.Tq) * double(g.Tk) * double(element_size(q.dtype()));
  const bool math = choice == SDPBackend::Math || (choice == SDPBackend::Auto && weights_bytes <= kMathWeightsBudget);
  // bf16 on a GPU takes flash under Auto at every size: one tensor-core kernel each way
  // (cuda/flash_mma_bf16_*.cu) against bf16 GEMMs around a softmax run in float32 on float32 copies.
  const bool bf16_gpu_flash = choice == SDPBackend::Auto && q.dtype() == kBFloat16 && q.device().is_cuda();
  Tensor out = math && !bf16_gpu_flash ? attention_kernel<AttentionOp>(q4, k4, v4, bias, is_causal, s)
                                       : attention_kernel<FlashAttentionOp>(q4, k4, v4, bias, is_causal, s,
                                                                            choice == SDPBackend::FlashExact);
  Shape out_shape = q.shape();
  out_shape[out_shape.size() - 1] = g.Dv;
  return out.shape() == out_shape ? out : reshape(out, out_shape);
}

SDPBackend sdpa_backend() { return t_sdpa_backend; }

SdpaKernelGuard::SdpaKernelGuard(SDPBackend backend) : saved_(t_sdpa_backend) { t_sdpa_backend = backend; }
SdpaKernelGuard::~SdpaKernelGuard() { t_sdpa_backend = saved_; }

}  // namespace tt
