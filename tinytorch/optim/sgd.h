// SGD with momentum, dampening, Nesterov momentum and L2 weight decay, as torch.optim.SGD:
//
//   tt::optim::SGD opt(model.parameters(), tt::optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
//
// Per parameter with gradient g (-g with maximize):
//   d = g + weight_decay * p
//   buf = d at the first step, then momentum * buf + (1 - dampening) * d     (momentum > 0 only)
//   d = nesterov ? d + momentum * buf : buf
//   p = p - lr * d
// State: "momentum_buffer" (with momentum > 0), created at the parameter's first update.
// Cost: one pass reading p, g (and buf) and writing p (and buf): 3 (5) values moved per element.
#pragma once

#include "tinytorch/optim/optimizer.h"

namespace tt::optim {

struct SGDOptions : OptimizerOptions {
  // lr has no default, as in PyTorch.
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& lr(double v) {
    lr_ = v;
    return *this;
  }
  SGDOptions& momentum(double v) {
    momentum_ = v;
    return *this;
  }
  SGDOptions& dampening(double v) {
    dampening_ = v;
    return *this;
  }
  SGDOptions& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
  SGDOptions& nesterov(bool v) {
    nesterov_ = v;
    return *this;
  }
  SGDOptions& maximize(bool v) {
    maximize_ = v;
    return *this;
  }
  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  double weight_decay() const { return weight_decay_; }
  bool nesterov() const { return nesterov_; }
  bool maximize() const { return maximize_; }

  const char* name() const override { return "SGDOptions"; }
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<SGDOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  // lr >= 0, momentum >= 0, weight_decay >= 0; nesterov needs momentum > 0 and dampening 0.
  void validate(const std::string& optimizer) const override;
  nn::StateDict to_state() const override;
  void from_state(const nn::StateDict& state) override;

 private:
  double lr_;
  double momentum_ = 0, dampening_ = 0, weight_decay_ = 0;
  bool nesterov_ = false, maximize_ = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& defaults);
  SGD(const std::vector<OptimizerParamGroup>& groups, const SGDOptions& defaults);
  void step() override;

 protected:
  StateKeys state_keys(const OptimizerOptions& options) const override;
};

}  // namespace tt::optim
