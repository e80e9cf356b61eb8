// SGD: option checks and state per parameter; the update of a group is one multi-tensor step
// (ops/optim_step.h: one launch per device and dtype on a GPU, backend/cuda/optimizer.cu).
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
    SgdStepArgs args;
    args.lr = o.lr();
    args.momentum = o.momentum();
    args.dampening = o.dampening();
    args.weight_decay = o.weight_decay();
    args.nesterov = o.nesterov();
    args.maximize = o.maximize();
    // One multi-tensor step per group (one launch per device and dtype on a GPU).
    std::vector<SgdParamState> list;
    for (const Tensor& p : group.params()) {
      const Tensor g = p.grad();
      if (!g.defined()) continue;  // no gradient: skipped, as PyTorch
      SgdParamState e;
      e.param = p;
      e.grad = g;
      if (args.momentum != 0) {
        const Tensor* kept = mutable_state(p).find("momentum_buffer");
        e.first_step = kept == nullptr;  // the kernel starts the buffer as the gradient
        e.momentum_buf = kept ? *kept : empty_like(p);
      }
      list.push_back(e);
    }
    tt::detail::sgd_step_multi_(list, args);
    for (const SgdParamState& e : list)
      if (e.first_step) mutable_state(e.param).insert("momentum_buffer", e.momentum_buf);
  }
  // TT_EXERCISE_END
}

}  // namespace tt::optim
