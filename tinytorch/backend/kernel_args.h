// The argument structs of the fused kernels (optimizer steps, attention), apart from the Backend
// class so that ops/ headers can name them without pulling the whole device seam into the public
// API. The formulas they parameterize are documented at the kernels in backend/backend.h.
#pragma once

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

}  // namespace tt
