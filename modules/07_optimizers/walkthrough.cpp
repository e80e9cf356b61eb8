// Module 07 walkthrough: how an optimizer turns gradients into updates. Gradient descent on a
// narrow valley (f = x^2 + 25 y^2) with learning rates from too small to divergent; momentum,
// dampening and Nesterov, and how many steps each needs; weight decay as an L2 penalty; Adam's two
// moments and its bias correction, step by step; AdamW against Adam on one parameter; AMSGrad;
// parameter groups; zero_grad; schedules; gradient clipping; what optimizer state costs in
// memory; one fused update kernel timed against a chain of tensor ops; resuming from a state
// dict; and everything together on a small regression. Run it with `tools/tt walkthrough 07`
// (or build-*/modules/walkthrough_07). Each step prints its code (after ">>>") and the result.
// Each numbered section is one function; `--step N` reruns section N alone, `--list` lists them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, and SHOW / RUN / SHOW_ERROR

namespace optim = tt::optim;

namespace {

// What a timing measured, for the line under it: "best of 5, 2 threads" (tt::get_num_threads()).
std::string best_of(int reps) {
  const int threads = tt::get_num_threads();
  return "best of " + std::to_string(reps) + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

// The narrow valley f(x, y) = x^2 + 25 y^2 of a [2] tensor p = (x, y). Its gradient is (2x, 50y):
// the y direction is 25 times steeper than the x direction.
tt::Tensor valley(const tt::Tensor& p) { return (tt::tensor({1.0, 25.0}, tt::kFloat64) * p * p).sum(); }

// The start of every descent: (1, 1), a float64 leaf.
tt::Tensor start() { return tt::tensor({1.0, 1.0}, tt::kFloat64).requires_grad_(); }

// "(0.98, 0.5)" for a small tensor.
std::string vec(const tt::Tensor& t, const char* format = "%.6g") {
  std::string s = "(";
  std::vector<double> v = t.detach().to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt(format, v[i]);
  return s + ")";
}

// One optimizer step: zero_grad, forward (`loss_fn`), backward, step. Returns the loss before
// the step.
double step_on(optim::Optimizer& opt, const std::function<tt::Tensor()>& loss_fn) {
  opt.zero_grad();
  tt::Tensor loss = loss_fn();
  loss.backward();
  opt.step();
  return loss.item<double>();
}

// Runs `opt` (built on `p`) on the valley. Returns the loss after each of `steps` steps
// (stopping early once it passes 1e12).
std::vector<double> descend(optim::Optimizer& opt, const tt::Tensor& p, int steps) {
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    step_on(opt, [&] { return valley(p); });
    tt::NoGradGuard no_grad;
    losses.push_back(valley(p).item<double>());
    if (losses.back() > 1e12) break;
  }
  return losses;
}

// The first step count after which the loss stays below `tol`, as text; "never" or "diverges".
std::string steps_to(const std::vector<double>& losses, double tol) {
  if (!std::isfinite(losses.back()) || losses.back() > 1e6) return "diverges";
  for (size_t s = 0; s < losses.size(); ++s) {
    bool stays = true;
    for (size_t r = s; r < losses.size(); ++r) stays = stays && losses[r] < tol;
    if (stays) return std::to_string(s + 1);
  }
  return "> " + std::to_string(losses.size());
}

// The regression of sections 9, 14 and 15: 64 rows of 3 features, y = X w* + b* with
// w* = (2, -1, 0.5), b* = 0.3, no noise.
struct Regression {
  Regression() {
    tt::manual_seed(0);
    X = tt::randn({64, 3});
    y = X.matmul(tt::tensor({2.0, -1.0, 0.5}).view({3, 1})) + 0.3;
  }
  tt::Tensor loss(const tt::nn::Linear& model) const { return tt::F::mse_loss(model(X), y); }
  tt::Tensor X, y;
};

// A Linear(3, 1) that starts from the same weights every time (seed 1).
std::shared_ptr<tt::nn::Linear> fresh_model() {
  tt::manual_seed(1);
  return std::make_shared<tt::nn::Linear>(3, 1);
}

// True when `name` ends with `suffix`: "0.bias" ends with "bias".
bool ends_with(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A deep copy of a state dict: a snapshot that later steps do not change.
tt::nn::StateDict snapshot(const tt::nn::StateDict& s) {
  tt::nn::StateDict out;
  for (const auto& [key, t] : s) out.insert(key, t.clone());
  return out;
}

// Elements held by an optimizer's state (momentum buffers, moments; not the 0-d step counters).
int64_t state_elements(const optim::Optimizer& opt) {
  int64_t n = 0;
  for (const auto& [key, t] : opt.state_dict())
    if (key.rfind("state.", 0) == 0 && t.dim() > 0) n += t.numel();
  return n;
}

// -----------------------------------------------------------------------------------------------

void step_1_descent_by_hand() {
  say("An optimizer turns gradients into an update. The simplest one moves every parameter a\n"
      "small step against its gradient:  p <- p - lr * dL/dp.\n"
      "The test function is a narrow valley, f(x, y) = x^2 + 25 y^2, with its minimum at (0, 0)\n"
      "and gradient (2x, 50y): the walls in y are 25 times steeper than the floor in x.");
  RUN(tt::Tensor p = start());
  RUN(tt::Tensor loss = valley(p));
  SHOW(loss.item<double>());
  RUN(loss.backward());
  SHOW(vec(p.grad()));
  say("tt::optim::SGD holds the parameters and does the update in step(), under NoGradGuard\n"
      "(writing into a leaf that requires grad is only allowed there, module 04).");
  RUN(optim::SGD sgd({p}, optim::SGDOptions(0.01)));
  RUN(sgd.step());
  SHOW(vec(p));
  say("(1 - 0.01 * 2, 1 - 0.01 * 50) = (0.98, 0.5). Each coordinate is multiplied by its own\n"
      "factor every step, (1 - 2 lr) for x and (1 - 50 lr) for y, because the gradient of a\n"
      "quadratic is proportional to the distance from the minimum.");
}

// -----------------------------------------------------------------------------------------------

void step_2_learning_rate() {
  say("Those factors decide everything. y converges only while |1 - 50 lr| < 1, that is lr < 0.04;\n"
      "x needs only lr < 1 but crawls when 1 - 2 lr is close to 1. The loss after some steps of\n"
      "SGD from (1, 1), and the steps until it stays below 1e-8:");
  std::cout << "        lr   factor x   factor y    step 10    step 50   step 200   steps to 1e-8\n";
  for (double lr : {0.001, 0.01, 0.03, 0.0385, 0.041, 0.05}) {
    tt::Tensor q = start();
    optim::SGD opt({q}, optim::SGDOptions(lr));
    std::vector<double> losses = descend(opt, q, 1000);
    auto at = [&](size_t s) { return s <= losses.size() ? fmt("%11.3g", losses[s - 1]) : std::string("        inf"); };
    std::cout << fmt("%10g", lr) << fmt("%11.3f", 1 - 2 * lr) << fmt("%11.3f", 1 - 50 * lr) << at(10) << at(50)
              << at(200) << "   " << steps_to(losses, 1e-8) << "\n";
  }
  say("Too small (0.001) barely moves in 200 steps. Larger is faster until the steep direction\n"
      "overshoots: at 0.041 the factor for y is -1.05, so y flips sign and grows 5% every step, and\n"
      "the loss diverges however well x is doing. The best constant lr balances the two\n"
      "directions, 1 - 2 lr = -(1 - 50 lr), at lr = 2 / 52 = 0.0385: both shrink by 0.92 per step.\n"
      "The first y coordinates for three learning rates:");
  for (double lr : {0.01, 0.0385, 0.041}) {
    tt::Tensor q = start();
    optim::SGD opt({q}, optim::SGDOptions(lr));
    std::string line = "    lr " + fmt("%-7g", lr) + " y:";
    for (int s = 0; s < 8; ++s) {
      step_on(opt, [&] { return valley(q); });
      line += fmt("%8.3f", q.detach().to_vector<double>()[1]);
    }
    std::cout << line << "\n";
  }
  say("The largest stable lr is set by the steepest direction (2 / 50), and the speed by the\n"
      "flattest (x shrinks by 1 - 2 lr). Their ratio, the condition number 50 / 2 = 25, is what\n"
      "makes a valley hard for gradient descent.");
}

// -----------------------------------------------------------------------------------------------

void step_3_momentum() {
  say("Momentum keeps a velocity buffer v per parameter and steps along it (PyTorch's form):\n"
      "    v <- mu v + g          (v = g at the first step)\n"
      "    p <- p - lr v\n"
      "Along the floor of the valley the gradients agree from step to step and v grows (up to\n"
      "g / (1 - mu), ten times g for mu = 0.9); across the valley they flip sign and cancel.");
  RUN(tt::Tensor m = start());
  RUN(optim::SGD heavy({m}, optim::SGDOptions(0.01).momentum(0.9)));
  RUN(step_on(heavy, [&] { return valley(m); }));
  SHOW(vec(heavy.state(m)["momentum_buffer"]));
  SHOW(vec(m));
  say("The first step is plain SGD: v = g = (2, 50). The second gradient is (2 * 0.98, 50 * 0.5)\n"
      "= (1.96, 25), so v = 0.9 * (2, 50) + (1.96, 25) = (3.76, 70) and p = (0.98, 0.5) - 0.01 v:");
  RUN(step_on(heavy, [&] { return valley(m); }));
  SHOW(vec(heavy.state(m)["momentum_buffer"]));
  SHOW(vec(m));
  say("Dampening scales the new gradient: v <- mu v + (1 - dampening) g (from the second step on;\n"
      "the first v is g itself). With dampening 0.5 the second v is 0.9 (2, 50) + 0.5 (1.96, 25):");
  RUN(tt::Tensor d = start());
  RUN(optim::SGD damped({d}, optim::SGDOptions(0.01).momentum(0.9).dampening(0.5)));
  RUN(for (int s = 0; s < 2; ++s) step_on(damped, [&] { return valley(d); }));
  SHOW(vec(damped.state(d)["momentum_buffer"]));
  say("Nesterov momentum steps along g + mu v instead of v: it looks one step ahead along the\n"
      "velocity. At the first step that is 1.9 g, so p = (1, 1) - 0.01 * 1.9 * (2, 50):");
  RUN(tt::Tensor n = start());
  RUN(optim::SGD nesterov({n}, optim::SGDOptions(0.01).momentum(0.9).nesterov(true)));
  RUN(step_on(nesterov, [&] { return valley(n); }));
  SHOW(vec(n));
  say("Steps until the loss stays below 1e-8 (at most 2000):");
  struct Run {
    const char* name;
    optim::SGDOptions options;
  };
  const std::vector<Run> runs = {
      {"SGD, lr 0.01", optim::SGDOptions(0.01)},
      {"SGD, lr 0.0385 (the best constant lr)", optim::SGDOptions(0.0385)},
      {"momentum 0.9, lr 0.01", optim::SGDOptions(0.01).momentum(0.9)},
      {"momentum 0.9, lr 0.07", optim::SGDOptions(0.07).momentum(0.9)},
      {"Nesterov 0.9, lr 0.01", optim::SGDOptions(0.01).momentum(0.9).nesterov(true)},
      {"momentum 0.44, lr 0.0556 (Polyak)", optim::SGDOptions(0.0556).momentum(0.44)},
  };
  for (const Run& r : runs) {
    tt::Tensor q = start();
    optim::SGD opt({q}, r.options);
    std::cout << "    " << r.name << std::string(40 - std::string(r.name).size(), ' ')
              << steps_to(descend(opt, q, 2000), 1e-8) << "\n";
  }
  say("With the values Polyak's analysis gives for this valley (from its condition number\n"
      "kappa = 25: mu = ((sqrt(kappa) - 1) / (sqrt(kappa) + 1))^2 = 0.44, lr = 4 / (sqrt(50) + sqrt(2))^2\n"
      "= 0.0556), momentum needs about a third of the steps of the best plain SGD, at an lr past\n"
      "plain SGD's limit of 0.04: the velocity across the valley flips sign and mostly cancels.\n"
      "(Momentum stays stable up to lr < 2 (1 + mu) / 50.) It is no free lunch, though. Once it\n"
      "oscillates, each step shrinks the error by only sqrt(mu), whatever the lr: with mu = 0.9\n"
      "that is 0.95 per step, slower than tuned SGD's 0.92 on this mild valley, and a larger lr\n"
      "does not help. Nesterov's look-ahead damps the oscillation (147 steps against 204).\n"
      "mu = 0.9 is the usual default because real networks are conditioned far worse than 25.");
}

// -----------------------------------------------------------------------------------------------

void step_4_weight_decay() {
  say("weight_decay adds wd * p to the gradient before anything else: d = g + wd p. That is the\n"
      "gradient of loss + (wd / 2) |p|^2. With no other gradient, p shrinks by (1 - lr wd) per step:");
  RUN(tt::Tensor w = tt::tensor({1.0, -2.0}, tt::kFloat64).requires_grad_());
  RUN(optim::SGD decay({w}, optim::SGDOptions(0.1).weight_decay(0.01)));
  RUN(for (int s = 0; s < 100; ++s) { w.set_grad(tt::zeros({2}, tt::kFloat64)); decay.step(); });
  SHOW(vec(w));
  SHOW(std::pow(1 - 0.1 * 0.01, 100));
  say("The same run with the penalty written into the loss instead gives the same numbers:");
  RUN(tt::Tensor w2 = tt::tensor({1.0, -2.0}, tt::kFloat64).requires_grad_());
  RUN(optim::SGD plain({w2}, optim::SGDOptions(0.1)));
  RUN(for (int s = 0; s < 100; ++s) step_on(plain, [&] { return 0.005 * (w2 * w2).sum(); }));
  SHOW(vec(w2));
}

// -----------------------------------------------------------------------------------------------

void step_5_adam() {
  say("Adam keeps two running averages per element, started at zero:\n"
      "    m <- beta1 m + (1 - beta1) g          the mean of g (beta1 = 0.9)\n"
      "    v <- beta2 v + (1 - beta2) g^2        the mean of g^2 (beta2 = 0.999)\n"
      "and divides one by the root of the other:\n"
      "    p <- p - lr * m_hat / (sqrt(v_hat) + eps),   m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t)\n"
      "Started at zero, m and v are too small early on: after t steps of a constant g, m is\n"
      "(1 - beta1^t) g. Dividing by 1 - beta^t is the bias correction. A parameter whose gradient\n"
      "is always 1, with lr = 1 so that the step is the ratio itself:");
  RUN(tt::Tensor a = tt::zeros({1}, tt::kFloat64).requires_grad_());
  RUN(optim::Adam adam({a}, optim::AdamOptions(1.0)));
  std::cout << "       t        m    m_hat          v    v_hat   step with   step without correction\n";
  {
    double prev = 0;
    for (int t = 1; t <= 1000; ++t) {
      a.set_grad(tt::ones({1}, tt::kFloat64));
      adam.step();
      if (t != 1 && t != 2 && t != 3 && t != 10 && t != 100 && t != 1000) {
        prev = a.detach().item<double>();
        continue;
      }
      const double mt = adam.state(a)["exp_avg"].item<double>(), vt = adam.state(a)["exp_avg_sq"].item<double>();
      const double mh = mt / (1 - std::pow(0.9, t)), vh = vt / (1 - std::pow(0.999, t));
      const double step = prev - a.detach().item<double>();
      prev = a.detach().item<double>();
      std::cout << fmt("%8.0f", t) << fmt("%9.4f", mt) << fmt("%9.4f", mh) << fmt("%11.6f", vt) << fmt("%9.4f", vh)
                << fmt("%12.4f", step) << fmt("%15.4f", mt / (std::sqrt(vt) + 1e-8)) << "\n";
    }
  }
  say("(m and v are read from the optimizer: adam.state(a)[\"exp_avg\"] and [\"exp_avg_sq\"]; the step\n"
      "is the parameter's change.) With the correction every step is 1 = lr: the gradient was\n"
      "always 1, and m_hat / sqrt(v_hat) = 1. Without it, m alone would make the first step 10x too\n"
      "small, and m / sqrt(v) makes it 3x too large (0.1 / sqrt(0.001)), still 6.5x at t = 10,\n"
      "because v, with beta2 = 0.999, takes about 1000 steps to warm up.");
  say("The step is normalized per element: m_hat / sqrt(v_hat) is about +-1 for a steady gradient,\n"
      "so every coordinate moves by about lr, whatever the size of its gradient. On the valley\n"
      "the first step moves x and y by the same amount although y's gradient is 25x larger:");
  RUN(tt::Tensor q = start());
  RUN(optim::Adam adam_valley({q}, optim::AdamOptions(0.1)));
  RUN(step_on(adam_valley, [&] { return valley(q); }));
  SHOW(vec(q));
  say("Multiply the loss by 1000 and the first step is the same: Adam does not care about the\n"
      "scale of the loss.");
  RUN(tt::Tensor q1000 = start());
  RUN(optim::Adam adam1000({q1000}, optim::AdamOptions(0.1)));
  RUN(step_on(adam1000, [&] { return 1000 * valley(q1000); }));
  SHOW(vec(q1000));
  say("eps (1e-8) keeps the division finite. It matters only for gradients near its size: the\n"
      "first step is lr * g / (|g| + eps), as a fraction of lr:");
  for (double g : {1.0, 1e-6, 1e-8, 1e-9, 1e-12}) {
    tt::Tensor e = tt::zeros({1}, tt::kFloat64).requires_grad_();
    optim::Adam opt({e}, optim::AdamOptions(1.0));
    e.set_grad(tt::full({1}, g, tt::kFloat64));
    opt.step();
    std::cout << "    g = " << fmt("%-7g", g) << "  first step / lr = " << fmt("%.4f", -e.detach().item<double>()) << "\n";
  }
}

// -----------------------------------------------------------------------------------------------

void step_6_adamw() {
  say("Adam's weight_decay is SGD's: wd * p is added to the gradient, so it goes through m and v\n"
      "and is divided by sqrt(v_hat) like everything else. AdamW decays the parameter directly,\n"
      "outside the moments: p <- p (1 - lr wd), then the Adam step on g alone.\n"
      "Two parameters at 1.0, one with gradient 0 (quiet) and one with gradient 1 (busy); lr 0.01,\n"
      "wd 0.1. One step:");
  {
    std::cout << "                        quiet (g = 0)   busy (g = 1)\n";
    auto one_step = [](const char* name, auto make) {
      tt::Tensor quiet = tt::ones({1}, tt::kFloat64).requires_grad_(), busy = tt::ones({1}, tt::kFloat64).requires_grad_();
      auto opt = make(std::vector<tt::Tensor>{quiet, busy});
      quiet.set_grad(tt::zeros({1}, tt::kFloat64));
      busy.set_grad(tt::ones({1}, tt::kFloat64));
      opt.step();
      std::cout << "    " << name << fmt("%14.6f", quiet.detach().item<double>()) << fmt("%15.6f", busy.detach().item<double>())
                << "\n";
    };
    one_step("Adam, wd 0       ", [](std::vector<tt::Tensor> ps) { return optim::Adam(ps, optim::AdamOptions(0.01)); });
    one_step("Adam, wd 0.1     ",
             [](std::vector<tt::Tensor> ps) { return optim::Adam(ps, optim::AdamOptions(0.01).weight_decay(0.1)); });
    one_step("AdamW, wd 0.1    ", [](std::vector<tt::Tensor> ps) { return optim::AdamW(ps, optim::AdamWOptions(0.01).weight_decay(0.1)); });
  }
  say("(AdamWOptions's default weight_decay is 0.01; here it is set to 0.1.)");
  say("Read the columns. Adam with L2 moves the quiet parameter by a full lr = 0.01, ten times\n"
      "the lr * wd = 0.001 the penalty asked for: its only gradient is wd * p = 0.1, and Adam\n"
      "normalizes that to 1. The busy parameter gets no decay at all (0.99 with or without it):\n"
      "its gradient 1.1 normalizes to 1 just like 1 did. So in Adam the decay a weight receives\n"
      "depends on its gradient history, not on wd. AdamW takes lr * wd * p = 0.001 from both,\n"
      "what an L2 penalty means in SGD, independent of the gradient scale.");
  say("The quiet weight after 100 such steps (Adam keeps taking most of lr from it every step):");
  {
    tt::Tensor qa = tt::ones({1}, tt::kFloat64).requires_grad_(), qw = tt::ones({1}, tt::kFloat64).requires_grad_();
    optim::Adam adam_l2({qa}, optim::AdamOptions(0.01).weight_decay(0.1));
    optim::AdamW adamw({qw}, optim::AdamWOptions(0.01).weight_decay(0.1));
    for (int s = 0; s < 100; ++s) {
      qa.set_grad(tt::zeros({1}, tt::kFloat64));
      qw.set_grad(tt::zeros({1}, tt::kFloat64));
      adam_l2.step();
      adamw.step();
    }
    std::cout << "    quiet parameter: Adam + L2 " << fmt("%.4f", qa.detach().item<double>()) << ", AdamW "
              << fmt("%.4f", qw.detach().item<double>()) << " (= 0.999^100 = " << fmt("%.4f", std::pow(0.999, 100))
              << ")\n";
  }
}

// -----------------------------------------------------------------------------------------------

void step_7_amsgrad() {
  say("With amsgrad, Adam divides by the largest v seen so far, vmax = max(vmax, v), kept as a\n"
      "third state tensor. After large gradients are followed by small ones, plain Adam's v\n"
      "decays with them and the steps stay large; AMSGrad's shrink. Gradients 10, 10, 10, then\n"
      "0.1 from step 4 on, with beta2 = 0.9 so that v moves quickly enough to see (lr 1):");
  {
    tt::Tensor pa = tt::zeros({1}, tt::kFloat64).requires_grad_(), pm = tt::zeros({1}, tt::kFloat64).requires_grad_();
    optim::Adam plain_adam({pa}, optim::AdamOptions(1.0).betas({0.9, 0.9}));
    optim::Adam ams({pm}, optim::AdamOptions(1.0).betas({0.9, 0.9}).amsgrad(true));
    std::cout << "    step   g          v       vmax   Adam step   AMSGrad step\n";
    for (int t = 1; t <= 30; ++t) {
      const double g = t <= 3 ? 10.0 : 0.1;
      const double before_a = pa.detach().item<double>(), before_m = pm.detach().item<double>();
      pa.set_grad(tt::full({1}, g, tt::kFloat64));
      pm.set_grad(tt::full({1}, g, tt::kFloat64));
      plain_adam.step();
      ams.step();
      if (t > 5 && t != 10 && t != 20 && t != 30) continue;
      std::cout << fmt("%8.0f", t) << fmt("%5.1f", g) << fmt("%11.4f", ams.state(pm)["exp_avg_sq"].item<double>())
                << fmt("%11.4f", ams.state(pm)["max_exp_avg_sq"].item<double>())
                << fmt("%12.4f", before_a - pa.detach().item<double>()) << fmt("%15.4f", before_m - pm.detach().item<double>())
                << "\n";
    }
  }
  say("From step 4 the gradient is 100x smaller. m follows it down, but so does plain Adam's v,\n"
      "so Adam's step shrinks only as m / sqrt(v); AMSGrad keeps the old, large denominator and\n"
      "its steps shrink with m. It was proposed to repair a convergence proof; in practice it\n"
      "rarely changes results, and it costs one more copy of the parameters (section 12).");
}

// -----------------------------------------------------------------------------------------------

void step_8_parameter_groups() {
  say("Each parameter group has its own options. A common use: a pretrained body with a small lr\n"
      "and a new head with a larger one.");
  RUN(tt::manual_seed(2));
  RUN(tt::nn::Sequential net(tt::nn::Linear(4, 8), tt::nn::ReLU(), tt::nn::Linear(8, 2)));
  RUN(std::vector<tt::Tensor> body = net.ptr<tt::nn::Linear>(0)->parameters());
  RUN(std::vector<tt::Tensor> head = net.ptr<tt::nn::Linear>(2)->parameters());
  RUN(optim::SGD groups({{body}, {head, optim::SGDOptions(0.1)}}, optim::SGDOptions(0.01)));
  SHOW(groups.param_groups()[0].options().lr());
  SHOW(groups.param_groups()[1].options().lr());
  say("The group without options took a copy of the defaults (lr 0.01). Another common use: no\n"
      "weight decay on biases (and on normalization weights, module 11), which only shift or\n"
      "scale and gain nothing from being pulled toward zero. Split by name:");
  RUN(std::vector<tt::Tensor> decayed, not_decayed);
  RUN(for (const auto& [name, t] : net.named_parameters()) (ends_with(name, "bias") ? not_decayed : decayed).push_back(t));
  RUN(optim::AdamW split({{decayed}, {not_decayed, optim::AdamWOptions(1e-3).weight_decay(0.0)}},
                         optim::AdamWOptions(1e-3).weight_decay(0.1)));
  for (size_t g = 0; g < split.param_groups().size(); ++g) {
    const auto& o = static_cast<const optim::AdamWOptions&>(split.param_groups()[g].options());
    std::cout << "    group " << g << ": " << split.param_groups()[g].params().size() << " tensors, weight_decay "
              << o.weight_decay() << "\n";
  }
  say("A parameter may belong to one group only, and every parameter must be a leaf that\n"
      "requires grad:");
  SHOW_ERROR(optim::SGD({{body}, {body}}, optim::SGDOptions(0.1)));
  SHOW_ERROR(optim::SGD({body[0] * 2}, optim::SGDOptions(0.1)));
  SHOW_ERROR(optim::SGD(body, optim::SGDOptions(-0.1)));
  SHOW_ERROR(optim::Adam(body, optim::AdamOptions().betas({0.9, 1.0})));
}

// -----------------------------------------------------------------------------------------------

void step_9_zero_grad() {
  say("backward() adds into .grad (module 04). Forget to clear it and every step uses the sum of\n"
      "all gradients so far:");
  RUN(tt::Tensor u = tt::ones({1}, tt::kFloat64).requires_grad_());
  RUN(optim::SGD opt_u({u}, optim::SGDOptions(0.1)));
  RUN((3 * u).sum().backward());
  RUN((3 * u).sum().backward());
  SHOW(u.grad().item<double>());
  say("zero_grad() drops every gradient (set_to_none, the default, as PyTorch 2): the next\n"
      "backward stores its gradient instead of adding to zeros, and step() skips a parameter\n"
      "without one. zero_grad(false) keeps the tensors and fills them with zeros.");
  RUN(opt_u.zero_grad());
  SHOW(u.grad().defined());
  RUN((3 * u).sum().backward());
  RUN(opt_u.zero_grad(false));
  SHOW(u.grad().item<double>());
  say("Accumulation on purpose: four micro-batches of 16 rows, each loss divided by 4, give the\n"
      "gradient of the whole batch of 64 (one step, a quarter of the activation memory).");
  {
    Regression data;
    auto model = fresh_model();
    data.loss(*model).backward();
    tt::Tensor full = model->weight.grad().clone();
    model->zero_grad();
    for (int k = 0; k < 4; ++k) {
      tt::Tensor xk = data.X.slice(0, 16 * k, 16 * (k + 1)), yk = data.y.slice(0, 16 * k, 16 * (k + 1));
      (tt::F::mse_loss((*model)(xk), yk) / 4).backward();
    }
    std::cout << "    full batch:      " << vec(full, "%.5f") << "\n    4 micro-batches: "
              << vec(model->weight.grad(), "%.5f") << "\n";
  }
}

// -----------------------------------------------------------------------------------------------

void step_10_schedules() {
  say("A scheduler rewrites each group's lr once per step() (call it after optimizer.step()). A\n"
      "linear warmup over 5 steps from 0.1 x the base lr, then a cosine over 15 steps down to\n"
      "eta_min = 0.001 (base lr 0.1):");
  RUN(tt::Tensor s = tt::zeros({1}).requires_grad_());
  RUN(optim::SGD opt_s({s}, optim::SGDOptions(0.1)));
  RUN(auto cosine = std::make_shared<optim::CosineAnnealingLR>(opt_s, 15, 0.001));
  RUN(optim::LinearWarmup warmup(opt_s, 5, 0.1, cosine));
  {
    std::string line = "   ";
    for (int e = 0; e <= 20; ++e) {
      if (e > 0) warmup.step();
      line += fmt(" %.4f", opt_s.param_groups()[0].options().lr());
      if (e == 10) line += "\n   ";
    }
    std::cout << line << "\n";
  }
  say("warmup: lr = base (f + (1 - f) e / 5) with f = 0.1, so 0.01, 0.028, ... 0.082; at step 5\n"
      "the cosine takes over from its own epoch 0: eta_min + (base - eta_min) (1 + cos(pi e / 15)) / 2.\n"
      "Warmup keeps the first steps small while Adam's v and the network's activations settle; the\n"
      "cosine ends training with small steps that let the loss settle into a minimum.");
  say("StepLR multiplies by gamma every step_size epochs: lr = base * gamma^floor(e / step_size).");
  RUN(optim::SGD opt_step({tt::zeros({1}).requires_grad_()}, optim::SGDOptions(0.1)));
  RUN(optim::StepLR step_lr(opt_step, 3, 0.5));
  {
    std::string line = "   ";
    for (int e = 0; e <= 9; ++e) {
      if (e > 0) step_lr.step();
      line += fmt(" %.4f", step_lr.get_last_lr()[0]);
    }
    std::cout << line << "\n";
  }
  say("A schedule counts calls to step(), not epochs. StepLR(step_size 3) meant per epoch but\n"
      "stepped after each of 100 batches has decayed 33 times by the end of the first epoch:");
  RUN(optim::SGD opt_wrong({tt::zeros({1}).requires_grad_()}, optim::SGDOptions(0.1)));
  RUN(optim::StepLR per_batch(opt_wrong, 3, 0.5));
  RUN(for (int batch = 0; batch < 100; ++batch) per_batch.step());
  SHOW(per_batch.get_last_lr()[0]);
}

// -----------------------------------------------------------------------------------------------

void step_11_clipping() {
  say("clip_grad_norm_ treats all gradients as one long vector. Its norm is\n"
      "    total = sqrt(sum over tensors of |g_i|^2)       (norm_type 2)\n"
      "and every gradient is multiplied by clip_coef = min(1, max_norm / (total + 1e-6)): the\n"
      "direction of the update is kept, its length capped. Two gradients of norms 5 and 12:");
  RUN(tt::Tensor ga = tt::zeros({2}, tt::kFloat64).requires_grad_(), gb = tt::zeros({3}, tt::kFloat64).requires_grad_());
  RUN(ga.set_grad(tt::tensor({3.0, 4.0}, tt::kFloat64)));
  RUN(gb.set_grad(tt::tensor({0.0, 0.0, -12.0}, tt::kFloat64)));
  SHOW(tt::nn::utils::clip_grad_norm_({ga, gb}, /*max_norm=*/6.5));
  SHOW(vec(ga.grad()));
  SHOW(vec(gb.grad()));
  say("It returned the norm before clipping, sqrt(25 + 144) = 13 (log it: spikes show instability),\n"
      "and scaled both by 6.5 / 13 = 0.5. Below max_norm nothing changes. clip_grad_value_ clamps\n"
      "each element to [-c, c] instead, which changes the direction:");
  RUN(ga.set_grad(tt::tensor({3.0, 0.5}, tt::kFloat64)));
  RUN(tt::nn::utils::clip_grad_value_(ga, 1.0));
  SHOW(vec(ga.grad()));
  say("Clip after backward() and before step(). With Adam, norm clipping mostly tames single\n"
      "outlier batches (Adam already normalizes the scale); with SGD it bounds every step.");
}

// -----------------------------------------------------------------------------------------------

void step_12_state_memory() {
  say("Every buffer an optimizer keeps has the shape of its parameter. For a model of 10M\n"
      "parameters in float32 (4 bytes each):");
  {
    const double mb = 10e6 * 4 / 1e6;
    std::cout << "    parameters                  " << fmt("%5.0f", mb) << " MB\n"
              << "    gradients                   " << fmt("%5.0f", mb) << " MB\n"
              << "    SGD                             0 MB   state: none\n"
              << "    SGD with momentum           " << fmt("%5.0f", mb) << " MB   momentum_buffer (1 copy)\n"
              << "    Adam / AdamW                " << fmt("%5.0f", 2 * mb) << " MB   exp_avg, exp_avg_sq (2 copies)\n"
              << "    Adam with amsgrad           " << fmt("%5.0f", 3 * mb) << " MB   + max_exp_avg_sq (3 copies)\n";
  }
  say("Training with Adam holds four copies of the model (parameters, gradients, two moments)\n"
      "before a single activation. Counted on a real model, Linear(1000, 1000) then Linear(1000, 10):");
  {
    tt::manual_seed(3);
    tt::nn::Sequential big(tt::nn::Linear(1000, 1000), tt::nn::ReLU(), tt::nn::Linear(1000, 10));
    const int64_t params = big.num_parameters();
    auto count = [&](const char* name, optim::Optimizer& opt) {
      opt.zero_grad();
      big(tt::randn({4, 1000})).sum().backward();
      opt.step();
      const int64_t n = state_elements(opt);
      std::cout << "    " << name << fmt("%10.0f", double(n)) << " state elements = " << fmt("%.0f", double(n) / params)
                << " x " << params << " parameters\n";
    };
    optim::SGD sgd_m(big.parameters(), optim::SGDOptions(0.01).momentum(0.9));
    count("SGD, momentum 0.9 ", sgd_m);
    optim::Adam adam_big(big.parameters());
    count("Adam              ", adam_big);
    optim::AdamW ams_big(big.parameters(), optim::AdamWOptions().amsgrad(true));
    count("AdamW, amsgrad    ", ams_big);
  }
}

// -----------------------------------------------------------------------------------------------

void step_13_fused() {
  say("An update is elementwise: per element, Adam does about 15 FLOPs and one sqrt. It is\n"
      "memory-bound, so its cost is the bytes it moves. The library's Adam is one fused kernel\n"
      "(backend/cpu/optimizer.cpp): it reads p, g, m, v once and writes p, m, v once, 7 values =\n"
      "28 bytes per float32 element. Written as tensor ops,\n"
      "    m.mul_(b1); m.add_(g * (1 - b1)); v.mul_(b2); v.add_(g * g * (1 - b2));\n"
      "    p.sub_(m / (v.sqrt() / bc2 + eps) * step_size);\n"
      "it is 13 passes over memory that move 31 values = 124 bytes per element, and allocate 8\n"
      "temporaries. The arithmetic intensity (FLOPs per byte moved) is 15 / 28 = 0.54 fused and\n"
      "15 / 124 = 0.12 as a chain, far below the tens of FLOPs per byte a core can sustain. Timed\n"
      "on 4M parameters:");
  {
    const int64_t N = int64_t(1) << 22;
    tt::manual_seed(4);
    tt::Tensor p = tt::randn({N}).requires_grad_();
    p.set_grad(tt::randn({N}));
    optim::Adam fused(std::vector<tt::Tensor>{p}, optim::AdamOptions(1e-3));
    fused.step();  // creates the state
    const double fused_ms = best_ms([&] { fused.step(); }, 3);
    tt::Tensor q = p.detach().clone(), g = p.grad(), m = tt::zeros({N}), v = tt::zeros({N});
    const double b1 = 0.9, b2 = 0.999, bc2 = std::sqrt(1 - b2 * b2), step_size = 1e-3 / (1 - b1 * b1);
    const double chain_ms = best_ms([&] {
      tt::NoGradGuard no_grad;
      m.mul_(b1);
      m.add_(g * (1 - b1));
      v.mul_(b2);
      v.add_(g * g * (1 - b2));
      q.sub_(m / (v.sqrt() / bc2 + 1e-8) * step_size);
    }, 3);
    const double mb = double(N) * 4 / 1e6;
    std::cout << "    fused kernel, 1 pass        " << fmt("%7.2f", fused_ms) << " ms   "
              << fmt("%5.1f", 7 * mb / fused_ms) << " GB/s of 28 bytes/element   "
              << fmt("%.2f", 15.0 / 28) << " FLOP/byte\n"
              << "    13 tensor ops               " << fmt("%7.2f", chain_ms) << " ms   "
              << fmt("%5.1f", 31 * mb / chain_ms) << " GB/s of 124 bytes/element  " << fmt("%.2f", 15.0 / 124)
              << " FLOP/byte\n"
              << "    ratio                       " << fmt("%7.1f", chain_ms / fused_ms) << "x\n"
              << "    (" << best_of(3) << ")\n";
  }
  say("The bytes alone predict 4.4x; the rest is the chain's overhead per op (13 calls, each\n"
      "with its checks, an output to take from the allocator's cache and the threads to start).\n"
      "(Shared machines vary; compare ratios, not digits.) PyTorch's foreach and fused Adam exist\n"
      "for the same reason. The fused kernel also turns the flags into template parameters, so\n"
      "each combination is one branch-free loop the compiler vectorizes (Note [vectorized\n"
      "optimizer loops] in backend/cpu/optimizer.cpp).");
}

// -----------------------------------------------------------------------------------------------

void step_14_state_dict() {
  say("An optimizer's state is part of the training run. state_dict() is flat, like a model's:\n"
      "per parameter (numbered in the order of parameters()) its buffers, per group its options.");
  {
    Regression data;
    auto model = fresh_model();
    optim::AdamW opt(model->parameters(), optim::AdamWOptions(0.05));
    for (int s = 0; s < 3; ++s) step_on(opt, [&] { return data.loss(*model); });
    const tt::nn::StateDict sd = opt.state_dict();
    for (const auto& [key, t] : sd) std::cout << "    " << key << std::string(30 - key.size(), ' ') << t.dtype() << " " << t.shape() << "\n";
    say("Save both state dicts (cloned, or to a file with module 08's tt::save), train 3 more steps,\n"
        "then resume a new model and optimizer from the saved ones and train the same 3 steps:");
    const tt::nn::StateDict model_ckpt = snapshot(model->state_dict()), opt_ckpt = snapshot(sd);
    for (int s = 0; s < 3; ++s) step_on(opt, [&] { return data.loss(*model); });

    auto resumed = fresh_model();
    resumed->load_state_dict(model_ckpt);
    optim::AdamW opt2(resumed->parameters(), optim::AdamWOptions(0.05));
    opt2.load_state_dict(opt_ckpt);
    for (int s = 0; s < 3; ++s) step_on(opt2, [&] { return data.loss(*resumed); });

    auto model_only = fresh_model();
    model_only->load_state_dict(model_ckpt);
    optim::AdamW opt3(model_only->parameters(), optim::AdamWOptions(0.05));
    for (int s = 0; s < 3; ++s) step_on(opt3, [&] { return data.loss(*model_only); });

    auto diff = [&](const tt::nn::Linear& other) {
      return (other.weight - model->weight).abs().max().item<double>();
    };
    std::cout << ">>> max |weight - uninterrupted weight| after the 3 more steps\n"
              << "    model and optimizer resumed:  " << diff(*resumed) << "\n"
              << "    model only, a new optimizer:  " << fmt("%.3g", diff(*model_only)) << "\n";
  }
  say("Resuming both reproduces the run bit for bit. With a new optimizer, Adam starts its\n"
      "moments at zero and its step count at 1 again, so the run goes elsewhere; for SGD with\n"
      "momentum the velocity is lost. Checkpoints (module 08) store both, and the scheduler's\n"
      "state_dict() (its epoch) with them.");
}

// -----------------------------------------------------------------------------------------------

void step_15_together() {
  say("The regression y = X (2, -1, 0.5) + 0.3 with Linear(3, 1), 200 steps of each optimizer on\n"
      "the full batch (mse_loss, module 06). The loss at a few steps, and the learned weights:");
  {
    Regression data;
    struct Entry {
      const char* name;
      std::function<std::unique_ptr<optim::Optimizer>(std::vector<tt::Tensor>)> make;
    };
    const std::vector<Entry> entries = {
        {"SGD lr 0.1", [](auto ps) { return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.1)); }},
        {"SGD lr 0.1, momentum 0.9",
         [](auto ps) { return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.1).momentum(0.9)); }},
        {"Adam lr 0.05", [](auto ps) { return std::make_unique<optim::Adam>(ps, optim::AdamOptions(0.05)); }},
        {"AdamW lr 0.05, wd 0.01", [](auto ps) { return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions(0.05)); }},
    };
    std::cout << "                                step 10    step 50   step 200   weight, bias\n";
    for (const Entry& e : entries) {
      auto model = fresh_model();
      auto opt = e.make(model->parameters());
      std::string line = "    " + std::string(e.name) + std::string(26 - std::string(e.name).size(), ' ');
      for (int s = 1; s <= 200; ++s) {
        step_on(*opt, [&] { return data.loss(*model); });
        if (s == 10 || s == 50 || s == 200) {
          tt::NoGradGuard no_grad;
          line += fmt("%11.2e", data.loss(*model).item<double>());
        }
      }
      std::cout << line << "   " << vec(model->weight, "%.3f") << ", " << vec(model->bias, "%.3f") << "\n";
    }
  }
  say("Momentum starts slower here and finishes fast; Adam's first steps are about lr each,\n"
      "whatever the gradient, so it needs a few dozen steps to cover a distance of 2. AdamW's\n"
      "default weight_decay (0.01) pulls the weights toward zero, so it settles a little short of\n"
      "(2, -1, 0.5): at the minimum of the loss plus the decay, not of the loss alone.");
  say("And the loop a real run uses: AdamW, 10 warmup steps into a cosine, clipping at norm 1.");
  {
    Regression data;
    auto model = fresh_model();
    optim::AdamW opt(model->parameters(), optim::AdamWOptions(0.1).weight_decay(0.0));
    auto cos = std::make_shared<optim::CosineAnnealingLR>(opt, 190);
    optim::LinearWarmup sched(opt, 10, 0.1, cos);
    std::cout << ">>> for (int step = 1; step <= 200; ++step) {\n"
                 "      opt.zero_grad();\n"
                 "      tt::Tensor loss = tt::F::mse_loss((*model)(X), y);\n"
                 "      loss.backward();\n"
                 "      double norm = tt::nn::utils::clip_grad_norm_(model->parameters(), 1.0);\n"
                 "      opt.step();\n"
                 "      sched.step();\n"
                 "    }\n";
    for (int step = 1; step <= 200; ++step) {
      opt.zero_grad();
      tt::Tensor loss = tt::F::mse_loss((*model)(data.X), data.y);
      loss.backward();
      double norm = tt::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      opt.step();
      sched.step();
      if (step == 1 || step == 10 || step == 50 || step == 100 || step == 200)
        std::cout << "    step " << fmt("%3.0f", step) << "  loss " << fmt("%9.2e", loss.item<double>()) << "  grad norm "
                  << fmt("%8.2e", norm) << "  lr " << fmt("%.4f", sched.get_last_lr()[0]) << "\n";
    }
    std::cout << "    weight " << vec(model->weight, "%.4f") << ", bias " << vec(model->bias, "%.4f") << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_07";
  w.begin = [] {
    std::cout << "Module 07 - optimizers: gradient descent and its learning rate, momentum, weight\n"
                 "decay, Adam and AdamW, parameter groups, schedules, clipping, what state costs, a\n"
                 "fused update kernel, and resuming from a state dict.\n";
    std::cout.precision(6);
  };
  w.steps = {
      {"1", "Gradient descent: one step by hand", step_1_descent_by_hand},
      {"2", "The learning rate: too small, too large", step_2_learning_rate},
      {"3", "Momentum: a running velocity", step_3_momentum},
      {"4", "Weight decay in SGD is an L2 penalty", step_4_weight_decay},
      {"5", "Adam: two moments and a bias correction", step_5_adam},
      {"6", "AdamW: decoupled weight decay", step_6_adamw},
      {"7", "AMSGrad: never let the denominator shrink", step_7_amsgrad},
      {"8", "Parameter groups", step_8_parameter_groups},
      {"9", "zero_grad: gradients accumulate", step_9_zero_grad},
      {"10", "Learning-rate schedules", step_10_schedules},
      {"11", "Gradient clipping", step_11_clipping},
      {"12", "What optimizer state costs in memory", step_12_state_memory},
      {"13", "One fused pass versus a chain of tensor ops", step_13_fused},
      {"14", "state_dict: resuming exactly", step_14_state_dict},
      {"15", "Everything together", step_15_together},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs) << " s. Next: modules/08_training, which puts data loading,\n"
                 "this loop and checkpoints together and trains an MLP that learns.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}


