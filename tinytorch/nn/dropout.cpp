// Dropout layer: checks p once, then defers to the op with the module's training flag.
#include "tinytorch/nn/dropout.h"

#include <sstream>

#include "tinytorch/ops/dropout.h"

namespace tt::nn {

Dropout::Dropout(const DropoutOptions& options) : options(options) {
  TT_CHECK(options.p() >= 0.0 && options.p() <= 1.0, "nn::Dropout: probability must be in [0, 1], got ", options.p());
}

Tensor Dropout::forward(const Tensor& x) const { return dropout(x, options.p(), is_training()); }

std::string Dropout::extra_repr() const {
  std::ostringstream os;
  os << "p=" << options.p();
  return os.str();
}

}  // namespace tt::nn
