// Adam and AdamW, as torch.optim.Adam / torch.optim.AdamW:
//
//   tt::optim::AdamW opt(model.parameters(), tt::optim::AdamWOptions(3e-4).betas({0.9, 0.95}));
//
// Per parameter with gradient g (-g with maximize), at step t = 1, 2, ...:
//   Adam:  g = g + weight_decay * p                  (L2 penalty folded into the gradient)
//   AdamW: p = p * (1 - lr * weight_decay)           (decoupled weight decay)
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
//   v_hat = amsgrad ? (vmax = max(vmax, v)) : v
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v_hat) / sqrt(1 - beta2^t) + eps)
// State: "step" (0-d int64, on the parameter's device), "exp_avg" (m), "exp_avg_sq" (v), "max_exp_avg_sq"
// (vmax, amsgrad).
// Cost: one pass reading p, g, m, v (vmax) and writing p, m, v (vmax): 7 (9) values moved per
// element, ~15 FLOPs, one sqrt and one division.
// The two differ only in where the decay goes and in the default weight_decay (0 vs 1e-2).
#pragma once

#include <tuple>

#include "tinytorch/optim/optimizer.h"

namespace tt::optim {

namespace detail {
// The options of Adam (kDecoupled = false) and AdamW (true); use the names AdamOptions and
// AdamWOptions below.
template <bool kDecoupled>
class AdamOptionsFor : public OptimizerOptions {
 public:
  explicit AdamOptionsFor(double lr = 1e-3) : lr_(lr) {}
  AdamOptionsFor& lr(double v) {
    lr_ = v;
    return *this;
  }
  AdamOptionsFor& betas(std::tuple<double, double> v) {
    betas_ = v;
    return *this;
  }
  AdamOptionsFor& eps(double v) {
    eps_ = v;
    return *this;
  }
  AdamOptionsFor& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
  AdamOptionsFor& amsgrad(bool v) {
    amsgrad_ = v;
    return *this;
  }
  AdamOptionsFor& maximize(bool v) {
    maximize_ = v;
    return *this;
  }
  double lr() const { return lr_; }
  std::tuple<double, double> betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool amsgrad() const { return amsgrad_; }
  bool maximize() const { return maximize_; }

  const char* name() const override { return kDecoupled ? "AdamWOptions" : "AdamOptions"; }
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamOptionsFor>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  // lr >= 0, eps >= 0, 0 <= beta1, beta2 < 1, weight_decay >= 0 (PyTorch's checks, in its order).
  void validate(const std::string& optimizer) const override;
  nn::StateDict to_state() const override;
  void from_state(const nn::StateDict& state) override;

 private:
  double lr_;
  std::tuple<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_ = kDecoupled ? 1e-2 : 0.0;
  bool amsgrad_ = false, maximize_ = false;
};

// What Adam and AdamW share: the step loop and the state layout.
class AdamBase : public Optimizer {
 protected:
  using Optimizer::Optimizer;
  void adam_step(bool decoupled);
  StateKeys state_keys(const OptimizerOptions& options) const override;
};
}  // namespace detail

using AdamOptions = detail::AdamOptionsFor<false>;
using AdamWOptions = detail::AdamOptionsFor<true>;

class Adam : public detail::AdamBase {
 public:
  explicit Adam(std::vector<Tensor> params, const AdamOptions& defaults = AdamOptions());
  explicit Adam(const std::vector<OptimizerParamGroup>& groups, const AdamOptions& defaults = AdamOptions());
  void step() override { adam_step(false); }
};

class AdamW : public detail::AdamBase {
 public:
  explicit AdamW(std::vector<Tensor> params, const AdamWOptions& defaults = AdamWOptions());
  explicit AdamW(const std::vector<OptimizerParamGroup>& groups, const AdamWOptions& defaults = AdamWOptions());
  void step() override { adam_step(true); }
};

}  // namespace tt::optim
