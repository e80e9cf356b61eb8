// Activation layers: each forward is one call of the op it wraps (see nn/activation.h).
#include "tinytorch/nn/activation.h"

#include <sstream>

#include "tinytorch/ops/activation.h"
#include "tinytorch/ops/elementwise.h"

namespace tt::nn {

Tensor ReLU::forward(const Tensor& x) const { return relu(x); }

Tensor LeakyReLU::forward(const Tensor& x) const { return leaky_relu(x, options.negative_slope()); }

GELU::GELU(const GELUOptions& options) : options(options) {
  const std::string& a = options.approximate();
  TT_CHECK(a == "none" || a == "tanh", "nn::GELU: approximate must be \"none\" (exact, erf) or \"tanh\", got \"",
           a, "\"");
}
Tensor GELU::forward(const Tensor& x) const { return gelu(x, options.approximate()); }

Tensor SiLU::forward(const Tensor& x) const { return silu(x); }

Tensor Sigmoid::forward(const Tensor& x) const { return sigmoid(x); }

Tensor Tanh::forward(const Tensor& x) const { return tanh(x); }

Tensor Softmax::forward(const Tensor& x) const { return softmax(x, options.dim()); }

Tensor LogSoftmax::forward(const Tensor& x) const { return log_softmax(x, options.dim()); }

std::string LeakyReLU::extra_repr() const {
  std::ostringstream os;
  os << "negative_slope=" << options.negative_slope();
  return os.str();
}

std::string GELU::extra_repr() const {
  return options.approximate() == "none" ? "" : "approximate='" + options.approximate() + "'";
}

std::string Softmax::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

std::string LogSoftmax::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

}  // namespace tt::nn
