// The argument structs of the fused kernels (optimizer steps, attention), apart from the Backend
// class so that ops/ headers can name them without pulling the whole device seam into the public
// API. The formulas they parameterize are documented at the kernels in backend/backend.h.
#pragma once

#include <cmath>
#include <cstdint>

#include "tinytorch/core/tensor.h"

namespace tt {

// Hyperparameters of one fused optimizer step, prepared on the host by optim/ (ops/optim_step.h).
struct SgdStepArgs {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
  bool first_step = false;  // the momentum buffer holds nothing yet: it starts as the gradient
};
// Scale and causality of one fused attention call (ops/attention.cpp).
struct AttentionArgs {
  double scale = 1;
  bool causal = false;  // query i sees keys j <= i only (top-left aligned when Tq != Tk)
  // Flash kernels: exact float32 arithmetic (the CUDA FFMA kernels, SDPBackend::FlashExact) instead
  // of the tensor-core default (3xTF32, or 1xTF32 under set_allow_tf32). The CPU is always exact.
  bool exact = false;
};

struct AdamStepArgs {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;  // AdamW: decay the parameter, not the gradient
  bool amsgrad = false, maximize = false;
  double step_size = 0;              // lr / (1 - beta1^step)
  double bias_correction2_sqrt = 1;  // sqrt(1 - beta2^step)
};

// Adam's per-step scalars at update number `step` (1, 2, ...), in doubles as PyTorch computes them
// in Python floats: step_size = lr / (1 - beta1^step), bias_correction2_sqrt = sqrt(1 - beta2^step).
// The host's formula (optim/ and the CPU's multi-tensor step); the CUDA kernel evaluates the same
// expression on the device from its step counter (Note [multi-tensor optimizer step]).
inline void adam_bias_corrections(AdamStepArgs& a, int64_t step) {
  const double bias_correction1 = 1 - std::pow(a.beta1, double(step));
  const double bias_correction2 = 1 - std::pow(a.beta2, double(step));
  a.step_size = a.lr / bias_correction1;
  a.bias_correction2_sqrt = std::sqrt(bias_correction2);
}

// One parameter of a multi-tensor SGD step (Backend::sgd_step_multi): param, grad and
// momentum_buf (undefined without momentum) of one shape, dtype and device, contiguous.
struct SgdParamState {
  Tensor param, grad, momentum_buf;
  bool first_step = false;  // the buffer holds nothing yet: it starts as the gradient
};

// One parameter of a multi-tensor Adam(W) step (Backend::adam_step_multi): the tensors of
// Backend::adam_step, and `step`, a 0-d int64 tensor on the parameter's device holding the number
// of updates made so far, which the step reads (for the bias corrections) and increments.
struct AdamParamState {
  Tensor param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step;
};

}  // namespace tt
