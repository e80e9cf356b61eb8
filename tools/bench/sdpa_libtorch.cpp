// LibTorch's side of the sdpa_N workloads of issue 6: attention written out as a LibTorch 1.13
// user writes it (it has no fused SDPA): matmul, causal masked_fill, softmax, matmul, then
// backward. Its peak memory is measured by a counting wrapper around LibTorch's CPU allocator,
// installed only while the one measured op runs. Same values as sdpa_tinytorch.cpp.
#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <string>

#include "harness.h"

namespace ttbench {

namespace {

torch::Tensor uniform(at::IntArrayRef shape, uint64_t seed) {
  torch::Tensor t = torch::empty(shape, torch::kFloat);
  fill_uniform(t.data_ptr<float>(), t.numel(), seed, -1.0f, 1.0f);
  return t;
}

double abs_sum(const torch::Tensor& t) {
  torch::Tensor c = t.detach().contiguous();
  return abs_checksum(c.data_ptr<float>(), c.numel());
}

// Counts the bytes LibTorch's CPU tensors hold (current and peak) by wrapping the default
// allocator: each allocation carries a small context that subtracts its size when freed, so
// tensors freed after the wrapper is swapped out are still counted down.
class CountingAllocator final : public at::Allocator {
 public:
  at::DataPtr allocate(size_t n) const override {
    at::DataPtr inner = c10::GetDefaultCPUAllocator()->allocate(n);
    void* data = inner.get();
    auto* ctx = new Context{std::move(inner), n};
    const int64_t now = current().fetch_add(int64_t(n)) + int64_t(n);
    int64_t seen = peak().load();
    while (now > seen && !peak().compare_exchange_weak(seen, now)) {
    }
    return {data, ctx, &release, at::Device(at::kCPU)};
  }
  static std::atomic<int64_t>& current() {
    static std::atomic<int64_t> c{0};
    return c;
  }
  static std::atomic<int64_t>& peak() {
    static std::atomic<int64_t> p{0};
    return p;
  }

 private:
  struct Context {
    at::DataPtr inner;
    size_t n;
  };
  static void release(void* p) {
    auto* ctx = static_cast<Context*>(p);
    current().fetch_sub(int64_t(ctx->n));
    delete ctx;
  }
};

// Installs the counting allocator (or the default one back). SetCPUAllocator keeps the one of
// highest priority, so every swap raises the priority.
void use_counting_allocator(bool on) {
  static CountingAllocator counting;
  static uint8_t priority = 1;
  c10::SetCPUAllocator(on ? static_cast<at::Allocator*>(&counting) : c10::GetDefaultCPUAllocator(), priority++);
}

Factory sdpa(int64_t N) {
  return [N] {
    torch::Tensor q = uniform({1, 8, N, 64}, 31).requires_grad_(true);
    torch::Tensor k = uniform({1, 8, N, 64}, 32).requires_grad_(true);
    torch::Tensor v = uniform({1, 8, N, 64}, 33).requires_grad_(true);
    const torch::Tensor dy = uniform({1, 8, N, 64}, 34);
    const torch::Tensor future = torch::ones({N, N}, torch::kBool).triu(1);  // key j > query i
    const double scale = 1.0 / std::sqrt(64.0);
    auto step = [=] {
      torch::Tensor s = torch::matmul(q, k.transpose(-2, -1)) * scale;
      s = s.masked_fill(future, -std::numeric_limits<float>::infinity());
      torch::Tensor y = torch::matmul(s.softmax(-1), v);
      y.backward(dy);
      return y;
    };
    auto clear = [=] {
      for (const torch::Tensor& t : {q, k, v}) t.mutable_grad().reset();
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
      use_counting_allocator(true);
      const int64_t before = CountingAllocator::current().load();
      CountingAllocator::peak().store(before);
      step();
      const int64_t peak = CountingAllocator::peak().load() - before;
      use_counting_allocator(false);
      clear();
      return double(peak);
    };
    return p;
  };
}

}  // namespace

void add_sdpa_workloads_libtorch(Impl& impl) {
  for (int64_t n : {1024, 2048, 4096, 8192}) impl.factories["sdpa_" + std::to_string(n)] = sdpa(n);
}

}  // namespace ttbench
