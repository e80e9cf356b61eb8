// Helpers for the autograd suite: float64 leaves (contiguous or not) and gradcheck assertions
// that print gradcheck's own report (worst entry, both Jacobian entries) when they fail.
#pragma once

#include <exception>
#include <string>
#include <utility>

#include "test_util.h"

namespace tt::testing {

using autograd::TensorList;

// `t`'s values as a fresh leaf that requires grad (strides kept: a view stays a view).
inline Tensor leaf(const Tensor& t) {
  Tensor l = t.detach();
  l.requires_grad_();
  return l;
}

// Standard-normal float64 leaf.
inline Tensor randn64(const Shape& s) { return leaf(randn(s, kFloat64)); }

// Float64 leaf uniform in [lo, hi).
inline Tensor uniform64(const Shape& s, double lo, double hi) {
  return leaf(rand(s, kFloat64) * (hi - lo) + lo);
}

// Float64 leaf with |values| in [0.5, 1.5) and random signs: away from zero (for division).
inline Tensor away_from_zero64(const Shape& s) {
  Tensor mag = rand(s, kFloat64) + 0.5;
  Tensor sign = where(rand(s, kFloat64) < 0.5, -1.0, ones(s, kFloat64));
  return leaf(mag * sign);
}

// A non-contiguous leaf of shape `s` (2+ dims): its last two dims are swapped in memory.
inline Tensor randn64_t(const Shape& s) {
  Shape m = s;
  std::swap(m[m.size() - 1], m[m.size() - 2]);
  return leaf(randn(m, kFloat64).transpose(-1, -2));
}

// A non-contiguous leaf of shape `s`: every other element of a buffer twice as long in the last dim,
// starting at element 1 (so the storage offset is not zero either).
inline Tensor randn64_strided(const Shape& s) {
  Shape m = s;
  m[m.size() - 1] = 2 * s[s.size() - 1] + 1;
  return leaf(randn(m, kFloat64).slice(-1, 1, kEnd, 2));
}

// A non-contiguous (transposed) leaf of shape `s` with values in [0.5, 1.5).
inline Tensor positive_t(const Shape& s) {
  Shape m = s;
  std::swap(m[m.size() - 1], m[m.size() - 2]);
  return leaf((rand(m, kFloat64) + 0.5).transpose(-1, -2));
}

struct Tol {
  double eps = 1e-6, atol = 1e-5, rtol = 1e-3;
};

// CHECKs that gradcheck (and, with second_order, gradgradcheck) pass; a failure prints `what`
// and gradcheck's report, an exception is a failed check rather than an aborted test case.
template <typename Fn>
void expect_grad(const std::string& what, Fn fn, const TensorList& inputs, bool second_order = true, Tol tol = {}) {
  {
    INFO("gradcheck: " << what);
    try {
      autograd::GradcheckResult r = autograd::gradcheck(fn, inputs, tol.eps, tol.atol, tol.rtol);
      INFO(r.message);
      CHECK(r.ok);
    } catch (const std::exception& e) {
      FAIL_CHECK("threw: " << e.what());
    }
  }
  if (!second_order) return;
  {
    INFO("gradgradcheck: " << what);
    try {
      autograd::GradcheckResult r = autograd::gradgradcheck(fn, inputs, tol.eps, tol.atol, tol.rtol);
      INFO(r.message);
      CHECK(r.ok);
    } catch (const std::exception& e) {
      FAIL_CHECK("threw: " << e.what());
    }
  }
}

}  // namespace tt::testing
