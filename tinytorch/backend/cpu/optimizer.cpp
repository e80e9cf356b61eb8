// CPU optimizer kernels: the fused SGD and Adam/AdamW steps. Each reads every tensor once and
// writes the parameter and its state once, where a chain of tensor ops would make ~10 passes.
// The arithmetic follows PyTorch's single-tensor code (torch/optim/sgd.py, adam.py, adamw.py)
// in the same order, so that trajectories agree with PyTorch's to rounding. Contiguous
// float32/float64 only: ops/optim_step.cpp makes the inputs so. Not here: option checks (optim/).
// The single-tensor steps take Adam's bias corrections from the host; the multi-tensor steps at the
// end compute them from each parameter's step counter and increment it.
//
// Note [vectorized optimizer loops]: the flags are template parameters, so each instantiation
// is one branch-free loop the compiler vectorizes. sqrt vectorizes only with -fno-math-errno
// (otherwise GCC keeps a scalar call per element to set errno on negative inputs, which cannot
// happen here: the second moment is a sum of squares), so CMakeLists.txt compiles this file
// with it; GCC's `#pragma GCC optimize` does not reach the sqrt builtin.

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/cpu/loop.h"

namespace tt::cpu {

namespace {

// Runs f(std::integral_constant<bool, b>) so that a runtime flag becomes a template argument.
template <typename F>
void with_flag(bool b, F&& f) {
  if (b)
    f(std::true_type{});
  else
    f(std::false_type{});
}

// One range [b, e) of the SGD update. kMomentum: a buffer is kept; kFirst: it is created now.
template <typename T, bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void sgd_range(T* __restrict p, const T* __restrict g, T* __restrict buf, int64_t b, int64_t e,
               const SgdStepArgs& a) {
  // TT_EXERCISE_BEGIN(07, 1)
  const T sign = a.maximize ? T(-1) : T(1);
  const T wd = T(a.weight_decay), mom = T(a.momentum), keep = T(1 - a.dampening), neg_lr = T(-a.lr);
  for (int64_t i = b; i < e; ++i) {
    T d = sign * g[i];
    if (kDecay) d = d + wd * p[i];  // d_p.add(param, alpha=weight_decay)
    if (kMomentum) {
      T m = kFirst ? d : buf[i] * mom + keep * d;  // buf.mul_(momentum).add_(d_p, alpha=1-dampening)
      buf[i] = m;
      d = kNesterov ? d + mom * m : m;
    }
    p[i] = p[i] + neg_lr * d;  // param.add_(d_p, alpha=-lr)
  }
  // TT_EXERCISE_END
}

// One range [b, e) of the Adam (kDecoupled = false) or AdamW (true) update.
template <typename T, bool kDecay, bool kDecoupled, bool kAmsgrad>
void adam_range(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, T* __restrict vmax,
                int64_t b, int64_t e, const AdamStepArgs& a) {
  // TT_EXERCISE_BEGIN(07, 3)
  const T sign = a.maximize ? T(-1) : T(1);
  const T wd = T(a.weight_decay), decay = T(1 - a.lr * a.weight_decay);
  const T beta1 = T(a.beta1), beta2 = T(a.beta2), one_minus_beta1 = T(1 - a.beta1), one_minus_beta2 = T(1 - a.beta2);
  const T bc2_sqrt = T(a.bias_correction2_sqrt), eps = T(a.eps), neg_step_size = T(-a.step_size);
  for (int64_t i = b; i < e; ++i) {
    T gi = sign * g[i];
    T pi = p[i];
    if (kDecay && kDecoupled) pi = pi * decay;  // param.mul_(1 - lr * weight_decay)
    if (kDecay && !kDecoupled) gi = gi + wd * pi;  // grad.add(param, alpha=weight_decay)
    T mi = m[i] * beta1 + one_minus_beta1 * gi;  // exp_avg.mul_(beta1).add_(grad, alpha=1-beta1)
    T vi = v[i] * beta2 + one_minus_beta2 * gi * gi;  // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1-beta2)
    m[i] = mi;
    v[i] = vi;
    if (kAmsgrad) {
      vi = std::max(vmax[i], vi);  // torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
      vmax[i] = vi;
    }
    T denom = std::sqrt(vi) / bc2_sqrt + eps;  // (v.sqrt() / bias_correction2_sqrt).add_(eps)
    p[i] = pi + neg_step_size * (mi / denom);  // param.addcdiv_(exp_avg, denom, value=-step_size)
  }
  // TT_EXERCISE_END
}

// Elements per thread below which a step stays on one thread: a memory-bound pass over a few
// streams is not worth waking the team for less.
constexpr int64_t kOptimGrain = kParallelGrain;

template <typename T>
void sgd_typed(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, const SgdStepArgs& a) {
  T* p = param.data_ptr<T>();
  const T* g = grad.data_ptr<T>();
  T* buf = momentum_buf.defined() ? momentum_buf.data_ptr<T>() : nullptr;
  const int64_t n = param.numel();
  with_flag(a.weight_decay != 0, [&](auto decay) {
    with_flag(a.momentum != 0, [&](auto momentum) {
      with_flag(a.first_step, [&](auto first) {
        with_flag(a.nesterov, [&](auto nesterov) {
          parallel_for(n, kOptimGrain, [&](int64_t b, int64_t e) {
            sgd_range<T, decltype(decay)::value, decltype(momentum)::value, decltype(first)::value,
                      decltype(nesterov)::value>(p, g, buf, b, e, a);
          });
        });
      });
    });
  });
}

template <typename T>
void adam_typed(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const Tensor& max_exp_avg_sq, const AdamStepArgs& a) {
  T* p = param.data_ptr<T>();
  const T* g = grad.data_ptr<T>();
  T* m = exp_avg.data_ptr<T>();
  T* v = exp_avg_sq.data_ptr<T>();
  T* vmax = max_exp_avg_sq.defined() ? max_exp_avg_sq.data_ptr<T>() : nullptr;
  const int64_t n = param.numel();
  with_flag(a.weight_decay != 0, [&](auto decay) {
    with_flag(a.decoupled, [&](auto decoupled) {
      with_flag(a.amsgrad, [&](auto amsgrad) {
        parallel_for(n, kOptimGrain, [&](int64_t b, int64_t e) {
          adam_range<T, decltype(decay)::value, decltype(decoupled)::value, decltype(amsgrad)::value>(
              p, g, m, v, vmax, b, e, a);
        });
      });
    });
  });
}

}  // namespace

void CpuBackend::sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf,
                          const SgdStepArgs& args) {
  if (param.dtype() == kFloat64) return sgd_typed<double>(param, grad, momentum_buf, args);
  if (param.dtype() == kFloat32) return sgd_typed<float>(param, grad, momentum_buf, args);
  throw DtypeError(detail::concat("sgd_step: expected a float32 or float64 parameter, got ", param.dtype()));
}

void CpuBackend::adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                           const Tensor& max_exp_avg_sq, const AdamStepArgs& args) {
  if (param.dtype() == kFloat64) return adam_typed<double>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args);
  if (param.dtype() == kFloat32) return adam_typed<float>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args);
  throw DtypeError(detail::concat("adam_step: expected a float32 or float64 parameter, got ", param.dtype()));
}

// The multi-tensor steps: the single-tensor kernels in turn, so each parameter gets exactly their
// bits; Adam's bias corrections come from each parameter's step counter, which is then incremented
// (the CPU twin of cuda/optimizer.cu's one-launch step).
void CpuBackend::sgd_step_multi(const std::vector<SgdParamState>& params, const SgdStepArgs& args) {
  for (const SgdParamState& e : params) {
    SgdStepArgs a = args;
    a.first_step = e.first_step;
    sgd_step(e.param, e.grad, e.momentum_buf, a);
  }
}

void CpuBackend::adam_step_multi(const std::vector<AdamParamState>& params, const AdamStepArgs& args) {
  for (const AdamParamState& e : params) {
    int64_t* step = e.step.data_ptr<int64_t>();
    AdamStepArgs a = args;
    adam_bias_corrections(a, *step + 1);
    adam_step(e.param, e.grad, e.exp_avg, e.exp_avg_sq, e.max_exp_avg_sq, a);
    *step += 1;
  }
}

}  // namespace tt::cpu
