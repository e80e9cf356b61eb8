// Adam and AdamW: option checks and state creation per parameter; the update of a group is one
// multi-tensor step (ops/optim_step.h; one launch on a GPU, backend/cuda/optimizer.cu), which also
// computes the bias corrections from each parameter's step counter and increments it.
#include "tinytorch/optim/adam.h"

#include <cmath>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/optim_step.h"

namespace tt::optim {

namespace detail {

template <bool kDecoupled>
void AdamOptionsFor<kDecoupled>::validate(const std::string& optimizer) const {
  const auto [beta1, beta2] = betas_;
  TT_CHECK(lr_ >= 0, optimizer, ": invalid learning rate: ", lr_, " (must be >= 0)");
  TT_CHECK(eps_ >= 0, optimizer, ": invalid epsilon value: ", eps_, " (must be >= 0)");
  TT_CHECK(beta1 >= 0 && beta1 < 1, optimizer, ": invalid beta parameter at index 0: ", beta1,
           " (must be in [0, 1))");
  TT_CHECK(beta2 >= 0 && beta2 < 1, optimizer, ": invalid beta parameter at index 1: ", beta2,
           " (must be in [0, 1))");
  TT_CHECK(weight_decay_ >= 0, optimizer, ": invalid weight_decay value: ", weight_decay_, " (must be >= 0)");
}

template <bool kDecoupled>
nn::StateDict AdamOptionsFor<kDecoupled>::to_state() const {
  nn::StateDict s;
  s.insert("lr", hyper_tensor(lr_));
  s.insert("betas", tensor({std::get<0>(betas_), std::get<1>(betas_)}, kFloat64));
  s.insert("eps", hyper_tensor(eps_));
  s.insert("weight_decay", hyper_tensor(weight_decay_));
  s.insert("amsgrad", hyper_tensor(amsgrad_));
  s.insert("maximize", hyper_tensor(maximize_));
  return s;
}

template <bool kDecoupled>
void AdamOptionsFor<kDecoupled>::from_state(const nn::StateDict& s) {
  lr_ = read_hyper(s, "lr");
  betas_ = read_pair(s, "betas");
  eps_ = read_hyper(s, "eps");
  weight_decay_ = read_hyper(s, "weight_decay");
  amsgrad_ = read_flag(s, "amsgrad");
  maximize_ = read_flag(s, "maximize");
}

template class AdamOptionsFor<false>;
template class AdamOptionsFor<true>;

namespace {
// A step counter on `device`: moved there once (a checkpoint loads counts on the CPU, a model may
// move after some steps); a no-op afterwards.
Tensor step_on(const Tensor& step, const Device& device) {
  if (step.device() == device) return step;
  NoGradGuard no_grad;
  return step.to(device);
}

template <bool kDecoupled>
AdamStepArgs step_args(const AdamOptionsFor<kDecoupled>& o, int64_t step) {
  AdamStepArgs a;
  a.lr = o.lr();
  std::tie(a.beta1, a.beta2) = o.betas();
  a.eps = o.eps();
  a.weight_decay = o.weight_decay();
  a.decoupled = kDecoupled;
  a.amsgrad = o.amsgrad();
  a.maximize = o.maximize();
  // Host-side scalars, as PyTorch computes them in Python floats (the single-tensor path's; the
  // multi-tensor step computes them where the step counter lives).
  adam_bias_corrections(a, step);
  return a;
}
}  // namespace

Optimizer::StateKeys AdamBase::state_keys(const OptimizerOptions& options) const {
  // max_exp_avg_sq may be absent even with amsgrad (turned on after the first steps): the next
  // step starts it at zero.
  (void)options;
  return {{"step", "exp_avg", "exp_avg_sq"}, {"max_exp_avg_sq"}};
}

void AdamBase::adam_step(bool decoupled) {
  // TT_EXERCISE_BEGIN(07, 4)
  check_options();
  for (auto& group : param_groups()) {
    // One multi-tensor step per group (one launch per device and dtype on a GPU); the step counts
    // stay where their parameters are, and the kernel increments them (Note [multi-tensor
    // optimizer step] in backend/cuda/optimizer.cu), so no value is read back to the host.
    const AdamStepArgs args = decoupled ? step_args(static_cast<const AdamOptionsFor<true>&>(group.options()), 1)
                                        : step_args(static_cast<const AdamOptionsFor<false>&>(group.options()), 1);
    std::vector<AdamParamState> list;
    std::vector<bool> fresh, new_max;
    for (const Tensor& p : group.params()) {
      const Tensor g = p.grad();
      if (!g.defined()) continue;  // no gradient: skipped, as PyTorch
      nn::StateDict& st = mutable_state(p);
      // New state is kept only once the update has succeeded.
      const bool is_fresh = st.empty();
      AdamParamState e;
      e.param = p;
      e.grad = g;
      e.step = is_fresh ? scalar_tensor(int64_t(0), TensorOptions().dtype(kInt64).device(p.device())) : st["step"];
      e.step = step_on(e.step, p.device());
      e.exp_avg = is_fresh ? zeros_like(p) : st["exp_avg"];
      e.exp_avg_sq = is_fresh ? zeros_like(p) : st["exp_avg_sq"];
      const bool is_new_max = args.amsgrad && !st.contains("max_exp_avg_sq");
      if (args.amsgrad) e.max_exp_avg_sq = is_new_max ? zeros_like(p) : st["max_exp_avg_sq"];
      list.push_back(e);
      fresh.push_back(is_fresh);
      new_max.push_back(is_new_max);
    }
    tt::detail::adam_step_multi_(list, args);
    for (size_t i = 0; i < list.size(); ++i) {
      nn::StateDict& st = mutable_state(list[i].param);
      if (fresh[i]) {
        st.insert("step", list[i].step);
        st.insert("exp_avg", list[i].exp_avg);
        st.insert("exp_avg_sq", list[i].exp_avg_sq);
      } else {
        st["step"] = list[i].step;  // moved to the parameter's device when it was elsewhere
      }
      if (new_max[i]) st.insert("max_exp_avg_sq", list[i].max_exp_avg_sq);
    }
  }
  // TT_EXERCISE_END
}

}  // namespace detail

Adam::Adam(std::vector<Tensor> params, const AdamOptions& defaults)
    : Adam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
Adam::Adam(const std::vector<OptimizerParamGroup>& groups, const AdamOptions& defaults)
    : AdamBase("Adam", groups, defaults.clone()) {}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& defaults)
    : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
AdamW::AdamW(const std::vector<OptimizerParamGroup>& groups, const AdamWOptions& defaults)
    : AdamBase("AdamW", groups, defaults.clone()) {}

}  // namespace tt::optim
