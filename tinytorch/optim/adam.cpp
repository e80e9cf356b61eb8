// Adam and AdamW: option checks, state creation and bias corrections per parameter; the update
// itself is one fused kernel (ops/optim_step.h, backend/cpu/optimizer.cpp).
#include "tinytorch/optim/adam.h"

#include <cmath>

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
  // Host-side scalars, as PyTorch computes them in Python floats.
  const double bias_correction1 = 1 - std::pow(a.beta1, double(step));
  const double bias_correction2 = 1 - std::pow(a.beta2, double(step));
  a.step_size = a.lr / bias_correction1;
  a.bias_correction2_sqrt = std::sqrt(bias_correction2);
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
    for (const Tensor& p : group.params()) {
      const Tensor g = p.grad();
      if (!g.defined()) continue;  // no gradient: skipped, as PyTorch
      nn::StateDict& st = mutable_state(p);
      const bool fresh = st.empty();
      // New state is kept only once the update has succeeded.
      Tensor step_t = fresh ? scalar_tensor(int64_t(0), kInt64) : st["step"];
      Tensor exp_avg = fresh ? zeros_like(p) : st["exp_avg"];
      Tensor exp_avg_sq = fresh ? zeros_like(p) : st["exp_avg_sq"];
      const int64_t step = step_t.item<int64_t>() + 1;
      const AdamStepArgs args =
          decoupled ? step_args(static_cast<const AdamOptionsFor<true>&>(group.options()), step)
                    : step_args(static_cast<const AdamOptionsFor<false>&>(group.options()), step);
      Tensor max_exp_avg_sq;
      const bool new_max = args.amsgrad && !st.contains("max_exp_avg_sq");
      if (args.amsgrad) max_exp_avg_sq = new_max ? zeros_like(p) : st["max_exp_avg_sq"];
      tt::detail::adam_step_(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, args);
      step_t.fill_(step);
      if (fresh) {
        st.insert("step", step_t);
        st.insert("exp_avg", exp_avg);
        st.insert("exp_avg_sq", exp_avg_sq);
      }
      if (new_max) st.insert("max_exp_avg_sq", max_exp_avg_sq);
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
