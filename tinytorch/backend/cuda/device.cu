// CUDA devices: discovery, synchronization, the current-device guard, each device's stream, cuBLAS
// handles, the checked-call error messages and the backend singleton.
#include <cuda_runtime.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/entry.h"
#include "tinytorch/backend/cuda/error_flag.h"
#include "tinytorch/backend/cuda/libraries.h"
#include "tinytorch/backend/cuda/stream.h"
#include "tinytorch/core/allocator.h"
#include "tinytorch/core/cuda_graph.h"
#include "tinytorch/core/device.h"

namespace tt {

namespace cuda {

namespace detail {
void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so later calls start clean
  throw CudaError(tt::detail::concat("CUDA error ", cudaGetErrorName(err), " (", cudaGetErrorString(err),
                                     ") in ", call, " at ", file, ":", line));
}
void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  // cuBLAS names the status (also for cuBLASLt's calls, which share the enum); it is loaded by now
  // unless the failing call was cuBLASLt's, and then the number is all that is lost if it cannot be.
  std::string name = tt::detail::concat("status ", int(status)), text = "no description";
  try {
    name = lib::cublas().cublasGetStatusName(status);
    text = lib::cublas().cublasGetStatusString(status);
  } catch (const Error&) {
  }
  throw CudaError(tt::detail::concat("cuBLAS error ", name, " (", text, ") in ", call, " at ", file, ":", line));
}
}  // namespace detail

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}
bool is_available() { return device_count() > 0; }

std::string device_description(int device) {
  check_device_available(Device(kCUDA, device), "cuda::device_description");
  cudaDeviceProp prop{};
  TT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  TT_CUDA_CHECK(cudaDriverGetVersion(&driver));
  TT_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB", double(prop.totalGlobalMem) / double(1ull << 30));
  return tt::detail::concat(prop.name, ", sm_", prop.major, prop.minor, ", ", mem, ", ", prop.multiProcessorCount,
                            " SMs, driver ", driver / 1000, ".", (driver % 1000) / 10, ", runtime ", runtime / 1000,
                            ".", (runtime % 1000) / 10);
}

void synchronize(int device) {
  check_device_available(Device(kCUDA, device < 0 ? 0 : device), "cuda::synchronize");
  int first = device < 0 ? 0 : device, last = device < 0 ? device_count() - 1 : device;
  for (int d = first; d <= last; ++d) {
    DeviceGuard guard(d);
    TT_CHECK(!is_capturing(d), "cuda::synchronize: cuda:", d, " cannot synchronize with the host while a CUDA graph "
             "is being captured (docs/cuda_graphs.md)");
    queue_error_readback(d);  // Note [device error flag]
    TT_CUDA_CHECK(cudaDeviceSynchronize());
    raise_device_error(d);
  }
}

void empty_cache() {
  int n = device_count();
  for (int d = 0; d < n; ++d) allocator_for(Device(kCUDA, d)).empty_cache();
}

DeviceGuard::DeviceGuard(int device) {
  TT_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) TT_CUDA_CHECK(cudaSetDevice(device));
}
DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
}

cudaStream_t stream(int device) {
  static std::mutex mu;
  static std::vector<cudaStream_t> streams;  // leaked on purpose, as the cuBLAS handles
  std::lock_guard<std::mutex> lock(mu);
  if (streams.empty()) streams.resize(static_cast<size_t>(device_count()), nullptr);
  TT_CHECK_DEVICE(device >= 0 && size_t(device) < streams.size(), "cuda::stream: no CUDA device ", device);
  if (!streams[device]) {
    DeviceGuard guard(device);
    TT_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[device], cudaStreamDefault));
  }
  return streams[device];
}

cudaStream_t current_stream() {
  int device = 0;
  TT_CUDA_CHECK(cudaGetDevice(&device));
  return stream(device);
}

cublasHandle_t cublas_handle(int device) {
  static std::mutex mu;
  static std::vector<cublasHandle_t> handles;  // leaked on purpose: destroyed after the driver otherwise
  std::lock_guard<std::mutex> lock(mu);
  if (handles.empty()) handles.resize(static_cast<size_t>(device_count()), nullptr);
  TT_CHECK_DEVICE(device >= 0 && size_t(device) < handles.size(), "cublas_handle: no CUDA device ", device);
  if (!handles[device]) {
    DeviceGuard guard(device);
    TT_CUBLAS_CHECK(lib::cublas().cublasCreate(&handles[device]));
  }
  TT_CUBLAS_CHECK(lib::cublas().cublasSetStream(handles[device], stream(device)));
  TT_CUBLAS_CHECK(lib::cublas().cublasSetMathMode(handles[device],
                                                  allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  return handles[device];
}

}  // namespace cuda

Backend& cuda_backend(int /*index*/) {
  // One stateless backend serves every device: each kernel runs on its tensors' device.
  static auto* backend = new cuda::CudaBackend();
  return *backend;
}

}  // namespace tt
