// nn::Module: registration, tree walks with dotted names, modes, conversion, state dicts and
// printing. Composes tensor ops only.
#include "tinytorch/nn/module.h"

#include <cxxabi.h>

#include <cstdlib>
#include <sstream>
#include <typeinfo>
#include <unordered_set>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/ops/copy.h"

namespace tt::nn {

namespace {
thread_local bool eval_mode_forced = false;  // per thread, as grad mode (autograd/grad_mode.cpp)
}  // namespace

EvalModeGuard::EvalModeGuard() : prev_(eval_mode_forced) { eval_mode_forced = true; }
EvalModeGuard::~EvalModeGuard() { eval_mode_forced = prev_; }
bool EvalModeGuard::is_active() { return eval_mode_forced; }

namespace {

void check_name(const std::string& name, const char* what) {
  TT_CHECK(!name.empty(), "Module::", what, ": the name must not be empty");
  TT_CHECK(name.find('.') == std::string::npos, "Module::", what, ": the name must not contain '.', got \"",
           name, "\"");
}

std::string demangled_type_name(const std::type_info& type) {
  int status = 0;
  char* raw = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string full = (status == 0 && raw) ? raw : type.name();
  std::free(raw);
  size_t colon = full.rfind("::");
  return colon == std::string::npos ? full : full.substr(colon + 2);
}

// 1234567 -> "1,234,567"
std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string Module::name() const { return name_.empty() ? demangled_type_name(typeid(*this)) : name_; }

Tensor& Module::register_parameter(std::string name, Tensor t, bool requires_grad) {
  check_name(name, "register_parameter");
  TT_CHECK(!buffers_.contains(name) && !children_.contains(name), "Module::register_parameter: \"", name,
           "\" is already a buffer or a child module");
  TT_CHECK(!parameters_.contains(name), "Module::register_parameter: \"", name, "\" is already a parameter");
  if (t.defined()) {
    TT_CHECK(t.is_leaf(), "Module::register_parameter: \"", name, "\" must be a leaf tensor (use detach())");
    t.requires_grad_(requires_grad);  // checked above: nothing has changed if this throws
  }
  return parameters_.insert(std::move(name), std::move(t));
}

Tensor& Module::replace_parameter(const std::string& name, Tensor t, bool requires_grad) {
  Tensor* slot = parameters_.find(name);
  TT_CHECK(slot != nullptr, "Module::replace_parameter: \"", name, "\" is not a parameter of ", this->name());
  if (t.defined()) {
    TT_CHECK(t.is_leaf(), "Module::replace_parameter: \"", name, "\" must be a leaf tensor (use detach())");
    t.requires_grad_(requires_grad);
  }
  return *slot = std::move(t);
}

Tensor& Module::register_buffer(std::string name, Tensor t) {
  check_name(name, "register_buffer");
  TT_CHECK(!parameters_.contains(name) && !children_.contains(name), "Module::register_buffer: \"", name,
           "\" is already a parameter or a child module");
  // A buffer is state, not part of a graph: one computed by ops is kept detached.
  if (t.defined() && !t.is_leaf()) t = t.detach();
  return buffers_.insert(std::move(name), std::move(t));
}

void Module::register_child(std::string name, std::shared_ptr<Module> module) {
  check_name(name, "register_module");
  TT_CHECK(module != nullptr, "Module::register_module: \"", name, "\" is a null module");
  TT_CHECK(module.get() != this, "Module::register_module: a module cannot be its own child");
  // A child whose subtree holds this module would make every walk of the tree endless.
  std::function<bool(const Module&)> contains_this = [&](const Module& m) {
    for (const auto& [n, c] : m.children_)
      if (c.get() == this || contains_this(*c)) return true;
    return false;
  };
  TT_CHECK(!contains_this(*module), "Module::register_module: \"", name,
           "\" contains this module, which would make the module tree a cycle");
  TT_CHECK(!parameters_.contains(name) && !buffers_.contains(name), "Module::register_module: \"", name,
           "\" is already a parameter or a buffer");
  children_.insert(std::move(name), std::move(module));
}

// Lists each tensor once, under the first name it is reached by: a weight shared by two layers
// (tied embeddings, a layer used twice) must be stepped once by an optimizer, as in PyTorch.
void Module::collect(const std::string& prefix, bool recurse, bool params, OrderedDict<Tensor>& out,
                     std::unordered_set<const TensorImpl*>& seen) const {
  for (const auto& [name, t] : params ? parameters_ : buffers_)
    if (t.defined() && seen.insert(t.unsafe_impl()).second) out.insert(prefix + name, t);
  if (!recurse) return;
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", true, params, out, seen);
}

OrderedDict<Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<Tensor> out;
  std::unordered_set<const TensorImpl*> seen;
  collect("", recurse, /*params=*/true, out, seen);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<Tensor> out;
  std::unordered_set<const TensorImpl*> seen;
  collect("", recurse, /*params=*/false, out, seen);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

OrderedDict<std::shared_ptr<Module>> Module::named_modules() {
  OrderedDict<std::shared_ptr<Module>> out;
  std::unordered_set<const Module*> seen{this};  // a module reached twice is listed once
  std::function<void(const std::string&, const std::shared_ptr<Module>&)> walk =
      [&](const std::string& prefix, const std::shared_ptr<Module>& m) {
        for (const auto& [name, child] : m->children_) {
          if (!seen.insert(child.get()).second) continue;
          std::string full = prefix.empty() ? name : prefix + "." + name;
          out.insert(full, child);
          walk(full, child);
        }
      };
  // The root is held by shared_ptr when it was made with make_shared; otherwise wrap it without
  // ownership (a module on the stack).
  std::shared_ptr<Module> self = weak_from_this().lock();
  if (!self) self = std::shared_ptr<Module>(this, [](Module*) {});
  out.insert("", self);
  walk("", self);
  return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [name, child] : children_) child->apply(fn);
  fn(*this);
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

// Two phases, so that a failure (out of memory on a device, say) leaves the module as it was:
// every new tensor is made first, then all are swapped in by set_data, which cannot fail on the
// leaves registration guarantees.
void Module::convert(const std::function<Tensor(const Tensor&)>& fn) {
  NoGradGuard no_grad;
  struct Change {
    Tensor target, data, grad;
  };
  std::vector<Change> changes;
  std::unordered_set<const TensorImpl*> seen;  // a shared tensor is converted once
  std::function<void(Module&)> plan = [&](Module& m) {
    for (auto& [name, p] : m.parameters_) {
      if (!p.defined() || !seen.insert(p.unsafe_impl()).second) continue;
      Tensor grad = p.grad();
      changes.push_back({p, fn(p), grad.defined() ? fn(grad) : Tensor()});
    }
    for (auto& [name, b] : m.buffers_)
      if (b.defined() && seen.insert(b.unsafe_impl()).second) changes.push_back({b, fn(b), Tensor()});
    for (auto& [name, child] : m.children_) plan(*child);
  };
  plan(*this);
  for (Change& c : changes) {
    c.target.set_data(c.data);
    if (c.grad.defined()) c.target.set_grad(c.grad);
  }
}

void Module::to(Device device) {
  check_device_available(device, "Module::to");  // a clear error even for a module with no tensors
  convert([&](const Tensor& t) { return t.to(device); });
}

void Module::to(ScalarType dtype) {
  TT_CHECK_DTYPE(is_floating_point(dtype), "Module::to: modules convert to floating-point dtypes only, got ", dtype);
  convert([&](const Tensor& t) { return t.is_floating_point() ? t.to(dtype) : t; });
}

void Module::to(Device device, ScalarType dtype) {
  TT_CHECK_DTYPE(is_floating_point(dtype), "Module::to: modules convert to floating-point dtypes only, got ", dtype);
  check_device_available(device, "Module::to");
  // One pass, so that it is all or nothing too; the dtype first, so a narrowing one moves fewer bytes.
  convert([&](const Tensor& t) { return (t.is_floating_point() ? t.to(dtype) : t).to(device); });
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      if (g.grad_fn()) {  // a gradient made with create_graph: cut it from its graph first
        g = g.detach();
        p.set_grad(g);
      }
      g.zero_();
    }
  }
}

StateDict Module::state_dict() const {
  StateDict out;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (const auto& [name, p] : m.parameters_)
      if (p.defined()) out.insert(prefix + name, p.detach());
    for (const auto& [name, b] : m.buffers_)
      if (b.defined()) out.insert(prefix + name, b.detach());
    for (const auto& [name, child] : m.children_) walk(*child, prefix + name + ".");
  };
  walk(*this, "");
  return out;
}

LoadResult Module::load_state_dict(const StateDict& state, bool strict) {
  StateDict own = state_dict();
  LoadResult result;
  std::vector<std::string> mismatched;
  bool only_shapes = true;  // every mismatch is a shape mismatch: a ShapeError; anything else a tt::Error
  // Phase 1 checks every entry and converts each source to its destination's dtype and device,
  // so that phase 2 is plain same-kind copies that cannot fail.
  std::vector<std::pair<Tensor, Tensor>> copies;  // (destination, converted source)
  NoGradGuard no_grad;
  for (const auto& [key, dst] : own) {
    const Tensor* src = state.find(key);
    if (!src) {
      result.missing_keys.push_back(key);
      continue;
    }
    std::ostringstream why;
    // Any dtype converts, as PyTorch's load_state_dict (param.copy_(input)) does: an int64 or bool
    // tensor loads into a float32 parameter, a float64 one is rounded to float32.
    if (!src->defined()) {
      why << key << ": the state dict holds an undefined tensor";
      only_shapes = false;
    } else if (src->shape() != dst.shape()) {
      why << key << ": shape " << src->shape() << " in the state dict, " << dst.shape() << " in the module";
    } else {
      try {
        detail::check_writable(dst, "load_state_dict");
        copies.emplace_back(dst, src->to(dst.options()));
      } catch (const Error& e) {
        why << key << ": " << e.what();
        only_shapes = false;
      }
    }
    if (!why.str().empty()) mismatched.push_back(why.str());
  }
  for (const auto& [key, t] : state)
    if (!own.contains(key)) result.unexpected_keys.push_back(key);

  bool key_problem = strict && (!result.missing_keys.empty() || !result.unexpected_keys.empty());
  if (key_problem || !mismatched.empty()) {
    std::ostringstream msg;
    msg << "load_state_dict: error(s) loading the state dict into " << name() << ", nothing was changed";
    auto list = [&](const char* title, const std::vector<std::string>& items, const char* sep) {
      if (items.empty()) return;
      msg << "\n  " << title << ": ";
      for (size_t i = 0; i < items.size(); ++i) msg << (i ? sep : "") << items[i];
    };
    if (strict) {
      list("missing keys", result.missing_keys, ", ");
      list("unexpected keys", result.unexpected_keys, ", ");
    }
    list("size or dtype mismatch", mismatched, "; ");
    if (!mismatched.empty() && !key_problem && only_shapes) TT_CHECK_SHAPE(false, msg.str());
    TT_CHECK(false, msg.str());
  }

  for (auto& [dst, src] : copies) copy_(dst, src);
  return result;
}

int64_t Module::num_parameters(bool only_trainable) const {
  int64_t n = 0;
  for (const Tensor& p : parameters())
    if (!only_trainable || p.requires_grad()) n += p.numel();
  return n;
}

void Module::pretty_print(std::ostream& os, int indent) const {
  os << name() << "(" << extra_repr();
  if (!children_.empty()) {
    os << "\n";
    std::string pad(indent + 2, ' ');
    for (const auto& [child_name, child] : children_) {
      os << pad << "(" << child_name << "): ";
      child->pretty_print(os, indent + 2);
      int64_t n = child->num_parameters();
      if (n > 0) os << "  # " << with_commas(n) << " params";
      os << "\n";
    }
    os << std::string(indent, ' ');
  }
  os << ")";
  if (indent == 0) {
    int64_t total = num_parameters(), trainable = num_parameters(true);
    os << "\nparameters: " << with_commas(total);
    if (trainable != total) os << " (" << with_commas(trainable) << " trainable)";
  }
}

std::ostream& operator<<(std::ostream& os, const Module& m) {
  m.pretty_print(os, 0);
  return os;
}

}  // namespace tt::nn
