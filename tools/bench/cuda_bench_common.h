// tt_bench --device cuda, internal: what the general GPU workloads (cuda_bench.cpp) and issue 8's
// attention rows (cuda_bench_sdpa.cpp) share: error checks, event timing, GPU inputs, a
// forward + backward op, and the two attention entry points the driver calls. Not the workloads
// themselves, not the flags or the tables. Built only with TINYTORCH_HAS_CUDA.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tinytorch/tinytorch.h"

namespace ttbench::cuda_bench {

// --- error checks: the call, then the runtime's or cuBLAS's own words for the status ------------
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("tt_bench --device cuda: ") + what + " failed: " +
                             cudaGetErrorString(status) + " (error " + std::to_string(int(status)) + ")");
}

inline void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("tt_bench --device cuda: ") + what + " failed: " +
                             cublasGetStatusString(status) + " (status " + std::to_string(int(status)) + ")");
}

// CUDA events, destroyed with the struct.
struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
};

// Median time of one op in ms: `warmup` untimed ops, then `rounds` samples of `iters` ops each
// bracketed by events on the default stream (iters chosen so a sample lasts about 20 ms).
inline double time_ms(const std::function<void()>& op, int warmup, int rounds) {
  for (int i = 0; i < warmup; ++i) op();
  tt::cuda::synchronize(0);
  Events ev;
  auto sample = [&](int iters) {
    check(cudaEventRecord(ev.start, /*stream=*/nullptr), "cudaEventRecord");
    for (int i = 0; i < iters; ++i) op();
    check(cudaEventRecord(ev.stop, /*stream=*/nullptr), "cudaEventRecord");
    check(cudaEventSynchronize(ev.stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, ev.start, ev.stop), "cudaEventElapsedTime");
    return double(ms) / iters;
  };
  const double one = std::max(1e-3, sample(1));
  const int iters = int(std::min(1000.0, std::max(1.0, 20.0 / one)));
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) t.push_back(sample(iters));
  std::sort(t.begin(), t.end());
  tt::cuda::synchronize(0);
  return t[t.size() / 2];
}

// --- workloads' inputs -------------------------------------------------------------------------
inline const tt::Device kGpu(tt::kCUDA, 0);

inline tt::Tensor gpu_uniform(const tt::Shape& shape, float lo, float hi) {
  return (tt::rand(shape, tt::TensorOptions().dtype(tt::kFloat32).device(kGpu)) * (hi - lo) + lo).detach();
}

// One forward + backward of f with a fixed dy, then the leaves' grads set to none (README: Method).
inline std::function<void()> forward_backward(std::function<tt::Tensor()> f, tt::Tensor dy,
                                              std::vector<tt::Tensor> leaves) {
  return [=] {
    tt::Tensor y = f();
    y.backward(dy);
    for (const tt::Tensor& l : leaves) l.set_grad(tt::Tensor());
  };
}

// --- attention (issue 8), defined in cuda_bench_sdpa.cpp -----------------------------------------
// The attention rows' measured times and the FFMA peak, kept for the table printed after PyTorch's.
struct SdpaRun;

// Times the FFMA peak and every attention shape `selected` accepts (flash, flash under TF32, and
// the math path unless `math` is false or its weights would not fit), printing one line per row.
std::shared_ptr<SdpaRun> sdpa_measure(const std::function<bool(const std::string&)>& selected, bool math,
                                      int warmup, int rounds);

// The attention table beside PyTorch's times (`torch`: name -> ms) and issue 8's targets; prints
// nothing when no attention shape was selected.
void sdpa_report(const SdpaRun& run, const std::map<std::string, double>& torch);

}  // namespace ttbench::cuda_bench
