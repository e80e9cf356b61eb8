// In-place ops under autograd.
//
// Note [in-place ops and autograd]: when an in-place op (add_, mul_, copy_, fill_, ...) must be
// recorded (grad mode on and the tensor or an operand requires grad), the op is computed out of
// place on a clone of the old value, which records the graph exactly as `y = op(x, ...)` would,
// and the tensor then takes the result's values and history: its grad_fn becomes the op's node,
// whose edge leads back through the clone to the old history. The version bump still makes
// every node that saved the old value refuse to run. Two cases are refused with a clear error:
// a leaf that requires grad (its .grad would no longer mean anything), and a view of another
// tensor (the base's history would not see the change; clone() the view first).
#pragma once

#include <initializer_list>

#include "tinytorch/core/tensor.h"

namespace tt::detail {

// True when the in-place op on `self` with these operands has to be recorded.
bool inplace_needs_history(const Tensor& self, std::initializer_list<const Tensor*> operands);
// Checks the refused cases, then gives `self` the values (cast to self's dtype) and the history
// of `result`, and bumps its version.
Tensor& adopt_result(Tensor& self, const Tensor& result, const char* op);

}  // namespace tt::detail
