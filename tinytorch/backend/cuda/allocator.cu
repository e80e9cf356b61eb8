// The CUDA caching allocator: one BlockPool per device (Note [caching allocator pools] in
// core/block_pool.h) whose system calls are cudaMalloc / cudaFree on that device. A CUDA graph's
// capture draws from a private pool of the same BlockPool (Note [private pools]).
#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <vector>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_allocator.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/entry.h"
#include "tinytorch/core/block_pool.h"
#include "tinytorch/core/device.h"

namespace tt {

namespace {

BlockPool* make_cuda_pool(int index) {
  auto system_alloc = [index](size_t nbytes) -> void* {
    cuda::DeviceGuard guard(index);
    void* p = nullptr;
    // A new segment for a graph being captured: cudaMalloc is not queued on a stream, so capture
    // would call it unsafe and invalidate itself. The segment is meant to outlive the capture (the
    // pool keeps it while the graph lives), so the call is made in relaxed mode for this thread.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    TT_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    cudaError_t err = cudaMalloc(&p, nbytes);
    TT_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));  // the thread's mode back
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear it: the pool releases its cache and retries
      return nullptr;
    }
    TT_CUDA_CHECK(err);
    return p;
  };
  auto system_free = [index](void* ptr, size_t /*nbytes*/) {
    cuda::DeviceGuard guard(index);
    TT_CUDA_CHECK(cudaFree(ptr));
  };
  // Kernels queued on the device may still read a cached block: wait for them before cudaFree.
  auto synchronize = [index]() {
    cuda::DeviceGuard guard(index);
    TT_CUDA_CHECK(cudaDeviceSynchronize());
  };
  return new BlockPool(system_alloc, system_free, synchronize, Device(kCUDA, index).str());
}

}  // namespace

// The allocator of CUDA device `index` (allocator_for checked that the device exists). Leaked on
// purpose: tensors in static storage may be freed after main returns, and the CUDA runtime may be
// torn down before static destructors run.
Allocator& cuda_allocator(int index) { return cuda::block_pool(index); }

BlockPool& cuda::block_pool(int index) {
  static std::mutex mu;
  static auto* pools = new std::vector<BlockPool*>();
  std::lock_guard<std::mutex> lock(mu);
  TT_CHECK_DEVICE(index >= 0, "cuda_allocator: invalid CUDA device index ", index);
  if (size_t(index) >= pools->size()) pools->resize(size_t(index) + 1, nullptr);
  BlockPool*& pool = (*pools)[size_t(index)];
  if (pool == nullptr) pool = make_cuda_pool(index);
  return *pool;
}

}  // namespace tt
