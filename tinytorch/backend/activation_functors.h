// The scalar math of the activations (GELU, SiLU, LeakyReLU and their derivatives) and the
// exponential the softmax kernels use, written once for both backends as functors.h is: the CPU
// loops (cpu/activation.cpp, cpu/softmax.cpp) and their CUDA twins call these same functions.
// Loops, strides and threads are not here.
//
// Note [vectorizable float math]: glibc's expf/erff are scalar calls, so a loop over them runs
// one element at a time. For float32 the functions below are branch-free arithmetic (selects,
// not ifs) that the compiler turns into SIMD code: an exp accurate to ~1.5 ulp and the
// Abramowitz-Stegun 7.1.26 erfc (absolute error < 1.5e-7, the approximation PyTorch's vectorized
// CPU GELU uses too). float64 keeps <cmath>'s exp/erfc: it is what gradcheck differentiates, so
// it must be accurate to the last bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tinytorch/backend/functors.h"

namespace tt::functors {

TT_HOST_DEVICE float bits_to_float(int32_t i) {
#ifdef __CUDA_ARCH__
  return __int_as_float(i);
#else
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
#endif
}
TT_HOST_DEVICE int32_t float_to_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_int(f);
#else
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i;
#endif
}

// e^x for float32, branch-free (see Note [vectorizable float math]). x = n ln2 + r with
// |r| <= ln2 / 2; e^r from a degree-7 polynomial (Cephes' expf coefficients); 2^n built in the
// exponent bits. Below -87 (where e^x nears the smallest normal float) the result is 0, which
// also makes exp(-inf) exactly 0 as the softmax of a masked score needs; above 88.72 it is inf;
// NaN stays NaN.
TT_HOST_DEVICE float exp_f32(float x) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2 = 0.693147180559945309f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;  // kLn2Hi + kLn2Lo = ln 2
  // 2^n must stay a normal float (n <= 127): above 88, compute e^(x - ln2) and double it.
  const bool big = x > 88.0f;
  float xc = big ? x - kLn2 : x;
  xc = xc < -87.0f ? -87.0f : xc;
  xc = xc > 88.3f ? 88.3f : xc;
  const float t = xc * kLog2e + kMagic;
  const float n = t - kMagic;
  const int32_t ni = float_to_bits(t) - float_to_bits(kMagic);
  float r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  // 2^n as a float's exponent bits; unsigned, since shifting a negative int is undefined.
  float y = er * bits_to_float(static_cast<int32_t>((static_cast<uint32_t>(ni) + 127u) << 23));
  y = big ? y * 2.0f : y;
  y = x > 88.7228393f ? HUGE_VALF : y;
  y = x < -87.0f ? 0.0f : y;
  return y;
}

// e^x in the dtype's precision: exp_f32 for float, <cmath> for double.
template <typename T>
TT_HOST_DEVICE T exp_any(T x) {
  if constexpr (std::is_same<T, float>::value) {
    return exp_f32(x);
  } else {
    return std::exp(x);
  }
}

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi), the peak of the normal pdf
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluTanhCubic = 0.044715;

// The standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2, and (through `pdf`) the normal pdf
// phi(x) = e^(-x^2/2) / sqrt(2 pi): the two halves of GELU's derivative. For float the erfc of
// |x| / sqrt 2 is Abramowitz-Stegun 7.1.26, whose e^(-z^2) factor is exactly phi's exponential, so
// the derivative costs one exp.
template <typename T>
TT_HOST_DEVICE T normal_cdf(T x, T& pdf) {
  if constexpr (std::is_same<T, float>::value) {
    const float z = (x < 0.0f ? -x : x) * float(kInvSqrt2);
    const float t = 1.0f / (1.0f + 0.3275911f * z);
    const float poly =
        t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    const float e = exp_f32(-0.5f * x * x);
    pdf = e * float(kInvSqrt2Pi);
    const float half_erfc = 0.5f * poly * e;  // Phi(-|x|)
    return x >= 0.0f ? 1.0f - half_erfc : half_erfc;  // NaN takes the second branch and stays NaN
  } else {
    pdf = std::exp(T(-0.5) * x * x) * T(kInvSqrt2Pi);
    return T(0.5) * std::erfc(-x * T(kInvSqrt2));
  }
}

// --- forward: out = f(x) --------------------------------------------------------------------
// GELU(x) = x Phi(x) (exact, erf form).
struct Gelu {
  template <typename T> TT_HOST_DEVICE T operator()(T x) const {
    T pdf;
    return x * normal_cdf(x, pdf);
  }
};
// GELU, tanh approximation: x (1 + tanh(u)) / 2 with u = sqrt(2/pi) (x + 0.044715 x^3), written
// as x * sigmoid(2u), which is the same function and keeps its precision where tanh(u) is near -1.
struct GeluTanh {
  template <typename T> TT_HOST_DEVICE T operator()(T x) const {
    const T u = T(kSqrt2OverPi) * (x + T(kGeluTanhCubic) * x * x * x);
    return x / (T(1) + exp_any(T(-2) * u));
  }
};
// SiLU(x) = x sigmoid(x).
struct Silu {
  template <typename T> TT_HOST_DEVICE T operator()(T x) const { return x / (T(1) + exp_any(-x)); }
};
// LeakyReLU(x) = x > 0 ? x : slope x (NaN stays NaN, as in PyTorch).
template <typename T>
struct LeakyRelu {
  T slope;
  TT_HOST_DEVICE T operator()(T x) const { return x > T(0) ? x : x * slope; }
};

// --- backward: grad_in = grad_out * f'(x) -----------------------------------------------------
// GELU'(x) = Phi(x) + x phi(x).
struct GeluBackward {
  template <typename T> TT_HOST_DEVICE T operator()(T dy, T x) const {
    T pdf;
    const T cdf = normal_cdf(x, pdf);
    return dy * (cdf + x * pdf);
  }
};
// With s = sigmoid(2u): d/dx [x s] = s + 2 x s (1 - s) u', u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
struct GeluTanhBackward {
  template <typename T> TT_HOST_DEVICE T operator()(T dy, T x) const {
    const T x2 = x * x;
    const T u = T(kSqrt2OverPi) * (x + T(kGeluTanhCubic) * x2 * x);
    const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluTanhCubic) * x2);
    const T s = T(1) / (T(1) + exp_any(T(-2) * u));
    return dy * (s + T(2) * x * s * (T(1) - s) * du);
  }
};
// SiLU'(x) = s (1 + x (1 - s)) with s = sigmoid(x).
struct SiluBackward {
  template <typename T> TT_HOST_DEVICE T operator()(T dy, T x) const {
    const T s = T(1) / (T(1) + exp_any(-x));
    return dy * (s * (T(1) + x * (T(1) - s)));
  }
};
// LeakyReLU'(x) = x > 0 ? 1 : slope (slope at 0, as in PyTorch).
template <typename T>
struct LeakyReluBackward {
  T slope;
  TT_HOST_DEVICE T operator()(T dy, T x) const { return x > T(0) ? dy : dy * slope; }
};

}  // namespace tt::functors
