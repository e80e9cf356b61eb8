// TensorOptions: dtype, device and requires_grad for factories, spelled as in LibTorch:
// tt::TensorOptions().dtype(tt::kFloat64).device(tt::kCPU).requires_grad(true).
#pragma once

#include "tinytorch/core/device.h"
#include "tinytorch/core/dtype.h"

namespace tt {

struct TensorOptions {
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}  // NOLINT: tt::zeros({2}, tt::kInt64)
  TensorOptions(Device d) : device_(d) {}     // NOLINT
  TensorOptions(DeviceType d) : device_(d) {}  // NOLINT

  TensorOptions dtype(ScalarType t) const { auto o = *this; o.dtype_ = t; return o; }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions requires_grad(bool r) const { auto o = *this; o.requires_grad_ = r; return o; }

  ScalarType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  ScalarType dtype_ = kFloat32;
  Device device_ = kCPU;
  bool requires_grad_ = false;
};

inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace tt
