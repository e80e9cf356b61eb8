// Checked size arithmetic (Note [checked sizes] in checked.h).
#include "tinytorch/core/checked.h"

#include <cfloat>
#include <cmath>
#include <limits>

namespace tt {

int64_t checked_mul(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  TT_CHECK_SHAPE(!__builtin_mul_overflow(a, b, &r), op, ": size arithmetic overflows int64: ", a, " * ", b);
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  TT_CHECK_SHAPE(!__builtin_add_overflow(a, b, &r), op, ": size arithmetic overflows int64: ", a, " + ", b);
  return r;
}

int64_t checked_numel(const Shape& shape, const char* op) {
  for (int64_t d : shape) TT_CHECK_SHAPE(d >= 0, op, ": sizes must be non-negative, got ", shape);
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) overflow |= __builtin_mul_overflow(n, d, &n);
  // A zero size makes the count 0 however large the others are ([2^62, 4, 0] is a valid empty shape).
  for (int64_t d : shape)
    if (d == 0) return 0;
  TT_CHECK_SHAPE(!overflow, op, ": the number of elements of sizes ", shape, " overflows int64");
  return n;
}

size_t checked_nbytes(const Shape& shape, size_t itemsize, const char* op) {
  int64_t n = checked_numel(shape, op), bytes = 0;
  TT_CHECK_SHAPE(!__builtin_mul_overflow(n, int64_t(itemsize), &bytes), op,
                 ": storage size calculation overflowed: sizes ", shape, " of ", itemsize,
                 "-byte elements need more than 2^63 - 1 bytes");
  return size_t(bytes);
}

int64_t checked_extent(const Shape& shape, const Shape& strides, const char* op) {
  TT_CHECK_SHAPE(strides.size() == shape.size(), op, ": expected one stride per dimension, got sizes ", shape,
                 " and strides ", strides);
  for (int64_t s : strides)
    TT_CHECK_SHAPE(s >= 0, op, ": strides must be non-negative, got ", strides, " for sizes ", shape);
  if (checked_numel(shape, op) == 0) return 0;
  int64_t extent = 1, step = 0;
  for (int i = 0; i < shape.size(); ++i) {
    bool overflow = __builtin_mul_overflow(shape[i] - 1, strides[i], &step) ||
                    __builtin_add_overflow(extent, step, &extent);
    TT_CHECK_SHAPE(!overflow, op, ": the elements spanned by sizes ", shape, " and strides ", strides,
                   " overflow int64");
  }
  return extent;
}

int64_t checked_count(double n, const char* op) {
  // 2^63 is exactly representable; every double below it converts to int64 without overflow.
  constexpr double kLimit = 9223372036854775808.0;
  TT_CHECK_SHAPE(std::isfinite(n) && n >= 0 && n < kLimit, op, ": invalid size ", n,
                 ", the element count must be finite, non-negative and below 2^63 (possible overflow)");
  return static_cast<int64_t>(n);
}

void check_scalar_fits(Scalar value, ScalarType dtype, const char* op) {
  if (!value.is_floating_point()) return;  // every int64 and bool fits every dtype's range
  double v = value.to<double>();
  switch (dtype) {  // no default: a new dtype must state its range here
    case ScalarType::Int64:
      TT_CHECK(std::isfinite(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0, op, ": value ", v,
               " cannot be converted to type int64 without overflow");
      return;
    case ScalarType::Float32:
      TT_CHECK(!std::isfinite(v) || std::fabs(v) <= double(FLT_MAX), op, ": value ", v,
               " cannot be converted to type float32 without overflow");
      return;
    case ScalarType::BFloat16:  // the largest finite bf16: (2 - 2^-7) * 2^127
      TT_CHECK(!std::isfinite(v) || std::fabs(v) <= 3.3895313892515355e38, op, ": value ", v,
               " cannot be converted to type bfloat16 without overflow");
      return;
    case ScalarType::Float64:
    case ScalarType::Bool:  // any nonzero value is true
    case ScalarType::NumTypes:
      return;
  }
}

}  // namespace tt
