// nn::Module: the base of every layer. A module owns named parameters (tensors to train),
// named buffers (state that is saved but not trained, such as a mask) and named child modules;
// everything else — walking the tree with dotted names, train/eval, moving to a dtype or
// device, state_dict save/load, printing — is written once here. As in LibTorch:
//
//   struct Net : tt::nn::Module {
//     Net() {
//       fc1 = register_module("fc1", std::make_shared<tt::nn::Linear>(784, 256));
//       fc2 = register_module("fc2", std::make_shared<tt::nn::Linear>(256, 10));
//     }
//     tt::Tensor forward(const tt::Tensor& x) { return fc2->forward(tt::relu(fc1->forward(x))); }
//     std::shared_ptr<tt::nn::Linear> fc1, fc2;
//   };
//
// Modules are shared through std::shared_ptr; a registered tensor is a handle (tensor.h), so the
// member `weight` and the entry "weight" are the same tensor. Each subclass declares its own
// forward(); Module has none, because signatures differ (Sequential erases them for its items).
// Not here: hooks on modules, parameter sharing checks, lazy modules.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <unordered_set>
#include <vector>

#include "tinytorch/core/ordered_dict.h"
#include "tinytorch/core/tensor.h"

namespace tt::nn {

// Dotted name -> tensor, in registration order: "fc1.weight", "blocks.0.attn.q_proj.bias", ...
using StateDict = OrderedDict<Tensor>;

// What a non-strict load_state_dict skipped.
struct LoadResult {
  std::vector<std::string> missing_keys;     // in the module, not in the state dict
  std::vector<std::string> unexpected_keys;  // in the state dict, not in the module
};

// While one is alive, every module behaves ON THIS THREAD as after eval() (is_training() is
// false: dropout off) without any module's flag being changed, so other threads using the same
// modules keep their mode. GPT::generate runs under one (Note [threads] in autograd/node.cpp).
// Nests; one thread's guard never affects another thread.
class EvalModeGuard {
 public:
  EvalModeGuard();
  ~EvalModeGuard();
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;
  // True on a thread inside at least one EvalModeGuard.
  static bool is_active();

 private:
  bool prev_;
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  Module() = default;
  // `name` overrides the printed type name (by default the C++ class name, without namespaces).
  explicit Module(std::string name) : name_(std::move(name)) {}
  virtual ~Module() = default;

  // The type name shown by operator<<: "Linear", "Sequential", or your class's name.
  std::string name() const;

  // --- registration -----------------------------------------------------------------------
  // Registers `t` as a trainable parameter (sets requires_grad unless requires_grad is false)
  // and returns the stored handle. An undefined tensor reserves the name (e.g. "bias" when a
  // layer has none) and is skipped by parameters() and state_dict().
  Tensor& register_parameter(std::string name, Tensor t, bool requires_grad = true);
  // Makes the registered parameter `name` refer to `t` instead (the old tensor is dropped from the
  // module) and returns the stored handle. This is how two layers share one tensor, as PyTorch's
  // `lm_head.weight = wte.weight`:  head->weight = head->replace_parameter("weight", emb->weight);
  // Throws tt::Error when `name` is not a parameter of this module.
  Tensor& replace_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  // Registers state that belongs to the module and is saved with it, but is not trained.
  Tensor& register_buffer(std::string name, Tensor t);
  // Registers a child module and returns it, so the call can initialize a member.
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    register_child(std::move(name), module);
    return module;
  }

  // --- walking the tree -------------------------------------------------------------------
  // A tensor registered in several places (tied weights, a layer used twice) is listed once,
  // under the first name it is reached by; state_dict() lists every name.
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<Tensor> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  const OrderedDict<std::shared_ptr<Module>>& named_children() const { return children_; }
  // This module and every descendant, depth first; the root's name is "".
  OrderedDict<std::shared_ptr<Module>> named_modules();
  // Calls fn on every descendant, then on this module (as PyTorch's Module.apply).
  void apply(const std::function<void(Module&)>& fn);

  // --- modes and conversion ---------------------------------------------------------------
  // Training mode (the default) turns dropout on; eval() turns it off. Recursive. Changing the
  // mode of a module another thread is using is a race: use EvalModeGuard there instead.
  virtual void train(bool on = true);
  void eval() { train(false); }
  // How the module behaves on this thread: its flag, unless an EvalModeGuard is active here.
  bool is_training() const { return training_ && !EvalModeGuard::is_active(); }
  // Moves parameters, their gradients and buffers to a device, in place: every handle to a
  // parameter (a member, parameters(), an optimizer) sees the new data, as in PyTorch, and each
  // gradient moves with its parameter. All or nothing: if any conversion fails (no such device,
  // out of memory), nothing has changed. A device this build or machine cannot use is a
  // DeviceError ("Module::to: no CUDA device is available, ..."). An optimizer's buffers follow
  // their parameter at its next step (optim/optimizer.h).
  void to(Device device);
  // Converts floating-point parameters, gradients and buffers to `dtype`; integer and bool
  // buffers are kept as they are (as PyTorch does).
  void to(ScalarType dtype);
  void to(Device device, ScalarType dtype);
  // set_to_none = true (the default, as PyTorch's) drops the gradients; false zeroes them.
  void zero_grad(bool set_to_none = true);

  // --- checkpoints ------------------------------------------------------------------------
  // Every parameter then every buffer of this module, then each child's, under dotted names.
  // The tensors are detached handles on the module's own storage (no copy).
  StateDict state_dict() const;
  // Copies values from `state` into the module's tensors, converting dtype and device as PyTorch
  // does (any dtype: an int64 or bool tensor loads into a float32 parameter, float64 is rounded).
  // Checks everything before writing anything: with strict = true a missing or unexpected key
  // is an error; a shape mismatch always is (a ShapeError when it is the only problem; otherwise
  // a tt::Error listing them all). On error nothing changes.
  LoadResult load_state_dict(const StateDict& state, bool strict = true);

  // Number of parameter elements (all, or only those that require grad).
  int64_t num_parameters(bool only_trainable = false) const;

  // --- printing ---------------------------------------------------------------------------
  // The text inside the parentheses: "in_features=3, out_features=4, bias=true".
  virtual std::string extra_repr() const { return ""; }
  // PyTorch's layout: one line per child, indented, with each child's parameter count, and the
  // totals at the end of the top-level module.
  virtual void pretty_print(std::ostream& os, int indent = 0) const;

 private:
  void register_child(std::string name, std::shared_ptr<Module> module);
  void collect(const std::string& prefix, bool recurse, bool params, OrderedDict<Tensor>& out,
               std::unordered_set<const TensorImpl*>& seen) const;
  void convert(const std::function<Tensor(const Tensor&)>& fn);

  std::string name_;
  OrderedDict<Tensor> parameters_;
  OrderedDict<Tensor> buffers_;
  OrderedDict<std::shared_ptr<Module>> children_;
  bool training_ = true;
};

// Prints the module tree (Module::pretty_print).
std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace tt::nn
