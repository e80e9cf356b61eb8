// Activation layers, each an nn::Module without parameters:
// ReLU, LeakyReLU, GELU, Softplus, SiLU, Sigmoid, Tanh, Softmax(dim), LogSoftmax(dim). None has
// parameters or state; each forwards to the op (ops/activation.h, ops/elementwise.h, softplus's row
// in core/op_registry.h), whose docs hold the math and the fully-masked-row behaviour of softmax. Spelled as LibTorch's torch::nn layers:
//
//   tt::nn::GELU gelu(tt::nn::GELUOptions().approximate("tanh"));
//   tt::nn::Softmax softmax(/*dim=*/-1);
//   Tensor y = softmax(gelu(x));
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

#include "tinytorch/core/tensor.h"
#include "tinytorch/nn/module.h"
#include "tinytorch/ops/activation.h"

namespace tt::nn {

// --- options ---------------------------------------------------------------------------------------
// Each field has a chainable setter and a getter of the same name, as LibTorch's options do.

struct LeakyReLUOptions {
  LeakyReLUOptions& negative_slope(double v) {
    negative_slope_ = v;
    return *this;
  }
  double negative_slope() const { return negative_slope_; }

 private:
  double negative_slope_ = 0.01;
};

struct GELUOptions {
  // "none" (exact, x * Phi(x)) or "tanh" (the tanh approximation); checked when the layer is built.
  GELUOptions& approximate(std::string v) {
    approximate_ = std::move(v);
    return *this;
  }
  const std::string& approximate() const { return approximate_; }

 private:
  std::string approximate_ = "none";
};

struct SoftplusOptions {
  SoftplusOptions& beta(double v) {
    beta_ = v;
    return *this;
  }
  double beta() const { return beta_; }
  // Where beta * x exceeds it, the layer returns x itself.
  SoftplusOptions& threshold(double v) {
    threshold_ = v;
    return *this;
  }
  double threshold() const { return threshold_; }

 private:
  double beta_ = 1.0;
  double threshold_ = 20.0;
};

struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT: implicit, so Softmax(SoftmaxOptions(1)) and {1} read alike
  SoftmaxOptions& dim(int64_t v) {
    dim_ = v;
    return *this;
  }
  int64_t dim() const { return dim_; }

 private:
  int64_t dim_;
};

struct LogSoftmaxOptions {
  LogSoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT: see SoftmaxOptions
  LogSoftmaxOptions& dim(int64_t v) {
    dim_ = v;
    return *this;
  }
  int64_t dim() const { return dim_; }

 private:
  int64_t dim_;
};

// --- layers ----------------------------------------------------------------------------------------
// x: [*] -> [*], same shape and dtype.

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
};

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(const LeakyReLUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  std::string extra_repr() const override;
  LeakyReLUOptions options;
};

class GELU : public Module {
 public:
  // Throws tt::Error for an `approximate` other than "none" or "tanh".
  explicit GELU(const GELUOptions& options = {});
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  std::string extra_repr() const override;
  GELUOptions options;
};

// Softplus: log(1 + exp(beta x)) / beta (tt::softplus, core/op_registry.h), defined in this
// header; it prints as torch.nn.Softplus does: "Softplus(beta=1, threshold=20)".
class Softplus : public Module {
 public:
  explicit Softplus(const SoftplusOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x) const { return softplus(x, options.beta(), options.threshold()); }
  Tensor operator()(const Tensor& x) const { return forward(x); }
  std::string extra_repr() const override {
    std::ostringstream os;
    os << "beta=" << options.beta() << ", threshold=" << options.threshold();
    return os.str();
  }
  SoftplusOptions options;
};

class SiLU : public Module {
 public:
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
};

class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
};

class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
};

// Softmax over options.dim() (negative counts from the end).
class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : options(dim) {}
  explicit Softmax(const SoftmaxOptions& options) : options(options) {}
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  std::string extra_repr() const override;
  SoftmaxOptions options;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : options(dim) {}
  explicit LogSoftmax(const LogSoftmaxOptions& options) : options(options) {}
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  std::string extra_repr() const override;
  LogSoftmaxOptions options;
};

}  // namespace tt::nn
