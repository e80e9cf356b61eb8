// nn::init: fill a parameter in place with the standard initializations, as torch.nn.init.
// Each function writes under NoGradGuard (initialization is not part of any graph), draws from
// the global generator (tt::manual_seed) unless one is given, and returns its argument. Tensors
// are handles, so they are taken by value as LibTorch does: a view (w.slice(...)) fills in place.
//
//   fan_in / fan_out of a weight [out, in, k...] are in·k and out·k (receptive field k).
//   xavier_uniform_: U(-a, a), a = gain·sqrt(6 / (fan_in + fan_out))      (Glorot & Bengio 2010)
//   kaiming_uniform_: U(-b, b), b = gain·sqrt(3 / fan), gain from the nonlinearity (He et al. 2015)
// nn::Linear's default is PyTorch's: kaiming_uniform_(w, a = sqrt(5)), i.e. U(±1/sqrt(in)), and
// the bias U(±1/sqrt(in)).
#pragma once

#include <string>
#include <utility>

#include "tinytorch/core/generator.h"
#include "tinytorch/core/tensor.h"

namespace tt::nn::init {

enum class FanMode { FanIn, FanOut };

// The recommended gain for a nonlinearity: "linear", "sigmoid" and "conv*" 1, "tanh" 5/3,
// "relu" sqrt(2), "leaky_relu" sqrt(2 / (1 + param²)) (param = negative slope, default 0.01),
// "selu" 3/4. Anything else is an error.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
// {fan_in, fan_out} of a tensor with at least 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

Tensor uniform_(Tensor t, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
Tensor normal_(Tensor t, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
Tensor constant_(Tensor t, double value);
Tensor zeros_(Tensor t);
Tensor ones_(Tensor t);
Tensor xavier_uniform_(Tensor t, double gain = 1.0, Generator* gen = nullptr);
Tensor xavier_normal_(Tensor t, double gain = 1.0, Generator* gen = nullptr);
Tensor kaiming_uniform_(Tensor t, double a = 0.0, FanMode mode = FanMode::FanIn,
                         const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);
Tensor kaiming_normal_(Tensor t, double a = 0.0, FanMode mode = FanMode::FanIn,
                        const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);

}  // namespace tt::nn::init
