// The loop under every CPU binary op: binary_loop walks out, a and b with their own strides
// (broadcasting reads stride-0 operands in place), and binary_typed picks the op. Module 01's
// exercise region is binary_loop. It is instantiated for 13 ops and 4 dtypes, the longest compile
// among the elementwise kernels, so two files share the work and compile side by side: binary.cpp
// (the floating dtypes, and CpuBackend::binary) and binary_integral.cpp (int64, bool). An edit here
// recompiles those two alone (in 20 s rather than 40 on the 2-core development machine).
#pragma once

#include <utility>

#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/cpu/loop.h"
#include "tinytorch/backend/visit.h"

namespace tt::cpu::detail {

// out: [*]; a, b: bcast to out. The heart of broadcasting: stride-0 operands are read in place.
template <typename out_t, typename in_t, typename F>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  // TT_EXERCISE_BEGIN(01, 2)
  const Tensor* ops[3] = {&out, &a, &b};
  StridedLoop<3> loop(ops);
  loop.run([f](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t so = sizeof(out_t), si = sizeof(in_t);
    auto* o = reinterpret_cast<out_t*>(p[0]);
    auto* x = reinterpret_cast<const in_t*>(p[1]);
    auto* y = reinterpret_cast<const in_t*>(p[2]);
    if (s[0] == so && s[1] == si && s[2] == si) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (s[0] == so && s[1] == si && s[2] == 0) {
      const in_t yv = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
    } else if (s[0] == so && s[1] == 0 && s[2] == si) {
      const in_t xv = *x;
      for (int64_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<out_t*>(p[0] + i * s[0]) =
            f(*reinterpret_cast<const in_t*>(p[1] + i * s[1]),
              *reinterpret_cast<const in_t*>(p[2] + i * s[2]));
    }
  });
  // TT_EXERCISE_END
}

// out = op(a, b). a, b: T, bcast to out; out: T, or bool for comparisons: the functor's own result
// type, so each op instantiates the one loop it runs (a runtime branch on is_comparison compiled
// both for every op, twice the code).
template <typename T>
void binary_typed(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  visit_binary(op, [&](auto f) {
    using out_t = decltype(f(std::declval<T>(), std::declval<T>()));
    binary_loop<out_t, T>(out, a, b, f);
  });
}

}  // namespace tt::cpu::detail
