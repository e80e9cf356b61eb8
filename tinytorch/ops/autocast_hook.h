// The autocast hook at the top of each op of TT_AUTOCAST_OPS (amp/autocast.h): amp::autocast
// casts the op's inputs by its policy, with differentiable casts (ops/copy.h), and turns autocast
// off while the op's body runs. It is here, in ops/, because it casts with an op; the policy and
// the per-thread state it reads are amp's (Note [autocast] in amp/autocast.cpp).
#pragma once

#include <cstddef>
#include <initializer_list>

#include "tinytorch/amp/autocast.h"
#include "tinytorch/core/tensor.h"

namespace tt::amp {

// The hook at the top of each listed op:
//   if (auto cast = amp::autocast(AutocastOp::linear, {x, w, b})) return linear(cast[0], cast[1], cast[2]);
// When autocast is on for the inputs' device, `cast` holds the inputs cast by the op's policy
// (differentiable casts, as Tensor::to; integer, bool and float64 tensors pass unchanged) and
// turns autocast off on this thread while it lives, so the op's own body and the ops it calls run
// as written (PyTorch casts once, at the outermost op, the same way). Otherwise it is empty
// (false) and the op goes on as usual.
class Autocast {
 public:
  Autocast() = default;
  Autocast(AutocastOp op, std::initializer_list<Tensor> inputs);
  ~Autocast();
  Autocast(Autocast&& other) noexcept;
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;
  Autocast& operator=(Autocast&&) = delete;

  explicit operator bool() const { return active_; }
  const Tensor& operator[](size_t i) const { return inputs_[i]; }

 private:
  bool active_ = false;
  DeviceType device_type_ = kCPU;
  Tensor inputs_[4];
};
Autocast autocast(AutocastOp op, std::initializer_list<Tensor> inputs);

}  // namespace tt::amp
