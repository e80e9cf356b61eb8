// Devices: where a tensor's storage lives (the CPU, or one CUDA GPU by index).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace tt {

enum class DeviceType : uint8_t { CPU, CUDA };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;

struct Device {
  DeviceType type = kCPU;
  int8_t index = 0;

  Device() = default;
  // Throws DeviceError for an index outside [0, 127] (the int8 it is kept in), or a CPU index other than 0.
  Device(DeviceType t, int idx = 0);  // NOLINT(google-explicit-constructor): Device(kCUDA) reads as a device
  explicit Device(const std::string& spec);  // "cpu", "cuda", "cuda:1"

  bool is_cpu() const { return type == kCPU; }
  bool is_cuda() const { return type == kCUDA; }
  std::string str() const;  // "cpu", "cuda:0"
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

std::ostream& operator<<(std::ostream& os, const Device& d);

namespace cuda {
// True when this build has the CUDA backend and a GPU is visible. Never throws.
bool is_available();
int device_count();
// "NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB, driver 13.0, runtime 13.0" for tools/tt doctor; throws
// DeviceError for an index out of range or without CUDA.
std::string device_description(int device);
// Waits for all work queued on `device` (every device when -1). Throws DeviceError without CUDA.
void synchronize(int device = -1);
// Hands the caching allocator's unused device blocks back to the driver (no-op without CUDA).
void empty_cache();
// TF32 tensor cores in cuBLAS GEMMs (and the TF32 attention kernels): off by default, so float32
// matmuls are exact float32 as on the CPU. A process-wide switch, like PyTorch's
// torch.backends.cuda.matmul.allow_tf32.
void set_allow_tf32(bool allow);
bool allow_tf32();
}  // namespace cuda

// Throws DeviceError("tinytorch was built without CUDA" / "no CUDA device ...") when `d`
// cannot be used; `op` names the caller in the message.
void check_device_available(const Device& d, const char* op);

}  // namespace tt
