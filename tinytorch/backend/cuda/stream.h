// The stream tinytorch queues its work on: every kernel, copy and cuBLAS call for one device goes to
// that device's stream, in order, so a whole training step can be captured into a CUDA graph.
#pragma once

#include <cuda_runtime.h>

namespace tt::cuda {

// Device `device`'s stream, created on first use and kept for the life of the process. It is a
// blocking stream (it waits for, and is waited on by, the legacy default stream), so work queued on
// the legacy stream by code outside tinytorch stays ordered with ours.
cudaStream_t stream(int device);

// The current device's stream (cudaGetDevice): the one a kernel launched under DeviceGuard uses.
cudaStream_t current_stream();

}  // namespace tt::cuda
