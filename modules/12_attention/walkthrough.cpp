// Module 12 walkthrough: attention, one step at a time. Queries, keys and values projected from
// one small embedded sentence; the scores as dot products by hand, then as one matmul; why the
// scores are divided by sqrt(d_k), measured (the variance of q.k against d_k, and softmax
// saturating without the scale); softmax rows that sum to 1; causal against bidirectional
// weights, side by side in the terminal and as PNG heatmaps; multi-head attention split,
// attended and concatenated by hand and compared with nn::MultiHeadAttention on the same
// weights; the two opposite bool-mask conventions, key padding and rows with nothing to attend
// to; grouped-query attention and a KV cache, briefly; the backward; and the O(T^2) memory of the
// weights, measured with the allocator. Run it with `tools/tt walkthrough 12 [DIR]` (or
// build-*/modules/walkthrough_12 [DIR]); the figures go to DIR, by default a folder
// walkthrough_12_figures beside the executable. Each step prints its code (after ">>>") and the
// result. Each numbered section is one function; `--step N` reruns section N alone, `--list` lists
// them.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, quietly, and SHOW / RUN / SHOW_ERROR

namespace {

using tt::Tensor;
namespace F = tt::F;

std::string g_out_dir;  // where the PNG figures go (set by main)

double max_abs(const Tensor& t) { return t.abs().max().item<double>(); }

// A label left-aligned in `w` columns.
std::string lcol(const std::string& s, size_t w) { return s + std::string(w > s.size() ? w - s.size() : 0, ' '); }
// A label right-aligned in `w` columns.
std::string rcol(const std::string& s, size_t w) { return std::string(w > s.size() ? w - s.size() : 0, ' ') + s; }

// A 2-D tensor as a table with query labels on the rows and key labels on the columns, each number
// through `format` (8 columns wide); with `row_sums`, a last column holds each row's sum.
void print_table(const Tensor& m, const std::vector<std::string>& rows, const std::vector<std::string>& cols,
                 const char* format = "%8.3f", bool row_sums = false) {
  const Tensor c = m.detach().to(tt::kFloat64).contiguous();
  const int64_t R = c.size(0), C = c.size(1);
  const std::vector<double> v = c.to_vector<double>();
  std::string head = "    " + std::string(8, ' ');
  for (int64_t j = 0; j < C; ++j) head += rcol(cols[size_t(j)], 8);
  if (row_sums) head += "  |" + rcol("row sum", 9);
  std::cout << head << "\n";
  for (int64_t i = 0; i < R; ++i) {
    std::string line = "    " + lcol(rows[size_t(i)], 8);
    double s = 0;
    for (int64_t j = 0; j < C; ++j) {
      line += fmt(format, v[size_t(i * C + j)]);
      s += v[size_t(i * C + j)];
    }
    if (row_sums) line += "  |" + fmt("%9.6f", s);
    std::cout << line << "\n";
  }
}

// The number of terminal columns `s` takes: ANSI escape sequences take none, and a UTF-8 code
// point takes one.
size_t visible_width(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Two terminal maps side by side under their titles. The legend (each map's last line) is
// printed once, under both.
void side_by_side(const std::string& title_a, const std::string& a, const std::string& title_b,
                  const std::string& b) {
  std::vector<std::string> la = lines_of(a), lb = lines_of(b);
  const std::string legend = la.back();
  la.pop_back();
  lb.pop_back();
  size_t width = title_a.size();
  for (const std::string& l : la) width = std::max(width, visible_width(l));
  width += 6;
  const size_t n = std::max(la.size(), lb.size());
  // Bottom-align: the maps' label blocks may differ in height.
  la.insert(la.begin(), n - la.size(), "");
  lb.insert(lb.begin(), n - lb.size(), "");
  std::cout << "    " << title_a << std::string(width - title_a.size(), ' ') << title_b << "\n";
  for (size_t i = 0; i < n; ++i)
    std::cout << "    " << la[i] << std::string(width - visible_width(la[i]), ' ') << lb[i] << "\n";
  std::cout << "    " << legend << "\n";
}

// The entropy of each row of p (natural log; 0 log 0 = 0), averaged over rows.
double mean_entropy(const Tensor& p) {
  const Tensor plogp = tt::where(p > 0.0, p * p.log(), 0.0);  // log(0) = -inf is never selected
  return -plogp.sum({-1}).mean().item<double>();
}

// Peak bytes allocated above what was live before `f` ran (Note [measured peak] in
// tools/attention_costs.cpp).
template <typename Fn>
int64_t peak_bytes(Fn f) {
  const int64_t before = tt::memory::stats().allocated_bytes;
  tt::memory::reset_peak_stats();
  f();
  return tt::memory::stats().peak_allocated_bytes - before;
}

std::string figure(const std::string& name) { return (std::filesystem::path(g_out_dir) / name).string(); }

// -----------------------------------------------------------------------------------------------

// Step 1's sentence, which later steps read again: its tokens, the embedded x, and the queries,
// keys and values.
struct Sentence {
  std::vector<std::string> tokens;
  Tensor x, Q, K, V;
};

Sentence step_1_qkv() {
  say("Attention lets every position of a sequence read from every other position, by an amount\n"
      "it computes from the data. Each token plays three roles, each a linear projection of its\n"
      "vector (module 05):\n"
      "  * a query q: what this position is looking for;\n"
      "  * a key k: what this position offers to be found by;\n"
      "  * a value v: what this position hands over when it is found.\n"
      "A six-token sentence over a vocabulary of five words, embedded in C = 8 numbers (module 10):");
  RUN(tt::manual_seed(12));
  RUN(std::vector<std::string> tokens = {"the", "cat", "sat", "on", "the", "mat"});
  RUN(Tensor ids = tt::tensor({0, 1, 2, 3, 0, 4}));  // the=0 cat=1 sat=2 on=3 mat=4
  RUN(tt::nn::Embedding embed(5, 8));
  RUN(Tensor x = embed(ids).detach());
  SHOW(x.shape());
  say("Three Linear layers without bias map each 8-number token to a 4-number query, key and value\n"
      "(d_k = 4). Self-attention: all three come from the same x.");
  RUN(tt::nn::Linear Wq(tt::nn::LinearOptions(8, 4).bias(false)));
  RUN(tt::nn::Linear Wk(tt::nn::LinearOptions(8, 4).bias(false)));
  RUN(tt::nn::Linear Wv(tt::nn::LinearOptions(8, 4).bias(false)));
  RUN(Tensor Q = Wq(x).detach(), K = Wk(x).detach(), V = Wv(x).detach());
  SHOW(Q.shape());
  std::cout << "    Q, one row per token:\n";
  print_table(Q, tokens, {"d0", "d1", "d2", "d3"});
  say("Both \"the\" tokens have the same id, so the same embedding, so the same q, k and v: nothing\n"
      "here says where a token stands (that is module 10's positions, added before attention).");
  SHOW(max_abs(Q[0] - Q[4]));
  return {tokens, x, Q, K, V};
}

// -----------------------------------------------------------------------------------------------

// Returns the (bidirectional) weights, which step 4 reads again.
Tensor step_2_scores() {
  const Sentence sentence = quietly(step_1_qkv);
  const std::vector<std::string>& tokens = sentence.tokens;
  const Tensor Q = sentence.Q, K = sentence.K, V = sentence.V;
  say("How much should \"sat\" (query 2) read from \"cat\" (key 1)? Their dot product, the sum of\n"
      "the products of matching coordinates. By hand:");
  {
    const std::vector<double> q = Q[2].to_vector<double>(), k = K[1].to_vector<double>();
    std::string terms;
    double dot = 0;
    for (size_t d = 0; d < 4; ++d) {
      terms += (d ? " + " : "") + fmt("(%.3f)", q[d]) + fmt(" x (%.3f)", k[d]);
      dot += q[d] * k[d];
    }
    std::cout << "    q_sat . k_cat = " << terms << "\n                  = " << fmt("%.6f", dot) << "\n";
  }
  say("Every query against every key is one matrix product: scores = Q K^T, [T, d_k] @ [d_k, T]\n"
      "-> [T, T]. Entry [i, j] is query i's dot product with key j, the number above among them:");
  RUN(Tensor scores = Q.matmul(K.t()));
  SHOW(scores.shape());
  SHOW(scores[2][1].item<double>());
  print_table(scores, tokens, tokens);
  say("Scale by 1 / sqrt(d_k) = 1 / sqrt(4) = 0.5 (section 3 says why), then softmax along each row\n"
      "(module 03): every row becomes weights >= 0 that sum to 1, one distribution over the keys per\n"
      "query.");
  RUN(Tensor scaled = scores / std::sqrt(4.0));
  RUN(Tensor weights = scaled.softmax(-1));
  print_table(weights, tokens, tokens, "%8.3f", /*row_sums=*/true);
  say("The output of each query is the weighted average of the values: out = weights V, [T, T] @\n"
      "[T, d_k] -> [T, d_k]. For \"sat\", by hand, sum over j of weights[2, j] * V[j]:");
  RUN(Tensor out = weights.matmul(V));
  {
    Tensor by_hand = tt::zeros({4});
    std::string terms;
    for (int64_t j = 0; j < 6; ++j) {
      by_hand = by_hand + weights[2][j] * V[j];
      terms += (j ? " + " : "") + fmt("%.3f", weights[2][j].item<double>()) + " v_" + tokens[size_t(j)];
    }
    std::cout << "    out_sat = " << terms << "\n";
    SHOW(by_hand);
  }
  SHOW(out[2]);
  say("The library does the same in one call. F::attention_weights returns the weights (the\n"
      "readable math path: matmul, scale, mask, softmax, each a tensor op), and\n"
      "F::scaled_dot_product_attention the output, from a fused kernel that never hands the weights\n"
      "out (section 9). The same numbers, to float rounding:");
  SHOW(max_abs(F::attention_weights(Q, K) - weights));
  SHOW(max_abs(F::scaled_dot_product_attention(Q, K, V) - out));
  say("The two \"the\" rows are identical, the query and keys being identical: without positions,\n"
      "attention sees a bag of tokens. Permuting the tokens permutes the rows of the output and\n"
      "changes nothing else.");
  SHOW(max_abs(weights[0] - weights[4]));
  return weights;
}

// -----------------------------------------------------------------------------------------------

void step_3_scale() {
  const Sentence sentence = quietly(step_1_qkv);
  const std::vector<std::string>& tokens = sentence.tokens;
  const Tensor Q = sentence.Q, K = sentence.K;
  say("A dot product is also geometry: q . k = |q| |k| cos(theta), theta the angle between the two\n"
      "vectors. The score of a key is large when the key points the way the query does (cos near\n"
      "1), zero when it is perpendicular, negative when it points away; and the lengths scale all\n"
      "of it. For the query of \"sat\" against every key of the sentence (d_k = 4):");
  {
    const Tensor q = Q[2];
    const double qn = q.pow(2.0).sum().sqrt().item<double>();
    std::cout << "\n    key       |q|      |k|   cos(theta)  theta (deg)   |q| |k| cos    q . k\n";
    for (int64_t j = 0; j < 6; ++j) {
      const Tensor k = K[j];
      const double kn = k.pow(2.0).sum().sqrt().item<double>(), dot = (q * k).sum().item<double>();
      const double cosine = dot / (qn * kn);
      std::cout << "    " << lcol(tokens[size_t(j)], 6) << fmt("%8.3f", qn) << fmt("%9.3f", kn) << fmt("%12.3f", cosine)
                << fmt("%13.1f", std::acos(cosine) * 180.0 / M_PI) << fmt("%15.4f", qn * kn * cosine)
                << fmt("%9.4f", dot) << "\n";
    }
  }
  say("The angle says how well a key matches; the lengths say how loudly. That is also why the\n"
      "score grows with the head size. Two random directions in d dimensions are nearly\n"
      "perpendicular: cos(theta) spreads around 0 with a standard deviation of 1/sqrt(d). But a vector\n"
      "of d entries of variance 1 has length about sqrt(d). So q . k = |q| |k| cos(theta) is about\n"
      "d x (1/sqrt(d)) = sqrt(d) in size, and dividing by sqrt(d_k) gives the softmax a score of size\n"
      "1 whatever d is. Measured on 2,000 random pairs per d:");
  {
    tt::manual_seed(4);
    std::cout << "\n" << rcol("d", 6) << rcol("mean |q|", 10) << rcol("sqrt(d)", 9) << rcol("std cos", 9)
              << rcol("1/sqrt(d)", 11) << rcol("std q.k", 9) << rcol("std q.k / sqrt(d)", 19) << "\n";
    for (int64_t d : {4, 16, 64, 256, 1024}) {
      const Tensor q = tt::randn({2000, d}, tt::kFloat64), k = tt::randn({2000, d}, tt::kFloat64);
      const Tensor qn = q.pow(2.0).sum({-1}).sqrt(), kn = k.pow(2.0).sum({-1}).sqrt(), dot = (q * k).sum({-1});
      const double sd = std::sqrt(double(d));
      std::cout << rcol(std::to_string(d), 6) << fmt("%10.2f", qn.mean().item<double>()) << fmt("%9.2f", sd)
                << fmt("%9.3f", (dot / (qn * kn)).std().item<double>()) << fmt("%11.3f", 1.0 / sd)
                << fmt("%9.2f", dot.std().item<double>()) << fmt("%19.2f", (dot / sd).std().item<double>()) << "\n";
    }
  }
  say("For q and k with independent entries of mean 0 and variance 1, q . k is a sum of d_k\n"
      "products, each of variance 1: its variance is d_k, its typical size sqrt(d_k). Dividing by\n"
      "sqrt(d_k) brings the variance back to 1 whatever the head size. Without it, large heads\n"
      "feed softmax large numbers, and softmax saturates: one weight near 1, the rest near 0,\n"
      "entropy near 0 (uniform over 16 keys would be ln 16 = 2.77), and a gradient that vanishes,\n"
      "since d softmax_i / d s_j = p_i (delta_ij - p_j) is 0 when p is one-hot.\n"
      "\n"
      "Measured: 512 random queries against 16 random keys per d_k; 'max w' is the largest weight\n"
      "of a row and 'entropy' the row's entropy, both averaged over rows; '|grad|' is the mean\n"
      "size of the gradient reaching the softmax input for a random upstream gradient.");
  {
    std::cout << "\n" << std::string(27, ' ') << "|-------- unscaled -------|" << "  |--------- scaled --------|\n"
              << rcol("d_k", 6) << rcol("var q.k", 10) << rcol("scaled", 9) << "  " << rcol("max w", 7)
              << rcol("entropy", 9) << rcol("|grad|", 9) << "    " << rcol("max w", 7) << rcol("entropy", 9)
              << rcol("|grad|", 9) << "\n";
    tt::manual_seed(3);
    for (int64_t d : {1, 4, 16, 64, 256, 1024}) {
      const Tensor q = tt::randn({512, d}, tt::kFloat64), k = tt::randn({16, d}, tt::kFloat64);
      const Tensor g = tt::randn({512, 16}, tt::kFloat64);
      const Tensor s = q.matmul(k.t());
      std::string line = rcol(std::to_string(d), 6) + fmt("%10.1f", s.var().item<double>()) +
                         fmt("%9.2f", (s / std::sqrt(double(d))).var().item<double>()) + "  ";
      for (int scaled = 0; scaled < 2; ++scaled) {
        Tensor logits = (scaled ? s / std::sqrt(double(d)) : s).detach().requires_grad_();
        Tensor p = logits.softmax(-1);
        (p * g).sum().backward();
        line += fmt("%7.3f", std::get<0>(p.detach().max(-1)).mean().item<double>()) +
                fmt("%9.3f", mean_entropy(p.detach())) + fmt("%9.4f", logits.grad().abs().mean().item<double>());
        if (!scaled) line += "    ";
      }
      std::cout << line << "\n";
    }
  }
  say("The variance of the raw scores follows d_k; scaled, it stays near 1, and so do the weights'\n"
      "statistics, whatever d_k. Unscaled, at d_k = 64 (a typical head size) a row already puts 84%\n"
      "of its weight on one key and passes back less than a third of the gradient; at 1024, 96% and\n"
      "a tenth. The scale is 1/sqrt(d_k), not 1/d_k, because it is the typical size (the standard\n"
      "deviation), not the variance, that must stay put. F::scaled_dot_product_attention and\n"
      "F::attention_weights take another scale when asked (their scale argument).");
}

// -----------------------------------------------------------------------------------------------

// What step 4 makes and later steps read again: the causal rule and the heatmap options.
struct Causal {
  Tensor i, j, allowed;
  bool is_causal;
  tt::viz::HeatmapOptions hopt;
};

Causal step_4_causal() {
  const Sentence sentence = quietly(step_1_qkv);
  const std::vector<std::string>& tokens = sentence.tokens;
  const Tensor Q = sentence.Q, K = sentence.K, weights = quietly(step_2_scores);
  say("A model that predicts the next token must not read it. Causal attention lets query i read\n"
      "keys j <= i only: before softmax, the scores above the diagonal become -inf, and exp(-inf)\n"
      "= 0. The rule as a bool matrix, true where a query may attend:");
  RUN(Tensor i = tt::arange(6).reshape({6, 1}), j = tt::arange(6).reshape({1, 6}));
  RUN(Tensor allowed = j <= i);
  print_table(allowed, tokens, tokens, "%8.0f");
  RUN(const bool is_causal = true);
  RUN(Tensor causal = F::attention_weights(Q, K, {}, is_causal));  // no attn_mask
  print_table(causal, tokens, tokens, "%8.3f", /*row_sums=*/true);
  say("Row 0 is [1, 0, ...]: the first token can only read itself. Every row still sums to 1: the\n"
      "weight that went to the future is shared among the past. The two \"the\" rows now differ,\n"
      "because they see different prefixes. Masking AFTER softmax is a classic bug: it zeroes the\n"
      "future but leaves rows that no longer sum to 1:");
  SHOW((weights * allowed).sum({-1}));
  say("The two maps side by side (rows: queries, columns: keys; brighter is more weight, and 0.5 or\n"
      "more is the brightest: an untrained layer spreads its weights thinly). Bidirectional attention\n"
      "(BERT, encoders) reads the whole sentence; causal (GPT, decoders) reads a lower triangle, and\n"
      "its last row, which sees everything, equals the bidirectional one:");
  {
    tt::viz::TerminalOptions topt;
    topt.color = isatty(STDOUT_FILENO) != 0;  // shades when the output goes to a file
    topt.vmin = 0.0;
    topt.vmax = 0.5;  // weights of 0.5 and more take the brightest shade
    side_by_side("bidirectional", tt::viz::render_attention_terminal(weights, tokens, tokens, topt), "causal",
                 tt::viz::render_attention_terminal(causal, tokens, tokens, topt));
  }
  say("And as PNG heatmaps, with each weight written in its cell:");
  RUN(tt::viz::HeatmapOptions hopt);
  RUN(hopt.show_values = true; hopt.vmin = 0.0; hopt.vmax = 0.5);
  RUN(hopt.title = "bidirectional attention");
  RUN(tt::viz::save_attention_heatmap(figure("bidirectional.png"), weights, tokens, tokens, hopt));
  RUN(hopt.title = "causal attention");
  RUN(tt::viz::save_attention_heatmap(figure("causal.png"), causal, tokens, tokens, hopt));
  std::cout << "    wrote " << figure("bidirectional.png") << "\n    wrote " << figure("causal.png") << "\n";
  say("Both maps come from an UNTRAINED layer: its projections are random, every score is small, and\n"
      "the weights are nearly flat (uniform would be 1/6 = 0.167 per key; the causal rows are flat\n"
      "over their prefixes). They show the mechanics (what is masked, that rows sum to 1), not what\n"
      "attention learns. Walkthrough 14 trains a small GPT and writes the trained model's maps as\n"
      "PNGs beside these: there, heads put most of a row's weight on a few keys, such as the\n"
      "previous token or the first one.");
  return {i, j, allowed, is_causal, hopt};
}

// -----------------------------------------------------------------------------------------------

// What step 5 makes and later steps read again: the input as a batch of one, and the heads.
struct Heads {
  Tensor xb, qh, kh, vh;
};

Heads step_5_multi_head() {
  const Sentence sentence = quietly(step_1_qkv);
  const std::vector<std::string>& tokens = sentence.tokens;
  const Tensor x = sentence.x;
  tt::viz::HeatmapOptions hopt = quietly(step_4_causal).hopt;
  say("One head computes one weighting per query. Multi-head attention runs H heads side by side,\n"
      "each on its own D = E / H slice of the projections, so each can look for something else;\n"
      "then one more Linear (out_proj) mixes the heads. The projections are E x E whatever H is, so\n"
      "the parameter count does not depend on H: 4 E^2 + 4 E with biases.");
  RUN(tt::manual_seed(5));
  RUN(tt::nn::MultiHeadAttention mha(8, 2));  // embed_dim E = 8, num_heads H = 2, so D = 4
  SHOW(mha);
  RUN(Tensor xb = x.unsqueeze(0));  // [B, T, E] = [1, 6, 8]
  say("By hand with the layer's own weights. 1. project: [B, T, E] -> [B, T, E]");
  RUN(Tensor q = F::linear(xb, mha.q_proj->weight, mha.q_proj->bias).detach());
  RUN(Tensor k = F::linear(xb, mha.k_proj->weight, mha.k_proj->bias).detach());
  RUN(Tensor v = F::linear(xb, mha.v_proj->weight, mha.v_proj->bias).detach());
  SHOW(q.shape());
  say("2. split: view the last dim as [H, D], then bring H forward: [B, T, H, D] -> [B, H, T, D].\n"
      "Both are views (module 01): no copy.");
  RUN(Tensor qh = q.view({1, 6, 2, 4}).transpose(1, 2));
  RUN(Tensor kh = k.view({1, 6, 2, 4}).transpose(1, 2));
  RUN(Tensor vh = v.view({1, 6, 2, 4}).transpose(1, 2));
  SHOW(qh.shape());
  SHOW(qh.is_contiguous());
  say("3. attend: every head at once, [B, H, T, D] -> [B, H, T, D]; the scale is 1/sqrt(D) =\n"
      "1/sqrt(4), the head's size, not the model's.");
  RUN(Tensor heads = F::scaled_dot_product_attention(qh, kh, vh));
  SHOW(heads.shape());
  say("4. concatenate: transpose back to [B, T, H, D] and merge the last two dims into E, then the\n"
      "output projection. Each token's E numbers are its H heads' outputs, one after the other.");
  RUN(Tensor concat = heads.transpose(1, 2).reshape({1, 6, 8}));
  SHOW(concat.shape());
  RUN(Tensor y_hand = F::linear(concat, mha.out_proj->weight, mha.out_proj->bias));
  say("The layer, on the same input (self-attention: query, key and value are all x):");
  RUN(tt::nn::MultiHeadAttentionForward args);
  RUN(args.need_weights = true; args.average_attn_weights = false);
  RUN(auto [y, w] = mha(xb, xb, xb, args));
  SHOW(y.shape());
  SHOW(max_abs(y - y_hand));
  SHOW(w.shape());
  SHOW(max_abs(w - F::attention_weights(qh, kh)));
  say("With need_weights the layer also returns the weights, per head here ([B, H, T, T]); by\n"
      "default averaged over the heads ([B, T, T]), as PyTorch does. Asking for them costs the\n"
      "fused kernel's speed: need_weights = false is the fast path. The heads of this untrained\n"
      "layer, and their mean:");
  RUN(hopt.title = "2 heads of an untrained MultiHeadAttention");
  RUN(tt::viz::save_attention_heatmap(figure("heads.png"), w[0], tokens, tokens, hopt));
  std::cout << "    wrote " << figure("heads.png") << "\n";
  say("(Untrained again, so both heads are nearly flat; walkthrough 14 draws a trained model's heads.)");
  say("A wrong merge is a common bug: reshaping [B, H, T, D] straight to [B, T, E] without the\n"
      "transpose interleaves tokens and heads. It has the right shape and wrong numbers:");
  SHOW(max_abs(F::linear(heads.reshape({1, 6, 8}), mha.out_proj->weight, mha.out_proj->bias) - y));
  return {xb, qh, kh, vh};
}

// -----------------------------------------------------------------------------------------------

void step_6_masks() {
  const Sentence sentence = quietly(step_1_qkv);
  const std::vector<std::string>& tokens = sentence.tokens;
  const Causal c = quietly(step_4_causal);
  const Tensor i = c.i, j = c.j, allowed = c.allowed;
  const bool is_causal = c.is_causal;
  const Heads heads = quietly(step_5_multi_head);
  const Tensor xb = heads.xb, qh = heads.qh, kh = heads.kh, vh = heads.vh;
  tt::manual_seed(12);  // step 1's table and step 5's layer, from their seeds (the first draws after them)
  tt::nn::Embedding embed(5, 8);
  tt::manual_seed(5);
  tt::nn::MultiHeadAttention mha(8, 2);
  say("tinytorch follows PyTorch, whose two attention APIs read a bool mask in OPPOSITE ways:\n"
      "  * F::scaled_dot_product_attention(q, k, v, attn_mask): true = this query MAY attend to\n"
      "    this key (like the `allowed` matrix above);\n"
      "  * nn::MultiHeadAttention's attn_mask and key_padding_mask: true = NOT allowed (masked\n"
      "    out, like a padding flag).\n"
      "A float mask means the same in both: it is added to the scores (0 keeps, -inf forbids).\n"
      "The causal rule three more ways, all equal to is_causal:");
  RUN(Tensor future = j > i);  // true above the diagonal: MultiHeadAttention's "not allowed"
  RUN(Tensor minus_inf = tt::where(future, -INFINITY, tt::zeros({6, 6})));
  RUN(Tensor ref = F::scaled_dot_product_attention(qh, kh, vh, {}, 0.0, is_causal));
  SHOW(max_abs(F::scaled_dot_product_attention(qh, kh, vh, allowed) - ref));
  SHOW(max_abs(F::scaled_dot_product_attention(qh, kh, vh, minus_inf) - ref));
  RUN(tt::nn::MultiHeadAttentionForward causal_args);
  RUN(causal_args.is_causal = true);
  RUN(Tensor y_causal = mha(xb, xb, xb, causal_args).first);
  RUN(tt::nn::MultiHeadAttentionForward masked_args);
  RUN(masked_args.attn_mask = future);
  SHOW(max_abs(mha(xb, xb, xb, masked_args).first - y_causal));
  say("Hand MultiHeadAttention the SDPA-style mask and every query reads exactly the keys it should\n"
      "not: the strict future. The last token has no future at all, so its row is empty:");
  RUN(masked_args.attn_mask = allowed; masked_args.need_weights = true);
  RUN(Tensor w_wrong = mha(xb, xb, xb, masked_args).second[0]);
  print_table(w_wrong, tokens, tokens);
  say("A row with nothing to attend to gets weights 0 and an output of 0 in tinytorch (and a zero\n"
      "gradient). In PyTorch's math path it is NaN, because softmax of all -inf is 0/0.\n"
      "\n"
      "Padding. Sentences in a batch have different lengths; the short ones are padded to the\n"
      "longest, and the pad keys must be ignored. key_padding_mask [B, T] says which (true = pad).\n"
      "A batch of two: the sentence above, and \"the cat sat\" padded with three pads (id 0 again:\n"
      "what a pad holds does not matter once it is masked):");
  RUN(Tensor ids2 = tt::tensor({{0, 1, 2, 3, 0, 4}, {0, 1, 2, 0, 0, 0}}));
  RUN(Tensor batch = embed(ids2).detach());  // [2, 6, 8]
  RUN(Tensor lengths = tt::tensor({6, 3}).reshape({2, 1}));
  RUN(Tensor pad = tt::arange(6).reshape({1, 6}) >= lengths);  // [2, 6]: position >= length
  SHOW(pad);
  RUN(tt::nn::MultiHeadAttentionForward pad_args);
  RUN(pad_args.key_padding_mask = pad);
  RUN(auto [y_pad, w_pad] = mha(batch, batch, batch, pad_args));
  const std::vector<std::string> padded = {"the", "cat", "sat", "<pad>", "<pad>", "<pad>"};
  print_table(w_pad[1], padded, padded);
  say("The pad columns are 0, so the three real tokens get exactly what they get alone, without the\n"
      "pads (the pad rows get something too; a loss ignores them):");
  RUN(Tensor alone = embed(tt::tensor({{0, 1, 2}})).detach());
  SHOW(max_abs(y_pad[1].slice(0, 0, 3) - mha(alone, alone, alone).first[0]));
  say("Padding on the left combined with causal attention empties a row: the first position is a\n"
      "pad, may only read itself, and itself is masked. Its weights are 0, not NaN, so its output is\n"
      "out_proj's bias (zero in a new layer):");
  RUN(Tensor left = embed(tt::tensor({{0, 0, 1, 2}})).detach());  // "<pad> the cat sat"
  RUN(tt::nn::MultiHeadAttentionForward left_args);
  RUN(left_args.key_padding_mask = tt::arange(4).reshape({1, 4}) < 1; left_args.is_causal = true);
  RUN(auto [y_left, w_left] = mha(left, left, left, left_args));
  print_table(w_left[0], {"<pad>", "the", "cat", "sat"}, {"<pad>", "the", "cat", "sat"});
  SHOW(y_left[0][0].detach());
}

// -----------------------------------------------------------------------------------------------

// Returns the grouped-query inputs, which step 10 reads again.
struct Grouped {
  Tensor q4, k2, v2;
};

Grouped step_7_gqa_kv_cache() {
  const Tensor xb = quietly(step_5_multi_head).xb;  // which leaves the random stream where step 5 does
  say("When a model generates text, each new token's query reads the keys and values of all the\n"
      "tokens before it. Those are kept from step to step in a KV cache, and for long contexts the\n"
      "cache, not the weights, fills the memory. Grouped-query attention (GQA) keeps H query heads\n"
      "but only Hkv < H key/value heads; each group of H / Hkv query heads shares one. Multi-query\n"
      "attention (MQA) is Hkv = 1. The k and v projections and the cache shrink by H / Hkv:");
  RUN(tt::nn::MultiHeadAttention full(8, 4), gqa(8, 4, tt::nn::MultiHeadAttentionOptions().num_kv_heads(2)));
  SHOW(full.k_proj->weight.shape());
  SHOW(gqa.k_proj->weight.shape());
  say("Inside F::scaled_dot_product_attention(..., enable_gqa = true), query head h reads key/value\n"
      "head h / (H / Hkv): the same as repeating each key/value head H / Hkv times, without making\n"
      "the copies.");
  RUN(Tensor q4 = tt::randn({1, 4, 6, 2}), k2 = tt::randn({1, 2, 6, 2}), v2 = tt::randn({1, 2, 6, 2}));
  RUN(Tensor rep = tt::tensor({0, 0, 1, 1}));  // query heads 0, 1 -> kv head 0; 2, 3 -> kv head 1
  RUN(const bool enable_gqa = true);
  RUN(Tensor grouped = F::scaled_dot_product_attention(q4, k2, v2, {}, 0.0, false, std::nullopt, enable_gqa));
  RUN(Tensor repeated = F::scaled_dot_product_attention(q4, k2.index_select(1, rep), v2.index_select(1, rep)));
  SHOW(max_abs(grouped - repeated));
  say("A KVCache holds one layer's past keys and values. Decoding one token at a time, each step\n"
      "appends the new token's k and v and attends to everything cached; the outputs equal one causal\n"
      "pass over the whole sequence (module 14 builds generation on this):");
  RUN(tt::nn::KVCache cache(6));  // room for 6 positions
  {
    tt::NoGradGuard no_grad;
    std::cout << ">>> for t in 0..5: step[t] = gqa(x[t], x[t], x[t], {kv_cache = &cache, need_weights = false}).first;\n";
    std::vector<Tensor> steps;
    tt::nn::MultiHeadAttentionForward step_args;
    step_args.kv_cache = &cache;
    step_args.need_weights = false;
    for (int64_t t = 0; t < 6; ++t) {
      Tensor xt = xb.slice(1, t, t + 1);
      steps.push_back(gqa(xt, xt, xt, step_args).first);
    }
    tt::nn::MultiHeadAttentionForward all;
    all.is_causal = true;
    all.need_weights = false;
    SHOW(max_abs(tt::cat(steps, 1) - gqa(xb, xb, xb, all).first));
    SHOW(cache.length());
    SHOW(cache.memory_bytes());
  }
  say("6 positions x 2 kv heads x D = 2 x 4 bytes, for k and for v: 192 bytes; with 4 kv heads it\n"
      "would be 384. A 7B-parameter model with 32 layers, 32 heads of 128 and a 4096-token context\n"
      "needs 2 x 32 x 32 x 128 x 4096 x 2 bytes (float16) = 2 GiB of cache per sequence; with 8 kv\n"
      "heads, 512 MiB. Module 13 comes back to the cache.");
  return {q4, k2, v2};
}

// -----------------------------------------------------------------------------------------------

void step_8_backward() {
  // The random stream where step 7 leaves it (seed 5 in step 5, then 1,616 numbers drawn by step
  // 5's layer and step 7's layers and inputs), so that the differences below are the same alone.
  resume_random_stream(5, 1616);
  say("With S = scale Q K^T, P = softmax(S) and O = P V, and dO the gradient of the output:\n"
      "    dV = P^T dO                      (O is linear in V)\n"
      "    dP = dO V^T\n"
      "    dS = P * (dP - rowsum(dP * P))   (softmax's backward, row by row; module 04)\n"
      "    dQ = scale dS K,  dK = scale dS^T Q\n"
      "Every line uses P, [T, T] per head: the backward needs the weights, so the forward keeps\n"
      "them (or recomputes them: module 13). Checked against finite differences in float64:");
  RUN(auto f64 = tt::TensorOptions().dtype(tt::kFloat64).requires_grad(true));
  RUN(Tensor gq = tt::randn({2, 5, 3}, f64), gk = tt::randn({2, 5, 3}, f64), gv = tt::randn({2, 5, 3}, f64));
  SHOW(bool(tt::autograd::gradcheck(
      [](const tt::autograd::TensorList& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true); },
      {gq, gk, gv})));
  say("And the formulas by hand against autograd, for one head without a mask:");
  RUN(Tensor q1 = tt::randn({5, 3}, f64), k1 = tt::randn({5, 3}, f64), v1 = tt::randn({5, 3}, f64));
  RUN(Tensor dO = tt::randn({5, 3}, tt::kFloat64));
  RUN(F::scaled_dot_product_attention(q1, k1, v1).backward(dO));
  RUN(Tensor P = F::attention_weights(q1, k1).detach());
  RUN(Tensor dP = dO.matmul(v1.detach().t()));
  RUN(Tensor dS = P * (dP - (dP * P).sum({-1}, true)));
  SHOW(max_abs(v1.grad() - P.t().matmul(dO)));
  SHOW(max_abs(q1.grad() - dS.matmul(k1.detach()) / std::sqrt(3.0)));
  SHOW(max_abs(k1.grad() - dS.t().matmul(q1.detach()) / std::sqrt(3.0)));
}

// -----------------------------------------------------------------------------------------------

void step_9_memory() {
  say("Everything above keeps a [T, T] matrix per head: the scores, the weights, and for training\n"
      "the weights saved for backward. Q, K and V grow like T; these grow like T^2. Measured with\n"
      "the allocator (tt::memory::stats: the peak of live tensor bytes above what was live before\n"
      "the call), for B = 1, H = 2, D = 64, float32, without a mask:\n"
      "  * weights:  B H T^2 x 4 bytes, one [T, T] float32 matrix per head, on paper;\n"
      "  * q, k, v:  3 B H T D x 4 bytes, the inputs, for scale;\n"
      "  * attn_w:   F::attention_weights, the math path built from tensor ops, forward only;\n"
      "  * math fwd: F::scaled_dot_product_attention with this module's fused kernel, which writes\n"
      "              the weights once and keeps them for backward, forward only (no grad);\n"
      "  * math f+b: the same kernel through forward and backward (inputs that require grad);\n"
      "  * flash:    module 13's kernel through forward and backward, for contrast.\n"
      "By default F::scaled_dot_product_attention picks the math kernel while the weights fit in\n"
      "16 MiB and flash beyond; a guard selects one for sure:\n"
      ">>> { tt::SdpaKernelGuard math(tt::SDPBackend::Math); ... F::scaled_dot_product_attention(q, k, v) ... }");
  std::vector<double> xs, theory, math_peak, fused_peak, train_peak, flash_peak;
  {
    const int64_t H = 2, D = 64;
    std::cout << "\n" << rcol("T", 7) << rcol("weights", 10) << rcol("q, k, v", 10) << rcol("attn_w", 10)
              << rcol("x", 6) << rcol("math fwd", 10) << rcol("x", 6) << rcol("math f+b", 10) << rcol("x", 6)
              << rcol("flash", 9) << "\n";
    auto col = [](double bytes) { return fmt("%10.1f", bytes / (1024.0 * 1024.0)); };
    for (int64_t T : {256, 512, 1024, 2048, 4096}) {
      tt::manual_seed(9);
      Tensor qm = tt::randn({1, H, T, D}), km = tt::randn({1, H, T, D}), vm = tt::randn({1, H, T, D});
      const double wbytes = double(H * T * T * 4), qkv = double(3 * H * T * D * 4);
      int64_t p_math = 0, p_fused = 0, p_train = 0, p_flash = 0;
      {
        tt::NoGradGuard no_grad;
        p_math = peak_bytes([&] { Tensor wm = F::attention_weights(qm, km); });
        tt::SdpaKernelGuard math(tt::SDPBackend::Math);
        p_fused = peak_bytes([&] { Tensor o = F::scaled_dot_product_attention(qm, km, vm); });
      }
      qm.requires_grad_();
      km.requires_grad_();
      vm.requires_grad_();
      {
        tt::SdpaKernelGuard math(tt::SDPBackend::Math);
        p_train = peak_bytes([&] { F::scaled_dot_product_attention(qm, km, vm).sum().backward(); });
      }
      for (Tensor* t : {&qm, &km, &vm}) t->set_grad(Tensor());
      {
        tt::SdpaKernelGuard flash(tt::SDPBackend::Flash);
        p_flash = peak_bytes([&] { F::scaled_dot_product_attention(qm, km, vm).sum().backward(); });
      }
      std::cout << rcol(std::to_string(T), 7) << col(wbytes) << col(qkv) << col(double(p_math))
                << fmt("%6.2f", double(p_math) / wbytes) << col(double(p_fused))
                << fmt("%6.2f", double(p_fused) / wbytes) << col(double(p_train))
                << fmt("%6.2f", double(p_train) / wbytes) << fmt("%9.1f", double(p_flash) / (1024.0 * 1024.0))
                << "\n";
      xs.push_back(double(T));
      theory.push_back(wbytes);
      math_peak.push_back(double(p_math));
      fused_peak.push_back(double(p_fused));
      train_peak.push_back(double(p_train));
      flash_peak.push_back(double(p_flash));
    }
    std::cout << "    (MiB; x: the peak divided by the weights' size; " << tt::get_num_threads()
              << " thread(s), each with a scratch in math f+b and flash)\n";
  }
  say("The arithmetic is the same on every path: 4 B H T^2 D FLOPs forward (Q K^T and P V, module\n"
      "02's 2 M N K twice). The bytes are not. The math kernel writes the [T, T] weights and reads\n"
      "them back for P V, 2 B H T^2 x 4 bytes on top of reading q, k, v and writing the output\n"
      "(4 B H T D x 4); flash moves only those four. Arithmetic intensity, FLOPs per byte of the\n"
      "forward, at the least traffic each path allows:");
  {
    const int64_t H = 2, D = 64;
    std::cout << "\n" << rcol("T", 7) << rcol("GFLOPs", 9) << rcol("math MB", 10) << rcol("FLOPs/B", 9)
              << rcol("flash MB", 10) << rcol("FLOPs/B", 9) << "\n";
    for (int64_t T : {256, 1024, 4096}) {
      const double flops = 4.0 * double(H) * double(T) * double(T) * double(D);
      const double io = 4.0 * double(4 * H * T * D), weights = 4.0 * 2.0 * double(H) * double(T) * double(T);
      std::cout << rcol(std::to_string(T), 7) << fmt("%9.3f", flops / 1e9) << fmt("%10.1f", (io + weights) / 1e6)
                << fmt("%9.1f", flops / (io + weights)) << fmt("%10.2f", io / 1e6) << fmt("%9.0f", flops / io) << "\n";
    }
  }
  say("The math path stays under D/2 = 32 FLOPs per byte however long the sequence (module 02 found\n"
      "the same bound for Q K^T alone): the T^2 traffic grows as fast as the T^2 arithmetic. Flash's\n"
      "intensity is T/4 and grows with T: on a GPU, whose balance is hundreds of FLOPs per byte, that\n"
      "is the difference between waiting on memory and not.");
  say("Each doubling of T multiplies the weights and the math columns by 4, while q, k, v double.\n"
      "The math path holds two [T, T] tensors at its peak: the scaled scores and softmax's output.\n"
      "The fused math kernel holds one, the weights it writes over the scores; through a backward,\n"
      "the saved weights plus the output and the three gradients, which grow like T, and the\n"
      "backward's [T, T] scratch for dP, one per thread (drawn from the allocator, so counted).\n"
      "Fusing saves passes and copies, not the T^2. At T = 4096 the inputs are 6 MiB and the weights\n"
      "128 MiB; at 32k tokens and 32 heads, the weights of one layer would be 128 GiB.\n"
      "\n"
      "The flash column grows like T: module 13 removes the T^2. It walks the keys in tiles with an\n"
      "online softmax, keeps a running max and sum per query row (O(T) numbers per head) instead of\n"
      "the weights, and recomputes the weights tile by tile in the backward. The same numbers as a\n"
      "line plot:");
  RUN(tt::viz::LinePlotOptions popt);
  RUN(popt.title = "attention memory, B=1 H=2 D=64 float32"; popt.x_label = "T"; popt.y_label = "bytes");
  RUN(popt.log_x = popt.log_y = true; popt.y_format = tt::viz::TickFormat::kBytes);
  tt::viz::save_line_plot(figure("memory.png"), {{"weights B H T^2 x 4 (theory)", xs, theory, true},
                                                   {"attention_weights peak", xs, math_peak},
                                                   {"math kernel forward peak", xs, fused_peak},
                                                   {"math kernel forward+backward peak", xs, train_peak},
                                                   {"flash forward+backward peak", xs, flash_peak}},
                          popt);
  std::cout << ">>> tt::viz::save_line_plot(figure(\"memory.png\"), {theory, attn_w, math fwd, math f+b, flash}, popt);\n"
            << "    wrote " << figure("memory.png") << "\n";
}

// -----------------------------------------------------------------------------------------------

void step_10_errors() {
  const Sentence sentence = quietly(step_1_qkv);
  const Tensor Q = sentence.Q, K = sentence.K;
  const Grouped grouped = quietly(step_7_gqa_kv_cache);
  const Tensor q4 = grouped.q4, k2 = grouped.k2, v2 = grouped.v2;
  say("Shapes are checked before any work, and the message names the rule and the shapes:");
  SHOW_ERROR(F::scaled_dot_product_attention(tt::randn({6, 4}), tt::randn({6, 3}), tt::randn({6, 4})));
  SHOW_ERROR(F::scaled_dot_product_attention(q4, k2, v2));  // 4 query heads, 2 key/value heads, no enable_gqa
  SHOW_ERROR(F::attention_weights(Q, K, tt::ones({5, 6}, tt::kBool)));
  SHOW_ERROR(tt::nn::MultiHeadAttention(8, 3));
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_12";
  std::filesystem::path exe(argv[0]);
  g_out_dir = ((exe.has_parent_path() ? exe.parent_path() : std::filesystem::path(".")) / "walkthrough_12_figures").string();
  w.usage = "[DIR]";
  w.usage_help = "  DIR         where the PNG figures go (default: walkthrough_12_figures beside the executable)\n";
  w.parse = [](int, char** argv, int i) {
    if (argv[i][0] == '-') return 0;
    g_out_dir = argv[i];
    return 1;
  };
  w.begin = [] {
    g_out_dir = std::filesystem::absolute(g_out_dir).lexically_normal().string();
    std::cout << "Module 12 - attention: queries, keys and values; scores, scaling and softmax; causal and\n"
                 "bidirectional maps; multi-head attention; masks and padding; GQA; the O(T^2) memory.\n";
    std::cout.precision(5);
    std::filesystem::create_directories(g_out_dir);
    std::cout << "Figures go to " << g_out_dir << "\n";
  };
  w.steps = {
      {"1", "Queries, keys and values from one input", step_1_qkv},
      {"2", "Scores, step by step", step_2_scores},
      {"3", "The dot product as an angle, and why divide by sqrt(d_k)", step_3_scale},
      {"4", "Causal against bidirectional", step_4_causal},
      {"5", "Multi-head attention: split, attend, concatenate", step_5_multi_head},
      {"6", "Masks: two opposite conventions, padding, empty rows", step_6_masks},
      {"7", "Grouped-query attention and the KV cache, briefly", step_7_gqa_kv_cache},
      {"8", "The backward", step_8_backward},
      {"9", "The T^2 wall, measured", step_9_memory},
      {"10", "Errors", step_10_errors},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs) << " s. Figures: bidirectional.png, causal.png, heads.png and\n"
                 "memory.png in " << g_out_dir << ".\n"
                 "Next: modules/13_flash_attention, the same outputs without the T^2 memory.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}
