// nn::functional (alias tt::F): the stateless forms of the layers, as torch::nn::functional.
// Each is the op itself, gathered under one namespace so model code reads like PyTorch:
//
//   namespace F = tt::nn::functional;
//   Tensor h = F::relu(F::linear(x, w, b));
//   Tensor y = F::dropout(h, 0.1, is_training());
//
// The losses (F::cross_entropy, F::mse_loss, ...) live in nn/loss.h and are included here.
#pragma once

#include <optional>

#include "tinytorch/core/generator.h"
#include "tinytorch/core/op_registry.h"
#include "tinytorch/core/tensor.h"
#include "tinytorch/ops/activation.h"
#include "tinytorch/ops/attention.h"
#include "tinytorch/ops/dropout.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/embedding.h"
#include "tinytorch/ops/linalg.h"
#include "tinytorch/ops/normalization.h"
#include "tinytorch/nn/loss.h"

namespace tt::nn::functional {

// Every F / MethodF row of core/op_registry.h, and the table ops marked for F:: there.
TT_OPS(TT_USING_F)
TT_F_TABLE_OPS(TT_USING_F_TABLE)

// F::embedding(input, weight): F.embedding's order (indices first), unlike tt::embedding(weight,
// indices), which follows torch.embedding.
inline Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt) {
  return tt::embedding(weight, input, padding_idx);
}

// F::dropout(x, p, training): LibTorch's argument order; training defaults to true as in PyTorch.
inline Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr) {
  return tt::dropout(x, p, training, gen);
}

}  // namespace tt::nn::functional

namespace tt {
namespace F = nn::functional;
}  // namespace tt
