// View ops: new shapes and strides over the same storage, no data copied. view() fails where
// the strides cannot express the new shape; reshape() copies only then.
#pragma once

#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// view(t, shape): one size may be -1. expand(t, shape): a size of -1 keeps that size.
// The declarations: the rows of TT_OPS_VIEW (core/op_registry.h), in core/op_declarations.h.
// slice(t, dim, start, end = kEnd, step = 1); tt::kEnd (core/op_registry.h) means "to the end".

}  // namespace tt
