// Optimizer: the base of SGD, Adam and AdamW, spelled as LibTorch's torch::optim::Optimizer.
//
//   tt::optim::SGD opt(model.parameters(), tt::optim::SGDOptions(0.1).momentum(0.9));
//   for (...) { opt.zero_grad(); Tensor loss = ...; loss.backward(); opt.step(); }
//
// Parameters live in parameter groups, each with its own options (a copy of the optimizer's
// defaults when the group brings none):
//
//   opt.add_param_group({head->parameters(), tt::optim::SGDOptions(0.01)});
//   opt.param_groups()[1].options().lr(0.001);   // what the schedulers (lr_scheduler.h) do
//
// step() updates every parameter that has a gradient and skips the others (as PyTorch); the
// per-parameter state (momentum buffers, moments, step counts) is created at a parameter's first
// update. The arithmetic is one multi-tensor step per group (ops/optim_step.h: one launch per
// device and dtype on a GPU, the fused kernel per parameter on the CPU). Options are checked as
// PyTorch checks them, when a group is added and again before each step.
// Devices: a parameter's buffers (momentum_buffer, exp_avg, ...) live on its device: they are
// created there, converted there by load_state_dict, and follow it when the model is moved after
// some steps (Module::to keeps the parameter objects, so the state stays attached). The step
// count is a 0-d int64 tensor on the parameter's device (PyTorch's "capturable" mode): the kernel
// computes the bias corrections from it and increments it, so a step reads nothing back from a GPU
// and can be captured in a CUDA graph (docs/gpu_training_step.md). A loaded count starts on the
// CPU and moves to the parameter's device at its next step.
// Not here: closures for step(), sparse gradients, differentiable mode.
//
// Note [optimizer state dict]: state_dict() is a flat nn::StateDict, so a checkpoint writer can
// store it beside a model's (safetensors holds only named tensors). Parameters are numbered
// 0, 1, ... group by group, in the order of parameters() (PyTorch's numbering), and the keys are
//
//   state.<i>.step              0-d int64: updates made to parameter i (Adam, AdamW)
//   state.<i>.<buffer>          parameter i's shape: momentum_buffer (SGD with momentum),
//                               exp_avg, exp_avg_sq, max_exp_avg_sq (Adam/AdamW, the last with
//                               amsgrad)
//   param_groups.<g>.params     int64 [n_g]: the numbers of the parameters of group g
//   param_groups.<g>.<option>   hyperparameters under PyTorch's names: 0-d float64 numbers (lr,
//                               momentum, eps, ...), flags as 0-d float64 0/1 (nesterov,
//                               amsgrad, maximize), betas as float64 [2]
//
// A parameter that has never been updated has no state.<i> entries. The state tensors are the
// optimizer's own (handles, as Module::state_dict): clone them for a snapshot that later steps
// do not change. load_state_dict() maps entries to parameters by position, as PyTorch does: the
// optimizer must have the same groups of the same sizes, and each state tensor its parameter's
// shape. It checks everything first and changes nothing on error; then it copies the state
// (converted to each parameter's dtype and device) and the hyperparameters of every group.
#pragma once

#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tinytorch/core/tensor.h"
#include "tinytorch/nn/module.h"

namespace tt::optim {

// The options of one optimizer (SGDOptions, AdamOptions, AdamWOptions). Each has chainable
// setters and same-name getters; these virtuals are what the base class and schedulers need.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  // The class's name, for messages: "SGDOptions".
  virtual const char* name() const = 0;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  // The learning rate, which every optimizer has (LibTorch's virtuals).
  virtual double get_lr() const = 0;
  virtual void set_lr(double v) = 0;
  // The same, spelled as each options class spells it (which hides these with its own types).
  double lr() const { return get_lr(); }
  OptimizerOptions& lr(double v) {
    set_lr(v);
    return *this;
  }
  // Throws tt::Error, naming `optimizer`, when a value is out of the range PyTorch accepts.
  virtual void validate(const std::string& optimizer) const = 0;
  // The hyperparameters as state-dict tensors under PyTorch's names (Note [optimizer state dict]).
  virtual nn::StateDict to_state() const = 0;
  // Sets every hyperparameter from entries named as to_state()'s; throws tt::Error on a missing
  // key or a malformed value (the object may then be partly set: use it on a clone).
  virtual void from_state(const nn::StateDict& state) = 0;
};

// Parameters that share options. Copies are deep (the options are cloned).
class OptimizerParamGroup {
 public:
  // The optimizer's defaults apply (add_param_group fills them in).
  OptimizerParamGroup(std::vector<Tensor> params);  // implicit, as LibTorch's
  OptimizerParamGroup(std::vector<Tensor> params, const OptimizerOptions& options);
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options);
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  bool has_options() const { return options_ != nullptr; }
  // Throws when the group has no options (only before it is added to an optimizer).
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // "SGD", "Adam", "AdamW".
  const std::string& name() const { return name_; }

  // Updates every parameter that has a gradient; the others are skipped and get no state.
  virtual void step() = 0;
  // set_to_none = true (the default, as LibTorch and PyTorch 2) drops the gradients;
  // false zeroes them in place (detaching a gradient that carries a graph first).
  void zero_grad(bool set_to_none = true);

  // Adds parameters with their own options, or a copy of defaults() when the group has none.
  // Every parameter must be a floating-point leaf and appear only once in the optimizer (one that
  // does not require grad, a frozen layer's, is accepted and, never getting a gradient, skipped); the options must be this optimizer's kind and valid. On error nothing changes.
  void add_param_group(const OptimizerParamGroup& group);
  std::vector<OptimizerParamGroup>& param_groups() { return groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return groups_; }
  // The options of groups added without their own.
  OptimizerOptions& defaults() { return *defaults_; }
  const OptimizerOptions& defaults() const { return *defaults_; }

  // Every parameter, group by group: parameter i here is "state.<i>" in state_dict().
  std::vector<Tensor> parameters() const;
  // Number of parameters (tensors) in all groups.
  size_t size() const;
  // The state of one parameter, by short name ("exp_avg", "step", ...): empty before its first
  // update. Throws when `param` is not one of this optimizer's parameters.
  const nn::StateDict& state(const Tensor& param) const;

  // See Note [optimizer state dict].
  nn::StateDict state_dict() const;
  void load_state_dict(const nn::StateDict& state_dict);

 protected:
  // `defaults` must be valid; `groups` must hold at least one parameter in all.
  Optimizer(std::string name, const std::vector<OptimizerParamGroup>& groups,
            std::unique_ptr<OptimizerOptions> defaults);

  // The state of `param`, created empty on first use; buffers left on another device (the model
  // was moved after some steps) are moved to the parameter's device first.
  nn::StateDict& mutable_state(const Tensor& param);
  // Checks every group's options; step() calls it before updating anything.
  void check_options() const;

  // The keys a parameter's state may hold under a group's options, for load_state_dict. Every
  // tensor but "step" (a 0-d count) has the parameter's shape.
  struct StateKeys {
    std::vector<std::string> required, optional;
  };
  virtual StateKeys state_keys(const OptimizerOptions& options) const = 0;

 private:
  using ParamState = std::unordered_map<const TensorImpl*, nn::StateDict>;  // by parameter
  struct LoadPlan;

  void check_new_group(const OptimizerParamGroup& group) const;
  // load_state_dict's phases (optimizer.cpp): validate (every problem in one tt::Error, nothing
  // changed), parse (the new state, built aside), commit (swaps it in, cannot throw).
  LoadPlan validate_state_dict(const nn::StateDict& state_dict) const;
  ParamState parse_state(const LoadPlan& plan) const;
  void commit_state(LoadPlan& plan, ParamState state) noexcept;

  std::string name_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<OptimizerParamGroup> groups_;
  ParamState state_;
};

namespace detail {
// Helpers for OptimizerOptions::to_state / from_state.
Tensor hyper_tensor(double v);  // 0-d float64
double read_hyper(const nn::StateDict& s, const std::string& key);  // one finite or infinite number
bool read_flag(const nn::StateDict& s, const std::string& key);     // 0 or 1
std::tuple<double, double> read_pair(const nn::StateDict& s, const std::string& key);  // float [2]
}  // namespace detail

}  // namespace tt::optim
