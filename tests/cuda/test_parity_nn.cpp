// CPU<->CUDA parity of the fused row kernels and the nn building blocks: softmax / log_softmax
// (every dim, rows of 1 to 8193, unaligned rows, -inf rows), activations with fused backward, LayerNorm / RMSNorm
// (with and without affine), embedding / index_select / gather / scatter_add, the losses,
// scaled_dot_product_attention on its math and flash paths (masks, causal, GQA) and
// nn::MultiHeadAttention. All [cuda]: skipped where no GPU is present.
#include <limits>

#include "cuda/parity.h"

using namespace tt;
using namespace tt::testing;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("parity: softmax and log_softmax", "[cuda][parity][softmax]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    std::string at = dtype_name(dt);
    // Rows of every length the kernels special-case (Note [cuda softmax rows]): one element, a warp's
    // width (32) and one either side, each warp share (128 to 1024 floats), a block's (4096, 5000),
    // past the register limit (8192 floats, 4096 doubles) to the general kernels. Rows of 1000 in
    // float32 are issue 17's log_softmax case (Note [softmax sums in double] of the CPU): the default
    // tolerance stands. With both devices summing in double and rounding to the same float, what is
    // left is exp_f32's last bit (nvcc and gcc contract its multiply-adds differently) and the final
    // multiply-add, each a few u |exp(y) sum(dy)|; a float simulation of both kernels over 2e7
    // elements of such rows (their summation orders and fused multiply-adds) peaked at 0.29 of this
    // tolerance (with the old float sums: 6x over it).
    for (int64_t c : {1, 7, 31, 32, 33, 127, 129, 700, 1000, 1024, 4096, 4097, 5000, 8193}) {
      Tensor x = rnd({9, c}, dt) * 3;
      std::string rows = at + " rows of " + std::to_string(c);
      check_parity("softmax " + rows, [](const Tensor& t) { return t.softmax(-1); }, x);
      check_parity("log_softmax " + rows, [](const Tensor& t) { return t.log_softmax(-1); }, x);
      // Rows that start one element past a 16-byte boundary: the same layout, loaded element-wise.
      // Unaligned and contiguous (a flat offset), and unaligned with a row stride of c + 1.
      check_parity("softmax, rows offset by one, " + rows,
                   [c](const Tensor& t) { return t.reshape({-1}).slice(0, 1, 1 + 9 * c).reshape({9, c}).softmax(1); },
                   rnd({9 * c + 1}, dt));
      check_parity("log_softmax, rows of a column slice, " + rows,
                   [c](const Tensor& t) { return t.slice(1, 1, c + 1).log_softmax(1); }, rnd({9, c + 1}, dt) * 3);
    }
    // Many rows: the grid-stride loops of the warp and block kernels, and the one-thread-per-row
    // kernel (softmax over dim 0 of a wide contiguous matrix: 4100 adjacent strided rows).
    check_parity("softmax " + at + " 3000 rows of 33", [](const Tensor& t) { return t.softmax(1); },
                 rnd({3000, 33}, dt));
    check_parity("log_softmax " + at + " over dim 0 of [7, 4100]", [](const Tensor& t) { return t.log_softmax(0); },
                 rnd({7, 4100}, dt));
    check_parity("softmax " + at + " over dim 0 of [1000, 5]", [](const Tensor& t) { return t.softmax(0); },
                 rnd({1000, 5}, dt) * 3);
    // Every dim of a 3-D tensor (strided rows), transposed and expanded inputs, a 0-d tensor.
    Tensor x3 = rnd({5, 33, 7}, dt);
    for (int64_t d : {0, 1, 2}) {
      check_parity("softmax " + at + " dim " + std::to_string(d), [d](const Tensor& t) { return t.softmax(d); }, x3);
      check_parity("log_softmax " + at + " dim " + std::to_string(d),
                   [d](const Tensor& t) { return t.log_softmax(d); }, x3);
    }
    check_parity("softmax of a transposed input", [](const Tensor& t) { return t.t().softmax(1); }, rnd({33, 7}, dt));
    check_parity("log_softmax of an expanded input", [](const Tensor& t) { return t.expand({4, 33}).log_softmax(1); },
                 rnd({1, 33}, dt));
    check_parity("softmax of a 0-d tensor", [](const Tensor& t) { return t.softmax(0); }, rnd({}, dt));
    check_parity("softmax, empty batch", [](const Tensor& t) { return t.softmax(1); }, rnd({0, 7}, dt));
    // -inf: a whole row gives zeros (softmax) or -inf (log_softmax), never NaN; partial rows
    // are ordinary. Large values do not overflow.
    Tensor m = rnd({4, 1000}, dt).detach();
    m.select(0, 1).fill_(-kInf);
    m.select(0, 2).slice(0, 0, 500).fill_(-kInf);
    m.select(0, 3).mul_(1e4);
    Tensor leaf = m.requires_grad_();
    check_parity("softmax with -inf rows", [](const Tensor& t) { return t.softmax(1); }, leaf);
    check_parity_with("log_softmax with -inf rows", ParityOptions{{}, {}, false},
                      [](const Tensor& t) { return t.log_softmax(1); }, leaf);
    check_parity("log_softmax backward, finite rows", [](const Tensor& t) { return t.slice(0, 2, 4).log_softmax(1); },
                 leaf);
  }
}

TEST_CASE("parity: activations with fused backward", "[cuda][parity][activation]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (int64_t n : odd_sizes()) {
      Tensor x = rnd({n}, dt) * 3;
      std::string at = std::string(dtype_name(dt)) + " n=" + std::to_string(n);
      check_parity("relu " + at, [](const Tensor& t) { return F::relu(t); }, x);
      check_parity("gelu " + at, [](const Tensor& t) { return F::gelu(t); }, x);
      check_parity("gelu tanh " + at, [](const Tensor& t) { return F::gelu(t, "tanh"); }, x);
      check_parity("silu " + at, [](const Tensor& t) { return F::silu(t); }, x);
      check_parity("leaky_relu " + at, [](const Tensor& t) { return F::leaky_relu(t, 0.2); }, x);
      check_parity("tanh " + at, [](const Tensor& t) { return F::tanh(t); }, x);
      check_parity("sigmoid " + at, [](const Tensor& t) { return F::sigmoid(t); }, x);
    }
    check_parity("gelu of a permuted tensor", [](const Tensor& t) { return F::gelu(t.permute({1, 0, 2})); },
                 rnd({5, 7, 33}, dt));
    check_parity("silu of an expanded tensor", [](const Tensor& t) { return F::silu(t.expand({7, 33})); },
                 rnd({1, 33}, dt));
    check_parity("gelu tanh, empty", [](const Tensor& t) { return F::gelu(t, "tanh"); }, rnd({0, 3}, dt));
    // Double backward composes the fused backward with tensor ops: same on both devices.
    check_parity("gelu, second derivative",
                 [](const Tensor& t) {
                   Tensor y = F::gelu(t);
                   return autograd::grad({y.sum()}, {t}, {}, true, true)[0];
                 },
                 rnd({33}, dt));
  }
}

TEST_CASE("parity: layer_norm and rms_norm", "[cuda][parity][normalization]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    // Row sums of the backward run over many rows: float32 slack grows with the row count.
    ParityOptions o = dt == kFloat64 ? tol(1e-10, 1e-11) : tol(1e-4, 1e-5);
    // Note [cuda normalization rows]: every warp share, a block's rows (4096, 5000), past the
    // register limit (8193 floats, 4097+ doubles) to the general kernels.
    for (int64_t c : {1, 7, 31, 32, 33, 768, 1000, 1024, 4096, 4097, 5000, 8193}) {
      std::string at = std::string(dtype_name(dt)) + " C=" + std::to_string(c);
      Tensor x = rnd({2, 9, c}, dt) * 2 + 0.5, w = rnd({c}, dt), b = rnd({c}, dt);
      check_parity_with("layer_norm affine " + at, o,
                        [c](const Tensor& t, const Tensor& wt, const Tensor& bs) {
                          return F::layer_norm(t, {c}, wt, bs, 1e-5);
                        },
                        x, w, b);
      check_parity_with("layer_norm no affine " + at, o, [c](const Tensor& t) { return F::layer_norm(t, {c}); }, x);
      check_parity_with("rms_norm affine " + at, o,
                        [c](const Tensor& t, const Tensor& wt) { return F::rms_norm(t, {c}, wt, 1e-6); }, x, w);
      check_parity_with("rms_norm no affine " + at, o, [c](const Tensor& t) { return F::rms_norm(t, {c}); }, x);
    }
    // Normalized over two dims, a transposed input (made contiguous by the op), many short rows.
    check_parity_with("layer_norm over [7, 33]", o,
                      [](const Tensor& t, const Tensor& w, const Tensor& b) { return F::layer_norm(t, {7, 33}, w, b); },
                      rnd({3, 7, 33}, dt), rnd({7, 33}, dt), rnd({7, 33}, dt));
    check_parity_with("layer_norm of a transposed input", o,
                      [](const Tensor& t, const Tensor& w) { return F::layer_norm(t.t(), {33}, w); },
                      rnd({33, 17}, dt), rnd({33}, dt));
    check_parity_with("rms_norm of 4097 rows of 64", o,
                      [](const Tensor& t, const Tensor& w) { return F::rms_norm(t, {64}, w); }, rnd({4097, 64}, dt),
                      rnd({64}, dt));
    check_parity_with("layer_norm with a weight only", o,
                      [](const Tensor& t, const Tensor& w) { return F::layer_norm(t, {33}, w); }, rnd({5, 33}, dt),
                      rnd({33}, dt));
    check_parity("layer_norm, no rows", [](const Tensor& t) { return F::layer_norm(t, {5}); }, rnd({0, 5}, dt));
    // The backward's partial weight gradients (Note [cuda weight gradients]): several blocks of 32
    // rows with a short last one (warp rows), of 16 rows (block rows), and no rows at all (zeros).
    // A few hundred rows: a column sum of R products near 0 keeps a float error ~1e-7 sqrt(R) that
    // the 1e-5 absolute tolerance must cover (each device groups the rows differently).
    for (auto [r, c] : {std::pair<int64_t, int64_t>{300, 768}, {333, 33}, {40, 2000}, {0, 768}}) {
      std::string at = std::string(dtype_name(dt)) + " " + std::to_string(r) + " rows of " + std::to_string(c);
      check_parity_with("layer_norm affine, " + at, o,
                        [c](const Tensor& t, const Tensor& w, const Tensor& b) { return F::layer_norm(t, {c}, w, b); },
                        rnd({r, c}, dt), rnd({c}, dt), rnd({c}, dt));
      check_parity_with("rms_norm affine, " + at, o,
                        [c](const Tensor& t, const Tensor& w) { return F::rms_norm(t, {c}, w); }, rnd({r, c}, dt),
                        rnd({c}, dt));
    }
    // Weight and bias gradients without dx (x needs no gradient), and only a bias.
    check_parity_with("layer_norm, parameter gradients only", o,
                      [](const Tensor& t, const Tensor& w, const Tensor& b) {
                        return F::layer_norm(t.detach(), {768}, w, b);
                      },
                      rnd({100, 768}, dt), rnd({768}, dt), rnd({768}, dt));
    check_parity_with("layer_norm with a bias only", o,
                      [](const Tensor& t, const Tensor& b) { return F::layer_norm(t, {1000}, Tensor(), b); },
                      rnd({70, 1000}, dt), rnd({1000}, dt));
    // Rows that start one element past a 16-byte boundary (a flat offset: still contiguous).
    for (int64_t c : {33, 768, 4096}) {
      check_parity_with("layer_norm, rows offset by one, " + std::string(dtype_name(dt)) + " C=" + std::to_string(c), o,
                        [c](const Tensor& t, const Tensor& w, const Tensor& b) {
                          return F::layer_norm(t.reshape({-1}).slice(0, 1, 1 + 40 * c).reshape({40, c}), {c}, w, b);
                        },
                        rnd({40 * c + 1}, dt), rnd({c}, dt), rnd({c}, dt));
      check_parity_with("rms_norm, rows offset by one, " + std::string(dtype_name(dt)) + " C=" + std::to_string(c), o,
                        [c](const Tensor& t, const Tensor& w) {
                          return F::rms_norm(t.reshape({-1}).slice(0, 1, 1 + 40 * c).reshape({40, c}), {c}, w);
                        },
                        rnd({40 * c + 1}, dt), rnd({c}, dt));
    }
  }
}

TEST_CASE("parity: embedding, index_select, gather, scatter_add", "[cuda][parity][indexing]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    // Atomic adds of repeated indices sum in any order: float32 needs some slack.
    ParityOptions o = dt == kFloat64 ? tol(1e-10, 1e-11) : tol(1e-5, 1e-5);
    Tensor w = rnd({50, 33}, dt);
    Tensor ids = rnd_int({4, 129}, 0, 50);  // many repeats: the backward accumulates
    check_parity_with("embedding", o, [](const Tensor& wt, const Tensor& i) { return tt::embedding(wt, i); }, w, ids);
    check_parity_with("embedding with padding_idx", o,
                      [](const Tensor& wt, const Tensor& i) { return tt::embedding(wt, i, 3); }, w, ids);
    check_parity_with("embedding of a transposed index", o,
                      [](const Tensor& wt, const Tensor& i) { return F::embedding(i.t(), wt); }, w, ids);
    check_parity("embedding, no ids", [](const Tensor& wt, const Tensor& i) { return tt::embedding(wt, i); }, w,
                 rnd_int({0}, 0, 50));
    Tensor x = rnd({9, 33, 7}, dt);
    for (int64_t d : {0, 1, 2}) {
      Tensor index = rnd_int({20}, 0, x.size(d));
      check_parity_with("index_select dim " + std::to_string(d), o,
                        [d](const Tensor& t, const Tensor& i) { return t.index_select(d, i); }, x, index);
      Shape gshape = x.shape();
      gshape[d] = 5;
      Tensor gidx = rnd_int(gshape, 0, x.size(d));
      check_parity_with("gather dim " + std::to_string(d), o,
                        [d](const Tensor& t, const Tensor& i) { return t.gather(d, i); }, x, gidx);
      Tensor src = rnd(gshape, dt);
      check_parity_with("scatter_add dim " + std::to_string(d), o,
                        [d](const Tensor& t, const Tensor& i, const Tensor& s) { return t.scatter_add(d, i, s); }, x,
                        gidx, src);
    }
    check_parity_with("index_select of a transposed tensor", o,
                      [](const Tensor& t, const Tensor& i) { return t.t().index_select(0, i); }, rnd({33, 1000}, dt),
                      rnd_int({4097}, 0, 1000));
    check_parity_with("gather of a permuted tensor", o,
                      [](const Tensor& t, const Tensor& i) { return t.permute({1, 0}).gather(1, i); },
                      rnd({33, 7}, dt), rnd_int({7, 60}, 0, 33));
    // 4097 values summed into one slot by atomics, in any order.
    check_parity_with("scatter_add_ in place, all into one slot", dt == kFloat64 ? o : tol(1e-5, 5e-4),
                      [](const Tensor& s) {
                        Tensor out = zeros({3, 4}, s.options());
                        out.scatter_add_(1, zeros({3, 4097}, TensorOptions(kInt64).device(s.device())), s.detach());
                        return out;
                      },
                      rnd({3, 4097}, dt));
  }
  // int64 payloads are exact.
  check_parity("index_select int64", [](const Tensor& t, const Tensor& i) { return t.index_select(0, i); },
               rnd_int({100, 3}, -50, 50), rnd_int({33}, 0, 100));
}

TEST_CASE("parity: losses", "[cuda][parity][loss]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    ParityOptions o = dt == kFloat64 ? tol(1e-10, 1e-12) : tol(1e-5, 1e-6);
    for (int64_t c : {int64_t(1), int64_t(7), int64_t(1000), int64_t(5000)}) {
      Tensor logits = rnd({33, c}, dt) * 2;
      Tensor target = rnd_int({33}, 0, c);
      Tensor w = rnd_uniform({c}, 0.5, 1.5, dt).detach();  // class weights are constants
      std::string at = std::string(dtype_name(dt)) + " C=" + std::to_string(c);
      for (Reduction r : {kNone, kMean, kSum}) {
        std::string rr = " " + std::string(reduction_name(r));
        check_parity_with("cross_entropy " + at + rr, o,
                          [r](const Tensor& x, const Tensor& t) { return cross_entropy(x, t, {}, r); }, logits, target);
        check_parity_with("cross_entropy weighted, smoothed " + at + rr, o,
                          [r](const Tensor& x, const Tensor& t, const Tensor& wt) {
                            return cross_entropy(x, t, wt, r, -100, 0.1);
                          },
                          logits, target, w);
        check_parity_with("nll_loss " + at + rr, o,
                          [r](const Tensor& x, const Tensor& t) { return nll_loss(x.log_softmax(1), t, {}, r); },
                          logits, target);
      }
    }
    Tensor logits = rnd({6, 5}, dt);
    Tensor target = tensor({4, 0, -100, 2, 2, 1});
    check_parity_with("cross_entropy with ignore_index", o,
                      [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t); }, logits, target);
    check_parity_with("cross_entropy, probabilities, [N, C, d]", o,
                      [](const Tensor& x, const Tensor& p) { return cross_entropy(x, p.softmax(1)); },
                      rnd({2, 5, 3}, dt), rnd({2, 5, 3}, dt));
    check_parity_with("cross_entropy, class indices, [N, C, d], transposed logits", o,
                      [](const Tensor& x, const Tensor& t) { return cross_entropy(x.transpose(1, 2), t); },
                      rnd({2, 3, 5}, dt), rnd_int({2, 3}, 0, 5));
    check_parity_with("mse_loss", o, [](const Tensor& a, const Tensor& b) { return mse_loss(a, b); },
                      rnd({33, 7}, dt), rnd({33, 7}, dt));
    check_parity_with("mse_loss sum, transposed", o,
                      [](const Tensor& a, const Tensor& b) { return mse_loss(a.t(), b, kSum); }, rnd({7, 33}, dt),
                      rnd({33, 7}, dt));
    check_parity("cross_entropy, empty batch",
                 [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t, {}, kSum); }, rnd({0, 5}, dt),
                 rnd_int({0}, 0, 5));
  }
  // A bad class index is an error on the device too (checked before any kernel reads it).
  REQUIRE_THROWS(cross_entropy(rnd({2, 3}).detach().to(gpu(), true), tensor({0, 7}).to(gpu(), true)));
}

TEST_CASE("parity: scaled_dot_product_attention, math and flash paths", "[cuda][parity][attention]") {
  TT_REQUIRE_CUDA();
  struct Case {
    const char* what;
    int64_t b, hq, hkv, tq, tk, d;
    bool causal, gqa;
    int mask;  // 0 none, 1 bool, 2 float
  };
  const Case cases[] = {
      {"plain", 2, 4, 4, 33, 33, 64, false, false, 0},
      {"causal", 2, 4, 4, 65, 65, 64, true, false, 0},
      {"causal, Tq != Tk", 1, 2, 2, 17, 80, 32, true, false, 0},
      {"bool mask", 2, 2, 2, 33, 47, 64, false, false, 1},
      {"float mask", 1, 4, 4, 40, 40, 32, false, false, 2},
      {"GQA 4 -> 2", 2, 4, 2, 33, 33, 64, true, true, 0},
      {"MQA 4 -> 1 with bool mask", 1, 4, 1, 20, 129, 128, false, true, 1},
      {"one query, long keys", 1, 2, 2, 1, 1000, 64, false, false, 0},
      {"head dim 128", 1, 2, 2, 70, 70, 128, true, false, 0},
  };
  for (ScalarType dt : {kFloat32, kFloat64}) {
    ParityOptions o = dt == kFloat64 ? tol(1e-10, 1e-11) : tol(1e-4, 1e-5);
    for (const Case& c : cases) {
      Tensor q = rnd({c.b, c.hq, c.tq, c.d}, dt), k = rnd({c.b, c.hkv, c.tk, c.d}, dt),
             v = rnd({c.b, c.hkv, c.tk, c.d}, dt);
      Tensor mask;
      if (c.mask == 1) {
        mask = rand({c.b, 1, c.tq, c.tk}, {}, &parity_generator()) < 0.7;
        mask.select(2, 0).fill_(false);  // a row with nothing to attend to: zeros, never NaN
      } else if (c.mask == 2) {
        mask = rnd({c.tq, c.tk}, dt).detach();
      }
      for (SDPBackend backend : {SDPBackend::Math, SDPBackend::Flash}) {
        std::string what = std::string(c.what) + " " + dtype_name(dt) +
                           (backend == SDPBackend::Math ? " math" : " flash");
        // The mask is an input without grad: copied to each device like the others.
        auto fn = [&c, backend](const Tensor& qq, const Tensor& kk, const Tensor& vv, const Tensor& m) {
          SdpaKernelGuard guard(backend);
          return F::scaled_dot_product_attention(qq, kk, vv, m.numel() == 0 ? Tensor() : m, 0.0, c.causal,
                                                 std::nullopt, c.gqa);
        };
        Tensor m = mask.defined() ? mask : zeros({0});
        check_parity_with(what, o, fn, q, k, v, m);
      }
    }
    // Transposed inputs ([B, T, H, D] viewed as [B, H, T, D]), as MultiHeadAttention makes them.
    for (SDPBackend backend : {SDPBackend::Math, SDPBackend::Flash}) {
      check_parity_with("transposed q/k/v", o,
                        [backend](const Tensor& qq, const Tensor& kk, const Tensor& vv) {
                          SdpaKernelGuard guard(backend);
                          return F::scaled_dot_product_attention(qq.transpose(1, 2), kk.transpose(1, 2),
                                                                 vv.transpose(1, 2), {}, 0.0, true);
                        },
                        rnd({2, 33, 4, 64}, dt), rnd({2, 33, 4, 64}, dt), rnd({2, 33, 4, 64}, dt));
    }
    // The composed path (a float mask that requires grad) and attention_weights.
    check_parity_with("composed path, mask with grad", o,
                      [](const Tensor& qq, const Tensor& kk, const Tensor& vv, const Tensor& m) {
                        return F::scaled_dot_product_attention(qq, kk, vv, m);
                      },
                      rnd({1, 2, 9, 32}, dt), rnd({1, 2, 11, 32}, dt), rnd({1, 2, 11, 32}, dt), rnd({9, 11}, dt));
    check_parity_with("attention_weights, causal", o,
                      [](const Tensor& qq, const Tensor& kk) { return attention_weights(qq, kk, {}, true); },
                      rnd({2, 2, 9, 32}, dt), rnd({2, 2, 9, 32}, dt));
  }
}

TEST_CASE("parity: nn::MultiHeadAttention", "[cuda][parity][attention]") {
  TT_REQUIRE_CUDA();
  struct Case {
    const char* what;
    int64_t heads, kv_heads;
    bool causal, need_weights, padding;
  };
  const Case cases[] = {
      {"self, fused", 4, 0, false, false, false},
      {"self, causal, fused", 4, 0, true, false, false},
      {"with weights", 4, 0, false, true, false},
      {"GQA 4 -> 2, key padding", 4, 2, false, false, true},
      {"MQA, causal, weights per head", 4, 1, true, true, false},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    nn::MultiHeadAttentionOptions opts;
    if (c.kv_heads > 0) opts.num_kv_heads(c.kv_heads);
    manual_seed(31);
    nn::MultiHeadAttention cpu(64, c.heads, opts);
    manual_seed(31);
    nn::MultiHeadAttention dev(64, c.heads, opts);
    dev.to(gpu());
    auto pc = cpu.named_parameters(), pd = dev.named_parameters();
    REQUIRE(pc.size() == pd.size());
    Tensor x = rnd({3, 17, 64}).detach();
    nn::MultiHeadAttentionForward args;
    args.is_causal = c.causal;
    args.need_weights = c.need_weights;
    args.average_attn_weights = false;
    Tensor xd = x.to(gpu(), true).requires_grad_(), xc = x.clone().requires_grad_();
    nn::MultiHeadAttentionForward args_d = args;
    if (c.padding) {
      args.key_padding_mask = rand({3, 17}, {}, &parity_generator()) < 0.3;
      args_d.key_padding_mask = args.key_padding_mask.to(gpu(), true);
    }
    auto [oc, wc] = cpu(xc, xc, xc, args);
    auto [od, wd] = dev(xd, xd, xd, args_d);
    check_same("output", od, oc, Tolerance{1e-4, 1e-5});
    check_same("weights", wd, wc, Tolerance{1e-4, 1e-5});
    Tensor cot = rnd(oc.shape()).detach();
    (oc * cot).sum().backward();
    (od * cot.to(gpu(), true)).sum().backward();
    check_same("grad of x", xd.grad(), xc.grad(), Tolerance{1e-4, 1e-5});
    for (const auto& [name, p] : pc) {
      INFO(name);
      check_same("grad of " + name, pd[name].grad(), p.grad(), Tolerance{1e-4, 1e-5});
    }
  }
}
