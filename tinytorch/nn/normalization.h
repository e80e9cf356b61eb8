// LayerNorm and RMSNorm: normalization over the trailing dims with an optional learned
// elementwise affine, thin layers over ops/normalization.h (fused kernels forward and backward).
//
//   tt::nn::LayerNorm ln(tt::nn::LayerNormOptions({768}).eps(1e-5));
//   Tensor y = ln(x);   // x: [*, 768] -> [*, 768]
//
// Parameters: weight (ones) and bias (zeros), both of shape normalized_shape; absent with
// elementwise_affine(false) (and bias absent with bias(false) for LayerNorm; RMSNorm has none).
// Cost of a forward on R rows of C: ~5·R·C FLOPs, one read of x and one write of y.
#pragma once

#include <optional>

#include "tinytorch/nn/module.h"

namespace tt::nn {

struct LayerNormOptions {
  LayerNormOptions(Shape normalized_shape) : normalized_shape_(normalized_shape) {}  // NOLINT: implicit
  LayerNormOptions& eps(double v) {
    eps_ = v;
    return *this;
  }
  LayerNormOptions& elementwise_affine(bool v) {
    elementwise_affine_ = v;
    return *this;
  }
  LayerNormOptions& bias(bool v) {
    bias_ = v;
    return *this;
  }
  const Shape& normalized_shape() const { return normalized_shape_; }
  double eps() const { return eps_; }
  bool elementwise_affine() const { return elementwise_affine_; }
  bool bias() const { return bias_; }

 private:
  Shape normalized_shape_;
  double eps_ = 1e-5;
  bool elementwise_affine_ = true;
  bool bias_ = true;  // only with elementwise_affine
};

// y = (x - mean) / sqrt(var + eps) * weight + bias over the last dims (F::layer_norm).
class LayerNorm : public Module {
 public:
  // Throws tt::Error for an empty or negative normalized_shape or eps < 0.
  explicit LayerNorm(const LayerNormOptions& options);
  // x: [*, normalized_shape] -> same shape
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  // weight back to ones, bias to zeros.
  void reset_parameters();
  // "(768,), eps=1e-05, elementwise_affine=True", as PyTorch prints it.
  std::string extra_repr() const override;

  LayerNormOptions options;
  Tensor weight;  // [normalized_shape], undefined without elementwise_affine
  Tensor bias;    // [normalized_shape], undefined without elementwise_affine or with bias(false)
};

struct RMSNormOptions {
  RMSNormOptions(Shape normalized_shape) : normalized_shape_(normalized_shape) {}  // NOLINT: implicit
  RMSNormOptions& eps(std::optional<double> v) {
    eps_ = v;
    return *this;
  }
  RMSNormOptions& elementwise_affine(bool v) {
    elementwise_affine_ = v;
    return *this;
  }
  const Shape& normalized_shape() const { return normalized_shape_; }
  std::optional<double> eps() const { return eps_; }
  bool elementwise_affine() const { return elementwise_affine_; }

 private:
  Shape normalized_shape_;
  std::optional<double> eps_;  // none: the machine epsilon of x's dtype, as PyTorch
  bool elementwise_affine_ = true;
};

// y = x / sqrt(mean(x^2) + eps) * weight over the last dims (F::rms_norm).
class RMSNorm : public Module {
 public:
  explicit RMSNorm(const RMSNormOptions& options);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  void reset_parameters();
  // "(768,), eps=None, elementwise_affine=True", as PyTorch prints it.
  std::string extra_repr() const override;

  RMSNormOptions options;
  Tensor weight;  // [normalized_shape], undefined without elementwise_affine
};

}  // namespace tt::nn
