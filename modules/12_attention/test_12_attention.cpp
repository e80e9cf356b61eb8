// Module 12 suite: attention. Values worked by hand (one query, two keys; every score a dot product
// by loops); the 1/sqrt(D) scale and the saturation it prevents; weights that are >= 0 with rows
// summing to 1; causal attention, square and rectangular; the two bool-mask conventions (SDPA:
// true = may attend; MultiHeadAttention: true = NOT allowed) and float masks; key padding; rows
// with nothing to attend to (zeros, never NaN, zero gradients); multi-head split, attend and
// concatenate by hand against nn::MultiHeadAttention on the same weights; GQA/MQA; the backward
// by its formulas and by gradcheck in float64 (second derivatives too); a KV cache against one
// causal pass; permutation equivariance; dropout on the weights; the T^2 bytes the allocator
// sees; attention maps; the errors. It is the judge in exercise mode (`tools/tt exercise 12`):
// the cases tagged [exercise] lean on the bodies a learner writes: the composed math path
// (scores, scale, masks, grouped heads, softmax) behind attention_weights, need_weights, dropout,
// learned masks and second derivatives; the causal mask it applies; the split of the projections
// into heads and their concatenation in MultiHeadAttention; and KVCache::append.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

using Catch::Matchers::Contains;
using tt::Shape;
using tt::Tensor;
using tt::autograd::TensorList;

namespace nn = tt::nn;
namespace F = tt::F;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double max_abs(const Tensor& t) { return t.detach().abs().max().item<double>(); }

Tensor f64(std::initializer_list<std::initializer_list<double>> rows) { return tt::tensor(rows, tt::kFloat64); }

// [T, T] bool, true where key j <= query i: who may attend causally (SDPA's convention).
Tensor causal_allowed(int64_t Tq, int64_t Tk) {
  return tt::arange(Tk).reshape({1, Tk}) <= tt::arange(Tq).reshape({Tq, 1});
}

// The softmax of each row of a [R, C] table of doubles (entries -inf allowed; a row of -inf gives 0).
std::vector<double> softmax_rows(const std::vector<double>& s, int64_t R, int64_t C) {
  std::vector<double> p(s.size(), 0.0);
  for (int64_t i = 0; i < R; ++i) {
    double m = -kInf;
    for (int64_t j = 0; j < C; ++j) m = std::max(m, s[size_t(i * C + j)]);
    if (m == -kInf) continue;
    double z = 0;
    for (int64_t j = 0; j < C; ++j) z += std::exp(s[size_t(i * C + j)] - m);
    for (int64_t j = 0; j < C; ++j) p[size_t(i * C + j)] = std::exp(s[size_t(i * C + j)] - m) / z;
  }
  return p;
}

// Attention weights by loops: q [Tq, D], k [Tk, D] (float64), scale, an optional [Tq, Tk] bool mask
// (true = may attend), causal. The reference the composed path must match.
Tensor weights_by_loops(const Tensor& q, const Tensor& k, double scale, const Tensor& allowed, bool causal) {
  const int64_t Tq = q.size(0), Tk = k.size(0), D = q.size(1);
  const std::vector<double> qv = q.contiguous().to_vector<double>(), kv = k.contiguous().to_vector<double>();
  std::vector<bool> ok(size_t(Tq * Tk), true);
  if (allowed.defined()) {
    const std::vector<double> a = allowed.to(tt::kFloat64).contiguous().to_vector<double>();
    for (size_t n = 0; n < ok.size(); ++n) ok[n] = a[n] != 0;
  }
  std::vector<double> s(size_t(Tq * Tk));
  for (int64_t i = 0; i < Tq; ++i)
    for (int64_t j = 0; j < Tk; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d) dot += qv[size_t(i * D + d)] * kv[size_t(j * D + d)];
      const bool keep = ok[size_t(i * Tk + j)] && (!causal || j <= i);
      s[size_t(i * Tk + j)] = keep ? dot * scale : -kInf;
    }
  return tt::tensor(softmax_rows(s, Tq, Tk), {Tq, Tk}, tt::kFloat64);
}

// x: [B, T, H*D] -> [B, H, T, D]: split the last dim into heads and bring them forward.
Tensor split_heads(const Tensor& x, int64_t H) {
  const int64_t B = x.size(0), T = x.size(1);
  return x.reshape({B, T, H, x.size(2) / H}).transpose(1, 2);
}

// [B, H, T, D] -> [B, T, H*D]: the heads concatenated per token.
Tensor merge_heads(const Tensor& x) {
  const int64_t B = x.size(0), H = x.size(1), T = x.size(2), D = x.size(3);
  return x.transpose(1, 2).reshape({B, T, H * D});
}

// kv [B, Hkv, T, D] with each head repeated G times in place: [B, Hkv*G, T, D].
Tensor repeat_heads(const Tensor& kv, int64_t G) {
  std::vector<int64_t> idx;
  for (int64_t h = 0; h < kv.size(1); ++h)
    for (int64_t g = 0; g < G; ++g) idx.push_back(h);
  return kv.index_select(1, tt::tensor(idx, {int64_t(idx.size())}));
}

struct ByHand {
  Tensor out, weights;  // out [B, Tq, E], weights per head [B, H, Tq, Tk]
};

// MultiHeadAttention's forward written out with its own parameters: project, split, attend
// (key/value heads repeated for GQA), concatenate, project. `allowed` (SDPA convention) and
// `causal` as for attention_weights.
ByHand mha_by_hand(const nn::MultiHeadAttention& m, const Tensor& xq, const Tensor& xkv, const Tensor& allowed = {},
                   bool causal = false) {
  const Tensor q = split_heads(F::linear(xq, m.q_proj->weight, m.q_proj->bias), m.num_heads);
  const Tensor k = split_heads(F::linear(xkv, m.k_proj->weight, m.k_proj->bias), m.num_kv_heads);
  const Tensor v = split_heads(F::linear(xkv, m.v_proj->weight, m.v_proj->bias), m.num_kv_heads);
  const int64_t G = m.num_heads / m.num_kv_heads;
  const Tensor ke = repeat_heads(k, G), ve = repeat_heads(v, G);
  Tensor s = q.matmul(ke.transpose(-2, -1)) / std::sqrt(double(m.head_dim));
  if (allowed.defined()) s = s.masked_fill(allowed == false, -kInf);
  if (causal) s = s.masked_fill(causal_allowed(q.size(2), k.size(2)) == false, -kInf);
  const Tensor w = s.softmax(-1);
  return {F::linear(merge_heads(w.matmul(ve)), m.out_proj->weight, m.out_proj->bias), w};
}

nn::MultiHeadAttentionForward fwd(bool need_weights, bool causal = false) {
  nn::MultiHeadAttentionForward a;
  a.need_weights = need_weights;
  a.is_causal = causal;
  return a;
}

void check_grad(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  tt::autograd::GradcheckResult r = tt::autograd::gradcheck(fn, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

void check_gradgrad(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  tt::autograd::GradcheckResult r = tt::autograd::gradgradcheck(tt::autograd::GradcheckFn(fn), inputs);
  INFO(r.message);
  CHECK(r.ok);
}

Tensor leaf(const Shape& s) { return tt::randn(s, tt::kFloat64).requires_grad_(); }

// Peak bytes allocated above what was live before `f` ran.
template <typename Fn>
int64_t peak_bytes(Fn f) {
  const int64_t before = tt::memory::stats().allocated_bytes;
  tt::memory::reset_peak_stats();
  f();
  return tt::memory::stats().peak_allocated_bytes - before;
}

}  // namespace

// --- the formula, by hand ------------------------------------------------------------------------

TEST_CASE("attention by hand: one query, two keys", "[module12][exercise]") {
  // q = [1], keys [1] and [0], values 10 and 20, scale 1: scores (1, 0), weights (e, 1) / (e + 1).
  const Tensor q = f64({{1.0}}), k = f64({{1.0}, {0.0}}), v = f64({{10.0}, {20.0}});
  const double e = std::exp(1.0);
  const Tensor w = F::attention_weights(q, k, {}, false, 1.0);
  CHECK(w.shape() == Shape{1, 2});
  CHECK(w.to_vector<double>()[0] == Approx(e / (e + 1)).epsilon(1e-12));
  CHECK(w.to_vector<double>()[1] == Approx(1 / (e + 1)).epsilon(1e-12));
  const double want = 10.0 * e / (e + 1) + 20.0 / (e + 1);
  CHECK(F::scaled_dot_product_attention(q, k, v, {}, 0.0, false, 1.0).item<double>() == Approx(want).epsilon(1e-12));
  CHECK(w.matmul(v).item<double>() == Approx(want).epsilon(1e-12));
  // The default scale is 1/sqrt(D): with D = 4 and q = k = ones, the score 4 becomes 2.
  const Tensor q4 = tt::ones({1, 4}, tt::kFloat64);
  const Tensor k4 = tt::cat({tt::ones({1, 4}, tt::kFloat64), tt::zeros({1, 4}, tt::kFloat64)});
  const double e2 = std::exp(2.0);
  CHECK(F::attention_weights(q4, k4).to_vector<double>()[0] == Approx(e2 / (e2 + 1)).epsilon(1e-12));
  // Equal scores share the weight equally, whatever their size.
  CHECK_ALLCLOSE(F::attention_weights(f64({{3.0, 3.0}}), f64({{1.0, 1.0}, {1.0, 1.0}, {1.0, 1.0}})),
                 tt::full({1, 3}, 1.0 / 3.0, tt::kFloat64), 1e-12, 1e-12);
}

TEST_CASE("every score is a dot product q_i . k_j, scaled, then softmax by row", "[module12][exercise]") {
  tt::manual_seed(1);
  const Tensor q = tt::randn({5, 4}, tt::kFloat64), k = tt::randn({7, 4}, tt::kFloat64);
  CHECK_ALLCLOSE(F::attention_weights(q, k), weights_by_loops(q, k, 0.5, {}, false), 1e-12, 1e-14);
  CHECK_ALLCLOSE(F::attention_weights(q, k, {}, false, 1.0), weights_by_loops(q, k, 1.0, {}, false), 1e-12, 1e-14);
  CHECK_ALLCLOSE(F::attention_weights(q, k, {}, false, 0.3), weights_by_loops(q, k, 0.3, {}, false), 1e-12, 1e-14);
  // A scale acts on the scores only: scale 2 equals queries twice as long at scale 1.
  CHECK_ALLCLOSE(F::attention_weights(q, k, {}, false, 2.0), F::attention_weights(q * 2.0, k, {}, false, 1.0), 1e-12,
                 1e-14);
  // The output is the weights times the values, on every path.
  const Tensor v = tt::randn({7, 3}, tt::kFloat64);
  const Tensor want = weights_by_loops(q, k, 0.5, {}, false).matmul(v);
  CHECK_ALLCLOSE(F::scaled_dot_product_attention(q, k, v), want, 1e-12, 1e-13);
  {
    tt::SdpaKernelGuard math(tt::SDPBackend::Math);
    CHECK_ALLCLOSE(F::scaled_dot_product_attention(q, k, v), want, 1e-12, 1e-13);
  }
  // float32 agrees with float64 to float32 rounding.
  CHECK_ALLCLOSE(F::attention_weights(q.to(tt::kFloat32), k.to(tt::kFloat32)).to(tt::kFloat64),
                 weights_by_loops(q, k, 0.5, {}, false), 1e-5, 1e-6);
}

TEST_CASE("the weights are >= 0 and each row sums to 1, with or without masks", "[module12][exercise]") {
  tt::manual_seed(2);
  const Tensor q = tt::randn({2, 3, 6, 8}), k = tt::randn({2, 3, 9, 8});
  // A random mask that keeps key 0 for every query, so that no row is empty.
  const Tensor mask = (tt::rand({6, 9}) + (tt::arange(9).reshape({1, 9}) == 0).to(tt::kFloat32)) > 0.3;
  for (const Tensor& w : {F::attention_weights(q, k), F::attention_weights(q, k, {}, true),
                          F::attention_weights(q, k, mask), F::attention_weights(q * 30.0, k)}) {
    CHECK(w.shape() == Shape{2, 3, 6, 9});
    CHECK(w.min().item<double>() >= 0.0);
    CHECK_ALLCLOSE(w.sum({-1}), tt::ones({2, 3, 6}), 1e-5, 1e-6);
  }
}

TEST_CASE("without the 1/sqrt(D) scale, large heads saturate softmax", "[module12][exercise]") {
  tt::manual_seed(3);
  const int64_t D = 256;
  const Tensor q = tt::randn({512, D}, tt::kFloat64), k = tt::randn({16, D}, tt::kFloat64);
  const Tensor s = q.matmul(k.t());
  CHECK(s.var().item<double>() == Approx(double(D)).epsilon(0.15));  // var(q . k) = D
  CHECK((s / std::sqrt(double(D))).var().item<double>() == Approx(1.0).epsilon(0.15));
  const double unscaled = std::get<0>(F::attention_weights(q, k, {}, false, 1.0).max(-1)).mean().item<double>();
  const double scaled = std::get<0>(F::attention_weights(q, k).max(-1)).mean().item<double>();
  CHECK(unscaled > 0.85);  // nearly one-hot rows
  CHECK(scaled < 0.4);     // 16 keys: uniform would be 1/16
  // ... and a saturated softmax passes back little gradient.
  const Tensor g = tt::randn({512, 16}, tt::kFloat64);
  auto grad_size = [&](double scale) {
    Tensor qq = q.detach().requires_grad_();
    (F::attention_weights(qq, k, {}, false, scale) * g).sum().backward();
    return qq.grad().abs().mean().item<double>() / scale;  // the gradient reaching the scores, per unit of score
  };
  CHECK(grad_size(1.0) < 0.4 * grad_size(1.0 / std::sqrt(double(D))));
}

// --- causal attention and masks ------------------------------------------------------------------

TEST_CASE("causal: query i attends to keys j <= i only", "[module12][exercise]") {
  tt::manual_seed(4);
  const Tensor q = tt::randn({6, 4}, tt::kFloat64), k = tt::randn({6, 4}, tt::kFloat64);
  const Tensor v = tt::randn({6, 3}, tt::kFloat64);
  const Tensor w = F::attention_weights(q, k, {}, true);
  CHECK_ALLCLOSE(w, weights_by_loops(q, k, 0.5, {}, true), 1e-12, 1e-14);
  CHECK(max_abs(w * (causal_allowed(6, 6) == false)) == 0.0);  // exactly 0 above the diagonal
  CHECK_ALLCLOSE(w[0], f64({{1, 0, 0, 0, 0, 0}})[0], 0.0, 0.0);       // the first query reads itself only
  CHECK_ALLCLOSE(w[5], F::attention_weights(q, k)[5], 1e-12, 1e-14);  // the last one reads everything
  // A bool mask of the allowed pairs is the same thing, and so is the output on every path.
  CHECK_ALLCLOSE(F::attention_weights(q, k, causal_allowed(6, 6)), w, 0.0, 0.0);
  const Tensor want = w.matmul(v);
  CHECK_ALLCLOSE(F::scaled_dot_product_attention(q, k, v, {}, 0.0, true), want, 1e-12, 1e-13);
  CHECK_ALLCLOSE(F::scaled_dot_product_attention(q, k, v, causal_allowed(6, 6)), want, 1e-12, 1e-13);
  // Rectangular, as PyTorch: aligned at the top-left corner, query i sees keys 0..i.
  const Tensor k8 = tt::randn({8, 4}, tt::kFloat64), q3 = q.slice(0, 0, 3);
  CHECK_ALLCLOSE(F::attention_weights(q3, k8, {}, true), weights_by_loops(q3, k8, 0.5, causal_allowed(3, 8), false),
                 1e-12, 1e-14);
}

TEST_CASE("masking after softmax is not masking: rows stop summing to 1", "[module12][exercise]") {
  tt::manual_seed(5);
  const Tensor q = tt::randn({5, 4}), k = tt::randn({5, 4});
  const Tensor after = F::attention_weights(q, k) * causal_allowed(5, 5);
  const Tensor before = F::attention_weights(q, k, {}, true);
  CHECK(after.sum({-1}).to_vector<double>()[0] < 0.99);
  CHECK_ALLCLOSE(before.sum({-1}), tt::ones({5}), 1e-6, 1e-6);
  CHECK(max_abs(after - before) > 0.05);
}

TEST_CASE("sdpa masks: bool true = may attend, a float mask is added to the scores", "[module12][exercise]") {
  tt::manual_seed(6);
  const Tensor q = tt::randn({1, 2, 4, 3}, tt::kFloat64), k = tt::randn({1, 2, 5, 3}, tt::kFloat64);
  const Tensor v = tt::randn({1, 2, 5, 2}, tt::kFloat64);
  const Tensor allowed = tt::tensor({true, false, true, true, false}).reshape({1, 5});  // broadcast over queries
  const Tensor additive = tt::where(allowed, 0.0, tt::full({1, 5}, -kInf, tt::kFloat64));
  const Tensor w = F::attention_weights(q, k, allowed);
  CHECK(max_abs(w.select(-1, 1)) == 0.0);
  CHECK(max_abs(w.select(-1, 4)) == 0.0);
  CHECK_ALLCLOSE(w[0][1], weights_by_loops(q[0][1], k[0][1], 1 / std::sqrt(3.0), allowed.expand({4, 5}), false), 1e-12,
                 1e-14);
  CHECK_ALLCLOSE(F::attention_weights(q, k, additive), w, 0.0, 0.0);
  CHECK_ALLCLOSE(F::scaled_dot_product_attention(q, k, v, allowed), w.matmul(v), 1e-12, 1e-13);
  CHECK_ALLCLOSE(F::scaled_dot_product_attention(q, k, v, additive), w.matmul(v), 1e-12, 1e-13);
  // A finite float mask shifts scores: + log 2 on key 0 doubles its weight relative to key 2.
  const Tensor bias = tt::tensor({std::log(2.0), 0.0, 0.0, 0.0, 0.0}, tt::kFloat64);
  const Tensor plain = F::attention_weights(q, k), biased = F::attention_weights(q, k, bias);
  CHECK_ALLCLOSE(biased.select(-1, 0) / biased.select(-1, 2), plain.select(-1, 0) / plain.select(-1, 2) * 2.0, 1e-12,
                 1e-12);
  // Causal and a mask together: a key must pass both.
  const Tensor both = F::attention_weights(q, k, allowed, true);
  CHECK_ALLCLOSE(both[0][0], weights_by_loops(q[0][0], k[0][0], 1 / std::sqrt(3.0),
                                              (allowed.to(tt::kInt64) * causal_allowed(4, 5).to(tt::kInt64)) == 1,
                                              false), 1e-12, 1e-14);
}

TEST_CASE("MultiHeadAttention masks mean the opposite: bool true = NOT allowed", "[module12][exercise]") {
  tt::manual_seed(7);
  nn::MultiHeadAttention mha(8, 2);
  const Tensor x = tt::randn({2, 5, 8});
  const Tensor future = causal_allowed(5, 5) == false;  // true above the diagonal
  nn::MultiHeadAttentionForward masked = fwd(true);
  masked.attn_mask = future;
  nn::MultiHeadAttentionForward per_head = masked;
  per_head.average_attn_weights = false;
  const auto [y_causal, w_causal] = mha(x, x, x, fwd(true, true));
  const auto [y_masked, w_masked] = mha(x, x, x, masked);
  CHECK_ALLCLOSE(y_masked, y_causal, 0.0, 0.0);
  CHECK_ALLCLOSE(w_masked, w_causal, 0.0, 0.0);
  const ByHand ref = mha_by_hand(mha, x, x, {}, true);
  CHECK_ALLCLOSE(y_masked, ref.out, 1e-5, 1e-6);
  CHECK_ALLCLOSE(mha(x, x, x, per_head).second, ref.weights, 1e-5, 1e-6);
  // The SDPA-style mask handed to MultiHeadAttention reads the complement: the strict future.
  masked.attn_mask = causal_allowed(5, 5);
  const Tensor w_wrong = mha(x, x, x, masked).second;
  CHECK(max_abs(w_wrong * causal_allowed(5, 5)) == 0.0);
  CHECK(max_abs(w_wrong.select(1, 4)) == 0.0);  // the last query has no future: an empty row
  // A float mask means the same in both APIs.
  masked.attn_mask = tt::where(future, -kInf, tt::zeros({5, 5}));
  CHECK_ALLCLOSE(mha(x, x, x, masked).first, y_causal, 1e-6, 1e-7);
  // The same layer without need_weights (the fused kernel) gives the same output.
  masked.need_weights = false;
  masked.attn_mask = future;
  CHECK_ALLCLOSE(mha(x, x, x, masked).first, y_causal, 1e-5, 1e-6);
}

TEST_CASE("key padding: pad keys get no weight, real tokens get what they get alone", "[module12][exercise]") {
  tt::manual_seed(8);
  nn::MultiHeadAttention mha(8, 2);
  const Tensor x = tt::randn({2, 6, 8});
  const Tensor lengths = tt::tensor({6, 3}).reshape({2, 1});
  nn::MultiHeadAttentionForward args = fwd(true);
  args.key_padding_mask = tt::arange(6).reshape({1, 6}) >= lengths;  // [2, 6], true = pad
  const auto [y, w] = mha(x, x, x, args);
  CHECK(max_abs(w[1].slice(1, 3, 6)) == 0.0);
  CHECK_ALLCLOSE(w.sum({-1}), tt::ones({2, 6}), 1e-5, 1e-6);
  const Tensor short_seq = x.slice(0, 1, 2).slice(1, 0, 3);  // [1, 3, 8]
  CHECK_ALLCLOSE(y[1].slice(0, 0, 3), mha(short_seq, short_seq, short_seq).first[0], 1e-5, 1e-6);
  CHECK_ALLCLOSE(y[0], mha(x.slice(0, 0, 1), x.slice(0, 0, 1), x.slice(0, 0, 1)).first[0], 1e-5, 1e-6);
  // Combined with causal, each real query still reads its own prefix.
  args.is_causal = true;
  const Tensor short_causal = mha(short_seq, short_seq, short_seq, fwd(false, true)).first[0];
  CHECK_ALLCLOSE(mha(x, x, x, args).first[1].slice(0, 0, 3), short_causal, 1e-5, 1e-6);
}

TEST_CASE("a row with nothing to attend to gives zeros and zero gradients, never NaN", "[module12][exercise]") {
  tt::manual_seed(9);
  const Tensor q0 = tt::randn({3, 4}, tt::kFloat64), k0 = tt::randn({3, 4}, tt::kFloat64);
  const Tensor v0 = tt::randn({3, 2}, tt::kFloat64);
  const Tensor mask = tt::tensor({false, true, true}).reshape({1, 3});  // key 0 masked for everyone
  // With causal on top, query 0 (which may read only key 0) has nothing left.
  const Tensor w = F::attention_weights(q0, k0, mask, true);
  CHECK(max_abs(w[0]) == 0.0);
  CHECK_ALLCLOSE(w.sum({-1}), tt::tensor({0.0, 1.0, 1.0}, tt::kFloat64), 1e-12, 1e-12);
  const Tensor float_mask = tt::where(mask, 0.0, tt::full({1, 3}, -kInf, tt::kFloat64));
  // The fused path, and the composed path (a float mask that requires grad).
  for (bool composed : {false, true}) {
    Tensor q = q0.detach().requires_grad_(), k = k0.detach().requires_grad_(), v = v0.detach().requires_grad_();
    Tensor m = composed ? float_mask.detach().requires_grad_() : mask;
    Tensor out = F::scaled_dot_product_attention(q, k, v, m, 0.0, true);
    CHECK(max_abs(out[0]) == 0.0);
    CHECK(max_abs(out.slice(0, 1, 3) - w.slice(0, 1, 3).matmul(v0)) < 1e-12);
    out.sum().backward();
    CHECK(max_abs(q.grad()[0]) == 0.0);
    for (const Tensor& g : {q.grad(), k.grad(), v.grad()}) CHECK_FALSE(std::isnan(g.sum().item<double>()));
  }
  // MultiHeadAttention with a left pad and causal attention: the pad's query row is empty.
  nn::MultiHeadAttention mha(4, 1);
  const Tensor x = tt::randn({1, 3, 4});
  nn::MultiHeadAttentionForward args = fwd(true, true);
  args.key_padding_mask = tt::tensor({true, false, false}).reshape({1, 3});
  const auto [y, wm] = mha(x, x, x, args);
  CHECK(max_abs(wm[0][0]) == 0.0);
  CHECK_ALLCLOSE(y[0][0], mha.out_proj->bias, 0.0, 0.0);  // zero attention output, then out_proj
  CHECK_FALSE(std::isnan(y.sum().item<double>()));
}

// --- multi-head attention ------------------------------------------------------------------------

TEST_CASE("split, attend, concatenate by hand equals MultiHeadAttention", "[module12][exercise]") {
  tt::manual_seed(10);
  nn::MultiHeadAttention mha(12, 3);
  CHECK(mha.head_dim == 4);
  const Tensor x = tt::randn({2, 5, 12});
  const ByHand ref = mha_by_hand(mha, x, x);
  nn::MultiHeadAttentionForward per_head = fwd(true);
  per_head.average_attn_weights = false;
  const auto [y, w] = mha(x, x, x, per_head);
  CHECK(y.shape() == Shape{2, 5, 12});
  CHECK(w.shape() == Shape{2, 3, 5, 5});
  CHECK_ALLCLOSE(y, ref.out, 1e-5, 1e-6);
  CHECK_ALLCLOSE(w, ref.weights, 1e-5, 1e-6);
  // Averaged over heads by default; the fused path (no weights) gives the same output.
  const auto [y_avg, w_avg] = mha(x, x, x, fwd(true));
  CHECK(w_avg.shape() == Shape{2, 5, 5});
  CHECK_ALLCLOSE(w_avg, ref.weights.mean({1}), 1e-5, 1e-6);
  const auto [y_fast, w_none] = mha(x, x, x, fwd(false));
  CHECK_FALSE(w_none.defined());
  CHECK_ALLCLOSE(y_fast, ref.out, 1e-5, 1e-6);
  // Head h only sees columns [h D, (h + 1) D) of the projections: zeroing head 1's query rows
  // makes head 1 attend uniformly and leaves heads 0 and 2 as they were.
  {
    tt::NoGradGuard no_grad;
    mha.q_proj->weight.slice(0, 4, 8).zero_();
    mha.q_proj->bias.slice(0, 4, 8).zero_();
  }
  const Tensor w2 = mha(x, x, x, per_head).second;
  CHECK_ALLCLOSE(w2.select(1, 1), tt::full({2, 5, 5}, 0.2), 1e-6, 1e-6);
  CHECK_ALLCLOSE(w2.select(1, 0), ref.weights.select(1, 0), 1e-5, 1e-6);
  CHECK_ALLCLOSE(w2.select(1, 2), ref.weights.select(1, 2), 1e-5, 1e-6);
}

TEST_CASE("cross-attention: queries from one sequence, keys and values from another", "[module12][exercise]") {
  tt::manual_seed(11);
  nn::MultiHeadAttention mha(8, 2, nn::MultiHeadAttentionOptions().kdim(6).vdim(6));
  const Tensor dec = tt::randn({2, 3, 8}), enc = tt::randn({2, 7, 6});
  nn::MultiHeadAttentionForward per_head = fwd(true);
  per_head.average_attn_weights = false;
  const auto [y, w] = mha(dec, enc, enc, per_head);
  CHECK(y.shape() == Shape{2, 3, 8});
  CHECK(w.shape() == Shape{2, 2, 3, 7});
  const ByHand ref = mha_by_hand(mha, dec, enc);
  CHECK_ALLCLOSE(y, ref.out, 1e-5, 1e-6);
  CHECK_ALLCLOSE(w, ref.weights, 1e-5, 1e-6);
}

TEST_CASE("MultiHeadAttention has 4 E^2 + 4 E parameters whatever the number of heads", "[module12]") {
  for (int64_t H : {1, 2, 4, 8}) {
    nn::MultiHeadAttention mha(16, H);
    int64_t n = 0;
    for (const Tensor& p : mha.parameters()) n += p.numel();
    CHECK(n == 4 * 16 * 16 + 4 * 16);
    CHECK(mha.head_dim == 16 / H);
  }
  CHECK(nn::MultiHeadAttention(16, 4, nn::MultiHeadAttentionOptions().bias(false)).parameters().size() == 4);
  CHECK(nn::MultiHeadAttention(16, 4).named_parameters().keys() ==
        std::vector<std::string>{"q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias", "v_proj.weight",
                                 "v_proj.bias", "out_proj.weight", "out_proj.bias"});
}

TEST_CASE("without positions attention is permutation equivariant, and causal attention is not", "[module12][exercise]") {
  tt::manual_seed(12);
  nn::MultiHeadAttention mha(8, 2);
  const Tensor x = tt::randn({1, 5, 8});
  const Tensor perm = tt::tensor({3, 0, 4, 1, 2});
  const Tensor xp = x.index_select(1, perm);
  CHECK_ALLCLOSE(mha(xp, xp, xp, fwd(true)).first, mha(x, x, x, fwd(true)).first.index_select(1, perm), 1e-5, 1e-6);
  CHECK(max_abs(mha(xp, xp, xp, fwd(true, true)).first - mha(x, x, x, fwd(true, true)).first.index_select(1, perm)) >
        1e-3);
}

// --- grouped-query attention ---------------------------------------------------------------------

TEST_CASE("GQA: key/value head h / G serves query head h", "[module12][exercise]") {
  tt::manual_seed(13);
  const Tensor q = tt::randn({2, 6, 5, 4}, tt::kFloat64), k = tt::randn({2, 2, 7, 4}, tt::kFloat64);
  const Tensor v = tt::randn({2, 2, 7, 3}, tt::kFloat64);
  const Tensor ke = repeat_heads(k, 3), ve = repeat_heads(v, 3);  // heads 0,0,0,1,1,1
  CHECK_ALLCLOSE(F::attention_weights(q, k, {}, false, std::nullopt, true), F::attention_weights(q, ke), 1e-12, 1e-14);
  CHECK_ALLCLOSE(F::attention_weights(q, k, {}, true, std::nullopt, true), F::attention_weights(q, ke, {}, true), 1e-12,
                 1e-14);
  CHECK_ALLCLOSE(F::scaled_dot_product_attention(q, k, v, {}, 0.0, true, std::nullopt, true),
                 F::scaled_dot_product_attention(q, ke, ve, {}, 0.0, true), 1e-12, 1e-13);
  // MQA: one key/value head for all.
  const Tensor k1 = k.slice(1, 0, 1), v1 = v.slice(1, 0, 1);
  CHECK_ALLCLOSE(F::scaled_dot_product_attention(q, k1, v1, {}, 0.0, false, std::nullopt, true),
                 F::scaled_dot_product_attention(q, repeat_heads(k1, 6), repeat_heads(v1, 6)), 1e-12, 1e-13);
  REQUIRE_THROWS_WITH(F::scaled_dot_product_attention(q, k, v), Contains("enable_gqa"));
  REQUIRE_THROWS_WITH(F::attention_weights(q, k.slice(1, 0, 1).expand({2, 4, 7, 4}), {}, false, std::nullopt, true),
                      Contains("must divide the query heads"));
}

TEST_CASE("MultiHeadAttention with num_kv_heads: smaller k and v projections, the same math", "[module12][exercise]") {
  tt::manual_seed(14);
  nn::MultiHeadAttention gqa(12, 6, nn::MultiHeadAttentionOptions().num_kv_heads(2));
  CHECK(gqa.k_proj->weight.shape() == Shape{4, 12});  // Hkv * D = 2 * 2
  CHECK(gqa.v_proj->weight.shape() == Shape{4, 12});
  CHECK(gqa.q_proj->weight.shape() == Shape{12, 12});
  const Tensor x = tt::randn({2, 5, 12});
  nn::MultiHeadAttentionForward per_head = fwd(true, true);
  per_head.average_attn_weights = false;
  const auto [y, w] = gqa(x, x, x, per_head);
  const ByHand ref = mha_by_hand(gqa, x, x, {}, true);
  CHECK_ALLCLOSE(y, ref.out, 1e-5, 1e-6);
  CHECK_ALLCLOSE(w, ref.weights, 1e-5, 1e-6);
  CHECK_ALLCLOSE(gqa(x, x, x, fwd(false, true)).first, ref.out, 1e-5, 1e-6);
  nn::MultiHeadAttention mqa(12, 6, nn::MultiHeadAttentionOptions().num_kv_heads(1));
  CHECK(mqa.k_proj->weight.shape() == Shape{2, 12});
  CHECK_ALLCLOSE(mqa(x, x, x, fwd(false)).first, mha_by_hand(mqa, x, x).out, 1e-5, 1e-6);
  REQUIRE_THROWS_WITH(nn::MultiHeadAttention(12, 6, nn::MultiHeadAttentionOptions().num_kv_heads(4)),
                      Contains("num_kv_heads must divide num_heads"));
}

// --- gradients -----------------------------------------------------------------------------------

TEST_CASE("the backward by its formulas: dV = P^T dO, dS = P (dP - rowsum(dP P)), dQ = s dS K, dK = s dS^T Q",
          "[module12]") {
  tt::manual_seed(15);
  for (bool causal : {false, true}) {
    Tensor q = leaf({6, 4}), k = leaf({6, 4}), v = leaf({6, 3});
    const Tensor dO = tt::randn({6, 3}, tt::kFloat64);
    F::scaled_dot_product_attention(q, k, v, {}, 0.0, causal).backward(dO);
    const Tensor P = weights_by_loops(q.detach(), k.detach(), 0.5, {}, causal);
    const Tensor dP = dO.matmul(v.detach().t());
    const Tensor dS = P * (dP - (dP * P).sum({-1}, true));
    CHECK_ALLCLOSE(v.grad(), P.t().matmul(dO), 1e-10, 1e-12);
    CHECK_ALLCLOSE(q.grad(), dS.matmul(k.detach()) * 0.5, 1e-10, 1e-12);
    CHECK_ALLCLOSE(k.grad(), dS.t().matmul(q.detach()) * 0.5, 1e-10, 1e-12);
  }
}

TEST_CASE("gradcheck in float64: fused and composed paths, masks, GQA", "[module12][exercise]") {
  tt::manual_seed(16);
  const Tensor q = leaf({1, 2, 4, 3}), k = leaf({1, 2, 5, 3}), v = leaf({1, 2, 5, 2});
  const Tensor allowed = tt::tensor({true, true, false, true, true}).reshape({1, 5});
  check_grad([](const TensorList& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2]); }, {q, k, v});
  check_grad([&](const TensorList& in) {
    return F::scaled_dot_product_attention(in[0], in[1], in[2], allowed, 0.0, true);
  }, {q, k, v});
  check_grad([](const TensorList& in) { return F::attention_weights(in[0], in[1], {}, true); }, {q, k});
  // A float mask that requires grad takes the composed path and gets a gradient too.
  const Tensor bias = leaf({4, 5});
  check_grad([](const TensorList& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2], in[3]); },
             {q, k, v, bias});
  // GQA: the gradient of a shared key/value head sums over its group of query heads.
  const Tensor q4 = leaf({1, 4, 3, 2}), k2 = leaf({1, 2, 3, 2}), v2 = leaf({1, 2, 3, 2});
  check_grad([](const TensorList& in) {
    return F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true, std::nullopt, true);
  }, {q4, k2, v2});
  check_grad([](const TensorList& in) { return F::attention_weights(in[0], in[1], {}, false, std::nullopt, true); },
             {q4, k2});
}

TEST_CASE("second derivatives of attention in float64", "[module12][exercise]") {
  tt::manual_seed(17);
  const Tensor q = leaf({2, 3, 3}), k = leaf({2, 4, 3}), v = leaf({2, 4, 2});
  check_gradgrad([](const TensorList& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2]); }, {q, k, v});
  check_gradgrad([](const TensorList& in) {
    return F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true);
  }, {q, k, v});
}

TEST_CASE("gradcheck of MultiHeadAttention in float64, with and without weights", "[module12][exercise]") {
  tt::manual_seed(18);
  nn::MultiHeadAttention mha(6, 2, nn::MultiHeadAttentionOptions().num_kv_heads(1));
  mha.to(tt::kFloat64);
  const Tensor x = leaf({2, 3, 6});
  for (bool need_weights : {false, true})
    check_grad([&](const TensorList& in) { return mha(in[0], in[0], in[0], fwd(need_weights, true)).first; }, {x});
  check_grad([&](const TensorList& in) { return mha(in[0], in[0], in[0], fwd(true)).second; }, {x});
}

// --- dropout, KV cache, memory, maps -------------------------------------------------------------

TEST_CASE("dropout on the weights: seeded, and the kept weights scaled by 1/(1 - p)", "[module12][exercise]") {
  tt::manual_seed(19);
  const Tensor q = tt::randn({1, 4, 64, 8}), k = tt::randn({1, 4, 64, 8});
  const Tensor v = tt::ones({1, 4, 64, 1});  // the output is then the row sum of the dropped weights
  tt::manual_seed(100);
  const Tensor a = F::scaled_dot_product_attention(q, k, v, {}, 0.5);
  tt::manual_seed(100);
  const Tensor b = F::scaled_dot_product_attention(q, k, v, {}, 0.5);
  CHECK_ALLCLOSE(a, b, 0.0, 0.0);
  CHECK(max_abs(a - 1.0) > 0.1);                                  // rows no longer sum to 1 ...
  CHECK(a.mean().item<double>() == Approx(1.0).epsilon(0.05));    // ... but do on average
  CHECK_ALLCLOSE(F::scaled_dot_product_attention(q, k, v, {}, 0.0), tt::ones({1, 4, 64, 1}), 1e-5, 1e-5);
  // nn::MultiHeadAttention applies its dropout in training mode only.
  nn::MultiHeadAttention mha(8, 2, nn::MultiHeadAttentionOptions().dropout(0.5));
  const Tensor x = tt::randn({1, 6, 8});
  mha.eval();
  const Tensor y1 = mha(x, x, x, fwd(true)).first, y2 = mha(x, x, x, fwd(true)).first;
  CHECK_ALLCLOSE(y1, y2, 0.0, 0.0);
  mha.train();
  CHECK(max_abs(mha(x, x, x, fwd(true)).first - y1) > 1e-4);
}

TEST_CASE("a KV cache: decoding one token at a time equals one causal pass", "[module12][exercise]") {
  tt::manual_seed(20);
  nn::MultiHeadAttention mha(8, 4, nn::MultiHeadAttentionOptions().num_kv_heads(2));
  const Tensor x = tt::randn({2, 7, 8});
  tt::NoGradGuard no_grad;
  const Tensor full = mha(x, x, x, fwd(false, true)).first;
  nn::KVCache cache(7);
  nn::MultiHeadAttentionForward args = fwd(false, true);
  args.kv_cache = &cache;
  // A prompt of 3 tokens at once, then one token per step.
  std::vector<Tensor> outs = {mha(x.slice(1, 0, 3), x.slice(1, 0, 3), x.slice(1, 0, 3), args).first};
  CHECK(cache.length() == 3);
  for (int64_t t = 3; t < 7; ++t) {
    const Tensor xt = x.slice(1, t, t + 1);
    outs.push_back(mha(xt, xt, xt, args).first);
  }
  CHECK_ALLCLOSE(tt::cat(outs, 1), full, 1e-5, 1e-6);
  CHECK(cache.length() == 7);
  CHECK(cache.memory_bytes() == 2 * 2 * 2 * 7 * 2 * 4);  // k and v, B, Hkv, capacity, D, float32
  // Full: one more token does not fit; clear() starts over with the same buffers.
  const Tensor x0 = x.slice(1, 0, 1);
  REQUIRE_THROWS_WITH(mha(x0, x0, x0, args), Contains("capacity is 7"));
  cache.clear();
  CHECK(cache.length() == 0);
  const Tensor again = mha(x0, x0, x0, args).first;  // appends: keep it out of CHECK_ALLCLOSE
  CHECK(cache.length() == 1);
  CHECK_ALLCLOSE(again, full.slice(1, 0, 1), 1e-5, 1e-6);
}

TEST_CASE("the weights take B H T^2 elements, and the allocator sees them", "[module12][exercise]") {
  tt::manual_seed(21);
  const int64_t H = 2, D = 16;
  std::vector<int64_t> math_peak, kernel_peak;
  for (int64_t T : {128, 256}) {
    const Tensor q = tt::randn({1, H, T, D}), k = tt::randn({1, H, T, D}), v = tt::randn({1, H, T, D});
    const int64_t weights = H * T * T * 4;
    tt::NoGradGuard no_grad;
    int64_t shape_ok = 0;
    math_peak.push_back(peak_bytes([&] {
      Tensor w = F::attention_weights(q, k);
      shape_ok = w.shape() == Shape{1, H, T, T};
    }));
    CHECK(shape_ok == 1);
    tt::SdpaKernelGuard math(tt::SDPBackend::Math);
    kernel_peak.push_back(peak_bytes([&] { Tensor o = F::scaled_dot_product_attention(q, k, v); }));
    CHECK(math_peak.back() >= 2 * weights);  // the scaled scores and the softmax output, at once
    CHECK(math_peak.back() < 3 * weights);
    CHECK(kernel_peak.back() >= weights);    // the math kernel writes the weights once
    CHECK(kernel_peak.back() < 2 * weights);
  }
  // Doubling T multiplies them by 4 (to within the O(T) output).
  CHECK(double(math_peak[1]) / double(math_peak[0]) == Approx(4.0).epsilon(0.05));
  CHECK(double(kernel_peak[1]) / double(kernel_peak[0]) == Approx(4.0).epsilon(0.2));
}

TEST_CASE("attention maps: the causal triangle in the terminal and as a PNG", "[module12][exercise]") {
  tt::manual_seed(22);
  const Tensor q = tt::randn({4, 4}), k = tt::randn({4, 4});
  const Tensor w = F::attention_weights(q, k, {}, true);
  tt::viz::TerminalOptions opt;
  opt.color = false;
  const std::string text = tt::viz::render_attention_terminal(w, {"a", "b", "c", "d"}, {"a", "b", "c", "d"}, opt);
  // The first query: all its weight on key a (the brightest shade), nothing on b, c, d (blank).
  CHECK_THAT(text, Contains("a \u2588\u2588      \n"));
  tt::testing::TempDir dir;
  tt::viz::save_attention_heatmap(dir.file("causal.png"), w, {"a", "b", "c", "d"}, {"a", "b", "c", "d"});
  const std::string png = tt::testing::read_bytes(dir.file("causal.png"));
  REQUIRE(png.size() > 8);
  CHECK(png.substr(1, 3) == "PNG");
}

// --- errors --------------------------------------------------------------------------------------

TEST_CASE("attention refuses bad shapes, masks and configurations with messages that name them", "[module12]") {
  const Tensor q = tt::randn({1, 2, 4, 8}), k = tt::randn({1, 2, 5, 8}), v = tt::randn({1, 2, 5, 3});
  REQUIRE_THROWS_WITH(F::scaled_dot_product_attention(q, tt::randn({1, 2, 5, 7}), v),
                      Contains("same last dim") && Contains("[1, 2, 4, 8]") && Contains("[1, 2, 5, 7]"));
  REQUIRE_THROWS_WITH(F::scaled_dot_product_attention(q, k, tt::randn({1, 2, 6, 3})),
                      Contains("key and value must have the same length"));
  REQUIRE_THROWS_WITH(F::attention_weights(q, k, tt::ones({3, 5}, tt::kBool)),
                      Contains("does not broadcast") && Contains("[3, 5]"));
  REQUIRE_THROWS_WITH(F::attention_weights(q, k, tt::ones({4, 5}, tt::kInt64)), Contains("attn_mask must be bool"));
  REQUIRE_THROWS_WITH(F::scaled_dot_product_attention(q, k, v, {}, 1.0), Contains("dropout_p must be in [0, 1)"));
  REQUIRE_THROWS_WITH(F::attention_weights(tt::ones({4, 8}, tt::kInt64), tt::ones({5, 8}, tt::kInt64)),
                      Contains("floating-point"));
  REQUIRE_THROWS_WITH(nn::MultiHeadAttention(10, 3), Contains("embed_dim must be divisible by num_heads"));
  nn::MultiHeadAttention mha(8, 2);
  const Tensor x = tt::randn({2, 5, 8});
  REQUIRE_THROWS_WITH(mha(tt::randn({2, 5, 6}), x, x), Contains("expected query"));
  nn::MultiHeadAttentionForward args;
  args.key_padding_mask = tt::ones({2, 4}, tt::kBool);
  REQUIRE_THROWS_WITH(mha(x, x, x, args), Contains("key_padding_mask must have shape [2, 5]"));
  args.key_padding_mask = Tensor();
  args.attn_mask = tt::ones({4, 5}, tt::kBool);
  REQUIRE_THROWS_WITH(mha(x, x, x, args), Contains("attn_mask of shape [4, 5]"));
}
