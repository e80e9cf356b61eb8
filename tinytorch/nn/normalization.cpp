// LayerNorm and RMSNorm: parameter bookkeeping over ops/normalization (the fused op).
#include "tinytorch/nn/normalization.h"

#include <sstream>

#include "tinytorch/nn/init.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/normalization.h"

namespace tt::nn {

namespace {

void check_normalized_shape(const char* layer, const Shape& s) {
  TT_CHECK(s.size() >= 1, layer, ": normalized_shape must have at least one dim, got ", s);
  for (int64_t d : s) TT_CHECK(d >= 0, layer, ": normalized_shape must not hold negative sizes, got ", s);
}

// (768,) or (4, 8): a Python tuple, as PyTorch's extra_repr shows normalized_shape.
std::string tuple_repr(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (int i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << (s.size() == 1 ? ",)" : ")");
  return os.str();
}

const char* py_bool(bool v) { return v ? "True" : "False"; }

}  // namespace

LayerNorm::LayerNorm(const LayerNormOptions& options) : options(options) {
  check_normalized_shape("nn::LayerNorm", options.normalized_shape());
  TT_CHECK(options.eps() >= 0, "nn::LayerNorm: eps must be >= 0, got ", options.eps());
  const bool affine = options.elementwise_affine();
  if (affine) {
    weight = register_parameter("weight", empty(options.normalized_shape()));
  } else {
    register_parameter("weight", Tensor(), false);
  }
  if (affine && options.bias()) {
    bias = register_parameter("bias", empty(options.normalized_shape()));
  } else {
    register_parameter("bias", Tensor(), false);
  }
  reset_parameters();
}

void LayerNorm::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNorm::forward(const Tensor& x) const {
  return layer_norm(x, options.normalized_shape(), weight, bias, options.eps());
}

std::string LayerNorm::extra_repr() const {
  std::ostringstream os;
  os << tuple_repr(options.normalized_shape()) << ", eps=" << options.eps()
     << ", elementwise_affine=" << py_bool(options.elementwise_affine());
  return os.str();
}

RMSNorm::RMSNorm(const RMSNormOptions& options) : options(options) {
  check_normalized_shape("nn::RMSNorm", options.normalized_shape());
  TT_CHECK(!options.eps() || *options.eps() >= 0, "nn::RMSNorm: eps must be >= 0, got ", options.eps().value_or(0));
  if (options.elementwise_affine()) {
    weight = register_parameter("weight", empty(options.normalized_shape()));
  } else {
    register_parameter("weight", Tensor(), false);
  }
  reset_parameters();
}

void RMSNorm::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
}

Tensor RMSNorm::forward(const Tensor& x) const { return rms_norm(x, options.normalized_shape(), weight, options.eps()); }

std::string RMSNorm::extra_repr() const {
  std::ostringstream os;
  os << tuple_repr(options.normalized_shape()) << ", eps=";
  if (options.eps()) {
    os << *options.eps();
  } else {
    os << "None";
  }
  os << ", elementwise_affine=" << py_bool(options.elementwise_affine());
  return os.str();
}

}  // namespace tt::nn
