// The entry points through which the rest of the library reaches the CUDA backend: its kernels
// (backend_for) and its caching allocator (allocator_for), both looked up in backend/backend.cpp. Plain declarations with no CUDA header, so any file may include them; they
// are defined, and may be called, only in a build with TINYTORCH_HAS_CUDA.
#pragma once

namespace tt {

class Allocator;
class Backend;

// The backend of CUDA device `index` (backend/cuda/device.cu).
Backend& cuda_backend(int index);
// The caching allocator of CUDA device `index` (backend/cuda/allocator.cu).
Allocator& cuda_allocator(int index);

}  // namespace tt
