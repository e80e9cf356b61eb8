// The fused optimizer steps: checks, then one Backend kernel per parameter, or one per device and
// dtype for the multi-tensor steps (see optim_step.h).
#include "tinytorch/ops/optim_step.h"

#include <initializer_list>
#include <map>
#include <tuple>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/ops/copy.h"

namespace tt::detail {

namespace {

void check_param_and_grad(const Tensor& param, const Tensor& grad, const char* op) {
  TT_CHECK(param.defined(), op, ": the parameter is an undefined tensor");
  TT_CHECK(grad.defined(), op, ": the gradient is an undefined tensor");
  TT_CHECK_DTYPE(param.is_floating_point(), op, ": parameters must be float32, float64 or bfloat16, got ",
                 param.dtype());
  TT_CHECK_DTYPE(grad.dtype() == param.dtype(), op, ": the gradient must have the parameter's dtype, got ",
                 grad.dtype(), " for a ", param.dtype(), " parameter");
  check_same_device(op, {&param, &grad});
  TT_CHECK_SHAPE(grad.shape() == param.shape(), op, ": the gradient must have the parameter's shape, got ",
                 grad.shape(), " for a parameter of shape ", param.shape());
  check_writable(param, op);
}

// An optimizer state tensor (momentum buffer, moments): the parameter's shape, dtype and
// device, contiguous, and memory of its own.
void check_state(const Tensor& param, const Tensor& s, const char* op, const char* name) {
  TT_CHECK(s.defined(), op, ": the state tensor ", name, " is undefined");
  TT_CHECK_DTYPE(s.dtype() == param.dtype(), op, ": ", name, " must have the parameter's dtype, got ", s.dtype(),
                 " for a ", param.dtype(), " parameter");
  check_same_device(op, {&param, &s});
  TT_CHECK_SHAPE(s.shape() == param.shape(), op, ": ", name, " must have the parameter's shape, got ", s.shape(),
                 " for a parameter of shape ", param.shape());
  TT_CHECK(s.is_contiguous(), op, ": ", name, " must be contiguous, got strides ", s.strides());
  TT_CHECK(!may_overlap(s, param), op, ": ", name, " shares memory with the parameter");
}

// The gradient as the kernel reads it: contiguous, and not sharing memory with a written tensor
// (the kernels' pointers are __restrict).
Tensor kernel_grad(const Tensor& grad, std::initializer_list<const Tensor*> written) {
  Tensor g = contiguous(grad);
  for (const Tensor* w : written)
    if (w->defined() && may_overlap(g, *w)) return clone(grad);
  return g;
}

// Runs `kernel` on a contiguous version of `param` and writes the result back when that was a
// copy; bumps the parameter's version either way.
template <typename F>
void with_contiguous_param(const Tensor& param, F kernel) {
  Tensor p = contiguous(param);
  kernel(p);
  if (p.is_same(param)) {
    param.bump_version();
  } else {
    Tensor dst = param;
    copy_(dst, p);  // bumps the version
  }
}

// Parameter i's step counter: a 0-d int64 tensor of its own on the parameter's device.
void check_step(const Tensor& param, const Tensor& step, const char* op) {
  TT_CHECK(step.defined(), op, ": the step counter is undefined");
  TT_CHECK_DTYPE(step.dtype() == kInt64 && step.dim() == 0, op, ": the step counter must be a 0-d int64 tensor, got ",
                 step.dtype(), " ", step.shape());
  check_same_device(op, {&param, &step});
  TT_CHECK(!may_overlap(step, param), op, ": the step counter shares memory with the parameter");
}

// Indices of `params` grouped by (device, dtype), in order of first appearance.
template <typename State>
std::vector<std::vector<size_t>> by_device_and_dtype(const std::vector<State>& params) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::tuple<int, int, int>, size_t> where;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i].param;
    const auto key = std::make_tuple(int(p.device().type), int(p.device().index), int(p.dtype()));
    auto it = where.find(key);
    if (it == where.end()) {
      it = where.emplace(key, groups.size()).first;
      groups.emplace_back();
    }
    groups[it->second].push_back(i);
  }
  return groups;
}

// Contiguous stand-ins for the non-contiguous parameters of a multi-tensor step, copied back after.
struct ContiguousParams {
  std::vector<std::pair<Tensor, Tensor>> copies;  // (parameter, contiguous copy)
  Tensor take(const Tensor& param) {
    Tensor p = contiguous(param);
    if (!p.is_same(param)) copies.emplace_back(param, p);
    return p;
  }
  void finish(const std::vector<Tensor>& params) {
    for (auto& [param, p] : copies) {
      Tensor dst = param;
      copy_(dst, p);  // bumps the version
    }
    for (const Tensor& param : params) {
      bool copied = false;
      for (auto& c : copies) copied = copied || c.first.is_same(param);
      if (!copied) param.bump_version();
    }
  }
};

}  // namespace

void sgd_step_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, const SgdStepArgs& args) {
  const char* op = "sgd_step";
  check_param_and_grad(param, grad, op);
  const bool use_buf = args.momentum != 0;
  if (use_buf) check_state(param, momentum_buf, op, "momentum_buffer");
  const Tensor buf = use_buf ? momentum_buf : Tensor();
  NoGradGuard no_grad;
  with_contiguous_param(param, [&](const Tensor& p) {
    Tensor g = kernel_grad(grad, {&p, &buf});
    backend_for(param.device()).sgd_step(p, g, buf, args);
  });
  if (use_buf) buf.bump_version();
}

void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const Tensor& max_exp_avg_sq, const AdamStepArgs& args) {
  const char* op = args.decoupled ? "adamw_step" : "adam_step";
  check_param_and_grad(param, grad, op);
  check_state(param, exp_avg, op, "exp_avg");
  check_state(param, exp_avg_sq, op, "exp_avg_sq");
  TT_CHECK(!may_overlap(exp_avg, exp_avg_sq), op, ": exp_avg and exp_avg_sq share memory");
  if (args.amsgrad) {
    check_state(param, max_exp_avg_sq, op, "max_exp_avg_sq");
    TT_CHECK(!may_overlap(max_exp_avg_sq, exp_avg) && !may_overlap(max_exp_avg_sq, exp_avg_sq), op,
             ": max_exp_avg_sq shares memory with exp_avg or exp_avg_sq");
  }
  const Tensor vmax = args.amsgrad ? max_exp_avg_sq : Tensor();
  NoGradGuard no_grad;
  with_contiguous_param(param, [&](const Tensor& p) {
    Tensor g = kernel_grad(grad, {&p, &exp_avg, &exp_avg_sq, &vmax});
    backend_for(param.device()).adam_step(p, g, exp_avg, exp_avg_sq, vmax, args);
  });
  exp_avg.bump_version();
  exp_avg_sq.bump_version();
  if (args.amsgrad) vmax.bump_version();
}

void sgd_step_multi_(const std::vector<SgdParamState>& params, const SgdStepArgs& args) {
  const char* op = "sgd_step";
  const bool use_buf = args.momentum != 0;
  for (const SgdParamState& e : params) {
    check_param_and_grad(e.param, e.grad, op);
    if (use_buf) check_state(e.param, e.momentum_buf, op, "momentum_buffer");
  }
  NoGradGuard no_grad;
  for (const std::vector<size_t>& group : by_device_and_dtype(params)) {
    ContiguousParams cp;
    std::vector<SgdParamState> list;
    std::vector<Tensor> originals;
    for (size_t i : group) {
      const SgdParamState& e = params[i];
      SgdParamState k;
      k.param = cp.take(e.param);
      k.momentum_buf = use_buf ? e.momentum_buf : Tensor();
      k.grad = kernel_grad(e.grad, {&k.param, &k.momentum_buf});
      k.first_step = e.first_step;
      list.push_back(k);
      originals.push_back(e.param);
    }
    backend_for(list[0].param.device()).sgd_step_multi(list, args);
    cp.finish(originals);
    if (use_buf)
      for (const SgdParamState& k : list) k.momentum_buf.bump_version();
  }
}

void adam_step_multi_(const std::vector<AdamParamState>& params, const AdamStepArgs& args) {
  const char* op = args.decoupled ? "adamw_step" : "adam_step";
  for (const AdamParamState& e : params) {
    check_param_and_grad(e.param, e.grad, op);
    check_state(e.param, e.exp_avg, op, "exp_avg");
    check_state(e.param, e.exp_avg_sq, op, "exp_avg_sq");
    TT_CHECK(!may_overlap(e.exp_avg, e.exp_avg_sq), op, ": exp_avg and exp_avg_sq share memory");
    if (args.amsgrad) {
      check_state(e.param, e.max_exp_avg_sq, op, "max_exp_avg_sq");
      TT_CHECK(!may_overlap(e.max_exp_avg_sq, e.exp_avg) && !may_overlap(e.max_exp_avg_sq, e.exp_avg_sq), op,
               ": max_exp_avg_sq shares memory with exp_avg or exp_avg_sq");
    }
    check_step(e.param, e.step, op);
  }
  NoGradGuard no_grad;
  for (const std::vector<size_t>& group : by_device_and_dtype(params)) {
    ContiguousParams cp;
    std::vector<AdamParamState> list;
    std::vector<Tensor> originals;
    for (size_t i : group) {
      const AdamParamState& e = params[i];
      AdamParamState k = e;
      k.param = cp.take(e.param);
      if (!args.amsgrad) k.max_exp_avg_sq = Tensor();
      k.grad = kernel_grad(e.grad, {&k.param, &k.exp_avg, &k.exp_avg_sq, &k.max_exp_avg_sq});
      list.push_back(k);
      originals.push_back(e.param);
    }
    backend_for(list[0].param.device()).adam_step_multi(list, args);
    cp.finish(originals);
    for (const AdamParamState& k : list) {
      k.exp_avg.bump_version();
      k.exp_avg_sq.bump_version();
      if (args.amsgrad) k.max_exp_avg_sq.bump_version();
      k.step.bump_version();
    }
  }
}

}  // namespace tt::detail
