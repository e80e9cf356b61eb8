// Gradient clipping, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_ (in tt::nn::utils, as
// LibTorch puts them). Call between backward() and the optimizer's step():
//
//   loss.backward();
//   double norm = tt::nn::utils::clip_grad_norm_(model.parameters(), 1.0);
//   opt.step();
//
// Both skip parameters without a gradient and modify the gradients in place (composed of ops:
// the gradients may live on any device).
#pragma once

#include <limits>
#include <vector>

#include "tinytorch/core/tensor.h"

namespace tt::nn::utils {

// Scales all gradients together so that their total norm is at most max_norm, and returns the
// total norm before clipping: the norm of the vector of every gradient's norm of order
// norm_type (> 0, or infinity for the largest |element|). Each gradient is multiplied by
// min(1, max_norm / (total_norm + 1e-6)), as PyTorch does. With error_if_nonfinite = true a NaN
// or infinite total norm is an error and no gradient changes; otherwise it is applied (giving
// NaN or zero gradients, as in PyTorch). No gradient at all: returns 0.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element to [-clip_value, clip_value] (clip_value >= 0); NaN stays NaN.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

}  // namespace tt::nn::utils
