// Loss layers and their functional forms, spelled as LibTorch's: an XxxOptions struct per loss
// (chainable setters, getters of the same name), a module per loss (MSELoss, L1Loss,
// CrossEntropyLoss, NLLLoss, BCELoss, BCEWithLogitsLoss; forward(input, target)), and
// F::mse_loss, F::cross_entropy, ... taking the same options. The math, the shapes and every
// deliberate difference from PyTorch are documented once, at the ops (ops/loss.h).
//
//   tt::nn::CrossEntropyLoss criterion(tt::nn::CrossEntropyLossOptions().label_smoothing(0.1));
//   Tensor loss = criterion(logits, targets);   // logits: [N, C], targets: [N] int64 -> []
//   Tensor same = F::cross_entropy(logits, targets, F::CrossEntropyFuncOptions().label_smoothing(0.1));
//
// A class weight (and BCEWithLogitsLoss's pos_weight) is registered as a buffer named "weight"
// ("pos_weight"), as in PyTorch: it moves with module.to(device) and is saved in the state dict.
// It is taken from the options once, at construction (LibTorch's reset()); the other options
// are read on every call, so `loss.options.reduction(tt::kSum)` takes effect at once.
// Losses have no parameters. Printing shows the options that differ from the defaults:
// "CrossEntropyLoss()", "CrossEntropyLoss(reduction=sum, label_smoothing=0.1, weight=[10])".
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "tinytorch/core/tensor.h"
#include "tinytorch/nn/module.h"
#include "tinytorch/ops/loss.h"

namespace tt::nn {

// --- options ---------------------------------------------------------------------------------------
// TT_LOSS_OPTION(Options, Type, name) declares the setter name(Type) -> Options& and the getter
// name() of one field `name_` (LibTorch's TORCH_ARG).
#define TT_LOSS_OPTION(Options, Type, name)  \
  Options& name(Type v) {                    \
    name##_ = std::move(v);                  \
    return *this;                            \
  }                                          \
  const Type& name() const { return name##_; }

struct MSELossOptions {
  MSELossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT: implicit, as LibTorch's
  TT_LOSS_OPTION(MSELossOptions, Reduction, reduction)

 private:
  Reduction reduction_;
};

struct L1LossOptions {
  L1LossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT: implicit, as LibTorch's
  TT_LOSS_OPTION(L1LossOptions, Reduction, reduction)

 private:
  Reduction reduction_;
};

struct CrossEntropyLossOptions {
  TT_LOSS_OPTION(CrossEntropyLossOptions, Tensor, weight)            // [C] class weights, or undefined
  TT_LOSS_OPTION(CrossEntropyLossOptions, int64_t, ignore_index)     // rows with this target count for nothing
  TT_LOSS_OPTION(CrossEntropyLossOptions, Reduction, reduction)
  TT_LOSS_OPTION(CrossEntropyLossOptions, double, label_smoothing)   // ε in [0, 1]

 private:
  Tensor weight_;
  int64_t ignore_index_ = kDefaultIgnoreIndex;
  Reduction reduction_ = kMean;
  double label_smoothing_ = 0.0;
};

struct NLLLossOptions {
  TT_LOSS_OPTION(NLLLossOptions, Tensor, weight)
  TT_LOSS_OPTION(NLLLossOptions, int64_t, ignore_index)
  TT_LOSS_OPTION(NLLLossOptions, Reduction, reduction)

 private:
  Tensor weight_;
  int64_t ignore_index_ = kDefaultIgnoreIndex;
  Reduction reduction_ = kMean;
};

struct BCELossOptions {
  TT_LOSS_OPTION(BCELossOptions, Tensor, weight)  // broadcastable to the input, or undefined
  TT_LOSS_OPTION(BCELossOptions, Reduction, reduction)

 private:
  Tensor weight_;
  Reduction reduction_ = kMean;
};

struct BCEWithLogitsLossOptions {
  TT_LOSS_OPTION(BCEWithLogitsLossOptions, Tensor, weight)
  TT_LOSS_OPTION(BCEWithLogitsLossOptions, Reduction, reduction)
  TT_LOSS_OPTION(BCEWithLogitsLossOptions, Tensor, pos_weight)  // weight of positive examples, e.g. [C]

 private:
  Tensor weight_;
  Reduction reduction_ = kMean;
  Tensor pos_weight_;
};

#undef TT_LOSS_OPTION

// --- modules ----------------------------------------------------------------------------------------

// input: [*], target: [*] -> [] (or [*] with kNone)
class MSELoss : public Module {
 public:
  explicit MSELoss(const MSELossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target) const;
  Tensor operator()(const Tensor& input, const Tensor& target) const { return forward(input, target); }
  std::string extra_repr() const override;
  MSELossOptions options;
};

// input: [*], target: [*] -> [] (or [*] with kNone)
class L1Loss : public Module {
 public:
  explicit L1Loss(const L1LossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target) const;
  Tensor operator()(const Tensor& input, const Tensor& target) const { return forward(input, target); }
  std::string extra_repr() const override;
  L1LossOptions options;
};

// input: [N, C] (or [C], [N, C, d1, ..]) logits, target: [N] int64 (or [], [N, d1, ..]; or
// probabilities of the input's shape) -> [] (or the target's rows with kNone)
class CrossEntropyLoss : public Module {
 public:
  // Throws tt::Error unless 0 <= label_smoothing <= 1.
  explicit CrossEntropyLoss(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  Tensor operator()(const Tensor& input, const Tensor& target) const { return forward(input, target); }
  std::string extra_repr() const override;
  CrossEntropyLossOptions options;
  Tensor weight;  // the "weight" buffer, undefined without class weights
};

// input: [N, C] (or [C], [N, C, d1, ..]) log-probabilities, target: [N] int64 (or [], [N, d1, ..]) -> []
class NLLLoss : public Module {
 public:
  explicit NLLLoss(const NLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  Tensor operator()(const Tensor& input, const Tensor& target) const { return forward(input, target); }
  std::string extra_repr() const override;
  NLLLossOptions options;
  Tensor weight;
};

// input: [*] probabilities, target: [*] -> [] (or [*] with kNone)
class BCELoss : public Module {
 public:
  explicit BCELoss(const BCELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  Tensor operator()(const Tensor& input, const Tensor& target) const { return forward(input, target); }
  std::string extra_repr() const override;
  BCELossOptions options;
  Tensor weight;
};

// input: [*] logits, target: [*] -> [] (or [*] with kNone)
class BCEWithLogitsLoss : public Module {
 public:
  explicit BCEWithLogitsLoss(const BCEWithLogitsLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  Tensor operator()(const Tensor& input, const Tensor& target) const { return forward(input, target); }
  std::string extra_repr() const override;
  BCEWithLogitsLossOptions options;
  Tensor weight, pos_weight;
};

// --- functional forms ---------------------------------------------------------------------------

namespace functional {

// LibTorch's names for the options of the functional forms: the layers' options.
using MSELossFuncOptions = MSELossOptions;
using L1LossFuncOptions = L1LossOptions;
using CrossEntropyFuncOptions = CrossEntropyLossOptions;
using NLLLossFuncOptions = NLLLossOptions;
using BinaryCrossEntropyFuncOptions = BCELossOptions;
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options = {});
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options = {});
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options = {});

}  // namespace functional

}  // namespace tt::nn
