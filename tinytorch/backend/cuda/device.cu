// CUDA device discovery. The CUDA kernels, allocator and cuBLAS backend are the subject of the
// CUDA backend work (module 09); until they land, a CUDA tensor request on a machine with a GPU
// gets a DeviceError saying so, and the device queries here are real.
#include <cuda_runtime.h>

#include "tinytorch/backend/backend.h"
#include "tinytorch/core/allocator.h"
#include "tinytorch/core/device.h"

namespace tt {

namespace cuda {
int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}
bool is_available() { return device_count() > 0; }
}  // namespace cuda

Allocator& cuda_allocator(int index) {
  throw DeviceError(detail::concat("allocate: device cuda:", index, " is present, but this version of "
                                   "tinytorch has no CUDA backend yet (tensors live on the CPU)"));
}

Backend& cuda_backend(int index) {
  throw DeviceError(detail::concat("backend_for: device cuda:", index, " is present, but this version "
                                   "of tinytorch has no CUDA backend yet (tensors live on the CPU)"));
}

}  // namespace tt
