// Optimizers, schedulers and clipping against PyTorch: replays every 10-step training case of
// tests/fixtures/optim.json (written by tools/fixtures/cases_optim.py, which documents the
// format) with tinytorch and compares parameters, optimizer state, learning rates, clipped norms
// and losses to 1e-6 (absolute + relative).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

using namespace tt;
using json = nlohmann::json;

namespace {

constexpr double kTol = 1e-6;

json load_optim_fixtures() {
  const std::string path = std::string(TT_SOURCE_DIR) + "/tests/fixtures/optim.json";
  std::ifstream f(path);
  INFO("fixture file " << path << " (regenerate with /usr/bin/python3 tools/fixtures/gen_fixtures.py)");
  REQUIRE(f.good());
  return json::parse(f);
}

Tensor make_tensor(const json& spec) {
  REQUIRE(spec.at("dtype") == "float64");
  std::vector<double> data = spec.at("data").get<std::vector<double>>();
  Shape shape;
  for (int64_t s : spec.at("shape").get<std::vector<int64_t>>()) shape.push_back(s);
  return tensor(data, shape, kFloat64);
}

bool close(double a, double e) { return std::fabs(a - e) <= kTol + kTol * std::fabs(e); }

// Applies torch kwargs to an options object that has the setters of SGDOptions or AdamOptions.
void apply_sgd(optim::SGDOptions& o, const json& kw) {
  for (const auto& [k, v] : kw.items()) {
    if (k == "lr") o.lr(v.get<double>());
    else if (k == "momentum") o.momentum(v.get<double>());
    else if (k == "dampening") o.dampening(v.get<double>());
    else if (k == "weight_decay") o.weight_decay(v.get<double>());
    else if (k == "nesterov") o.nesterov(v.get<bool>());
    else if (k == "maximize") o.maximize(v.get<bool>());
    else FAIL("unknown SGD option " << k);
  }
}

double num(const json& v) { return v.get<double>(); }
bool flag(const json& v) { return v.get<bool>(); }

template <typename Options>
void apply_adam(Options& o, const json& kw) {
  for (const auto& [k, v] : kw.items()) {
    if (k == "lr") o.lr(num(v));
    else if (k == "betas") o.betas({num(v.at(0)), num(v.at(1))});
    else if (k == "eps") o.eps(num(v));
    else if (k == "weight_decay") o.weight_decay(num(v));
    else if (k == "amsgrad") o.amsgrad(flag(v));
    else if (k == "maximize") o.maximize(flag(v));
    else FAIL("unknown Adam option " << k);
  }
}

template <typename Opt, typename Options>
std::unique_ptr<optim::Optimizer> make_with(const json& c, const std::vector<Tensor>& params, Options defaults,
                                            void (*apply)(Options&, const json&)) {
  apply(defaults, c.at("defaults"));
  if (c.at("groups").is_null()) return std::make_unique<Opt>(params, defaults);
  std::vector<optim::OptimizerParamGroup> groups;
  for (const json& g : c.at("groups")) {
    std::vector<Tensor> ps;
    for (int k : g.at("params")) ps.push_back(params.at(k));
    Options o = defaults;
    apply(o, g.at("options"));
    groups.emplace_back(ps, o);
  }
  return std::make_unique<Opt>(groups, defaults);
}

std::unique_ptr<optim::Optimizer> make_optimizer(const json& c, const std::vector<Tensor>& params) {
  const std::string name = c.at("optimizer");
  if (name == "SGD") return make_with<optim::SGD>(c, params, optim::SGDOptions(0.0), &apply_sgd);
  if (name == "Adam") return make_with<optim::Adam>(c, params, optim::AdamOptions(), &apply_adam<optim::AdamOptions>);
  if (name == "AdamW")
    return make_with<optim::AdamW>(c, params, optim::AdamWOptions(), &apply_adam<optim::AdamWOptions>);
  FAIL("unknown optimizer " << name);
  return nullptr;
}

std::shared_ptr<optim::LRScheduler> make_scheduler(const json& s, optim::Optimizer& opt) {
  const std::string type = s.at("type");
  if (type == "StepLR") return std::make_shared<optim::StepLR>(opt, s.at("step_size"), s.at("gamma"));
  if (type == "CosineAnnealingLR")
    return std::make_shared<optim::CosineAnnealingLR>(opt, s.at("T_max"), s.at("eta_min"));
  if (type == "LinearWarmup") {
    std::shared_ptr<optim::LRScheduler> after;
    if (!s.at("after").is_null()) after = make_scheduler(s.at("after"), opt);
    return std::make_shared<optim::LinearWarmup>(opt, s.at("warmup_steps"), s.at("start_factor"), after);
  }
  FAIL("unknown scheduler " << type);
  return nullptr;
}

void check_lrs(const std::vector<double>& actual, const json& expected, const std::string& what) {
  std::vector<double> e = expected.get<std::vector<double>>();
  INFO(what);
  REQUIRE(actual.size() == e.size());
  for (size_t g = 0; g < e.size(); ++g) {
    INFO("group " << g << ": tinytorch " << actual[g] << ", PyTorch " << e[g]);
    CHECK(close(actual[g], e[g]));
  }
}

void run_case(const json& c) {
  std::vector<Tensor> params, targets, weights;
  for (const json& t : c.at("params")) params.push_back(make_tensor(t).requires_grad_());
  for (const json& t : c.at("targets")) targets.push_back(make_tensor(t));
  for (const json& t : c.at("weights")) weights.push_back(make_tensor(t));
  const std::vector<bool> in_loss = c.at("in_loss").get<std::vector<bool>>();
  const json& exp = c.at("expected");

  std::unique_ptr<optim::Optimizer> opt = make_optimizer(c, params);
  std::shared_ptr<optim::LRScheduler> sched;
  if (!c.at("scheduler").is_null()) sched = make_scheduler(c.at("scheduler"), *opt);
  std::vector<double> initial;
  for (const auto& g : opt->param_groups()) initial.push_back(g.options().lr());
  check_lrs(initial, exp.at("initial_lrs"), "learning rates after construction");

  const json& clip = c.at("clip");
  const int steps = c.at("steps");
  for (int s = 0; s < steps; ++s) {
    INFO("step " << s);
    opt->zero_grad();
    Tensor loss = zeros({}, kFloat64);
    for (size_t k = 0; k < params.size(); ++k) {
      if (!in_loss[k]) continue;
      Tensor d = params[k] - targets[k];
      loss = loss + (weights[k] * d * d + params[k].sin()).sum();
    }
    loss.backward();
    {
      const double e = exp.at("losses").at(s);
      INFO("loss: tinytorch " << loss.item<double>() << ", PyTorch " << e);
      CHECK(close(loss.item<double>(), e));
    }
    if (!clip.is_null() && clip.at("kind") == "norm") {
      const json& nt = clip.at("norm_type");  // "inf" or a number
      const double norm_type = nt.is_string() ? std::numeric_limits<double>::infinity() : nt.get<double>();
      const double total = nn::utils::clip_grad_norm_(params, clip.at("max_norm").get<double>(), norm_type);
      const double e = exp.at("total_norms").at(s);
      INFO("total norm: tinytorch " << total << ", PyTorch " << e);
      CHECK(close(total, e));
    } else if (!clip.is_null()) {
      nn::utils::clip_grad_value_(params, clip.at("clip_value").get<double>());
    }
    opt->step();
    if (sched) {
      sched->step();
      check_lrs(sched->get_last_lr(), exp.at("lrs").at(s), "learning rates after scheduler.step()");
    }
  }

  for (size_t k = 0; k < params.size(); ++k) {
    INFO("parameter " << k);
    CHECK_ALLCLOSE(params[k], make_tensor(exp.at("params").at(k)), kTol, kTol);
    const json& es = exp.at("state").at(k);
    const nn::StateDict& st = opt->state(params[k]);
    std::vector<std::string> keys;
    for (const auto& [key, v] : es.items()) keys.push_back(key);
    std::vector<std::string> ours = st.keys();
    std::sort(ours.begin(), ours.end());
    CHECK(ours == keys);
    for (const auto& [key, v] : es.items()) {
      INFO("state " << key);
      const Tensor* t = st.find(key);
      if (!t) continue;
      if (key == "step")
        CHECK(t->item<int64_t>() == v.get<int64_t>());
      else
        CHECK_ALLCLOSE(*t, make_tensor(v), kTol, kTol);
    }
  }
}

}  // namespace

TEST_CASE("optimizers, schedulers and clipping follow PyTorch over 10 training steps", "[optim][reference]") {
  const json doc = load_optim_fixtures();
  const json& cases = doc.at("cases");
  REQUIRE(cases.size() >= 30);
  for (const json& c : cases) {
    INFO("fixture optim.json, case " << c.at("name").get<std::string>());
    try {
      run_case(c);
    } catch (const std::exception& e) {
      FAIL_CHECK("unexpected exception: " << e.what());
    }
  }
}
