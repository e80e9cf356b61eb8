// Gradient clipping composed of ops: norms by reductions, scaling and clamping in place.
#include "tinytorch/optim/clip_grad.h"

#include <algorithm>
#include <cmath>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/reduction.h"

namespace tt::nn::utils {

namespace {

std::vector<Tensor> grads_of(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    TT_CHECK(p.defined(), "clip_grad: a parameter is an undefined tensor");
    Tensor g = p.grad();
    if (g.defined()) grads.push_back(g);
  }
  return grads;
}

// The norm of order p of one gradient, computed in its dtype, returned as a double.
double norm_of(const Tensor& g, double p) {
  if (g.numel() == 0) return 0.0;
  if (std::isinf(p)) return tt::max(tt::abs(g)).item<double>();
  if (p == 1.0) return tt::sum(tt::abs(g)).item<double>();
  if (p == 2.0) return std::sqrt(tt::sum(tt::mul(g, g)).item<double>());
  return std::pow(tt::sum(tt::pow(tt::abs(g), p)).item<double>(), 1.0 / p);
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  // TT_EXERCISE_BEGIN(07, 8)
  TT_CHECK(max_norm >= 0, "clip_grad_norm_: max_norm must be >= 0, got ", max_norm);
  TT_CHECK(norm_type > 0, "clip_grad_norm_: norm_type must be > 0 (or infinity), got ", norm_type);
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return 0.0;
  // The norm of the vector of per-gradient norms, as PyTorch's norm(stack(norms)).
  double total = 0.0;
  for (const Tensor& g : grads) {
    const double n = norm_of(g, norm_type);
    total = std::isinf(norm_type) ? std::max(total, n) : total + std::pow(n, norm_type);
    if (std::isnan(n)) total = n;
  }
  if (!std::isinf(norm_type)) total = std::pow(total, 1.0 / norm_type);
  TT_CHECK(!error_if_nonfinite || std::isfinite(total), "clip_grad_norm_: the total norm of order ", norm_type,
           " of the gradients is ", total, ", non-finite, so it cannot be clipped; no gradient was changed (to "
           "scale the gradients by the non-finite norm anyway, pass error_if_nonfinite = false)");
  const double clip_coef = std::min(max_norm / (total + 1e-6), 1.0);  // NaN stays NaN, as torch.clamp
  if (clip_coef != 1.0)
    for (Tensor g : grads) g.mul_(clip_coef);
  return total;
  // TT_EXERCISE_END
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  TT_CHECK(clip_value >= 0, "clip_grad_value_: clip_value must be >= 0, got ", clip_value);
  NoGradGuard no_grad;
  for (Tensor g : grads_of(parameters)) {
    Tensor lo = scalar_tensor(-clip_value, g.options()), hi = scalar_tensor(clip_value, g.options());
    g.copy_(tt::minimum(tt::maximum(g, lo), hi));
  }
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

}  // namespace tt::nn::utils
