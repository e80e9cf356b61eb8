// tinytorch's side of every workload, written the way a user of the library would write it:
// `a + b`, `a.sum()`, `a.matmul(b)`, each result a fresh tensor that is dropped afterwards;
// for forward + backward workloads, `loss.backward()` and grads cleared with set_grad(Tensor()).
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "harness.h"
#include "tinytorch/backend/cpu/blas_info.h"
#include "tinytorch/tinytorch.h"

namespace ttbench {

namespace {

tt::Tensor filled(const tt::Shape& shape, uint64_t seed) {
  tt::Tensor t = tt::empty(shape, tt::kFloat32);
  fill_uniform(t.data_ptr<float>(), t.numel(), seed);
  return t;
}

// (bf16 results are read as float32.)
double checksum_of(const tt::Tensor& t) {
  tt::Tensor c = t.to(tt::kFloat32).contiguous();
  return checksum(c.data_ptr<float>(), c.numel());
}

double abs_checksum_of(const tt::Tensor& t) {
  tt::Tensor c = t.to(tt::kFloat32).contiguous();
  return abs_checksum(c.data_ptr<float>(), c.numel());
}

tt::Tensor filled_leaf(const tt::Shape& shape, uint64_t seed, float lo, float hi) {
  tt::Tensor t = tt::empty(shape, tt::kFloat32);
  fill_uniform(t.data_ptr<float>(), t.numel(), seed, lo, hi);
  t.requires_grad_(true);
  return t;
}

// One forward + backward op as a training step runs it: y = forward(), y.backward(dy), then every
// leaf's grad set to none. The checksum adds sum(y) and sum |grad| of each leaf.
Prepared forward_backward(std::function<tt::Tensor()> forward, tt::Tensor dy, std::vector<tt::Tensor> leaves) {
  auto step = [=] {
    tt::Tensor y = forward();
    y.backward(dy);
    return y;
  };
  auto clear = [=] {
    for (const tt::Tensor& l : leaves) l.set_grad(tt::Tensor());
  };
  Prepared p;
  p.run = [=] {
    step();
    clear();
  };
  p.check = [=] {
    double c = checksum_of(step());
    for (const tt::Tensor& l : leaves) c += abs_checksum_of(l.grad());
    clear();
    return c;
  };
  return p;
}

// softmax_fb: x: [B, H, T, T] = [64, 8, 128, 128], softmax over the last dim, then y.backward(dy).
Factory softmax_fb() {
  return [] {
    tt::Tensor x = filled_leaf({64, 8, 128, 128}, 1, 0.0f, 1.0f);
    return forward_backward([=] { return x.softmax(-1); }, filled({64, 8, 128, 128}, 2), {x});
  };
}

// tiny_graph: the fixed cost of a two-node graph, ((a * b).sum()).backward() on 1-element leaves.
Factory tiny_graph() {
  return [] {
    tt::Tensor a = filled_leaf({1}, 1, 0.0f, 1.0f), b = filled_leaf({1}, 2, 0.0f, 1.0f);
    auto step = [=] {
      tt::Tensor loss = (a * b).sum();
      loss.backward();
      return loss;
    };
    Prepared p;
    p.run = [=] {
      step();
      a.set_grad(tt::Tensor());
      b.set_grad(tt::Tensor());
    };
    p.check = [=] {
      double c = checksum_of(step()) + checksum_of(a.grad()) + checksum_of(b.grad());
      a.set_grad(tt::Tensor());
      b.set_grad(tt::Tensor());
      return c;
    };
    return p;
  };
}

// mlp_chain_fb: x: [N, C] = [1024, 512], W_i: [C, C]; h = gelu(h @ W_i) four times, then
// h.sum().backward(). Inputs in [-1, 1), weights He-uniform, so activations stay O(1) and the
// GELU works on both sides of zero rather than on huge values where erf is a constant.
Factory mlp_chain_fb() {
  return [] {
    const float bound = std::sqrt(6.0f / 512.0f);
    tt::Tensor x = tt::empty({1024, 512}, tt::kFloat32);
    fill_uniform(x.data_ptr<float>(), x.numel(), 1, -1.0f, 1.0f);
    std::vector<tt::Tensor> w;
    for (uint64_t i = 0; i < 4; ++i) w.push_back(filled_leaf({512, 512}, 10 + i, -bound, bound));
    auto step = [=] {
      tt::Tensor h = x;
      for (const tt::Tensor& wi : w) h = tt::gelu(h.matmul(wi), "none");
      tt::Tensor loss = h.sum();
      loss.backward();
      return loss;
    };
    auto clear = [=] {
      for (const tt::Tensor& wi : w) wi.set_grad(tt::Tensor());
    };
    Prepared p;
    p.run = [=] {
      step();
      clear();
    };
    p.check = [=] {
      double c = checksum_of(step());
      for (const tt::Tensor& wi : w) c += abs_checksum_of(wi.grad());
      clear();
      return c;
    };
    return p;
  };
}

// linear_fb: nn::Linear(512, 2048) on x [8192, 512] requiring grad; y.backward(dy) with fixed dy.
// The same values as impl_openblas.cpp: x seed 1, W seed 2, b seed 3, dy seed 4.
// With `bf16` (linear_fb_bf16): the forward under tt::AutocastGuard(kCPU, kBFloat16), its three
// GEMMs in bf16 with float32 accumulation; x, W, b and their grads float32; dy rounded to bf16,
// y's dtype. Without, it is also the bf16 workload's "tinytorch_fp32" baseline.
Factory linear_fb(bool bf16 = false) {
  return [bf16] {
    auto fc = std::make_shared<tt::nn::Linear>(512, 2048);
    {
      tt::NoGradGuard no_grad;
      fc->weight.copy_(filled({2048, 512}, 2));
      fc->bias.copy_(filled({2048}, 3));
    }
    tt::Tensor x = filled({8192, 512}, 1).requires_grad_(true);
    tt::Tensor dy = filled({8192, 2048}, 4).to(bf16 ? tt::kBFloat16 : tt::kFloat32);
    auto forward = [=] {
      tt::AutocastGuard autocast(tt::kCPU, tt::kBFloat16, bf16);
      return fc->forward(x);
    };
    return forward_backward(forward, dy, {x, fc->weight, fc->bias});
  };
}

// layernorm_fb: nn::LayerNorm(768) on x [8192, 768] requiring grad; y.backward(dy) with fixed dy.
// x seed 1, dy seed 4; weight and bias filled (seeds 2, 3) so the affine is not the identity.
Factory layernorm_fb() {
  return [] {
    auto ln = std::make_shared<tt::nn::LayerNorm>(tt::nn::LayerNormOptions({768}));
    {
      tt::NoGradGuard no_grad;
      ln->weight.copy_(filled({768}, 2));
      ln->bias.copy_(filled({768}, 3));
    }
    tt::Tensor x = filled({8192, 768}, 1).requires_grad_(true);
    return forward_backward([=] { return ln->forward(x); }, filled({8192, 768}, 4), {x, ln->weight, ln->bias});
  };
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
  // tt::set_num_threads: OpenMP's count (tinytorch's loops) and the BLAS's (its matmul), one
  // setting (Note [threading policy] in tinytorch/backend/threads.cpp).
  impl.set_threads = [](int n) { tt::set_num_threads(n); };
  impl.describe = [] {
    // How idle libgomp workers wait matters when OpenMP regions alternate with OpenBLAS's own
    // threads (tools/bench/README.md, Threads): print the setting, shared with LibTorch.
    const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
    const char* spin_count = std::getenv("GOMP_SPINCOUNT");
    const tt::cpu::BlasInfo blas = tt::cpu::blas_info();
    return "tinytorch: tt::get_num_threads()=" + std::to_string(tt::get_num_threads()) + " omp_get_max_threads()=" +
           std::to_string(omp_get_max_threads()) + " blas=" + blas.vendor + "/" + blas.core + "/" +
           tt::cpu::blas_threading_name(blas.threading) + " OMP_WAIT_POLICY=" +
           (wait_policy ? wait_policy : "unset") + " GOMP_SPINCOUNT=" + (spin_count ? spin_count : "unset");
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
  impl.factories["softmax_fb"] = softmax_fb();
  impl.factories["tiny_graph"] = tiny_graph();
  impl.factories["mlp_chain_fb"] = mlp_chain_fb();
  impl.factories["linear_fb"] = linear_fb();
  impl.factories["layernorm_fb"] = layernorm_fb();
  impl.factories["linear_fb_bf16"] = linear_fb(/*bf16=*/true);
  add_training_workloads_tinytorch(impl);
  add_attention_workloads_tinytorch(impl);
  add_sdpa_workloads_tinytorch(impl);
  return impl;
}

// tinytorch_fp32: the bf16 workloads run in float32 by the same library, the baseline of their
// "bf16 >= 1.3x our own float32" targets (issue 19).
Impl make_tinytorch_fp32_impl() {
  Impl fp32 = make_tinytorch_impl();
  fp32.name = "tinytorch_fp32";
  fp32.describe = [] { return std::string("tinytorch_fp32: tinytorch itself (the same threads), in float32"); };
  fp32.factories.clear();
  fp32.factories["linear_fb_bf16"] = linear_fb();
  add_bf16_baselines_tinytorch(fp32);
  return fp32;
}

}  // namespace ttbench
