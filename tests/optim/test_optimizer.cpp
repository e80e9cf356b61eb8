// Optimizer behaviour (optim/optimizer.h, sgd.h, adam.h): option and parameter checks, parameter
// groups, zero_grad, skipped parameters, in-place updates, and state dicts (format, round trip,
// atomic loading). Numerical agreement with PyTorch is in test_optim_reference.cpp.
#include <string>
#include <vector>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {

Tensor leaf(const Shape& shape, ScalarType dtype = kFloat64) { return randn(shape, dtype).requires_grad_(); }

// Gives each parameter the gradient of sum(p * p) / 2, i.e. p itself.
void set_grads(const std::vector<Tensor>& params) {
  for (const Tensor& p : params) p.set_grad(p.detach().clone());
}

// A deep copy: what a checkpoint file would hold.
nn::StateDict snapshot(const nn::StateDict& s) {
  nn::StateDict out;
  for (const auto& [k, t] : s) out.insert(k, t.clone());
  return out;
}

bool same_state(const nn::StateDict& a, const nn::StateDict& b) {
  if (a.keys() != b.keys()) return false;
  for (const auto& [k, t] : a) {
    const Tensor& u = b[k];
    if (t.dtype() != u.dtype() || t.shape() != u.shape()) return false;
    if (t.to_vector<double>() != u.to_vector<double>()) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("SGD options are checked as PyTorch checks them", "[optim][sgd]") {
  std::vector<Tensor> ps = {leaf({3})};
  REQUIRE_THROWS_WITH(optim::SGD(ps, optim::SGDOptions(-0.1)), Contains("SGD: invalid learning rate: -0.1"));
  REQUIRE_THROWS_WITH(optim::SGD(ps, optim::SGDOptions(0.1).momentum(-1)), Contains("invalid momentum value: -1"));
  REQUIRE_THROWS_WITH(optim::SGD(ps, optim::SGDOptions(0.1).weight_decay(-0.5)),
                      Contains("invalid weight_decay value: -0.5"));
  REQUIRE_THROWS_WITH(optim::SGD(ps, optim::SGDOptions(0.1).nesterov(true)),
                      Contains("Nesterov momentum requires a momentum and zero dampening"));
  REQUIRE_THROWS_WITH(optim::SGD(ps, optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)),
                      Contains("Nesterov momentum requires a momentum and zero dampening"));
  REQUIRE_THROWS_WITH(optim::SGD(ps, optim::SGDOptions(std::nan(""))), Contains("invalid learning rate"));
  // The same checks guard each group, and step() checks again after options were changed by hand.
  optim::SGD opt(ps, optim::SGDOptions(0.1));
  REQUIRE_THROWS_WITH(opt.add_param_group({{leaf({2})}, optim::SGDOptions(0.1).momentum(-2)}),
                      Contains("invalid momentum value: -2"));
  CHECK(opt.param_groups().size() == 1);
  set_grads(ps);
  Tensor before = ps[0].detach().clone();
  opt.param_groups()[0].options().lr(-1.0);
  REQUIRE_THROWS_WITH(opt.step(), Contains("SGD: invalid learning rate: -1"));
  CHECK(ps[0].to_vector<double>() == before.to_vector<double>());
}

TEST_CASE("Adam and AdamW options are checked as PyTorch checks them", "[optim][adam]") {
  std::vector<Tensor> ps = {leaf({3})};
  REQUIRE_THROWS_WITH(optim::Adam(ps, optim::AdamOptions(-1e-3)), Contains("Adam: invalid learning rate: -0.001"));
  REQUIRE_THROWS_WITH(optim::Adam(ps, optim::AdamOptions().eps(-1)), Contains("invalid epsilon value: -1"));
  REQUIRE_THROWS_WITH(optim::Adam(ps, optim::AdamOptions().betas({1.0, 0.999})),
                      Contains("invalid beta parameter at index 0: 1"));
  REQUIRE_THROWS_WITH(optim::Adam(ps, optim::AdamOptions().betas({0.9, -0.1})),
                      Contains("invalid beta parameter at index 1: -0.1"));
  REQUIRE_THROWS_WITH(optim::Adam(ps, optim::AdamOptions().weight_decay(-1)), Contains("invalid weight_decay value"));
  REQUIRE_THROWS_WITH(optim::AdamW(ps, optim::AdamWOptions().betas({0.9, 1.5})),
                      Contains("AdamW: invalid beta parameter at index 1: 1.5"));
  // Defaults as PyTorch's.
  optim::AdamOptions a;
  optim::AdamWOptions w;
  CHECK(a.lr() == 1e-3);
  CHECK(a.betas() == std::make_tuple(0.9, 0.999));
  CHECK(a.eps() == 1e-8);
  CHECK(a.weight_decay() == 0.0);
  CHECK(w.weight_decay() == 1e-2);
  CHECK(!a.amsgrad());
  CHECK(!w.maximize());
}

TEST_CASE("parameters must be floating-point leaves that require grad, each once", "[optim]") {
  Tensor p = leaf({2, 2});
  REQUIRE_THROWS_WITH(optim::SGD(std::vector<Tensor>{}, optim::SGDOptions(0.1)),
                      Contains("SGD: got an empty parameter list"));
  REQUIRE_THROWS_WITH(optim::SGD({zeros({3}, kInt64)}, optim::SGDOptions(0.1)),
                      Contains("can only optimize floating-point tensors, but parameter 0 of group 0 has dtype int64"));
  REQUIRE_THROWS_WITH(optim::SGD({p * 2}, optim::SGDOptions(0.1)), Contains("can't optimize a non-leaf tensor"));
  // A frozen parameter (no requires_grad) is accepted, as in PyTorch, and never moves.
  {
    Tensor frozen = ones({3});
    optim::Adam opt({p, frozen});
    CHECK(opt.parameters().size() == 2);
  }
  REQUIRE_THROWS_WITH(optim::Adam({p, p}), Contains("appears more than once in this optimizer"));
  REQUIRE_THROWS_WITH(optim::Adam({Tensor()}), Contains("parameter 0 of group 0 is an undefined tensor"));

  optim::SGD opt({p}, optim::SGDOptions(0.1));
  REQUIRE_THROWS_WITH(opt.add_param_group({{leaf({1}), p}}), Contains("parameter 1 of group 1 appears more than once"));
  REQUIRE_THROWS_WITH(opt.add_param_group({{leaf({1})}, optim::AdamOptions()}),
                      Contains("SGD: a parameter group's options must be SGDOptions, got AdamOptions"));
  REQUIRE_THROWS_WITH(optim::AdamW(std::vector<optim::OptimizerParamGroup>{{{leaf({1})}, optim::AdamOptions()}}),
                      Contains("must be AdamWOptions, got AdamOptions"));
  CHECK(opt.param_groups().size() == 1);  // failed additions change nothing
  CHECK(opt.size() == 1);
}

TEST_CASE("parameter groups keep their own options", "[optim][groups]") {
  Tensor a = leaf({4}), b = leaf({2, 3}), c = leaf({5});
  optim::SGD opt({{{a}}, {{b, c}, optim::SGDOptions(0.5)}}, optim::SGDOptions(0.1));
  REQUIRE(opt.param_groups().size() == 2);
  CHECK(opt.param_groups()[0].options().lr() == 0.1);  // a copy of the defaults
  CHECK(opt.param_groups()[1].options().lr() == 0.5);
  CHECK(opt.parameters().size() == 3);
  CHECK(opt.parameters()[2].is_same(c));

  // Changing the defaults later does not reach a group that already has its copy.
  static_cast<optim::SGDOptions&>(opt.defaults()).lr(7.0);
  CHECK(opt.param_groups()[0].options().lr() == 0.1);

  // An added group without options takes the defaults as they are now.
  Tensor d = leaf({3});
  opt.add_param_group({{d}});
  CHECK(opt.param_groups()[2].options().lr() == 7.0);
  opt.param_groups()[2].options().set_lr(0.25);  // LibTorch's spelling
  CHECK(opt.param_groups()[2].options().get_lr() == 0.25);

  std::vector<Tensor> all = {a, b, c, d};
  std::vector<Tensor> before;
  for (const Tensor& p : all) before.push_back(p.detach().clone());
  set_grads(all);
  opt.step();
  const double lrs[] = {0.1, 0.5, 0.5, 0.25};
  for (size_t k = 0; k < all.size(); ++k) {
    INFO("parameter " << k);
    CHECK_ALLCLOSE(all[k].detach(), before[k] * (1.0 - lrs[k]), 1e-12, 1e-12);  // p - lr * p
  }
}

TEST_CASE("zero_grad drops the gradients or zeroes them in place", "[optim]") {
  Tensor a = leaf({3}), b = leaf({2});
  optim::Adam opt({a, b});
  set_grads({a, b});
  opt.zero_grad();  // set_to_none = true by default
  CHECK(!a.grad().defined());
  CHECK(!b.grad().defined());

  set_grads({a});
  Tensor g = a.grad();
  opt.zero_grad(false);
  REQUIRE(a.grad().defined());
  CHECK(a.grad().is_same(g));  // the same tensor, now zero
  CHECK(a.grad().to_vector<double>() == std::vector<double>(3, 0.0));
  CHECK(!b.grad().defined());  // none stays none

  // A gradient that carries a graph (made with create_graph) keeps its values' tensor detached.
  Tensor q = leaf({3});
  a.set_grad(q * 2.0);
  REQUIRE(a.grad().grad_fn() != nullptr);
  opt.zero_grad(false);
  CHECK(a.grad().grad_fn() == nullptr);
  CHECK(a.grad().to_vector<double>() == std::vector<double>(3, 0.0));
}

TEST_CASE("float32 parameters follow the float64 trajectory", "[optim]") {
  manual_seed(11);
  Tensor init = randn({64}, kFloat64);
  auto run = [&](ScalarType dtype, auto make_optimizer) {
    Tensor p = init.to(dtype, /*copy=*/true).requires_grad_();
    auto opt = make_optimizer(p);
    for (int s = 0; s < 5; ++s) {
      opt.zero_grad();
      (p * p * p * 0.1 + p.sin()).sum().backward();
      opt.step();
    }
    return p.detach().to(kFloat64);
  };
  auto sgd = [](const Tensor& p) { return optim::SGD({p}, optim::SGDOptions(0.05).momentum(0.9).nesterov(true)); };
  auto adamw = [](const Tensor& p) { return optim::AdamW({p}, optim::AdamWOptions(0.05).amsgrad(true)); };
  CHECK_ALLCLOSE(run(kFloat32, sgd), run(kFloat64, sgd), 1e-5, 1e-6);
  CHECK_ALLCLOSE(run(kFloat32, adamw), run(kFloat64, adamw), 1e-5, 1e-6);
}

TEST_CASE("parameters without a gradient are skipped and get no state", "[optim]") {
  Tensor a = leaf({3}), b = leaf({4});
  Tensor b_before = b.detach().clone();
  SECTION("SGD with momentum") {
    optim::SGD opt({a, b}, optim::SGDOptions(0.1).momentum(0.9));
    set_grads({a});
    opt.step();
    CHECK(opt.state(a).contains("momentum_buffer"));
    CHECK(opt.state(b).empty());
  }
  SECTION("Adam") {
    optim::Adam opt({a, b});
    set_grads({a});
    opt.step();
    opt.step();
    CHECK(opt.state(a)["step"].item<int64_t>() == 2);
    CHECK(opt.state(b).empty());
    const nn::StateDict sd = opt.state_dict();
    CHECK(sd.contains("state.0.exp_avg"));
    CHECK(!sd.contains("state.1.step"));
  }
  CHECK(b.to_vector<double>() == b_before.to_vector<double>());
  REQUIRE_THROWS_WITH(optim::SGD({a}, optim::SGDOptions(0.1)).state(b), Contains("not one of this optimizer's"));
}

TEST_CASE("step updates parameters in place, bumps versions, keeps handles", "[optim]") {
  Tensor p = leaf({2, 3});
  Tensor alias = p;  // a handle, as a Module's member would be
  optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.5));
  set_grads({p});
  Tensor expected = p.detach() * 0.9;  // first step: buf = g = p; p - 0.1 * p
  const uint64_t v0 = p.version();
  opt.step();  // grad mode is on: the update is not recorded
  CHECK(p.version() > v0);
  CHECK(alias.is_same(p));
  CHECK(p.requires_grad());
  CHECK(p.is_leaf());
  CHECK_ALLCLOSE(p.detach(), expected, 1e-12, 1e-12);
  CHECK(opt.state(p)["momentum_buffer"].version() > 0);
}

TEST_CASE("a non-contiguous parameter is updated through a contiguous copy", "[optim]") {
  Tensor base = randn({3, 4}, kFloat64);
  Tensor p = base.t();  // a transposed view, made a leaf that requires grad
  p.requires_grad_();
  REQUIRE(!p.is_contiguous());
  Tensor before = p.detach().clone();
  optim::Adam opt({p}, optim::AdamOptions(0.1));
  p.set_grad(ones({4, 3}, kFloat64));
  opt.step();
  // First Adam step with a constant gradient of 1: m_hat = 1, v_hat = 1 -> p - lr / (1 + eps).
  CHECK_ALLCLOSE(p.detach(), before - 0.1 / (1.0 + 1e-8), 1e-12, 1e-12);
  CHECK_ALLCLOSE(base, (before - 0.1 / (1.0 + 1e-8)).t(), 1e-12, 1e-12);  // written through the view
}

TEST_CASE("a gradient of another dtype or shape is a clear error", "[optim]") {
  Tensor p = leaf({3});
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  REQUIRE_THROWS_AS(p.set_grad(ones({3}, kFloat32)), DtypeError);  // refused where it is assigned
  // The step's own check, for a gradient that got past set_grad (written into the TensorImpl).
  p.unsafe_impl()->grad = ones({3}, kFloat32).impl_ptr();
  REQUIRE_THROWS_AS(opt.step(), DtypeError);
  REQUIRE_THROWS_WITH(opt.step(), Contains("sgd_step: the gradient must have the parameter's dtype, got float32"));
  optim::AdamW adamw({p});
  REQUIRE_THROWS_WITH(adamw.step(), Contains("adamw_step: the gradient must have the parameter's dtype"));
  CHECK(adamw.state(p).empty());  // a failed first step keeps no state
}

TEST_CASE("optimizer state_dict is flat: state, parameter numbering and hyperparameters", "[optim][state_dict]") {
  Tensor a = leaf({2, 2}), b = leaf({3}), c = leaf({1});
  optim::Adam opt({{{a, b}}, {{c}, optim::AdamOptions(0.5).amsgrad(true).betas({0.8, 0.9})}},
                  optim::AdamOptions(0.01).weight_decay(0.1));
  nn::StateDict before = opt.state_dict();
  CHECK(before.keys() == std::vector<std::string>{
                             "param_groups.0.params", "param_groups.0.lr", "param_groups.0.betas",
                             "param_groups.0.eps", "param_groups.0.weight_decay", "param_groups.0.amsgrad",
                             "param_groups.0.maximize", "param_groups.1.params", "param_groups.1.lr",
                             "param_groups.1.betas", "param_groups.1.eps", "param_groups.1.weight_decay",
                             "param_groups.1.amsgrad", "param_groups.1.maximize"});
  CHECK(before["param_groups.0.params"].to_vector<int64_t>() == std::vector<int64_t>{0, 1});
  CHECK(before["param_groups.1.params"].to_vector<int64_t>() == std::vector<int64_t>{2});
  CHECK(before["param_groups.0.lr"].dtype() == kFloat64);
  CHECK(before["param_groups.0.lr"].dim() == 0);
  CHECK(before["param_groups.0.weight_decay"].item<double>() == 0.1);
  CHECK(before["param_groups.1.betas"].to_vector<double>() == std::vector<double>{0.8, 0.9});
  CHECK(before["param_groups.1.amsgrad"].item<double>() == 1.0);

  set_grads({a, c});
  opt.step();
  nn::StateDict after = opt.state_dict();
  CHECK(after["state.0.step"].dtype() == kInt64);
  CHECK(after["state.0.step"].dim() == 0);
  CHECK(after["state.0.step"].item<int64_t>() == 1);
  CHECK(after["state.0.exp_avg"].shape() == Shape{2, 2});
  CHECK(!after.contains("state.0.max_exp_avg_sq"));  // group 0 has no amsgrad
  CHECK(after.contains("state.2.max_exp_avg_sq"));
  CHECK(!after.contains("state.1.step"));  // b had no gradient
  // Handles on the optimizer's own state, as Module::state_dict.
  CHECK(after["state.0.exp_avg"].is_same(opt.state(a)["exp_avg"]));

  optim::SGD sgd({a}, optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
  CHECK(sgd.state_dict()["param_groups.0.nesterov"].item<double>() == 1.0);
  CHECK(sgd.state_dict()["param_groups.0.dampening"].item<double>() == 0.0);
}

namespace {

// Trains `opt` for `steps` steps on L = sum(w * p^3 / 3 + p^2), gradients computed by autograd.
void train(optim::Optimizer& opt, const std::vector<Tensor>& params, int steps) {
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss = zeros({}, kFloat64);
    for (const Tensor& p : params) loss = loss + (p * p * p * 0.1 + p * p).sum();
    loss.backward();
    opt.step();
  }
}

template <typename Opt, typename Options>
void check_resume(const Options& options, const Options& other_options) {
  manual_seed(7);
  std::vector<Tensor> ps = {leaf({3, 4}), leaf({5})};
  Opt opt({{{ps[0]}}, {{ps[1]}, other_options}}, options);
  train(opt, ps, 4);
  const nn::StateDict checkpoint = snapshot(opt.state_dict());
  std::vector<Tensor> resumed;
  for (const Tensor& p : ps) resumed.push_back(p.detach().clone().requires_grad_());
  train(opt, ps, 6);  // uninterrupted: 10 steps

  Options fresh = options;
  fresh.lr(123.0);  // the loaded hyperparameters must win
  Opt opt2({{{resumed[0]}}, {{resumed[1]}, fresh}}, fresh);
  opt2.load_state_dict(checkpoint);
  CHECK(opt2.param_groups()[0].options().lr() == options.lr());
  CHECK(opt2.param_groups()[1].options().lr() == other_options.lr());
  train(opt2, resumed, 6);
  for (size_t k = 0; k < ps.size(); ++k) CHECK(resumed[k].to_vector<double>() == ps[k].to_vector<double>());
  CHECK(same_state(opt2.state_dict(), opt.state_dict()));
}

}  // namespace

TEST_CASE("training resumed from a loaded state dict matches uninterrupted training", "[optim][state_dict]") {
  SECTION("SGD") {
    check_resume<optim::SGD>(optim::SGDOptions(0.01).momentum(0.9).nesterov(true),
                             optim::SGDOptions(0.02).momentum(0.5).weight_decay(0.1));
  }
  SECTION("Adam") {
    check_resume<optim::Adam>(optim::AdamOptions(0.01).amsgrad(true), optim::AdamOptions(0.03).weight_decay(0.1));
  }
  SECTION("AdamW") {
    check_resume<optim::AdamW>(optim::AdamWOptions(0.01), optim::AdamWOptions(0.02).amsgrad(true).betas({0.8, 0.9}));
  }
}

TEST_CASE("load_state_dict converts state to each parameter's dtype", "[optim][state_dict]") {
  Tensor p64 = leaf({4});
  optim::Adam opt64({p64});
  set_grads({p64});
  opt64.step();
  Tensor p32 = p64.detach().to(kFloat32).requires_grad_();
  optim::Adam opt32({p32});
  opt32.load_state_dict(opt64.state_dict());
  CHECK(opt32.state(p32)["exp_avg"].dtype() == kFloat32);
  CHECK(!opt32.state(p32)["exp_avg"].is_same(opt64.state(p64)["exp_avg"]));  // copies, not handles
  CHECK(opt32.state(p32)["step"].item<int64_t>() == 1);
}

TEST_CASE("load_state_dict rejects a bad state dict and changes nothing", "[optim][state_dict]") {
  std::vector<Tensor> ps = {leaf({2, 3}), leaf({4})};
  optim::Adam opt({{{ps[0]}}, {{ps[1]}, optim::AdamOptions(0.5)}}, optim::AdamOptions(0.01));
  set_grads(ps);
  opt.step();
  const nn::StateDict good = snapshot(opt.state_dict());
  set_grads(ps);
  opt.step();  // the optimizer has moved on from `good`
  const nn::StateDict current = snapshot(opt.state_dict());

  auto with = [&](const std::string& key, const Tensor& t) {
    nn::StateDict s = snapshot(good);
    s.insert_or_assign(key, t);
    return s;
  };
  auto without = [&](const std::string& key) {
    nn::StateDict s;
    for (const auto& [k, t] : good)
      if (k != key) s.insert(k, t);
    return s;
  };
  struct Bad {
    const char* what;
    nn::StateDict state;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {"missing state", without("state.1.exp_avg_sq"), "state.1.exp_avg_sq is missing"},
      {"missing group key", without("param_groups.1.eps"), "the hyperparameter \"eps\" is missing"},
      {"missing group", without("param_groups.1.params"), "param_groups.1.params is missing"},
      {"unexpected state", with("state.0.momentum_buffer", zeros({2, 3}, kFloat64)),
       "unexpected key state.0.momentum_buffer"},
      {"unexpected group", with("param_groups.2.params", tensor({2}, kInt64)), "the optimizer has 2 parameter groups"},
      {"unexpected top-level key", with("foo", zeros({1})), "unexpected key foo"},
      {"parameter index out of range", with("state.5.exp_avg", zeros({1})), "the optimizer has 2 parameters"},
      {"wrong shape", with("state.0.exp_avg", zeros({3, 2}, kFloat64)),
       "state.0.exp_avg: float64 [3, 2] in the state dict"},
      {"wrong dtype", with("state.0.exp_avg", zeros({2, 3}, kInt64)), "state.0.exp_avg: int64 [2, 3]"},
      {"bad step", with("state.0.step", full({}, -1.0, kFloat64)), "step must be a 0-d tensor holding a count"},
      {"group size", with("param_groups.1.params", tensor({1, 2}, kInt64)), "lists 2 parameters, but group 1"},
      {"numbering", with("param_groups.1.params", tensor({0}, kInt64)), "must number the parameters 1..1"},
      {"invalid hyperparameter", with("param_groups.0.lr", full({}, -1.0, kFloat64)), "invalid learning rate: -1"},
      {"bad flag", with("param_groups.0.amsgrad", full({}, 0.5, kFloat64)), "must be 0 or 1, got 0.5"},
      {"bad betas", with("param_groups.0.betas", zeros({3}, kFloat64)), "must be a float tensor of shape [2]"},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    REQUIRE_THROWS_WITH(opt.load_state_dict(b.state), Contains(b.message) && Contains("nothing was changed"));
    CHECK(same_state(opt.state_dict(), current));
  }
  // A state dict from an optimizer with other groups is refused as a whole.
  optim::Adam other({ps});
  REQUIRE_THROWS_WITH(other.load_state_dict(good), Contains("params lists 1 parameters, but group 0"));
  // And the good one loads.
  opt.load_state_dict(good);
  CHECK(same_state(opt.state_dict(), good));
}
