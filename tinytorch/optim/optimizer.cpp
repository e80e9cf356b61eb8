// Optimizer: parameter groups, zero_grad, and the flat state dict of Note [optimizer state dict].
#include "tinytorch/optim/optimizer.h"

#include <cmath>
#include <map>
#include <sstream>
#include <typeinfo>
#include <unordered_set>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/factory.h"

namespace tt::optim {

// --- OptimizerParamGroup -----------------------------------------------------------------------
OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params, const OptimizerOptions& options)
    : params_(std::move(params)), options_(options.clone()) {}
OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
    : params_(std::move(params)), options_(std::move(options)) {}
OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr) {}
OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
  }
  return *this;
}
OptimizerOptions& OptimizerParamGroup::options() {
  TT_CHECK(options_ != nullptr, "OptimizerParamGroup: this group has no options yet (an optimizer gives it a "
           "copy of its defaults when the group is added)");
  return *options_;
}
const OptimizerOptions& OptimizerParamGroup::options() const {
  return const_cast<OptimizerParamGroup*>(this)->options();
}

// --- Optimizer ---------------------------------------------------------------------------------
Optimizer::Optimizer(std::string name, const std::vector<OptimizerParamGroup>& groups,
                     std::unique_ptr<OptimizerOptions> defaults)
    : name_(std::move(name)), defaults_(std::move(defaults)) {
  TT_CHECK(defaults_ != nullptr, name_, ": no default options");
  defaults_->validate(name_);
  size_t total = 0;
  for (const auto& g : groups) total += g.params().size();
  TT_CHECK(total > 0, name_, ": got an empty parameter list");
  for (const auto& g : groups) add_param_group(g);
}

void Optimizer::check_new_group(const OptimizerParamGroup& group) const {
  const OptimizerOptions& options = group.has_options() ? group.options() : *defaults_;
  TT_CHECK(typeid(options) == typeid(*defaults_), name_, ": a parameter group's options must be ",
           defaults_->name(), ", got ", options.name());
  options.validate(name_);
  std::unordered_set<const TensorImpl*> seen;
  for (const auto& g : groups_)
    for (const Tensor& p : g.params()) seen.insert(p.unsafe_impl());
  const size_t gi = groups_.size();
  for (size_t j = 0; j < group.params().size(); ++j) {
    const Tensor& p = group.params()[j];
    TT_CHECK(p.defined(), name_, ": parameter ", j, " of group ", gi, " is an undefined tensor");
    TT_CHECK_DTYPE(p.is_floating_point(), name_, ": can only optimize floating-point tensors, but parameter ", j,
                   " of group ", gi, " has dtype ", p.dtype());
    TT_CHECK(p.is_leaf(), name_, ": can't optimize a non-leaf tensor (parameter ", j, " of group ", gi,
             " was computed by an op); pass the leaf it was computed from, or detach() it and call requires_grad_()");
    TT_CHECK(seen.insert(p.unsafe_impl()).second, name_, ": parameter ", j, " of group ", gi,
             " appears more than once in this optimizer (each parameter may be in one group, once)");
  }
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  check_new_group(group);
  OptimizerParamGroup added = group;
  if (!added.has_options()) added.set_options(defaults_->clone());
  groups_.push_back(std::move(added));
}

void Optimizer::check_options() const {
  for (size_t g = 0; g < groups_.size(); ++g) {
    const OptimizerOptions& options = groups_[g].options();
    TT_CHECK(typeid(options) == typeid(*defaults_), name_, ": the options of parameter group ", g, " must be ",
             defaults_->name(), ", got ", options.name());
    options.validate(name_);
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (auto& group : groups_) {
    for (const Tensor& p : group.params()) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
        continue;
      }
      if (g.grad_fn()) {  // a gradient made with create_graph: keep the values, drop the graph
        g = g.detach();
        p.set_grad(g);
      }
      g.zero_();
    }
  }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const auto& g : groups_) out.insert(out.end(), g.params().begin(), g.params().end());
  return out;
}

size_t Optimizer::size() const {
  size_t n = 0;
  for (const auto& g : groups_) n += g.params().size();
  return n;
}

const nn::StateDict& Optimizer::state(const Tensor& param) const {
  static const nn::StateDict kEmpty;
  bool mine = false;
  for (const auto& g : groups_)
    for (const Tensor& p : g.params()) mine = mine || p.is_same(param);
  TT_CHECK(mine, name_, ": state: the tensor is not one of this optimizer's parameters");
  auto it = state_.find(param.unsafe_impl());
  return it == state_.end() ? kEmpty : it->second;
}

nn::StateDict& Optimizer::mutable_state(const Tensor& param) {
  nn::StateDict& st = state_[param.unsafe_impl()];
  for (auto& [key, t] : st) {
    if (key == "step" || !t.defined() || t.device() == param.device()) continue;
    NoGradGuard no_grad;
    t = t.to(param.device());
  }
  return st;
}

// --- state dicts (Note [optimizer state dict]) ---------------------------------------------------
nn::StateDict Optimizer::state_dict() const {
  nn::StateDict out;
  const std::vector<Tensor> params = parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = state_.find(params[i].unsafe_impl());
    if (it == state_.end()) continue;
    for (const auto& [key, t] : it->second) out.insert(tt::detail::concat("state.", i, ".", key), t);
  }
  int64_t first = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const int64_t n = int64_t(groups_[g].params().size());
    std::vector<int64_t> indices(n);
    for (int64_t k = 0; k < n; ++k) indices[k] = first + k;
    first += n;
    const std::string prefix = tt::detail::concat("param_groups.", g, ".");
    out.insert(prefix + "params", tensor(indices, Shape{n}));
    for (const auto& [key, t] : groups_[g].options().to_state()) out.insert(prefix + key, t);
  }
  return out;
}

// --- load_state_dict: validate, parse, commit ----------------------------------------------------
//
// Three phases, so that a bad dict changes nothing: validate reads the whole dict and lists every
// problem in one tt::Error; parse builds the new state aside (copies in each parameter's dtype
// and device); commit swaps it in and cannot throw.

namespace {

using Problems = std::vector<std::string>;

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// "12.rest" -> (12, "rest"); false unless a decimal number, a dot and a non-empty rest.
bool split_index(const std::string& s, size_t& index, std::string& rest) {
  size_t dot = s.find('.');
  if (dot == 0 || dot == std::string::npos || dot + 1 == s.size() || dot > 9) return false;
  for (size_t k = 0; k < dot; ++k)
    if (s[k] < '0' || s[k] > '9') return false;
  index = std::stoul(s.substr(0, dot));
  rest = s.substr(dot + 1);
  return true;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

// The count a state.<i>.step tensor holds, or -1 when it holds none: a 0-d number tensor with a
// whole value >= 0 (below 2^53, so exact as a double).
double step_count(const Tensor& t) {
  const double v = t.numel() == 1 && t.dim() == 0 && t.dtype() != kBool ? t.item<double>() : -1.0;
  return v >= 0 && v == std::floor(v) && v < 9.0e15 ? v : -1.0;
}

// A state tensor other than the step count fits its parameter: same shape, a floating-point dtype
// (converted to the parameter's when loaded).
bool fits_parameter(const Tensor& t, const Tensor& param) {
  return t.shape() == param.shape() && t.is_floating_point();
}

// The entries of the dict under a group's prefix ("param_groups.<g>."): its parameter numbers and
// its hyperparameters (keys without the prefix).
struct GroupEntries {
  const Tensor* indices = nullptr;
  nn::StateDict hyper;
};

GroupEntries group_entries(const nn::StateDict& state_dict, const std::string& prefix) {
  GroupEntries out;
  for (const auto& [key, t] : state_dict) {
    if (!starts_with(key, prefix)) continue;
    if (key == prefix + "params")
      out.indices = &t;
    else
      out.hyper.insert(key.substr(prefix.size()), t);
  }
  return out;
}

// param_groups.<g>.params must number the group's n parameters first, first + 1, ... (parameters
// are matched by position).
void check_group_indices(const Tensor* indices, const std::string& prefix, size_t g, size_t first, size_t n,
                         size_t num_groups, Problems& problems) {
  if (!indices) {
    problems.push_back(tt::detail::concat(prefix, "params is missing (the optimizer has ", num_groups,
                                          " parameter groups)"));
  } else if (!indices->defined() || indices->dtype() != kInt64 || indices->dim() != 1) {
    problems.push_back(tt::detail::concat(prefix, "params must be a 1-d int64 tensor"));
  } else if (size_t(indices->numel()) != n) {
    problems.push_back(tt::detail::concat(prefix, "params lists ", indices->numel(), " parameters, but group ", g,
                                          " of the optimizer has ", n));
  } else {
    std::vector<int64_t> got = indices->to_vector<int64_t>();
    for (size_t k = 0; k < n; ++k)
      if (got[k] != int64_t(first + k)) {
        problems.push_back(tt::detail::concat(prefix, "params must number the parameters ", first, "..",
                                              first + n - 1, " in order (parameters are matched by position)"));
        break;
      }
  }
}

// A group's options as the dict sets them: a clone of `current` read from `hyper` and validated;
// null when they cannot be read (the problem is listed). Keys the options do not know are listed
// as well.
std::unique_ptr<OptimizerOptions> read_group_options(const OptimizerOptions& current, const nn::StateDict& hyper,
                                                     const std::string& prefix, const std::string& optimizer,
                                                     Problems& problems) {
  auto options = current.clone();
  try {
    options->from_state(hyper);
    options->validate(optimizer);
    const nn::StateDict known = options->to_state();
    for (const auto& [key, t] : hyper)
      if (!known.contains(key)) problems.push_back(tt::detail::concat("unexpected key ", prefix, key));
    return options;
  } catch (const Error& e) {
    problems.push_back(tt::detail::concat(prefix, "*: ", e.what()));
    return nullptr;
  }
}

// The state.<i>.<key> entries by parameter number i (keys without the prefix); every key that is
// neither a group's nor a parameter's of this optimizer is listed.
std::map<size_t, nn::StateDict> param_entries(const nn::StateDict& state_dict, size_t num_groups, size_t num_params,
                                              Problems& problems) {
  std::map<size_t, nn::StateDict> out;
  for (const auto& [key, t] : state_dict) {
    size_t index = 0, g = 0;
    std::string rest;
    if (starts_with(key, "param_groups.")) {
      if (!split_index(key.substr(13), g, rest) || g >= num_groups)
        problems.push_back(tt::detail::concat("unexpected key ", key, " (the optimizer has ", num_groups,
                                              " parameter groups)"));
    } else if (!starts_with(key, "state.") || !split_index(key.substr(6), index, rest)) {
      problems.push_back(tt::detail::concat("unexpected key ", key));
    } else if (index >= num_params) {
      problems.push_back(tt::detail::concat("unexpected key ", key, " (the optimizer has ", num_params,
                                            " parameters)"));
    } else {
      out[index].insert_or_assign(rest, t);
    }
  }
  return out;
}

// The problems of one parameter's entries (prefix "state.<i>."): a required key missing, a key its
// group's options do not use, a malformed step count, a buffer that does not fit the parameter.
void check_param_entries(const nn::StateDict& entries, const std::vector<std::string>& required,
                         const std::vector<std::string>& optional, const Tensor& param, const std::string& prefix,
                         Problems& problems) {
  for (const auto& key : required)
    if (!entries.contains(key)) problems.push_back(tt::detail::concat(prefix, key, " is missing"));
  for (const auto& [key, t] : entries)
    if (!contains(required, key) && !contains(optional, key))
      problems.push_back(tt::detail::concat("unexpected key ", prefix, key));
  for (const auto* list : {&required, &optional}) {
    for (const auto& key : *list) {
      const Tensor* t = entries.find(key);
      if (!t) continue;
      if (!t->defined()) {
        problems.push_back(tt::detail::concat(prefix, key, " is an undefined tensor"));
      } else if (key == "step") {
        if (step_count(*t) < 0)
          problems.push_back(tt::detail::concat(prefix, "step must be a 0-d tensor holding a count >= 0, got shape ",
                                                t->shape(), " and dtype ", t->dtype()));
      } else if (!fits_parameter(*t, param)) {
        problems.push_back(tt::detail::concat(prefix, key, ": ", t->dtype(), " ", t->shape(), " in the state dict, "
                                              "the parameter is ", param.dtype(), " ", param.shape()));
      }
    }
  }
}

}  // namespace

// What validate_state_dict found in a dict without problems, for parse_state and commit_state.
struct Optimizer::LoadPlan {
  std::vector<std::unique_ptr<OptimizerOptions>> options;  // per group, its options as the dict sets them
  std::vector<size_t> group_of;                            // per parameter number, its group
  std::map<size_t, nn::StateDict> entries;                 // per parameter number, its state.<i>.* entries
};

void Optimizer::load_state_dict(const nn::StateDict& state_dict) {
  LoadPlan plan = validate_state_dict(state_dict);  // throws, listing every problem
  ParamState state = parse_state(plan);
  commit_state(plan, std::move(state));
}

Optimizer::LoadPlan Optimizer::validate_state_dict(const nn::StateDict& state_dict) const {
  Problems problems;
  const std::vector<Tensor> params = parameters();
  const size_t num_groups = groups_.size();
  LoadPlan plan;
  plan.options.resize(num_groups);
  plan.group_of.resize(params.size());

  // Hyperparameters and the parameter numbering of every group.
  size_t first = 0;
  for (size_t g = 0; g < num_groups; ++g) {
    const std::string prefix = tt::detail::concat("param_groups.", g, ".");
    const size_t n = groups_[g].params().size();
    for (size_t k = 0; k < n; ++k) plan.group_of[first + k] = g;
    const GroupEntries group = group_entries(state_dict, prefix);
    check_group_indices(group.indices, prefix, g, first, n, num_groups, problems);
    plan.options[g] = read_group_options(groups_[g].options(), group.hyper, prefix, name_, problems);
    first += n;
  }

  // Per-parameter state, checked against the keys its group's (new) options use.
  plan.entries = param_entries(state_dict, num_groups, params.size(), problems);
  for (const auto& [index, entries] : plan.entries) {
    const OptimizerOptions* options = plan.options[plan.group_of[index]].get();
    if (!options) continue;  // that group's problem is already listed
    const StateKeys keys = state_keys(*options);
    check_param_entries(entries, keys.required, keys.optional, params[index],
                        tt::detail::concat("state.", index, "."), problems);
  }

  if (!problems.empty()) {
    std::ostringstream msg;
    msg << name_ << ": load_state_dict: " << problems.size() << " problem(s), nothing was changed";
    for (const auto& p : problems) msg << "\n  " << p;
    throw Error(msg.str());
  }
  return plan;
}

Optimizer::ParamState Optimizer::parse_state(const LoadPlan& plan) const {
  const std::vector<Tensor> params = parameters();
  ParamState out;
  NoGradGuard no_grad;
  for (const auto& [index, entries] : plan.entries) {
    const Tensor& p = params[index];
    const StateKeys keys = state_keys(*plan.options[plan.group_of[index]]);
    nn::StateDict loaded;  // in the order of `keys`, whatever the order of the file
    for (const auto* list : {&keys.required, &keys.optional}) {
      for (const auto& key : *list) {
        const Tensor* t = entries.find(key);
        if (!t) continue;
        if (key == "step") {
          loaded.insert(key, scalar_tensor(int64_t(step_count(*t)), kInt64));
        } else {
          Tensor copy = empty_like(p);
          copy_(copy, *t);
          loaded.insert(key, copy);
        }
      }
    }
    out[p.unsafe_impl()] = std::move(loaded);
  }
  return out;
}

void Optimizer::commit_state(LoadPlan& plan, ParamState state) noexcept {
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].set_options(std::move(plan.options[g]));
  state_ = std::move(state);
}

// --- hyperparameter helpers ---------------------------------------------------------------------
namespace detail {

Tensor hyper_tensor(double v) { return scalar_tensor(v, kFloat64); }

double read_hyper(const nn::StateDict& s, const std::string& key) {
  const Tensor* t = s.find(key);
  TT_CHECK(t != nullptr, "the hyperparameter \"", key, "\" is missing");
  TT_CHECK(t->defined(), "the hyperparameter \"", key, "\" is an undefined tensor");
  TT_CHECK(t->dim() == 0 && t->dtype() != kBool, "the hyperparameter \"", key,
           "\" must be a 0-d number tensor, got ", t->dtype(), " ", t->shape());
  return t->item<double>();
}

bool read_flag(const nn::StateDict& s, const std::string& key) {
  const double v = read_hyper(s, key);
  TT_CHECK(v == 0 || v == 1, "the flag \"", key, "\" must be 0 or 1, got ", v);
  return v == 1;
}

std::tuple<double, double> read_pair(const nn::StateDict& s, const std::string& key) {
  const Tensor* t = s.find(key);
  TT_CHECK(t != nullptr, "the hyperparameter \"", key, "\" is missing");
  TT_CHECK(t->defined() && t->is_floating_point() && t->shape() == Shape{2}, "the hyperparameter \"", key,
           "\" must be a float tensor of shape [2]");
  std::vector<double> v = t->to_vector<double>();
  return {v[0], v[1]};
}

}  // namespace detail

}  // namespace tt::optim
