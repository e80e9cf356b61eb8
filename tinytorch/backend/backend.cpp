// backend_for() and allocator_for(), the lookups of a device's kernels and of its memory, and
// blas_compatible().
#include "tinytorch/backend/backend.h"

#include <algorithm>

#include "tinytorch/backend/bf16_compute.h"
#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/cuda/entry.h"
#include "tinytorch/core/allocator.h"

namespace tt {

bool blas_compatible(const Tensor& m) {
  int d = m.dim();
  int64_t rows = m.size(d - 2), cols = m.size(d - 1);
  int64_t sr = m.stride(d - 2), sc = m.stride(d - 1);
  bool plain = (sc == 1 || cols == 1) && (sr >= std::max<int64_t>(1, cols) || rows == 1);
  bool transposed = (sr == 1 || rows == 1) && (sc >= std::max<int64_t>(1, rows) || cols == 1);
  return plain || transposed;
}

// Each device's kernels, behind the bf16 path (Note [bf16 compute] in bf16_compute.h).
Backend& backend_for(const Device& device) {
  if (device.is_cpu()) {
    static Bf16Compute cpu(cpu::cpu_backend());
    return cpu;
  }
  check_device_available(device, "backend_for");
#ifdef TINYTORCH_HAS_CUDA
  static auto* cuda = new Bf16Compute(cuda_backend(device.index));  // one backend serves every GPU
  return *cuda;
#else
  throw DeviceError("backend_for: tinytorch was built without CUDA");
#endif
}

Allocator& allocator_for(const Device& device) {
  if (device.is_cpu()) return cpu_allocator();
  check_device_available(device, "allocate");
#ifdef TINYTORCH_HAS_CUDA
  return cuda_allocator(device.index);
#else
  throw DeviceError("allocate: tinytorch was built without CUDA");
#endif
}

}  // namespace tt
