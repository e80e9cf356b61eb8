// Scalar: one number (floating, integer or bool) passed to ops such as `t + 2.5` or fill_.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tinytorch/core/dtype.h"

namespace tt {

class Scalar {
 public:
  Scalar() : kind_(kInt64), i_(0) {}
  Scalar(bool v) : kind_(kBool), i_(v) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_integral<T>::value && !std::is_same<T, bool>::value, int> = 0>
  Scalar(T v) : kind_(kInt64), i_(static_cast<int64_t>(v)) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_floating_point<T>::value, int> = 0>
  Scalar(T v) : kind_(kFloat64), d_(static_cast<double>(v)) {}  // NOLINT
  Scalar(BFloat16 v) : kind_(kFloat64), d_(float(v)) {}  // NOLINT

  // The category of the value: kFloat64 for floating, kInt64 for integral, kBool.
  ScalarType kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == kFloat64; }
  template <typename T>
  T to() const {
    return kind_ == kFloat64 ? static_cast<T>(d_) : static_cast<T>(i_);
  }

 private:
  ScalarType kind_;
  union {
    int64_t i_;
    double d_;
  };
};

}  // namespace tt
