// Linear (y = x Wᵀ + b over the last dim), and the two shape-only layers Identity and Flatten.
//
//   tt::nn::Linear fc(tt::nn::LinearOptions(784, 256).bias(false));
//   Tensor y = fc(x);   // x: [*, 784] -> y: [*, 256]
//
// Parameters: weight [out, in] and bias [out] (absent with bias(false)), initialized as PyTorch
// does: U(-1/sqrt(in), 1/sqrt(in)) for both (nn/init.h).
// Cost of a forward on R rows: 2·R·in·out FLOPs in one GEMM; the bias rides in that GEMM (beta = 1).
#pragma once

#include <cstdint>

#include "tinytorch/nn/module.h"

namespace tt::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  LinearOptions& bias(bool v) {
    bias_ = v;
    return *this;
  }
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  bool bias() const { return bias_; }

 private:
  int64_t in_features_, out_features_;
  bool bias_ = true;
};

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features) : Linear(LinearOptions(in_features, out_features)) {}
  explicit Linear(const LinearOptions& options);
  // x: [*, in] -> [*, out]
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  // Draws weight and bias again with the default initialization.
  void reset_parameters();
  std::string extra_repr() const override;

  LinearOptions options;
  Tensor weight;  // [out, in]
  Tensor bias;    // [out], undefined without bias
};

// Returns its input unchanged (a placeholder in a Sequential).
class Identity : public Module {
 public:
  Tensor forward(const Tensor& x) const { return x; }
  Tensor operator()(const Tensor& x) const { return forward(x); }
};

struct FlattenOptions {
  FlattenOptions& start_dim(int64_t v) {
    start_dim_ = v;
    return *this;
  }
  FlattenOptions& end_dim(int64_t v) {
    end_dim_ = v;
    return *this;
  }
  int64_t start_dim() const { return start_dim_; }
  int64_t end_dim() const { return end_dim_; }

 private:
  int64_t start_dim_ = 1;  // keeps the batch dim, as PyTorch's nn.Flatten
  int64_t end_dim_ = -1;
};

// Merges dims start_dim..end_dim: [B, 28, 28] -> [B, 784] with the defaults.
class Flatten : public Module {
 public:
  explicit Flatten(const FlattenOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  std::string extra_repr() const override;
  FlattenOptions options;
};

}  // namespace tt::nn
