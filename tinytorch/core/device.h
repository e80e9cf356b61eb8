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
  Device(DeviceType t, int idx = 0) : type(t), index(static_cast<int8_t>(idx)) {}  // NOLINT
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
}  // namespace cuda

// Throws DeviceError("tinytorch was built without CUDA" / "no CUDA device ...") when `d`
// cannot be used; `op` names the caller in the message.
void check_device_available(const Device& d, const char* op);

}  // namespace tt
