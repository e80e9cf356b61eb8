// The per-device error flag of CUDA kernels (Note [device error flag] in backend/device_error.h):
// the record in device memory, the atomic that writes the first bad index into it, and the read at
// the host's synchronization points (transfer() and tt::cuda::synchronize() in device.cu). The
// codes and the message are device_error.h's; this file only stores and moves the record.
#pragma once

#include <cuda_runtime.h>

#include "tinytorch/backend/device_error.h"

namespace tt::cuda {

// Device `device`'s record, in its memory, zeroed on its stream at creation (first use, which
// happens in the first indexing kernel's launch, before any CUDA graph capture).
DeviceErrorRecord* device_error_record(int device);

// At a synchronization point of device `device`, in this order:
//   queue_error_readback(device);      // before the host waits: the record -> a pinned host copy
//   ... cudaStreamSynchronize / cudaDeviceSynchronize ...
//   raise_device_error(device);        // after: throws tt::IndexError if a kernel recorded one
// raise_device_error clears the record (on the device's stream) before throwing, so the error is
// reported once. Both are no-ops for a device whose record was never created (no indexing kernel
// ran there). queue_error_readback also counts the wait (detail::host_waits()).
void queue_error_readback(int device);
void raise_device_error(int device);

#ifdef __CUDACC__
// Records (op, value, [lo, hi)) unless a bad index was recorded already: the first one wins.
__device__ __forceinline__ void record_device_error(DeviceErrorRecord* r, DeviceErrorOp op, int64_t value,
                                                    int64_t lo, int64_t hi) {
  if (atomicCAS(&r->op, 0, int32_t(op)) == 0) {
    r->value = value;
    r->lo = lo;
    r->hi = hi;
  }
}
#endif

}  // namespace tt::cuda
