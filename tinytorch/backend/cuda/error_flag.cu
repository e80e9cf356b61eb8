// The per-device error record and its read at synchronization points (error_flag.h).
#include "tinytorch/backend/cuda/error_flag.h"

#include <mutex>
#include <vector>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/stream.h"
#include "tinytorch/core/device.h"

namespace tt::cuda {

namespace {

// One device's record and the pinned host slot its readback lands in. Leaked on purpose (as the
// streams): freeing after the driver has shut down would fail.
struct Flag {
  DeviceErrorRecord* record = nullptr;  // device memory
  DeviceErrorRecord* host = nullptr;    // pinned host memory
};

std::mutex& flags_mutex() {
  static std::mutex mu;
  return mu;
}
std::vector<Flag>& flags() {
  static std::vector<Flag> f;
  return f;
}

// The flag of `device`, or nullptr when none exists and `create` is false.
Flag* flag_of(int device, bool create) {
  std::lock_guard<std::mutex> lock(flags_mutex());
  std::vector<Flag>& all = flags();
  if (all.empty()) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) (void)cudaGetLastError();
    all.resize(size_t(n > 0 ? n : 0));
  }
  TT_CHECK_DEVICE(device >= 0 && size_t(device) < all.size(), "cuda error flag: no CUDA device ", device);
  Flag& f = all[size_t(device)];
  if (!f.record && create) {
    DeviceGuard guard(device);
    void* d = nullptr;
    void* h = nullptr;
    TT_CUDA_CHECK(cudaMalloc(&d, sizeof(DeviceErrorRecord)));
    TT_CUDA_CHECK(cudaMallocHost(&h, sizeof(DeviceErrorRecord)));
    *static_cast<DeviceErrorRecord*>(h) = DeviceErrorRecord{};
    TT_CUDA_CHECK(cudaMemsetAsync(d, 0, sizeof(DeviceErrorRecord), stream(device)));
    f.record = static_cast<DeviceErrorRecord*>(d);
    f.host = static_cast<DeviceErrorRecord*>(h);
  }
  return f.record ? &f : nullptr;
}

}  // namespace

DeviceErrorRecord* device_error_record(int device) { return flag_of(device, true)->record; }

void queue_error_readback(int device) {
  tt::detail::count_host_wait();
  Flag* f = flag_of(device, false);
  if (!f) return;
  DeviceGuard guard(device);
  TT_CUDA_CHECK(cudaMemcpyAsync(f->host, f->record, sizeof(DeviceErrorRecord), cudaMemcpyDeviceToHost,
                                stream(device)));
}

void raise_device_error(int device) {
  Flag* f = flag_of(device, false);
  if (!f) return;
  // Claim the report: of two threads that read the same record, one throws.
  const int32_t op = __atomic_exchange_n(&f->host->op, int32_t(0), __ATOMIC_ACQ_REL);
  if (op == 0) return;
  DeviceErrorRecord r = *f->host;
  r.op = op;
  {
    DeviceGuard guard(device);
    TT_CUDA_CHECK(cudaMemsetAsync(f->record, 0, sizeof(DeviceErrorRecord), stream(device)));
  }
  throw IndexError(device_error_message(r, Device(kCUDA, device).str()));
}

}  // namespace tt::cuda
