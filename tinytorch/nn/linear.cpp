// Linear, Identity and Flatten: thin layers over ops/linalg (linear) and ops/view (flatten).
#include "tinytorch/nn/linear.h"

#include <cmath>
#include <string>

#include "tinytorch/nn/init.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/linalg.h"
#include "tinytorch/ops/view.h"

namespace tt::nn {

Linear::Linear(const LinearOptions& options) : options(options) {
  TT_CHECK(options.in_features() >= 0 && options.out_features() >= 0,
           "nn::Linear: in_features and out_features must be >= 0, got ", options.in_features(), " and ",
           options.out_features());
  weight = register_parameter("weight", empty({options.out_features(), options.in_features()}));
  if (options.bias()) {
    bias = register_parameter("bias", empty({options.out_features()}));
  } else {
    register_parameter("bias", Tensor(), false);  // reserved, so state dicts list no "bias"
  }
  reset_parameters();
}

void Linear::reset_parameters() {
  if (weight.numel() > 0) init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    int64_t fan_in = options.in_features();
    double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(options.in_features()) +
         ", out_features=" + std::to_string(options.out_features()) + ", bias=" + (bias.defined() ? "true" : "false");
}

Tensor Flatten::forward(const Tensor& x) const { return flatten(x, options.start_dim(), options.end_dim()); }

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(options.start_dim()) + ", end_dim=" + std::to_string(options.end_dim());
}

}  // namespace tt::nn
