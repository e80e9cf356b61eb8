// Module 03 walkthrough: why a network needs nonlinear functions between its matrix products,
// what each activation does to its input and its derivative, and softmax up close: the overflow
// of the naive formula, masked rows, log-softmax, and the saturation that makes its gradient
// vanish. Run it with `tools/tt walkthrough 03` (or build-*/modules/walkthrough_03). Each step
// prints its code (after ">>>") and the result. Derivatives here come from formulas and finite
// differences; autograd is module 04. Each numbered section is one function; `--step N` reruns
// section N alone, `--list` lists them.
#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
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

// A row of numbers in %.4g, for tables.
std::string row(const std::vector<double>& v, const char* format = "%11.4g") {
  std::string s;
  for (double x : v) s += fmt(format, x + 0.0);  // + 0.0 prints -0 as 0
  return s;
}

double max_abs(const tt::Tensor& t) { return t.abs().max().item<double>(); }

// Central finite difference of a scalar function of one double.
double central_diff(const std::function<double(double)>& f, double x, double h = 1e-6) {
  return (f(x + h) - f(x - h)) / (2 * h);
}

// One activation applied to a single float64 number, through the library.
double apply1(const std::function<tt::Tensor(const tt::Tensor&)>& act, double x) {
  return act(tt::tensor({x}, tt::kFloat64)).item<double>();
}

// The softmax Jacobian J = diag(p) - p pᵀ for a 1-D p, written with module 01 and 02 ops.
tt::Tensor softmax_jacobian(const tt::Tensor& p) {
  tt::Tensor col = p.unsqueeze(1);  // [n, 1]
  return tt::eye(p.size(0), p.dtype()) * col - col.matmul(col.t());
}

// The same Jacobian by finite differences: column j is d softmax / d z_j.
tt::Tensor softmax_jacobian_fd(const tt::Tensor& z, double h = 1e-6) {
  const int64_t n = z.size(0);
  std::vector<double> zv = z.to_vector<double>(), cols(size_t(n * n));
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> up = zv, down = zv;
    up[size_t(j)] += h;
    down[size_t(j)] -= h;
    std::vector<double> pu = tt::softmax(tt::tensor(up, {n}), 0).to_vector<double>();
    std::vector<double> pd = tt::softmax(tt::tensor(down, {n}), 0).to_vector<double>();
    for (int64_t i = 0; i < n; ++i) cols[size_t(i * n + j)] = (pu[size_t(i)] - pd[size_t(i)]) / (2 * h);
  }
  return tt::tensor(cols, {n, n});
}

// -----------------------------------------------------------------------------------------------

void step_1_linear_layers() {
  say("Two layers y = W2 (W1 x + b1) + b2, with small integer weights so every number is easy\n"
      "to check by hand.");
  RUN(tt::Tensor W1 = tt::tensor({{1.0, 2.0}, {-1.0, 1.0}}));
  RUN(tt::Tensor b1 = tt::tensor({0.0, 1.0}));
  RUN(tt::Tensor W2 = tt::tensor({{2.0, -1.0}, {1.0, 1.0}}));
  RUN(tt::Tensor b2 = tt::tensor({1.0, 0.0}));
  RUN(tt::Tensor x = tt::tensor({1.0, -2.0}));
  SHOW(W1.matmul(x) + b1);
  SHOW(W2.matmul(W1.matmul(x) + b1) + b2);
  say("Merge them: W = W2 W1 and b = W2 b1 + b2. One layer, the same output:");
  RUN(tt::Tensor W = W2.matmul(W1));
  RUN(tt::Tensor b = W2.matmul(b1) + b2);
  SHOW(W);
  SHOW(b);
  SHOW(W.matmul(x) + b);
  say("It is the same for every input, not just this one. 1000 random inputs, largest difference:");
  RUN(tt::manual_seed(0));
  RUN(tt::Tensor X = tt::randn({2, 1000}));  // one input per column
  SHOW(max_abs((W2.matmul(W1.matmul(X) + b1.unsqueeze(1)) + b2.unsqueeze(1)) - (W.matmul(X) + b.unsqueeze(1))));
  say("Put a ReLU between the layers. The pre-activation [-3, -2] becomes [0, 0], and the output\n"
      "is no longer the merged layer's [-3, -5]:");
  SHOW((W2.matmul((W1.matmul(x) + b1).relu()) + b2));
  say("For an input whose pre-activations are all positive, ReLU changes nothing and the two\n"
      "agree: the network is linear piece by piece, a different piece for each sign pattern.");
  RUN(tt::Tensor x2 = tt::tensor({2.0, 1.0}));
  SHOW(W1.matmul(x2) + b1);
  SHOW(W2.matmul((W1.matmul(x2) + b1).relu()) + b2);
  SHOW(W.matmul(x2) + b);

  say("XOR: no affine map computes it, since f(0,0) + f(1,1) = f(0,1) + f(1,0) for any affine f.\n"
      "Two ReLU units do: h1 = relu(x1 + x2), h2 = relu(x1 + x2 - 1), y = h1 - 2 h2.");
  RUN(tt::Tensor inputs = tt::tensor({{0.0, 0.0}, {0.0, 1.0}, {1.0, 0.0}, {1.0, 1.0}}));
  RUN(tt::Tensor s = inputs.sum({1}));
  SHOW(s.relu() - 2 * (s - 1).relu());
}

// -----------------------------------------------------------------------------------------------

// Returns grid, which step 9 reads again.
tt::Tensor step_2_elementwise() {
  RUN(tt::Tensor grid = tt::linspace(-4, 4, 9));
  SHOW(grid);
  SHOW(grid.relu());
  SHOW(tt::leaky_relu(grid, 0.1));
  SHOW(grid.sigmoid());
  SHOW(grid.tanh());
  SHOW(tt::gelu(grid));
  SHOW(tt::gelu(grid, "tanh"));
  SHOW(tt::silu(grid));

  say("The ranges: sigmoid stays in (0, 1), tanh in (-1, 1); GELU and SiLU dip below zero once.\n"
      "On a fine grid from -8 to 8:");
  RUN(tt::Tensor fine = tt::linspace(-8, 8, 160001, tt::kFloat64));
  SHOW(tt::gelu(fine).min());
  SHOW(fine.index_select(0, tt::gelu(fine).argmin().unsqueeze(0)));
  SHOW(tt::silu(fine).min());
  SHOW(fine.index_select(0, tt::silu(fine).argmin().unsqueeze(0)));
  say("The exact GELU and its tanh approximation are close, but not float32-rounding close:");
  SHOW((tt::gelu(fine) - tt::gelu(fine, "tanh")).abs().max());

  say("Derivatives from the formulas in the README, against a central finite difference\n"
      "(f(x+h) - f(x-h)) / 2h in float64, at five points.");
  {
    const std::vector<double> xs = {-3.0, -1.0, 0.5, 1.0, 3.0};
    const double kPi = std::acos(-1.0);
    auto sigma = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
    auto Phi = [](double v) { return 0.5 * (1.0 + std::erf(v / std::sqrt(2.0))); };
    auto phi = [kPi](double v) { return std::exp(-0.5 * v * v) / std::sqrt(2.0 * kPi); };
    struct Case {
      const char* name;
      std::function<tt::Tensor(const tt::Tensor&)> act;
      std::function<double(double)> derivative;
    };
    std::vector<Case> cases = {
        {"sigmoid", [](const tt::Tensor& t) { return t.sigmoid(); },
         [&](double v) { return sigma(v) * (1 - sigma(v)); }},
        {"tanh", [](const tt::Tensor& t) { return t.tanh(); },
         [](double v) { return 1 - std::tanh(v) * std::tanh(v); }},
        {"gelu", [](const tt::Tensor& t) { return tt::gelu(t); }, [&](double v) { return Phi(v) + v * phi(v); }},
        {"silu", [](const tt::Tensor& t) { return tt::silu(t); },
         [&](double v) { return sigma(v) * (1 + v * (1 - sigma(v))); }},
        {"relu", [](const tt::Tensor& t) { return t.relu(); }, [](double v) { return v > 0 ? 1.0 : 0.0; }},
    };
    std::cout << "    " << std::string(22, ' ');
    for (double v : xs) std::cout << fmt("%11g", v);
    std::cout << "\n";
    for (const Case& c : cases) {
      std::vector<double> formula, numeric;
      for (double v : xs) {
        formula.push_back(c.derivative(v));
        numeric.push_back(central_diff([&](double u) { return apply1(c.act, u); }, v));
      }
      std::string name = std::string(c.name) + "'";
      std::cout << "    " << name << std::string(9 - name.size(), ' ') << "formula     " << row(formula) << "\n"
                << "    " << std::string(9, ' ') << "finite diff " << row(numeric) << "\n";
    }
  }

  say("Saturation of sigmoid and tanh: the derivative at 0, 2, 5 and 10.");
  {
    std::vector<double> sig, th;
    for (double v : {0.0, 2.0, 5.0, 10.0}) {
      double s = apply1([](const tt::Tensor& t) { return t.sigmoid(); }, v);
      double t = apply1([](const tt::Tensor& u) { return u.tanh(); }, v);
      sig.push_back(s * (1 - s));
      th.push_back(1 - t * t);
    }
    std::cout << "    x         " << row({0.0, 2.0, 5.0, 10.0}) << "\n"
              << "    sigmoid'  " << row(sig) << "\n    tanh'     " << row(th) << "\n";
  }
  say("Ten sigmoid layers multiply at most ten factors of 1/4 into the gradient:");
  SHOW(std::pow(0.25, 10));
  return grid;
}

// -----------------------------------------------------------------------------------------------

// The scores of step 3, which later steps read again.
struct Scores {
  tt::Tensor z, scores;
};

Scores step_3_softmax() {
  RUN(tt::Tensor z = tt::tensor({2.0, 1.0, 0.1, -1.0}));
  SHOW(tt::softmax(z, 0));
  SHOW(tt::softmax(z, 0).sum());
  say("Shift invariance: adding a constant to every score changes nothing.");
  SHOW(tt::softmax(z + 100, 0));
  say("Scale is sharpness: multiplying the scores pushes softmax towards one-hot, dividing\n"
      "towards uniform (temperature = 1 / scale).");
  SHOW(tt::softmax(z * 0.1, 0));
  SHOW(tt::softmax(z * 5, 0));
  say("On a matrix, every slice along `dim` becomes a distribution. dim = -1: each row.");
  RUN(tt::Tensor scores = tt::tensor({{1.0, 2.0, 3.0}, {1.0, 1.0, 1.0}}));
  SHOW(tt::softmax(scores, -1));
  SHOW(tt::softmax(scores, -1).sum({-1}));
  say("dim = 0: each column. The numbers are still between 0 and 1, so the wrong dim does not\n"
      "look wrong at a glance; the sums tell:");
  SHOW(tt::softmax(scores, 0));
  SHOW(tt::softmax(scores, 0).sum({-1}));
  return {z, scores};
}

// -----------------------------------------------------------------------------------------------

void step_4_overflow() {
  const tt::Tensor z = quietly(step_3_softmax).z;
  say("The naive formula exp(z) / sum(exp(z)), written with module 01 ops:");
  RUN(auto naive_softmax = [](const tt::Tensor& t) { return t.exp() / t.exp().sum(); });
  SHOW(naive_softmax(z));
  say("Fine for small scores. exp overflows float32 above 88.72:");
  SHOW(tt::tensor({88.0, 89.0}).exp());
  RUN(tt::Tensor big = tt::tensor({1e4, 1e4 - 1, 1e4 - 2}));
  SHOW(naive_softmax(big));
  SHOW(tt::softmax(big, 0));
  say("Subtracting the max first (shift invariance) makes the largest exponent exactly 0:");
  SHOW(naive_softmax(big - big.max()));
  say("Hugely negative scores break the naive formula the other way: every exp underflows to 0\n"
      "and 0 / 0 is nan. The stable form sees [0, -1] after the shift:");
  RUN(tt::Tensor small = tt::tensor({-1e4, -1e4 - 1}));
  SHOW(naive_softmax(small));
  SHOW(tt::softmax(small, 0));
}

// -----------------------------------------------------------------------------------------------

void step_5_masked() {
  const double inf = std::numeric_limits<double>::infinity();
  say("A mask sets the scores of hidden positions to -inf; exp(-inf) = 0, so they get exactly 0\n"
      "and the rest renormalise.");
  RUN(tt::Tensor masked = tt::tensor({1.0, 2.0, -inf, 0.0}));
  SHOW(tt::softmax(masked, 0));
  say("A causal mask on a 4 x 4 score matrix: query i may look at keys 0..i only.");
  RUN(tt::Tensor future = tt::arange(4).unsqueeze(0) > tt::arange(4).unsqueeze(1));  // key j > query i
  SHOW(future);
  SHOW(tt::softmax(tt::zeros({4, 4}).masked_fill(future, -inf), -1));
  say("A row where everything is masked has no distribution: max = -inf and -inf - (-inf) is nan.\n"
      "PyTorch returns nan there. tinytorch returns zeros (no weight anywhere) for softmax and\n"
      "-inf (the log of those zeros) for log-softmax; the other rows are untouched.");
  RUN(tt::Tensor rows = tt::tensor({{-inf, -inf, -inf}, {0.0, 1.0, -inf}}));
  SHOW(tt::softmax(rows, -1));
  SHOW(tt::log_softmax(rows, -1));
  say("Masking with -1e9 instead: a fully masked row is then a row of equal scores, and softmax\n"
      "spreads the weight uniformly over positions that were meant to be hidden.");
  SHOW(tt::softmax(tt::tensor({-1e9, -1e9, -1e9}), 0));
}

// -----------------------------------------------------------------------------------------------

void step_6_log_softmax() {
  const tt::Tensor z = quietly(step_3_softmax).z;
  say("log softmax(z)_i = z_i - logsumexp(z), logsumexp(z) = m + log sum exp(z - m), m = max z.");
  RUN(tt::Tensor m = z.max());
  RUN(tt::Tensor lse = m + (z - m).exp().sum().log());
  SHOW(lse);
  SHOW(z - lse);
  SHOW(tt::log_softmax(z, 0));
  say("Taking the log of a softmax in two steps loses the small probabilities: exp(-200) is\n"
      "1.4e-87, far below float32's range, so it becomes 0 and its log -inf.");
  RUN(tt::Tensor far = tt::tensor({0.0, -200.0}));
  SHOW(tt::softmax(far, 0));
  SHOW(tt::softmax(far, 0).log());
  SHOW(tt::log_softmax(far, 0));
}

// -----------------------------------------------------------------------------------------------

void step_7_derivative() {
  const tt::Tensor z = quietly(step_3_softmax).z;
  say("Every output depends on every input: dp_i/dz_j = p_i (delta_ij - p_j), J = diag(p) - p p^T.\n"
      "Built from the formula, then by finite differences (float64), for z = [2, 1, 0.1, -1]:");
  RUN(tt::Tensor z64 = z.to(tt::kFloat64));
  RUN(tt::Tensor p64 = tt::softmax(z64, 0));
  SHOW(softmax_jacobian(p64));
  SHOW(softmax_jacobian_fd(z64));
  SHOW(max_abs(softmax_jacobian(p64) - softmax_jacobian_fd(z64)));
  say("Each row and column of J sums to 0: moving every score together changes nothing.");
  SHOW(softmax_jacobian(p64).sum({0}));
  say("Backward never builds J. For an upstream gradient g, g^T J = p * (g - g . p):");
  RUN(tt::Tensor g = tt::tensor({1.0, 0.0, -1.0, 0.5}, tt::kFloat64));
  SHOW(softmax_jacobian(p64).t().matmul(g));
  SHOW(p64 * (g - (g * p64).sum()));
}

// -----------------------------------------------------------------------------------------------

void step_8_saturation() {
  const tt::Tensor z = quietly(step_3_softmax).z;
  say("Scale the same four scores by 1, 2, 5, 10 and 100, as growing dot products do. Print the\n"
      "probabilities, the largest entry of J, and the gradient of an attention-like output\n"
      "o = sum_i p_i v_i with v = [1, 0, -1, 0.5] (do/dz = p * (v - o)). float32, as in training.");
  {
    tt::Tensor v = tt::tensor({1.0, 0.0, -1.0, 0.5});
    for (double scale : {1.0, 2.0, 5.0, 10.0, 100.0}) {
      tt::Tensor p = tt::softmax(z * scale, 0);
      tt::Tensor o = (p * v).sum();
      tt::Tensor dz = p * (v - o);
      std::cout << "\n  scale " << scale << "\n"
                << "    p        " << row(p.to_vector<double>()) << "\n"
                << "    max |J|  " << fmt("%11.4g", max_abs(softmax_jacobian(p))) << "\n"
                << "    do/dz    " << row(dz.to_vector<double>()) << "\n";
    }
  }
  say("The whole Jacobian at scale 10: every entry has a factor p_i close to 0 or 1 - p_i close to 0.");
  SHOW(softmax_jacobian(tt::softmax(z * 10, 0)));
  say("(At scale 100 the small probabilities are e^-100 and below: zero in float32, where\n"
      "tinytorch's exp flushes anything under e^-87 to 0. J is then exactly zero.)");
  SHOW(softmax_jacobian(tt::softmax(z * 100, 0)));

  say("Where such scales come from: q . k for random q, k with unit-variance entries has variance\n"
      "D. For D = 64, 512 query-key pairs:");
  resume_random_stream(0, 2 * 1000);  // where step 1 leaves it: seed 0, then X's 2 x 1000 numbers
  RUN(tt::Tensor q = tt::randn({512, 64}));
  RUN(tt::Tensor k = tt::randn({512, 64}));
  RUN(tt::Tensor dots = (q * k).sum({1}));
  SHOW(dots.std());
  SHOW((dots / std::sqrt(64.0)).std());
  say("Softmax over 16 keys, unscaled and scaled by 1/sqrt(D): the largest weight per query,\n"
      "averaged over 512 queries. Unscaled is close to one-hot (saturated); scaled is not.");
  RUN(tt::Tensor att = tt::randn({512, 64}).matmul(tt::randn({64, 16})));  // [queries, keys]
  SHOW(std::get<0>(tt::softmax(att, -1).max(1)).mean());
  SHOW(std::get<0>(tt::softmax(att / std::sqrt(64.0), -1).max(1)).mean());
}

// -----------------------------------------------------------------------------------------------

void step_9_modules() {
  const tt::Tensor grid = quietly(step_2_elementwise), scores = quietly(step_3_softmax).scores;
  say("tinytorch/nn/activation.h wraps each activation in a parameter-free module, so that\n"
      "module 05's Sequential can hold it.");
  RUN(tt::nn::ReLU relu_layer);
  RUN(tt::nn::GELU gelu_layer);
  RUN(tt::nn::Softmax softmax_layer(-1));
  RUN(tt::nn::LogSoftmax log_softmax_layer(-1));
  SHOW(relu_layer(grid));
  SHOW(gelu_layer(grid));
  SHOW(softmax_layer(scores));
  SHOW(log_softmax_layer(scores).exp());
}

// -----------------------------------------------------------------------------------------------

void step_10_costs() {
  say("Softmax over the rows of a [512, 4096] float32 tensor (8 MiB): the fused kernel against the\n"
      "five-op version (max, subtract, exp, sum, divide), best of 5 runs.");
  {
    // Where step 8 leaves the stream: seed 0, then step 1's 2 x 1000 numbers and step 8's
    // 2 x 512 x 64 + 512 x 64 + 64 x 16, so that the difference printed below is the same alone.
    resume_random_stream(0, 2 * 1000 + 2 * 512 * 64 + 512 * 64 + 64 * 16);
    tt::Tensor a = tt::randn({512, 4096});
    auto unfused = [&] {
      tt::Tensor mx = std::get<0>(a.max(1, /*keepdim=*/true));
      tt::Tensor e = (a - mx).exp();
      return e / e.sum({1}, /*keepdim=*/true);
    };
    (void)tt::softmax(a, -1);
    (void)unfused();
    double fused_ms = best_ms([&] { (void)tt::softmax(a, -1); });
    double unfused_ms = best_ms([&] { (void)unfused(); });
    const double mib = 512.0 * 4096 * 4 / (1024.0 * 1024.0);
    std::cout << "    fused   : " << fmt("%7.2f", fused_ms) << " ms  (moves at least " << fmt("%.0f", 2 * mib)
              << " MiB: one read, one write)\n"
              << "    unfused : " << fmt("%7.2f", unfused_ms) << " ms  (moves about " << fmt("%.0f", 8 * mib)
              << " MiB, and allocates two temporaries)\n"
              << "    same result: max |difference| = "
              << fmt("%.2g", max_abs(tt::softmax(a, -1) - unfused())) << "\n"
              << "    (" << best_of(5) << ")\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_03";
  w.begin = [] {
    std::cout << "Module 03 - activations: why nonlinearity, the elementwise activations and their\n"
                 "derivatives, stable softmax and log-softmax, masked rows, and saturation.\n";
  };
  w.steps = {
      {"1", "Two linear layers are one linear layer", step_1_linear_layers},
      {"2", "The elementwise activations", step_2_elementwise},
      {"3", "Softmax: scores to probabilities", step_3_softmax},
      {"4", "Why subtract the max: overflow at 1e4", step_4_overflow},
      {"5", "Masked scores: -inf", step_5_masked},
      {"6", "log-softmax and log-sum-exp", step_6_log_softmax},
      {"7", "The derivative of softmax", step_7_derivative},
      {"8", "Saturation: softmax's gradient vanishes as it becomes one-hot", step_8_saturation},
      {"9", "The activations as modules", step_9_modules},
      {"10", "What it costs", step_10_costs},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs) << " s. Next: modules/04_autograd, where these\n"
                 "derivatives are wired into a backward pass.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}


