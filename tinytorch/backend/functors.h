// The scalar math of every elementwise op, written once for both backends: the CPU loops and
// the CUDA kernels call these same functors (TT_HOST_DEVICE marks them for nvcc). Each is named
// after its op's row in backend/op_table.h, which is how backend/visit.h finds it.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tinytorch/core/host_device.h"

namespace tt::functors {

template <typename T> TT_HOST_DEVICE bool is_nan(T v) {
  if constexpr (std::is_floating_point<T>::value) return v != v;
  return false;
}

// --- unary ---------------------------------------------------------------------------------
struct Neg { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return -x; } };
struct Exp { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::exp(x); } };
struct Log { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::log(x); } };
// log(1 + x) and e^x - 1, exact near 0 where the naive forms lose every digit.
struct Log1p { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::log1p(x); } };
struct Expm1 { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::expm1(x); } };
struct Sqrt { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::sqrt(x); } };
struct Rsqrt { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return T(1) / std::sqrt(x); } };
struct Abs { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return x < T(0) ? -x : x; } };
struct Sin { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::sin(x); } };
struct Cos { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::cos(x); } };
struct Tanh { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::tanh(x); } };
struct Sigmoid { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return T(1) / (T(1) + std::exp(-x)); } };
// x < 0 ? 0 : x keeps NaN as NaN, as PyTorch does.
struct Relu { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return x < T(0) ? T(0) : x; } };

// --- binary --------------------------------------------------------------------------------
struct Add { template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const { return static_cast<T>(a + b); } };
struct Sub { template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const { return static_cast<T>(a - b); } };
struct Mul { template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const { return static_cast<T>(a * b); } };
struct Div { template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const { return a / b; } };
struct Pow {
  template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value) {
      return std::pow(a, b);
    } else if constexpr (std::is_same<T, bool>::value) {
      return a || !b;
    } else {
      if (b < 0) return a == 1 ? T(1) : (a == -1 ? ((b & 1) ? T(-1) : T(1)) : T(0));
      T result = 1, base = a;
      for (T e = b; e > 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
      }
      return result;
    }
  }
};
// maximum/minimum propagate NaN, as PyTorch does.
struct Maximum { template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const { return is_nan(a) ? a : (is_nan(b) ? b : (a < b ? b : a)); } };
struct Minimum { template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const { return is_nan(a) ? a : (is_nan(b) ? b : (b < a ? b : a)); } };
struct Eq { template <typename T> TT_HOST_DEVICE bool operator()(T a, T b) const { return a == b; } };
struct Ne { template <typename T> TT_HOST_DEVICE bool operator()(T a, T b) const { return a != b; } };
struct Lt { template <typename T> TT_HOST_DEVICE bool operator()(T a, T b) const { return a < b; } };
struct Le { template <typename T> TT_HOST_DEVICE bool operator()(T a, T b) const { return a <= b; } };
struct Gt { template <typename T> TT_HOST_DEVICE bool operator()(T a, T b) const { return a > b; } };
struct Ge { template <typename T> TT_HOST_DEVICE bool operator()(T a, T b) const { return a >= b; } };

}  // namespace tt::functors
