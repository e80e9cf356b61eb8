// Copies and conversions between dtypes and devices.
#include "tinytorch/ops/copy.h"

#include "tinytorch/backend/backend.h"
#include "tinytorch/ops/factory.h"

namespace tt {

namespace detail {
void check_writable(const Tensor& t, const char* op) {
  for (int d = 0; d < t.dim(); ++d)
    TT_CHECK(!(t.stride(d) == 0 && t.size(d) > 1), op,
             ": unsupported operation, more than one element of the written-to tensor refers to a "
             "single memory location (an expanded view of shape ", t.shape(), " with strides ",
             t.strides(), "); clone() it first");
}
}  // namespace detail

Tensor to_dtype(const Tensor& t, ScalarType dtype, bool copy) {
  if (t.dtype() == dtype && !copy) return t;
  Tensor out = empty(t.shape(), t.options().dtype(dtype));
  backend_for(t.device()).copy(out, t);
  return out;
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
  return out;
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

Tensor clone(const Tensor& t) {
  Tensor out = empty(t.shape(), t.options());
  backend_for(t.device()).copy(out, t);
  return out;
}

Tensor& copy_(Tensor& dst, const Tensor& src) {
  detail::check_writable(dst, "copy_");
  Shape b = broadcast_shapes(dst.shape(), src.shape(), "copy_");
  TT_CHECK_SHAPE(b == dst.shape(), "copy_: source of shape ", src.shape(),
                 " cannot be broadcast to the destination shape ", dst.shape());
  if (src.device() == dst.device()) {
    backend_for(dst.device()).copy(dst, src);
  } else {
    Tensor moved = to_device(src, dst.device());
    backend_for(dst.device()).copy(dst, moved);
  }
  dst.bump_version();
  return dst;
}

Tensor& fill_(Tensor& t, Scalar value) {
  detail::check_writable(t, "fill_");
  backend_for(t.device()).fill(t, value);
  t.bump_version();
  return t;
}

}  // namespace tt
