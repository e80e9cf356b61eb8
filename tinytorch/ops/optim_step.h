// The fused optimizer steps as ops: optim/ (SGD, Adam, AdamW) calls these, never a kernel or a
// raw buffer. Each checks its tensors (one device, one float dtype, one shape, writable
// parameter, contiguous state), runs the Backend's single-pass kernel (backend.h documents the
// formulas) under NoGradGuard and bumps the version of every tensor it writes, as in-place ops
// do. A non-contiguous parameter or gradient is handled through a contiguous copy. Not here:
// step counters, bias corrections and option checks, which optim/ owns.
#pragma once

#include "tinytorch/backend/kernel_args.h"
#include "tinytorch/core/tensor.h"

namespace tt::detail {

// param: [*]; grad: param's shape; momentum_buf: param's shape, contiguous, or undefined when
// args.momentum == 0. Writes param and momentum_buf.
void sgd_step_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, const SgdStepArgs& args);

// param: [*]; grad, exp_avg, exp_avg_sq: param's shape (the state contiguous); max_exp_avg_sq:
// the same when args.amsgrad, else undefined. Writes param and the state tensors.
void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const Tensor& max_exp_avg_sq, const AdamStepArgs& args);

// Every parameter of `params` updated as sgd_step_ would (same bits), grouped by device and dtype
// into one Backend::sgd_step_multi call each. Everything is checked before anything is written.
void sgd_step_multi_(const std::vector<SgdParamState>& params, const SgdStepArgs& args);

// Every parameter updated as adam_step_ would with args' bias corrections taken at its step + 1;
// each `step` (0-d int64 on its parameter's device) is then incremented. Grouped as above.
void adam_step_multi_(const std::vector<AdamParamState>& params, const AdamStepArgs& args);

}  // namespace tt::detail
