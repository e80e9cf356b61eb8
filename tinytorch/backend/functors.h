// The scalar math of every elementwise op, written once for both backends: the CPU loops and
// the CUDA kernels call these same functors (TT_HOST_DEVICE marks them for nvcc). Each is named
// after its op's row in core/op_table.h, which is how backend/visit.h finds it.
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

// Note [integer wraparound]: integer +, -, *, negation, abs and pow wrap around modulo 2^bits
// (two's complement), as PyTorch's do: INT64_MAX + 1 is INT64_MIN, abs(INT64_MIN) is INT64_MIN.
// Signed overflow is undefined behaviour in C++, so a signed integer's arithmetic is done in the
// unsigned type of its promoted width, where wrapping is defined, and converted back (a
// conversion that C++17 leaves implementation-defined and GCC, Clang and nvcc define as modular;
// C++20 makes it the rule). Floating-point and bool values take the ordinary operators.
template <typename T>
constexpr bool kWrapsSigned = std::is_integral<T>::value && std::is_signed<T>::value;
template <typename T>
using wrap_unsigned_t = std::make_unsigned_t<decltype(T() + 0)>;  // int16 -> unsigned int, not ushort

template <typename T> TT_HOST_DEVICE T wrap_add(T a, T b) {
  if constexpr (kWrapsSigned<T>) {
    using U = wrap_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<T>(a + b);
  }
}
template <typename T> TT_HOST_DEVICE T wrap_sub(T a, T b) {
  if constexpr (kWrapsSigned<T>) {
    using U = wrap_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return static_cast<T>(a - b);
  }
}
template <typename T> TT_HOST_DEVICE T wrap_mul(T a, T b) {
  if constexpr (kWrapsSigned<T>) {
    using U = wrap_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return static_cast<T>(a * b);
  }
}
template <typename T> TT_HOST_DEVICE T wrap_neg(T x) {
  if constexpr (kWrapsSigned<T>) {
    using U = wrap_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(x)));
  } else {
    return static_cast<T>(-x);
  }
}

// --- unary ---------------------------------------------------------------------------------
struct Neg { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return wrap_neg(x); } };
struct Exp { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::exp(x); } };
struct Log { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::log(x); } };
// log(1 + x) and e^x - 1, exact near 0 where the naive forms lose every digit.
struct Log1p { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::log1p(x); } };
struct Expm1 { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::expm1(x); } };
struct Sqrt { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::sqrt(x); } };
struct Rsqrt { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return T(1) / std::sqrt(x); } };
// abs(INT64_MIN) wraps to INT64_MIN (Note [integer wraparound]).
struct Abs { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return x < T(0) ? wrap_neg(x) : x; } };
struct Sin { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::sin(x); } };
struct Cos { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::cos(x); } };
struct Tanh { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return std::tanh(x); } };
struct Sigmoid { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return T(1) / (T(1) + std::exp(-x)); } };
// x < 0 ? 0 : x keeps NaN as NaN, as PyTorch does.
struct Relu { template <typename T> TT_HOST_DEVICE T operator()(T x) const { return x < T(0) ? T(0) : x; } };

// --- binary --------------------------------------------------------------------------------
// Integer +, -, * wrap around (Note [integer wraparound]).
struct Add { template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const { return wrap_add(a, b); } };
struct Sub { template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const { return wrap_sub(a, b); } };
struct Mul { template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const { return wrap_mul(a, b); } };
struct Div { template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const { return a / b; } };
struct Pow {
  template <typename T> TT_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value) {
      return std::pow(a, b);
    } else if constexpr (std::is_same<T, bool>::value) {
      return a || !b;
    } else {
      // Square-and-multiply with wrapping products: the result is a^b modulo 2^bits, as
      // PyTorch's (3^41 in int64 is -420491770248316829). Note [integer wraparound].
      if (b < 0) return a == 1 ? T(1) : (a == -1 ? ((b & 1) ? T(-1) : T(1)) : T(0));
      T result = 1, base = a;
      for (T e = b; e > 0; e >>= 1) {
        if (e & 1) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
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
