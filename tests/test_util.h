// Helpers shared by the test suites: tolerance comparisons of tensors against values.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <vector>

#include <tinytorch/tinytorch.h>

namespace tt::testing {

// True when every element of `actual` is within atol + rtol * |expected| of `expected` (NaNs
// must match NaNs, infinities must match exactly) and the shapes agree.
inline bool allclose(const Tensor& actual, const Tensor& expected, double rtol = 1e-5, double atol = 1e-6) {
  if (actual.shape() != expected.shape()) return false;
  std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(e[i]) || std::isnan(a[i])) {
      if (!(std::isnan(e[i]) && std::isnan(a[i]))) return false;
      continue;
    }
    if (std::isinf(e[i]) || std::isinf(a[i])) {
      if (a[i] != e[i]) return false;
      continue;
    }
    if (std::fabs(a[i] - e[i]) > atol + rtol * std::fabs(e[i])) return false;
  }
  return true;
}

}  // namespace tt::testing

// CHECK_ALLCLOSE(actual, expected[, rtol, atol]) prints both tensors when it fails.
#define CHECK_ALLCLOSE(actual, expected, ...)                                          \
  do {                                                                                 \
    INFO("actual:   " << (actual) << "\nexpected: " << (expected));                    \
    CHECK(::tt::testing::allclose((actual), (expected), ##__VA_ARGS__));               \
  } while (0)
