// Element types (dtypes): the enum, names, sizes, and PyTorch's type-promotion rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>

#include "tinytorch/core/bfloat16.h"

namespace tt {

enum class ScalarType : uint8_t { Float32, Float64, Int64, Bool, BFloat16, NumTypes };
using Dtype = ScalarType;

constexpr ScalarType kFloat32 = ScalarType::Float32;
constexpr ScalarType kFloat64 = ScalarType::Float64;
constexpr ScalarType kInt64 = ScalarType::Int64;
constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;  // core/bfloat16.h, Note [bfloat16]
// LibTorch aliases.
constexpr ScalarType kFloat = kFloat32;
constexpr ScalarType kDouble = kFloat64;
constexpr ScalarType kLong = kInt64;

const char* dtype_name(ScalarType t);  // "float32", ..., "bfloat16" (torch.bfloat16's name)
size_t element_size(ScalarType t);     // bytes per element
inline bool is_floating_point(ScalarType t) { return t == kFloat32 || t == kFloat64 || t == kBFloat16; }
// The dtype kernels compute a floating dtype in: float32 for bf16 (Note [bfloat16]), else itself.
inline ScalarType compute_dtype(ScalarType t) { return t == kBFloat16 ? kFloat32 : t; }
std::ostream& operator<<(std::ostream& os, ScalarType t);

// Promotion like PyTorch for two tensors of the same category rank:
// bool < int64 < bfloat16 < float32 < float64 (bf16 with float32 gives float32).
ScalarType promote_types(ScalarType a, ScalarType b);

// C++ type <-> ScalarType.
template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr ScalarType value = kFloat32; };
template <> struct dtype_of<double> { static constexpr ScalarType value = kFloat64; };
template <> struct dtype_of<int64_t> { static constexpr ScalarType value = kInt64; };
template <> struct dtype_of<bool> { static constexpr ScalarType value = kBool; };
template <> struct dtype_of<BFloat16> { static constexpr ScalarType value = kBFloat16; };

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
// Every storage dtype, bf16 included: for kernels that only move, convert or select elements
// (copy, fill, where, indexing). Kernels that compute see bf16 as float32 (backend/bf16_compute.h).
#define TT_DISPATCH_STORAGE(dtype, opname, ...)                                \
  switch (dtype) {                                                             \
    TT_DISPATCH_CASE(::tt::kFloat32, float, __VA_ARGS__)                       \
    TT_DISPATCH_CASE(::tt::kFloat64, double, __VA_ARGS__)                      \
    TT_DISPATCH_CASE(::tt::kInt64, int64_t, __VA_ARGS__)                       \
    TT_DISPATCH_CASE(::tt::kBool, bool, __VA_ARGS__)                           \
    TT_DISPATCH_CASE(::tt::kBFloat16, ::tt::BFloat16, __VA_ARGS__)             \
    default:                                                                   \
      throw ::tt::DtypeError(::tt::detail::concat(opname, ": unsupported dtype ", dtype)); \
  }
// The numeric dtypes and bf16: for the kernels that compute on bf16 themselves (the GEMMs, with
// float32 accumulation) rather than through Bf16Compute.
#define TT_DISPATCH_NUMERIC_BF16(dtype, opname, ...)                           \
  switch (dtype) {                                                             \
    TT_DISPATCH_CASE(::tt::kFloat32, float, __VA_ARGS__)                       \
    TT_DISPATCH_CASE(::tt::kFloat64, double, __VA_ARGS__)                      \
    TT_DISPATCH_CASE(::tt::kInt64, int64_t, __VA_ARGS__)                       \
    TT_DISPATCH_CASE(::tt::kBFloat16, ::tt::BFloat16, __VA_ARGS__)             \
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
