// Device parsing, printing and the availability check every CUDA request passes through.
#include "tinytorch/core/device.h"

#include <atomic>

#include "tinytorch/core/error.h"

namespace tt {

Device::Device(DeviceType t, int idx) : type(t) {
  TT_CHECK_DEVICE(idx >= 0 && idx <= 127, "Device: index ", idx, " is out of range, expected 0 <= index <= 127");
  TT_CHECK_DEVICE(t == kCUDA || idx == 0, "Device: the CPU has only index 0, got ", idx);
  index = static_cast<int8_t>(idx);
}

Device::Device(const std::string& spec) {
  if (spec == "cpu") {
    type = kCPU;
    index = 0;
    return;
  }
  if (spec.rfind("cuda", 0) == 0) {
    type = kCUDA;
    index = 0;
    if (spec.size() > 4) {
      // N has 1 to 3 digits (so stoi cannot overflow) and fits the int8 index.
      bool digits = spec[4] == ':' && spec.size() > 5 && spec.size() <= 8 &&
                    spec.find_first_not_of("0123456789", 5) == std::string::npos;
      TT_CHECK_DEVICE(digits && std::stoi(spec.substr(5)) <= 127,
                      "Device: expected 'cpu', 'cuda' or 'cuda:N' with 0 <= N <= 127, got '", spec, "'");
      index = static_cast<int8_t>(std::stoi(spec.substr(5)));
    }
    return;
  }
  throw DeviceError("Device: expected 'cpu', 'cuda' or 'cuda:N', got '" + spec + "'");
}

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(int(index));
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

void check_device_available(const Device& d, const char* op) {
  if (d.is_cpu()) return;
#ifndef TINYTORCH_HAS_CUDA
  throw DeviceError(detail::concat(op, ": tinytorch was built without CUDA, cannot use device ",
                                   d, " (rebuild with -DTINYTORCH_CUDA=ON on a machine with nvcc)"));
#else
  int n = cuda::device_count();
  TT_CHECK_DEVICE(n > 0, op, ": no CUDA device is available, cannot use device ", d);
  TT_CHECK_DEVICE(d.index >= 0 && d.index < n, op, ": CUDA device index ", int(d.index),
                  " is out of range, this machine has ", n, " device(s)");
#endif
}

namespace cuda {
namespace {
std::atomic<bool> g_allow_tf32{false};
}  // namespace
void set_allow_tf32(bool allow) { g_allow_tf32.store(allow); }
bool allow_tf32() { return g_allow_tf32.load(); }
#ifndef TINYTORCH_HAS_CUDA
bool is_available() { return false; }
int device_count() { return 0; }
std::string device_description(int) { throw DeviceError("cuda::device_description: tinytorch was built without CUDA"); }
void synchronize(int) { throw DeviceError("cuda::synchronize: tinytorch was built without CUDA"); }
void empty_cache() {}
#endif
}  // namespace cuda

}  // namespace tt
