// LibTorch's side of every workload, compiled only when CMake found LibTorch (Debian's
// libtorch-dev). Its own translation unit: ATen's headers are heavy and their warnings are not
// ours. Written the way a LibTorch user writes it: `a + b`, `a.sum()`, `a.matmul(b)` on plain
// tensors (no InferenceMode, no NoGradGuard: neither framework gets a fast path the other lacks).
// Forward + backward workloads call `loss.backward()` and clear grads by setting them to none
// (`mutable_grad().reset()`, what torch's zero_grad() does by default), as impl_tinytorch.cpp does.
//
// ATen is the tensor library underneath torch::; `torch::Tensor` is `at::Tensor`, and an op on
// either goes through the same dispatcher (including its Autograd key), so ATen's lighter
// headers measure the same thing.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "harness.h"
#include "libtorch_autocast.h"

namespace ttbench {

namespace {

at::Tensor filled(at::IntArrayRef shape, uint64_t seed) {
  at::Tensor t = at::empty(shape, at::kFloat);
  fill_uniform(t.data_ptr<float>(), t.numel(), seed);
  return t;
}

// (bf16 results are read as float32.)
double checksum_of(const at::Tensor& t) {
  at::Tensor c = t.to(at::kFloat).contiguous();
  return checksum(c.data_ptr<float>(), c.numel());
}

double abs_checksum_of(const at::Tensor& t) {
  at::Tensor c = t.to(at::kFloat).contiguous();
  return abs_checksum(c.data_ptr<float>(), c.numel());
}

at::Tensor filled_leaf(at::IntArrayRef shape, uint64_t seed, float lo, float hi) {
  at::Tensor t = at::empty(shape, at::kFloat);
  fill_uniform(t.data_ptr<float>(), t.numel(), seed, lo, hi);
  t.requires_grad_(true);
  return t;
}

// Sets a leaf's grad to none, as torch's zero_grad() does by default.
void clear_grad(const at::Tensor& t) { t.mutable_grad().reset(); }

// One forward + backward op, as impl_tinytorch.cpp's forward_backward: y = forward(),
// y.backward(dy), every leaf's grad set to none; checksum sum(y) + sum |grad| of each leaf.
Prepared forward_backward(std::function<at::Tensor()> forward, at::Tensor dy, std::vector<at::Tensor> leaves) {
  auto step = [=] {
    at::Tensor y = forward();
    y.backward(dy);
    return y;
  };
  auto clear = [=] {
    for (const at::Tensor& l : leaves) clear_grad(l);
  };
  Prepared p;
  p.run = [=] {
    step();
    clear();
  };
  p.check = [=] {
    double c = checksum_of(step().detach());
    for (const at::Tensor& l : leaves) c += abs_checksum_of(l.grad());
    clear();
    return c;
  };
  return p;
}

// softmax_fb: x: [B, H, T, T] = [64, 8, 128, 128], softmax over the last dim, then y.backward(dy).
Factory softmax_fb() {
  return [] {
    at::Tensor x = filled_leaf({64, 8, 128, 128}, 1, 0.0f, 1.0f);
    return forward_backward([=] { return x.softmax(-1); }, filled({64, 8, 128, 128}, 2), {x});
  };
}

// tiny_graph: the fixed cost of a two-node graph, ((a * b).sum()).backward() on 1-element leaves.
Factory tiny_graph() {
  return [] {
    at::Tensor a = filled_leaf({1}, 1, 0.0f, 1.0f), b = filled_leaf({1}, 2, 0.0f, 1.0f);
    auto step = [=] {
      at::Tensor loss = (a * b).sum();
      loss.backward();
      return loss;
    };
    Prepared p;
    p.run = [=] {
      step();
      clear_grad(a);
      clear_grad(b);
    };
    p.check = [=] {
      double c = checksum_of(step().detach()) + checksum_of(a.grad()) + checksum_of(b.grad());
      clear_grad(a);
      clear_grad(b);
      return c;
    };
    return p;
  };
}

// mlp_chain_fb: x: [N, C] = [1024, 512], W_i: [C, C]; h = gelu(h @ W_i) four times (exact erf),
// then h.sum().backward(). Same inputs as impl_tinytorch.cpp.
Factory mlp_chain_fb() {
  return [] {
    const float bound = std::sqrt(6.0f / 512.0f);
    at::Tensor x = at::empty({1024, 512}, at::kFloat);
    fill_uniform(x.data_ptr<float>(), x.numel(), 1, -1.0f, 1.0f);
    std::vector<at::Tensor> w;
    for (uint64_t i = 0; i < 4; ++i) w.push_back(filled_leaf({512, 512}, 10 + i, -bound, bound));
    auto step = [=] {
      at::Tensor h = x;
      for (const at::Tensor& wi : w) h = at::gelu(h.matmul(wi), "none");
      at::Tensor loss = h.sum();
      loss.backward();
      return loss;
    };
    auto clear = [=] {
      for (const at::Tensor& wi : w) clear_grad(wi);
    };
    Prepared p;
    p.run = [=] {
      step();
      clear();
    };
    p.check = [=] {
      double c = checksum_of(step().detach());
      for (const at::Tensor& wi : w) c += abs_checksum_of(wi.grad());
      clear();
      return c;
    };
    return p;
  };
}

// linear_fb: at::linear (addmm with the bias) on x [8192, 512] requiring grad; y.backward(dy).
// Same values as impl_tinytorch.cpp. With `bf16` (linear_fb_bf16): the forward under LibTorch's
// CPU autocast in bf16 (torch.autocast("cpu", torch.bfloat16) in Python); dy rounded to bf16.
Factory linear_fb(bool bf16 = false) {
  return [bf16] {
    at::Tensor x = filled({8192, 512}, 1).requires_grad_(true);
    at::Tensor w = filled({2048, 512}, 2).requires_grad_(true);
    at::Tensor b = filled({2048}, 3).requires_grad_(true);
    auto forward = [=] {
      CpuAutocast autocast(bf16);
      return at::linear(x, w, b);
    };
    return forward_backward(forward, filled({8192, 2048}, 4).to(bf16 ? at::kBFloat16 : at::kFloat), {x, w, b});
  };
}

// layernorm_fb: at::layer_norm over the last dim (768) of x [8192, 768] requiring grad, weight and
// bias requiring grad; y.backward(dy). Same values as impl_tinytorch.cpp.
Factory layernorm_fb() {
  return [] {
    at::Tensor x = filled({8192, 768}, 1).requires_grad_(true);
    at::Tensor w = filled({768}, 2).requires_grad_(true);
    at::Tensor b = filled({768}, 3).requires_grad_(true);
    return forward_backward([=] { return at::layer_norm(x, {768}, w, b, 1e-5); }, filled({8192, 768}, 4), {x, w, b});
  };
}

template <typename Op>
Factory binary(std::vector<int64_t> shape_a, std::vector<int64_t> shape_b, Op op) {
  return [=] {
    at::Tensor a = filled(shape_a, 1), b = filled(shape_b, 2);
    Prepared p;
    p.run = [=] {
      at::Tensor c = op(a, b);
      do_not_optimize(c.data_ptr<float>());
    };
    p.check = [=] { return checksum_of(op(a, b)); };
    return p;
  };
}

// The "ATen parallel backend: ..." line of at::get_parallel_info().
std::string parallel_backend() {
  const std::string info = at::get_parallel_info(), key = "ATen parallel backend: ";
  size_t at_key = info.find(key);
  if (at_key == std::string::npos) return "ATen parallel backend: unknown";
  size_t end = info.find('\n', at_key);
  return info.substr(at_key, end == std::string::npos ? std::string::npos : end - at_key);
}

}  // namespace

Impl make_libtorch_impl() {
  Impl impl;
  impl.name = "libtorch";
  // Sets ATen's intra-op count: omp_set_num_threads (the libgomp tinytorch uses too) plus the
  // count ATen re-applies on a thread's first parallel op. It does NOT touch OpenBLAS's
  // threads, which run LibTorch's float matmul. See Note [threads] in main.cpp.
  impl.set_threads = [](int n) { at::set_num_threads(n); };
  impl.describe = [] {
    return std::string("libtorch ") + TORCH_VERSION + ": at::get_num_threads()=" +
           std::to_string(at::get_num_threads()) +
           " at::get_num_interop_threads()=" + std::to_string(at::get_num_interop_threads()) +
           " (" + parallel_backend() + ")";
  };

  auto matmul = [](const at::Tensor& a, const at::Tensor& b) { return a.matmul(b); };
  auto add = [](const at::Tensor& a, const at::Tensor& b) { return a + b; };
  auto sum = [](const at::Tensor& a, const at::Tensor&) { return a.sum(); };
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
  add_training_workloads_libtorch(impl);
  add_attention_workloads_libtorch(impl);
  add_sdpa_workloads_libtorch(impl);
  return impl;
}

}  // namespace ttbench
