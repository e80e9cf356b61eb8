// tinytorch's side of every workload, written the way a user of the library would write it:
// `a + b`, `a.sum()`, `a.matmul(b)`, each result a fresh tensor that is dropped afterwards.
#include <omp.h>

#include <string>

#include "harness.h"
#include "tinytorch/tinytorch.h"

namespace ttbench {

namespace {

tt::Tensor filled(const tt::Shape& shape, uint64_t seed) {
  tt::Tensor t = tt::empty(shape, tt::kFloat32);
  fill_uniform(t.data_ptr<float>(), t.numel(), seed);
  return t;
}

double checksum_of(const tt::Tensor& t) {
  tt::Tensor c = t.contiguous();
  return checksum(c.data_ptr<float>(), c.numel());
}

// Builds a Prepared from an op on two inputs of the given shape.
template <typename Op>
Factory binary(tt::Shape shape_a, tt::Shape shape_b, Op op) {
  return [=] {
    tt::Tensor a = filled(shape_a, 1), b = filled(shape_b, 2);
    Prepared p;
    p.run = [=] {
      tt::Tensor c = op(a, b);
      do_not_optimize(c.data_ptr<float>());
    };
    p.check = [=] { return checksum_of(op(a, b)); };
    return p;
  };
}

}  // namespace

Impl make_tinytorch_impl() {
  Impl impl;
  impl.name = "tinytorch";
  // tinytorch has no thread setting of its own: its elementwise and reduction loops are OpenMP
  // regions, so OpenMP's thread count is its thread count. Its matmul is OpenBLAS, pinned by
  // the openblas impl (same library in this process).
  impl.set_threads = [](int n) { omp_set_num_threads(n); };
  impl.describe = [] {
    return "tinytorch: omp_get_max_threads()=" + std::to_string(omp_get_max_threads()) +
           " (elementwise/reduction loops; matmul runs on OpenBLAS's threads)";
  };

  auto matmul = [](const tt::Tensor& a, const tt::Tensor& b) { return a.matmul(b); };
  auto add = [](const tt::Tensor& a, const tt::Tensor& b) { return a + b; };
  auto sum = [](const tt::Tensor& a, const tt::Tensor&) { return a.sum(); };
  const int64_t n16m = int64_t(1) << 24;

  impl.factories["matmul_1024"] = binary({1024, 1024}, {1024, 1024}, matmul);
  impl.factories["matmul_4096"] = binary({4096, 4096}, {4096, 4096}, matmul);
  impl.factories["add_16M"] = binary({n16m}, {n16m}, add);
  impl.factories["sum_16M"] = binary({n16m}, {1}, sum);
  impl.factories["dispatch_add_1"] = binary({1}, {1}, add);
  return impl;
}

}  // namespace ttbench
