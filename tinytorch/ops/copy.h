// Copies and conversions: to(dtype/device), contiguous, clone, copy_, fill_.
#pragma once

#include <initializer_list>
#include <vector>

#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// copy_(dst, src) copies src into dst (broadcasting src, converting dtype, across devices) and
// bumps dst's version.
// The declarations: the rows of TT_OPS_COPY (core/op_registry.h), in core/op_declarations.h.

namespace detail {
// The device check of every op taking two tensors or more, run before any kernel reads them:
// throws DeviceError "matmul: expected all tensors on the same device, got cuda:0 and cpu" unless
// every defined tensor is on the device of the first defined one (undefined ones are skipped).
void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors);
// A list argument (cat, stack): every element must be defined, and all on one device.
void check_same_device(const char* op, const std::vector<Tensor>& tensors);
// Throws unless writing to every element of t touches distinct memory (no expanded dims).
void check_writable(const Tensor& t, const char* op);
// Note [overlapping in-place operands]: an in-place op (copy_, add_, scatter_add_, ...) reads
// `src` while it writes `dst`. When src is another view of dst's memory (b.copy_(b.t()),
// a.mul_(a[0])), the kernel would read elements it has already overwritten. Such a src is
// cloned first, so the op sees the values as they were before it started; a src that is
// exactly dst (same offset, shape and strides) is read in place, element by element.
bool may_overlap(const Tensor& a, const Tensor& b);
Tensor unaliased(const Tensor& src, const Tensor& dst);
}  // namespace detail

}  // namespace tt
