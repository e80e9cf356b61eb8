// Element types (dtypes): the enum, names, sizes, and PyTorch's type-promotion rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>

namespace tt {

enum class ScalarType : uint8_t { Float32, Float64, Int64, Bool, NumTypes };
using Dtype = ScalarType;

constexpr ScalarType kFloat32 = ScalarType::Float32;
constexpr ScalarType kFloat64 = ScalarType::Float64;
constexpr ScalarType kInt64 = ScalarType::Int64;
constexpr ScalarType kBool = ScalarType::Bool;
// LibTorch aliases.
constexpr ScalarType kFloat = kFloat32;
constexpr ScalarType kDouble = kFloat64;
constexpr ScalarType kLong = kInt64;

const char* dtype_name(ScalarType t);  // "float32", ...
size_t element_size(ScalarType t);     // bytes per element
inline bool is_floating_point(ScalarType t) { return t == kFloat32 || t == kFloat64; }
std::ostream& operator<<(std::ostream& os, ScalarType t);

// Promotion like PyTorch for two tensors of the same category rank:
// bool < int64 < float32 < float64.
ScalarType promote_types(ScalarType a, ScalarType b);

// C++ type <-> ScalarType.
template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr ScalarType value = kFloat32; };
template <> struct dtype_of<double> { static constexpr ScalarType value = kFloat64; };
template <> struct dtype_of<int64_t> { static constexpr ScalarType value = kInt64; };
template <> struct dtype_of<bool> { static constexpr ScalarType value = kBool; };

}  // namespace tt

// TT_DISPATCH_ALL(dtype, "op", [&]<scalar_t>...) without C++20: the body sees `scalar_t`.
#define TT_DISPATCH_CASE(enum_val, type, ...) \
  case enum_val: {                            \
    using scalar_t = type;                    \
    __VA_ARGS__();                            \
    break;                                    \
  }
#define TT_DISPATCH_ALL(dtype, opname, ...)                                    \
  switch (dtype) {                                                             \
    TT_DISPATCH_CASE(::tt::kFloat32, float, __VA_ARGS__)                       \
    TT_DISPATCH_CASE(::tt::kFloat64, double, __VA_ARGS__)                      \
    TT_DISPATCH_CASE(::tt::kInt64, int64_t, __VA_ARGS__)                       \
    TT_DISPATCH_CASE(::tt::kBool, bool, __VA_ARGS__)                           \
    default:                                                                   \
      throw ::tt::DtypeError(::tt::detail::concat(opname, ": unsupported dtype ", dtype)); \
  }
#define TT_DISPATCH_NUMERIC(dtype, opname, ...)                                \
  switch (dtype) {                                                             \
    TT_DISPATCH_CASE(::tt::kFloat32, float, __VA_ARGS__)                       \
    TT_DISPATCH_CASE(::tt::kFloat64, double, __VA_ARGS__)                      \
    TT_DISPATCH_CASE(::tt::kInt64, int64_t, __VA_ARGS__)                       \
    default:                                                                   \
      throw ::tt::DtypeError(::tt::detail::concat(opname, ": unsupported dtype ", dtype)); \
  }
#define TT_DISPATCH_FLOATING(dtype, opname, ...)                               \
  switch (dtype) {                                                             \
    TT_DISPATCH_CASE(::tt::kFloat32, float, __VA_ARGS__)                       \
    TT_DISPATCH_CASE(::tt::kFloat64, double, __VA_ARGS__)                      \
    default:                                                                   \
      throw ::tt::DtypeError(::tt::detail::concat(opname, ": expected a floating-point dtype, got ", dtype)); \
  }
