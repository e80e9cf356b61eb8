// SGD: option checks and the per-parameter loop; the update itself is one fused kernel
// (ops/optim_step.h, backend/cpu/optimizer.cpp).
#include "tinytorch/optim/sgd.h"

#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/optim_step.h"

namespace tt::optim {

void SGDOptions::validate(const std::string& optimizer) const {
  TT_CHECK(lr_ >= 0, optimizer, ": invalid learning rate: ", lr_, " (must be >= 0)");
  TT_CHECK(momentum_ >= 0, optimizer, ": invalid momentum value: ", momentum_, " (must be >= 0)");
  TT_CHECK(weight_decay_ >= 0, optimizer, ": invalid weight_decay value: ", weight_decay_, " (must be >= 0)");
  TT_CHECK(!nesterov_ || (momentum_ > 0 && dampening_ == 0), optimizer,
           ": Nesterov momentum requires a momentum and zero dampening, got momentum ", momentum_,
           " and dampening ", dampening_);
}

nn::StateDict SGDOptions::to_state() const {
  nn::StateDict s;
  s.insert("lr", detail::hyper_tensor(lr_));
  s.insert("momentum", detail::hyper_tensor(momentum_));
  s.insert("dampening", detail::hyper_tensor(dampening_));
  s.insert("weight_decay", detail::hyper_tensor(weight_decay_));
  s.insert("nesterov", detail::hyper_tensor(nesterov_));
  s.insert("maximize", detail::hyper_tensor(maximize_));
  return s;
}

void SGDOptions::from_state(const nn::StateDict& s) {
  lr_ = detail::read_hyper(s, "lr");
  momentum_ = detail::read_hyper(s, "momentum");
  dampening_ = detail::read_hyper(s, "dampening");
  weight_decay_ = detail::read_hyper(s, "weight_decay");
  nesterov_ = detail::read_flag(s, "nesterov");
  maximize_ = detail::read_flag(s, "maximize");
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& defaults)
    : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

SGD::SGD(const std::vector<OptimizerParamGroup>& groups, const SGDOptions& defaults)
    : Optimizer("SGD", groups, defaults.clone()) {}

Optimizer::StateKeys SGD::state_keys(const OptimizerOptions& /*options*/) const {
  // A buffer may be absent even with momentum (a parameter not updated since momentum was
  // turned on): the next step starts it, as PyTorch does.
  return {{}, {"momentum_buffer"}};
}

void SGD::step() {
  // TT_EXERCISE_BEGIN(07, 2)
  check_options();
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
    for (const Tensor& p : group.params()) {
      const Tensor g = p.grad();
      if (!g.defined()) continue;  // no gradient: skipped, as PyTorch
      SgdStepArgs args;
      args.lr = o.lr();
      args.momentum = o.momentum();
      args.dampening = o.dampening();
      args.weight_decay = o.weight_decay();
      args.nesterov = o.nesterov();
      args.maximize = o.maximize();
      Tensor buf;
      if (args.momentum != 0) {
        nn::StateDict& st = mutable_state(p);
        const Tensor* kept = st.find("momentum_buffer");
        args.first_step = kept == nullptr;  // the kernel starts the buffer as the gradient
        buf = kept ? *kept : empty_like(p);
      }
      tt::detail::sgd_step_(p, g, buf, args);
      if (args.first_step) mutable_state(p).insert("momentum_buffer", buf);
    }
  }
  // TT_EXERCISE_END
}

}  // namespace tt::optim
