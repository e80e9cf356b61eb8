// Dropout layer: inverted dropout with probability p while training (ops/dropout.h), the
// identity after eval(). Seeded by tt::manual_seed, so a seeded run drops the same elements.
#pragma once

#include "tinytorch/nn/module.h"

namespace tt::nn {

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: implicit, so Dropout(0.1) reads naturally
  DropoutOptions& p(double v) {
    p_ = v;
    return *this;
  }
  double p() const { return p_; }

 private:
  double p_;
};

class Dropout : public Module {
 public:
  // Throws tt::Error unless 0 <= p <= 1.
  explicit Dropout(const DropoutOptions& options = {});
  // x: [*] -> [*]
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  std::string extra_repr() const override;
  DropoutOptions options;
};

}  // namespace tt::nn
