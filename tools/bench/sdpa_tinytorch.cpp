// tinytorch's side of the sdpa_N workloads of issue 6: F::scaled_dot_product_attention on
// q, k, v [1, 8, N, 64] float32, causal, forward + backward, through the default (flash) kernel,
// and the allocator's peak for one such op.
#include <string>

#include "harness.h"
#include "tinytorch/tinytorch.h"

namespace ttbench {

namespace {

tt::Tensor uniform(const tt::Shape& shape, uint64_t seed) {
  tt::Tensor t = tt::empty(shape, tt::kFloat32);
  fill_uniform(t.data_ptr<float>(), t.numel(), seed, -1.0f, 1.0f);
  return t;
}

double abs_sum(const tt::Tensor& t) {
  tt::Tensor c = t.detach().contiguous();
  return abs_checksum(c.data_ptr<float>(), c.numel());
}

Factory sdpa(int64_t N) {
  return [N] {
    const tt::Shape shape{1, 8, N, 64};
    tt::Tensor q = uniform(shape, 31).requires_grad_(true), k = uniform(shape, 32).requires_grad_(true),
               v = uniform(shape, 33).requires_grad_(true);
    const tt::Tensor dy = uniform(shape, 34);
    auto step = [=] {
      tt::Tensor y = tt::F::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
      y.backward(dy);
      return y;
    };
    auto clear = [=] {
      for (const tt::Tensor& t : {q, k, v}) t.set_grad(tt::Tensor());
    };
    Prepared p;
    p.run = [=] {
      step();
      clear();
    };
    p.check = [=] {
      double c = abs_sum(step()) + abs_sum(q.grad()) + abs_sum(k.grad()) + abs_sum(v.grad());
      clear();
      return c;
    };
    p.peak_bytes = [=] {
      tt::memory::reset_peak_stats();
      const int64_t before = tt::memory::stats().allocated_bytes;
      step();
      const int64_t peak = tt::memory::stats().peak_allocated_bytes - before;
      clear();
      return double(peak);
    };
    return p;
  };
}

}  // namespace

void add_sdpa_workloads_tinytorch(Impl& impl) {
  for (int64_t n : {1024, 2048, 4096, 8192}) impl.factories["sdpa_" + std::to_string(n)] = sdpa(n);
}

}  // namespace ttbench
