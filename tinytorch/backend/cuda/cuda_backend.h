// The CUDA backend: the Backend interface implemented with our own kernels and cuBLAS. Each
// kernel family lives in the .cu file named like its CPU twin (cpu/softmax.cpp ↔
// cuda/softmax.cu). All work is queued on the legacy default stream of the tensor's device, so
// kernels, cuBLAS calls and the caching allocator's reuse of freed blocks are ordered; copies to
// the host synchronize.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "tinytorch/backend/backend.h"

namespace tt::cuda {

class CudaBackend final : public Backend {
 public:
  // Every kernel of the registry (backend/kernels.h); a missing body fails the link.
  TT_KERNELS(TT_KERNEL_OVERRIDE)
};

// Makes `device` current for the scope and restores the previous device after.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// The cuBLAS handle of a device, created on first use (math mode follows allow_tf32()).
cublasHandle_t cublas_handle(int device);

// Creates device `device`'s counters of the one-launch Adam step (optimizer.cu) now rather than at
// the first step: a CUDA graph capture calls it before capturing, where cudaMalloc would invalidate it.
void create_optimizer_counters(int device);

}  // namespace tt::cuda
