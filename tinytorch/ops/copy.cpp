// Copies and conversions between dtypes and devices.
#include "tinytorch/ops/copy.h"

#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/core/checked.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/inplace.h"
#include "tinytorch/ops/view.h"

namespace tt {

namespace detail {
namespace {
// Device of the first defined tensor in [begin, end), checked against the rest.
template <typename It, typename Get>
void check_devices_in(const char* op, It begin, It end, Get get) {
  const Tensor* first = nullptr;
  for (It it = begin; it != end; ++it) {
    const Tensor* t = get(*it);
    if (t == nullptr || !t->defined()) continue;
    if (first == nullptr) {
      first = t;
      continue;
    }
    TT_CHECK_DEVICE(t->device() == first->device(), op, ": expected all tensors on the same device, got ",
                    first->device(), " and ", t->device());
  }
}
}  // namespace

void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  check_devices_in(op, tensors.begin(), tensors.end(), [](const Tensor* t) { return t; });
}
void check_same_device(const char* op, const std::vector<Tensor>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i)
    TT_CHECK(tensors[i].defined(), op, ": expected a defined tensor as element ", i,
             " of the list, got an undefined (default-constructed) one");
  check_devices_in(op, tensors.begin(), tensors.end(), [](const Tensor& t) { return &t; });
}

void check_writable(const Tensor& t, const char* op) {
  for (int d = 0; d < t.dim(); ++d)
    TT_CHECK(!(t.stride(d) == 0 && t.size(d) > 1), op,
             ": unsupported operation, more than one element of the written-to tensor refers to a "
             "single memory location (an expanded view of shape ", t.shape(), " with strides ",
             t.strides(), "); clone() it first");
}

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (a.storage() != b.storage() || a.numel() == 0 || b.numel() == 0) return false;
  // Byte ranges [lo, hi) each tensor can touch (strides are never negative).
  auto range = [](const Tensor& t, int64_t& lo, int64_t& hi) {
    int64_t last = t.storage_offset();
    for (int d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
    int64_t es = int64_t(t.element_size());
    lo = t.storage_offset() * es;
    hi = (last + 1) * es;
  };
  int64_t alo, ahi, blo, bhi;
  range(a, alo, ahi);
  range(b, blo, bhi);
  return alo < bhi && blo < ahi;
}

Tensor unaliased(const Tensor& src, const Tensor& dst) {
  bool same_view = src.storage_offset() == dst.storage_offset() && src.shape() == dst.shape() &&
                   src.strides() == dst.strides() && src.dtype() == dst.dtype();
  return (!same_view && may_overlap(src, dst)) ? clone(src) : src;
}
}  // namespace detail

using autograd::TensorList;

namespace {
// A new contiguous tensor with t's values converted to `dtype` (the forward of to() and clone()).
Tensor copy_as(const Tensor& t, ScalarType dtype) {
  Tensor out = empty(t.shape(), t.options().dtype(dtype));
  backend_for(t.device()).copy(out, t);
  return out;
}
}  // namespace

// to(dtype) / to(device) / clone: the gradient goes back converted to the input's dtype and device.
struct ToCopy {
  static constexpr const char* kName = "ToCopyBackward0";
  struct Saved {
    ScalarType dtype = kFloat32;
    Device device;
  };
  static TensorList backward(const Saved& s, const TensorList& g) {
    return {to_device(to_dtype(g[0], s.dtype), s.device)};
  }
};
struct Clone {
  static constexpr const char* kName = "CloneBackward0";
  struct Saved {};
  static TensorList backward(const Saved&, const TensorList& g) { return {g[0]}; }
};

namespace {
Tensor record_to_copy(const Tensor& out, const Tensor& in) {
  if (!out.is_floating_point()) return out;  // no gradient through integer or bool results
  if (auto node = autograd::make_node<ToCopy>({&in})) {
    node->saved = {in.dtype(), in.device()};
    autograd::set_history(out, node);
  }
  return out;
}
}  // namespace

Tensor to_dtype(const Tensor& t, ScalarType dtype, bool copy) {
  if (t.dtype() == dtype && !copy) return t;
  return record_to_copy(copy_as(t, dtype), t);
}

Tensor to_device(const Tensor& t, const Device& device, bool copy) {
  if (t.device() == device && !copy) return t;
  if (t.device() == device) return clone(t);
  check_device_available(device, "to");
  Tensor src = contiguous(t);
  Tensor out = empty(t.shape(), t.options().device(device));
  // The non-CPU side's backend moves the bytes.
  Backend& be = backend_for(device.is_cpu() ? t.device() : device);
  be.transfer(out, src);
  return record_to_copy(out, t);
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

Tensor clone(const Tensor& t) {
  Tensor out = copy_as(t, t.dtype());
  if (auto node = autograd::make_node<Clone>({&t})) autograd::set_history(out, node);
  return out;
}

Tensor& copy_(Tensor& dst, const Tensor& src) {
  detail::check_writable(dst, "copy_");
  Shape b = broadcast_shapes(dst.shape(), src.shape(), "copy_");
  TT_CHECK_SHAPE(b == dst.shape(), "copy_: source of shape ", src.shape(),
                 " cannot be broadcast to the destination shape ", dst.shape());
  if (detail::inplace_needs_history(dst, {&src}))  // Note [in-place ops and autograd]
    return detail::adopt_result(dst, expand(to_device(src, dst.device()), dst.shape()), "copy_");
  if (src.device() == dst.device()) {
    backend_for(dst.device()).copy(dst, detail::unaliased(src, dst));  // Note [overlapping in-place operands]
  } else {
    Tensor moved = to_device(src, dst.device());
    backend_for(dst.device()).copy(dst, moved);
  }
  dst.bump_version();
  return dst;
}

Tensor& fill_(Tensor& t, Scalar value) {
  detail::check_writable(t, "fill_");
  check_scalar_fits(value, t.dtype(), "fill_");
  if (detail::inplace_needs_history(t, {}))  // the old values get a zero gradient
    return detail::adopt_result(t, add(mul(clone(t), 0), value), "fill_");
  backend_for(t.device()).fill(t, value);
  t.bump_version();
  return t;
}

}  // namespace tt
