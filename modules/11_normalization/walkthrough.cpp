// Module 11 walkthrough: keeping activations at a sane scale. A measured table of how the scale
// of activations drifts through 50 layers (plain, residual, with LayerNorm before or after the
// residual add); LayerNorm by hand, its invariance to the shift and scale of each row, its
// backward derived and checked three ways; RMSNorm; the variance of 1e4 + small noise in float32,
// where the one-pass formula fails; the fused kernels against the same math as a graph of small
// ops, in time and peak memory; and the layers, their printing and their errors. Run it with
// `tools/tt walkthrough 11` (or build-*/modules/walkthrough_11). Each step prints its code (after
// ">>>") and the result. Each numbered section is one function; `--step N` reruns section N alone,
// `--list` lists them.
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, quietly, and SHOW / RUN / SHOW_ERROR

namespace {

// What a timing measured, for the line under it: "best of 5, 2 threads" (tt::get_num_threads()).
std::string best_of(int reps) {
  const int threads = tt::get_num_threads();
  return "best of " + std::to_string(reps) + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

using tt::Tensor;

double max_abs(const Tensor& t) { return t.abs().max().item<double>(); }

// The standard deviation of a tensor's elements, in float64 (deep activations can overflow float32
// squares).
double std64(const Tensor& t) { return t.detach().to(tt::kFloat64).std().item<double>(); }

// LayerNorm over the last dim written with module 01-04 ops: autograd records every step.
// x: [*, C], w and b: [C] or undefined -> [*, C]
Tensor layer_norm_by_ops(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  Tensor mu = x.mean({-1}, /*keepdim=*/true);
  Tensor xc = x - mu;
  Tensor y = xc * ((xc * xc).mean({-1}, true) + eps).rsqrt();
  if (w.defined()) y = y * w;
  if (b.defined()) y = y + b;
  return y;
}

// RMSNorm over the last dim with small ops. x: [*, C], w: [C] -> [*, C]
Tensor rms_norm_by_ops(const Tensor& x, const Tensor& w, double eps) {
  return x * ((x * x).mean({-1}, true) + eps).rsqrt() * w;
}

// Peak bytes allocated above what was live before `f` ran, in MiB.
template <typename F>
double peak_mib(F f) {
  const int64_t before = tt::memory::stats().allocated_bytes;
  tt::memory::reset_peak_stats();
  f();
  return double(tt::memory::stats().peak_allocated_bytes - before) / (1024.0 * 1024.0);
}

// A label right-aligned in 9 columns.
std::string col(const std::string& s) { return std::string(9 - std::min<size_t>(9, s.size()), ' ') + s; }

// One row of section 1's table: `depth` blocks of width C, each block(h, W_l) with its own weight;
// prints the std of the activations after some blocks, then of the gradient of the first and the
// last weight for a random upstream gradient.
void measure_stack(const std::string& name, double weight_std, const std::function<Tensor(const Tensor&, const Tensor&)>& block) {
  const int64_t depth = 50, C = 256, B = 64;
  tt::manual_seed(11);
  std::vector<Tensor> W;
  for (int64_t l = 0; l < depth; ++l) W.push_back((tt::randn({C, C}) * weight_std).requires_grad_());
  Tensor h = tt::randn({B, C});
  std::string line = "    " + name + std::string(30 - std::min<size_t>(30, name.size()), ' ');
  for (int64_t l = 0; l < depth; ++l) {
    h = block(h, W[size_t(l)]);
    const int64_t n = l + 1;
    if (n == 1 || n == 2 || n == 5 || n == 10 || n == 20 || n == 50) line += fmt("%9.3g", std64(h));
  }
  (h * tt::randn(h.shape())).sum().backward();
  line += "  |" + fmt("%9.2g", std64(W.front().grad())) + fmt("%9.2g", std64(W.back().grad()));
  std::cout << line << "\n";
}

// -----------------------------------------------------------------------------------------------

void step_1_scale_drift() {
  say("Module 05 showed that every layer multiplies the scale of its input by a factor set by its\n"
      "weights, and that 30 layers compound it. An initialization can make the factor 1 at step 0;\n"
      "training then moves the weights, and the factor with them. Normalization divides the scale\n"
      "back out at every layer, whatever the weights are.\n"
      "\n"
      "Measured: 50 blocks of width 256, a batch of 64 inputs of std 1. Columns: the std of the\n"
      "activations after blocks 1 .. 50, then the std of the gradient of the first and the last\n"
      "weight (dW 1, dW 50) for a random upstream gradient. LN is layer_norm over the 256 features,\n"
      "without affine. 'default' is PyTorch's Linear init (std 1/sqrt(3 in)); 'kaiming x 1.1' is\n"
      "the ReLU init (std sqrt(2 / in)) with weights 10% too large, as after some training.");
  {
    const double C = 256, dflt = 1 / std::sqrt(3 * C), kaiming11 = 1.1 * std::sqrt(2 / C);
    auto lin = [](const Tensor& h, const Tensor& W) { return h.matmul(W.t()); };
    auto ln = [](const Tensor& h) { return tt::layer_norm(h, {h.size(-1)}); };
    std::string header = std::string(34, ' ');
    for (const char* label : {"block 1", "block 2", "block 5", "block 10", "block 20", "block 50"}) header += col(label);
    header += "  |" + col("dW 1") + col("dW 50");
    std::cout << "\n  Plain stacks, h = relu(h W^T), and the same with LN before the ReLU:\n" << header << "\n";
    measure_stack("plain, default", dflt, [&](const Tensor& h, const Tensor& W) { return lin(h, W).relu(); });
    measure_stack("plain, kaiming x 1.1", kaiming11, [&](const Tensor& h, const Tensor& W) { return lin(h, W).relu(); });
    measure_stack("LN, default", dflt, [&](const Tensor& h, const Tensor& W) { return ln(lin(h, W)).relu(); });
    measure_stack("LN, kaiming x 1.1", kaiming11, [&](const Tensor& h, const Tensor& W) { return ln(lin(h, W)).relu(); });
    std::cout << "\n  Residual stacks, default init, f(h) = relu(h) W^T:\n" << header << "\n";
    measure_stack("h + f(h)", dflt, [&](const Tensor& h, const Tensor& W) { return h + lin(h.relu(), W); });
    measure_stack("post-norm LN(h + f(h))", dflt, [&](const Tensor& h, const Tensor& W) { return ln(h + lin(h.relu(), W)); });
    measure_stack("pre-norm h + f(LN(h))", dflt, [&](const Tensor& h, const Tensor& W) { return h + lin(ln(h).relu(), W); });
  }
  say("Reading the tables:\n"
      "  * plain, default: x 0.41 per layer (module 05); after 50 layers nothing is left.\n"
      "  * plain, kaiming x 1.1: x 1.1 per layer, 1.1^50 = 117 after 50. A small error in the\n"
      "    weights compounds; in float16 the next few layers would overflow.\n"
      "  * with LN: the std is the same at every depth (0.58, the std of relu of a unit normal) and\n"
      "    the SAME for both weight scales, to every digit: LN(a z) = LN(z) for any a > 0, so the\n"
      "    scale of W never reaches the next layer. The gradient does see it: weights 2.7 times\n"
      "    larger (kaiming x 1.1 against default) get a dW 2.7 times smaller (section 3), so large\n"
      "    weights slow themselves down.\n"
      "  * h + f(h): each block adds its branch's variance to the stream (here 1/6 of it), so the\n"
      "    scale grows without bound, about (7/6)^(l/2).\n"
      "  * post-norm (the original Transformer) puts the stream back to 1 after every add.\n"
      "  * pre-norm (GPT-2 and after) normalizes only what enters each branch: the stream itself\n"
      "    grows slowly, about sqrt(1 + l/6), and every branch still sees unit-scale input. The\n"
      "    stream is an identity path from the last block to the first, so the first block's\n"
      "    gradient is as large as the last's (larger, here). That is why pre-norm trains deep\n"
      "    stacks without warm-up tricks; it needs one more LN before the output head (module 14).");
}

// -----------------------------------------------------------------------------------------------

// Returns x = [1, 2, 3, 4], which steps 3 and 4 read again.
Tensor step_2_layernorm() {
  say("For each row x of C numbers (one token's features):\n"
      "    mean = sum(x) / C,  var = sum((x - mean)^2) / C   (biased: divide by C, not C - 1)\n"
      "    xhat = (x - mean) / sqrt(var + eps),  y = xhat * weight + bias\n"
      "x = [1, 2, 3, 4]: mean 2.5, var (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25, sqrt(1.25) = 1.118:");
  RUN(Tensor x = tt::tensor({1.0, 2.0, 3.0, 4.0}, tt::kFloat64));
  SHOW(tt::layer_norm(x, {4}, {}, {}, /*eps=*/0.0));
  SHOW((x - 2.5) / std::sqrt(1.25));
  say("The output has mean 0 and (biased) variance 1, up to eps:");
  RUN(Tensor y = tt::layer_norm(x, {4}));
  SHOW(y.mean().item<double>());
  SHOW(y.pow(2.0).mean().item<double>());
  say("Shifting or scaling the row changes nothing: LN(a x + c) = LN(x) for a > 0. LN keeps only\n"
      "the pattern of a row, not its level or its size.");
  SHOW(max_abs(tt::layer_norm(x * 1000.0 + 7.0, {4}, {}, {}, 0.0) - tt::layer_norm(x, {4}, {}, {}, 0.0)));
  say("The layer: nn::LayerNorm(C) adds a learned weight (ones) and bias (zeros) of shape [C], so\n"
      "the next layer can have back whatever scale and offset it wants per feature; with the\n"
      "defaults it starts as plain normalization. Each token of [B, T, C] is normalized on its own,\n"
      "over its C features (never across the batch, unlike BatchNorm):");
  RUN(tt::nn::LayerNorm norm(tt::nn::LayerNormOptions({8})));
  SHOW(norm);
  RUN(tt::manual_seed(1));
  RUN(Tensor tokens = tt::randn({2, 3, 8}) * 5.0 + 3.0);
  SHOW(norm(tokens).mean({-1}));
  SHOW(norm(tokens).var({-1}, /*correction=*/0));
  say("The variance is 1 - eps/(var + eps) rather than 1: eps = 1e-5 keeps rows of (nearly) equal\n"
      "numbers from dividing by zero. A constant row has nothing to normalize and comes out 0:");
  SHOW(tt::layer_norm(tt::full({4}, 3.0), {4}));
  say("normalized_shape can span several trailing dims: LayerNorm({H, D}) normalizes the H D\n"
      "numbers of each token together. It must match the input's last dims:");
  SHOW(tt::layer_norm(tokens, {3, 8}).mean({-1, -2}));
  SHOW_ERROR(tt::layer_norm(tokens, {3}));
  return x;
}

// -----------------------------------------------------------------------------------------------

// Returns dy = [1, 0, 0, 0], which step 4 reads again.
Tensor step_3_backward() {
  const Tensor x = quietly(step_2_layernorm);
  say("With r = 1/sqrt(var + eps), xhat = (x - mean) r and g = dy * weight (the gradient reaching\n"
      "xhat), the chain rule through the mean and the variance gives, per row,\n"
      "    dx = r (g - mean(g) - xhat mean(g xhat))\n"
      "    dweight = sum over rows of dy xhat,   dbias = sum over rows of dy\n"
      "(the README's section 4 derives it). The two subtracted terms remove the parts of g that\n"
      "would move the row's mean or its scale, the two things LN throws away. So dx sums to 0 and\n"
      "is orthogonal to xhat (exactly so with eps = 0, used here to make it visible; with eps the\n"
      "dot product is of the order of eps). For x = [1, 2, 3, 4] and dy = [1, 0, 0, 0]:");
  RUN(Tensor xl = x.detach().requires_grad_());
  RUN(Tensor dy = tt::tensor({1.0, 0.0, 0.0, 0.0}, tt::kFloat64));
  RUN(tt::layer_norm(xl, {4}, {}, {}, /*eps=*/0.0).backward(dy));
  SHOW(xl.grad());
  SHOW(xl.grad().sum().item<double>());
  SHOW((xl.grad() * tt::layer_norm(x, {4}, {}, {}, 0.0)).sum().item<double>());
  say("The formula, written out with tensor ops:");
  RUN(double r = 1 / std::sqrt(1.25));
  RUN(Tensor xhat = (x - 2.5) * r);
  SHOW(r * (dy - dy.mean() - xhat * (dy * xhat).mean()));
  say("And the same gradient by autograd through the graph of small ops (mean, subtract, multiply,\n"
      "mean, add, rsqrt, multiply), then against finite differences, weight and bias included:");
  RUN(Tensor xo = x.detach().requires_grad_());
  RUN(layer_norm_by_ops(xo, {}, {}, 0.0).backward(dy));
  SHOW(max_abs(xo.grad() - xl.grad()));
  RUN(auto f64 = tt::TensorOptions().dtype(tt::kFloat64).requires_grad(true));
  resume_random_stream(1, 2 * 3 * 8);  // where step 2 leaves it: seed 1, then tokens' 2 x 3 x 8 numbers
  RUN(Tensor X = tt::randn({3, 5}, f64), Wt = tt::randn({5}, f64), Bs = tt::randn({5}, f64));
  SHOW(bool(tt::autograd::gradcheck(
      [](const tt::autograd::TensorList& in) { return tt::layer_norm(in[0], {5}, in[1], in[2]); }, {X, Wt, Bs})));
  say("Scale invariance shows in the gradient: at 10 x the input, dx is 10 times smaller.");
  RUN(Tensor x10 = (x * 10.0).detach().requires_grad_());
  RUN(tt::layer_norm(x10, {4}, {}, {}, 0.0).backward(dy));
  SHOW(x10.grad());
  return dy;
}

// -----------------------------------------------------------------------------------------------

void step_4_rmsnorm() {
  const Tensor x = quietly(step_2_layernorm), dy = quietly(step_3_backward);
  say("RMSNorm (Zhang & Sennrich 2019; LLaMA, Mistral, Gemma) drops the centering and the bias:\n"
      "    y = x / sqrt(mean(x^2) + eps) * weight\n"
      "One statistic per row instead of two, no bias parameter, and in practice the same quality.\n"
      "x = [3, 4]: mean(x^2) = 12.5, so y = x / 3.536:");
  SHOW(tt::rms_norm(tt::tensor({3.0, 4.0}, tt::kFloat64), {2}, {}, 0.0));
  say("It keeps the scale invariance but not the shift invariance: a constant row stays constant\n"
      "(+-1), and adding 10 to a row changes its output.");
  SHOW(tt::rms_norm(tt::full({4}, 3.0), {4}));
  SHOW(max_abs(tt::rms_norm(x + 10.0, {4}) - tt::rms_norm(x, {4})));
  SHOW(max_abs(tt::rms_norm(x * 1000.0, {4}) - tt::rms_norm(x, {4})));
  say("Its backward is LayerNorm's without the mean term: dx = r (g - xhat mean(g xhat)).");
  RUN(Tensor xr = x.detach().requires_grad_());
  RUN(tt::rms_norm(xr, {4}).backward(dy));
  RUN(double rr = 1 / std::sqrt(7.5 + 2.220446049250313e-16));
  SHOW(max_abs(xr.grad() - rr * (dy - x * rr * (dy * x * rr).mean())));
  say("eps: when not given, PyTorch (2.4) and tinytorch use the machine epsilon of the input's\n"
      "dtype, 1.19e-7 in float32; LLaMA's code passes 1e-5 or 1e-6. The layer prints which:");
  RUN(tt::nn::RMSNorm rms(tt::nn::RMSNormOptions({8})));
  SHOW(rms);
  RUN(tt::nn::RMSNorm rms_llama(tt::nn::RMSNormOptions({8}).eps(1e-6)));
  SHOW(rms_llama);
}

// -----------------------------------------------------------------------------------------------

void step_5_stability() {
  say("Textbooks write var = E[x^2] - E[x]^2: one pass over the row. For a row of 1024 values\n"
      "1e4 + noise of std 0.1, in float32, E[x^2] is 1e8, where float32 numbers are 8 apart; the\n"
      "variance, 0.01, is lost in the subtraction. The two-pass form subtracts the mean first.");
  RUN(tt::manual_seed(2));
  RUN(Tensor big = tt::randn({1, 1024}) * 0.1 + 1e4);
  RUN(Tensor big64 = big.to(tt::kFloat64));
  SHOW(big64.var({-1}, /*correction=*/0).item<double>());
  SHOW(((big * big).mean() - big.mean() * big.mean()).item<double>());
  SHOW((big - big.mean()).pow(2.0).mean().item<double>());
  say("The first is the truth (float64, from the same float32 values). The one-pass result is\n"
      "off by a multiple of 8, here to below zero. The two-pass one is close but not exact: the\n"
      "mean itself is rounded to a float32 (0.001 apart near 1e4), and that error shifts every\n"
      "x - mean. The fused kernel keeps the mean in float64 and subtracts it from float32 x in two\n"
      "parts (Note [split mean] in backend/cpu/normalization.cpp). The LN outputs of the one-pass\n"
      "form, then the largest error of the two-pass form and of the fused kernel against float64:");
  RUN(Tensor truth = tt::layer_norm(big64, {1024}));
  RUN(Tensor one_pass = (big - big.mean()) * ((big * big).mean() - big.mean() * big.mean() + 1e-5).rsqrt());
  SHOW(one_pass.slice(1, 0, 4));
  SHOW(max_abs(layer_norm_by_ops(big, {}, {}, 1e-5).to(tt::kFloat64) - truth));
  SHOW(max_abs(tt::layer_norm(big, {1024}).to(tt::kFloat64) - truth));
  say("The one-pass variance came out negative, so its rsqrt is NaN, and so is every output. (With\n"
      "another seed it comes out 0, 8 or 16, and the output has the wrong scale instead.) Rows\n"
      "this far from zero do occur: an embedding with a large common component, a residual stream\n"
      "that grew (section 1). In float16 or bfloat16 the same failure starts at much smaller\n"
      "numbers, which is why mixed-precision code computes the statistics in float32.");
}

// -----------------------------------------------------------------------------------------------

void step_6_fused() {
  say("layer_norm_by_ops (top of this file) is the same math as 6 small ops forward. Each reads\n"
      "and writes a whole [R, C] tensor and autograd keeps several of them for backward, whose own\n"
      "ops read and write more. The fused kernel reads a row once per pass while it sits in the\n"
      "cache, saves only x and two numbers per row, and its backward computes dx, dweight and dbias\n"
      "in one sweep. Forward + backward on R = 4096 rows of C = 1024 float32 (16 MiB), best of 3;\n"
      "memory is the peak allocated above the inputs, through the end of backward:");
  {
    const int64_t R = 4096, C = 1024;
    tt::manual_seed(3);
    Tensor xb = tt::randn({R, C}).requires_grad_();
    Tensor w = (tt::randn({C}) * 0.1 + 1.0).requires_grad_(), b = tt::randn({C}).requires_grad_();
    Tensor g = tt::randn({R, C});
    const double mib = double(R * C * 4) / (1024.0 * 1024.0);
    struct Way {
      const char* name;
      std::function<Tensor()> f;
    };
    std::vector<Way> ways = {
        {"layer_norm, fused", [&] { return tt::layer_norm(xb, {C}, w, b); }},
        {"layer_norm, small ops", [&] { return layer_norm_by_ops(xb, w, b, 1e-5); }},
        {"rms_norm, fused", [&] { return tt::rms_norm(xb, {C}, w, 1e-6); }},
        {"rms_norm, small ops", [&] { return rms_norm_by_ops(xb, w, 1e-6); }},
    };
    std::vector<double> peaks;  // printed after the timings: bytes do not vary from run to run, times do
    for (const Way& way : ways) {
      auto step = [&] {
        way.f().backward(g);
        xb.set_grad(Tensor());
        w.set_grad(Tensor());
        b.set_grad(Tensor());
      };
      step();  // warm the allocator's cache
      const double ms = best_ms(step, 3);
      peaks.push_back(peak_mib(step));
      const std::string name = way.name;
      std::cout << "    " << name << std::string(24 - name.size(), ' ') << fmt("%7.1f", ms) << " ms\n";
    }
    std::cout << "    (" << best_of(3) << ")\n"
              << "    peak allocated above the inputs, forward through backward:\n";
    for (size_t i = 0; i < ways.size(); ++i) {
      const std::string name = ways[i].name;
      std::cout << "    " << name << std::string(24 - name.size(), ' ') << fmt("%5.0f", peaks[i]) << " MiB ("
                << fmt("%.1f", peaks[i] / mib) << "x the input)\n";
    }
    std::cout << "    same values (layer_norm):  "
              << fmt("%.2g", max_abs(tt::layer_norm(xb, {C}, w, b) - layer_norm_by_ops(xb, w, b, 1e-5)))
              << " largest difference\n";
  }
  say("The peaks include the output and the input's gradient (two input-sized tensors that any\n"
      "way needs). Beyond those the fused op holds almost nothing; the graph keeps x - mean, the\n"
      "normalized x and its products alive until backward, and its backward makes more. Both are\n"
      "memory-bound (a few FLOPs per byte), so time follows the number of passes over [R, C].\n"
      "A transformer block has two or three norms per layer, over every token: this is why every\n"
      "framework fuses them.");
}

// -----------------------------------------------------------------------------------------------

void step_7_layers() {
  tt::nn::LayerNorm norm(tt::nn::LayerNormOptions({8}));  // step 2's
  say("Without elementwise_affine there are no parameters; bias(false) keeps only the weight (the\n"
      "LayerNorm of some newer models). Both layers print like PyTorch:");
  RUN(tt::nn::LayerNorm plain(tt::nn::LayerNormOptions({8}).elementwise_affine(false)));
  SHOW(plain.parameters().size());
  RUN(tt::nn::LayerNorm no_bias(tt::nn::LayerNormOptions({8}).bias(false)));
  SHOW(no_bias.named_parameters().keys()[0]);
  SHOW(no_bias.named_parameters().size());
  say("A LayerNorm(C) has 2 C parameters and costs about 8 FLOPs per element forward: tiny next\n"
      "to a Linear(C, C)'s C^2 parameters and 2 C FLOPs per element. Its cost is memory traffic:\n"
      "8 FLOPs over the 8 bytes it reads and writes per float32 element is an arithmetic intensity\n"
      "of 1 FLOP per byte, where a Linear(1024, 1024) on 4096 rows does 2 R C^2 FLOPs over\n"
      "4 (2 R C + C^2) bytes, 228 per byte.\n"
      "The input must be floating point, and the parameters must match normalized_shape:");
  SHOW_ERROR(norm(tt::ones({2, 8}, tt::kInt64)));
  SHOW_ERROR(tt::layer_norm(tt::ones({2, 8}), {8}, tt::ones({4})));
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_11";
  w.begin = [] {
    std::cout << "Module 11 - normalization: scale drift through deep stacks, LayerNorm and its backward,\n"
                 "RMSNorm, the variance of 1e4 + noise, and fused kernels against a graph of small ops.\n";
    std::cout.precision(6);
  };
  w.steps = {
      {"1", "Why normalize: the scale drifts, layer after layer", step_1_scale_drift},
      {"2", "LayerNorm, by hand", step_2_layernorm},
      {"3", "The backward, derived", step_3_backward},
      {"4", "RMSNorm: scale only", step_4_rmsnorm},
      {"5", "Numerical stability: the variance of 1e4 + noise", step_5_stability},
      {"6", "One fused kernel against a graph of small ops", step_6_fused},
      {"7", "The layers and their options", step_7_layers},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs) << " s. Next: modules/12_attention, where these norms sit\n"
                 "before every attention and MLP block.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}


