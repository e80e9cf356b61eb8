// amp::autocast, the hook at the top of each listed op: its inputs cast by the op's policy
// (cast: module 15's exercise), autocast off while the op's body runs. Note [autocast] in
// amp/autocast.cpp.
#include "tinytorch/ops/autocast_hook.h"

#include <utility>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/core/error.h"
#include "tinytorch/ops/copy.h"

namespace tt::amp {

namespace {

// float32 and bf16 tensors are cast; integers, bools and float64 are not (as PyTorch's autocast).
bool eligible(const Tensor& t) { return t.defined() && (t.dtype() == kFloat32 || t.dtype() == kBFloat16); }

Tensor cast(const Tensor& t, ScalarType to) {
  // TT_EXERCISE_BEGIN(15, 2)
  if (!eligible(t) || t.dtype() == to) return t;
  const bool cacheable = to != kFloat32 && t.is_leaf() && t.requires_grad() && GradMode::is_enabled();
  if (!cacheable) return to_dtype(t, to);
  Tensor cached = detail::cached_cast(t, to);
  if (cached.defined()) return cached;
  Tensor c = to_dtype(t, to);
  detail::cache_cast(t, c);
  return c;
  // TT_EXERCISE_END
}

}  // namespace

Autocast::Autocast(AutocastOp op, std::initializer_list<Tensor> inputs) {
  TT_CHECK(inputs.size() <= 4, "autocast: ", op_name(op), " passes ", inputs.size(), " tensors, at most 4 fit");
  const Tensor* first = nullptr;
  for (const Tensor& t : inputs)
    if (eligible(t)) {
      first = &t;
      break;
    }
  if (first == nullptr || !is_autocast_enabled(first->device().type)) return;
  device_type_ = first->device().type;
  const ScalarType to = policy(op) == CastPolicy::LowerPrecision ? get_autocast_dtype(device_type_) : kFloat32;
  size_t i = 0;
  for (const Tensor& t : inputs) inputs_[i++] = cast(t, to);
  detail::count_hit(op);
  detail::set_enabled(device_type_, false);  // the op's body runs as written
  active_ = true;
}

Autocast::Autocast(Autocast&& other) noexcept : active_(other.active_), device_type_(other.device_type_) {
  for (size_t i = 0; i < 4; ++i) inputs_[i] = std::move(other.inputs_[i]);
  other.active_ = false;
}

Autocast::~Autocast() {
  if (active_) detail::set_enabled(device_type_, true);
}

Autocast autocast(AutocastOp op, std::initializer_list<Tensor> inputs) { return Autocast(op, inputs); }

}  // namespace tt::amp
