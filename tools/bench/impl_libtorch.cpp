// LibTorch's side of every workload, compiled only when CMake found LibTorch (Debian's
// libtorch-dev). Its own translation unit: ATen's headers are heavy and their warnings are not
// ours. Written the way a LibTorch user writes it: `a + b`, `a.sum()`, `a.matmul(b)` on plain
// tensors (no InferenceMode, no NoGradGuard: neither framework gets a fast path the other lacks).
//
// ATen is the tensor library underneath torch::; `torch::Tensor` is `at::Tensor`, and an op on
// either goes through the same dispatcher (including its Autograd key), so ATen's lighter
// headers measure the same thing.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include <string>

#include "harness.h"

namespace ttbench {

namespace {

at::Tensor filled(at::IntArrayRef shape, uint64_t seed) {
  at::Tensor t = at::empty(shape, at::kFloat);
  fill_uniform(t.data_ptr<float>(), t.numel(), seed);
  return t;
}

double checksum_of(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return checksum(c.data_ptr<float>(), c.numel());
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
  return impl;
}

}  // namespace ttbench
