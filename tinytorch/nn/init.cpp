// nn::init: the standard initializations, written as "draw a fresh tensor, copy it in".
#include "tinytorch/nn/init.h"

#include <cmath>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/factory.h"

namespace tt::nn::init {

namespace {

void check_float(const Tensor& t, const char* op) {
  TT_CHECK(t.defined(), "init::", op, ": the tensor is undefined");
  TT_CHECK_DTYPE(t.is_floating_point(), "init::", op, ": expected a floating-point tensor, got ", t.dtype());
}

int64_t fan(const Tensor& t, FanMode mode) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return mode == FanMode::FanIn ? fan_in : fan_out;
}

}  // namespace

double calculate_gain(const std::string& nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid" || nonlinearity.rfind("conv", 0) == 0) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  if (nonlinearity == "selu") return 0.75;
  TT_CHECK(false, "init::calculate_gain: unknown nonlinearity \"", nonlinearity,
           "\" (expected linear, sigmoid, conv*, tanh, relu, leaky_relu or selu)");
  return 0.0;
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  TT_CHECK_SHAPE(t.dim() >= 2, "init: fan in and fan out need a tensor with at least 2 dims, got ", t.shape());
  int64_t receptive = 1;
  for (int d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor uniform_(Tensor t, double a, double b, Generator* gen) {
  check_float(t, "uniform_");
  TT_CHECK(a <= b, "init::uniform_: expected a <= b, got ", a, " and ", b);
  NoGradGuard no_grad;
  Tensor u = rand(t.shape(), t.options(), gen);
  return copy_(t, add(mul(u, b - a), a));
}

Tensor normal_(Tensor t, double mean, double std, Generator* gen) {
  check_float(t, "normal_");
  TT_CHECK(std >= 0, "init::normal_: expected std >= 0, got ", std);
  NoGradGuard no_grad;
  Tensor n = randn(t.shape(), t.options(), gen);
  return copy_(t, add(mul(n, std), mean));
}

Tensor constant_(Tensor t, double value) {
  TT_CHECK(t.defined(), "init::constant_: the tensor is undefined");
  NoGradGuard no_grad;
  return fill_(t, value);
}

Tensor zeros_(Tensor t) { return constant_(t, 0.0); }
Tensor ones_(Tensor t) { return constant_(t, 1.0); }

Tensor xavier_uniform_(Tensor t, double gain, Generator* gen) {
  // TT_EXERCISE_BEGIN(05, 5)
  check_float(t, "xavier_uniform_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  double a = gain * std::sqrt(6.0 / double(fan_in + fan_out));
  return uniform_(t, -a, a, gen);
  // TT_EXERCISE_END
}

Tensor xavier_normal_(Tensor t, double gain, Generator* gen) {
  // TT_EXERCISE_BEGIN(05, 6)
  check_float(t, "xavier_normal_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return normal_(t, 0.0, gain * std::sqrt(2.0 / double(fan_in + fan_out)), gen);
  // TT_EXERCISE_END
}

Tensor kaiming_uniform_(Tensor t, double a, FanMode mode, const std::string& nonlinearity, Generator* gen) {
  // TT_EXERCISE_BEGIN(05, 1)
  check_float(t, "kaiming_uniform_");
  int64_t f = fan(t, mode);
  TT_CHECK_SHAPE(f > 0, "init::kaiming_uniform_: cannot initialize a tensor with a zero fan, got ", t.shape());
  double bound = calculate_gain(nonlinearity, a) * std::sqrt(3.0 / double(f));
  return uniform_(t, -bound, bound, gen);
  // TT_EXERCISE_END
}

Tensor kaiming_normal_(Tensor t, double a, FanMode mode, const std::string& nonlinearity, Generator* gen) {
  // TT_EXERCISE_BEGIN(05, 4)
  check_float(t, "kaiming_normal_");
  int64_t f = fan(t, mode);
  TT_CHECK_SHAPE(f > 0, "init::kaiming_normal_: cannot initialize a tensor with a zero fan, got ", t.shape());
  return normal_(t, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(double(f)), gen);
  // TT_EXERCISE_END
}

}  // namespace tt::nn::init
