// Calling an op of the op registry (core/op_registry.h) from a fixture case: the C++ twin of
// tools/fixtures/registry.py. Each registry row becomes a caller generated from its parameter
// list, so a case names its op and its arguments, and no runner spells an op name.
#pragma once

#include <string>
#include <vector>

#include "reference/reference_util.h"

namespace tt::reference {

// True when some registry row is named `op`, or TT_OP_ALIASES gives `op` as another name of one.
bool is_registered(const std::string& op);

// Runs the registry row named `op` (or aliased by it) that fits the case, the rule
// tools/fixtures/registry.py applies too:
//  - every key of `args` names one of the row's non-tensor parameters, except "side" (below) and
//    "accumulate" (PyTorch's side computes a bf16 product in float32); a TensorOptions parameter
//    is given as "dtype", a dtype name;
//    and each non-tensor parameter without a default is given (a null value counts as not given:
//    the parameter takes its default);
//  - the row's tensor parameters take the inputs in order; one with a default takes an input only
//    while inputs remain, or, when the case names any of them with true or false ("weight": true,
//    the losses' cases), exactly those it names true; a TensorList parameter takes all that
//    remain; no input is left over;
//  - "side": "left" picks the row whose Scalar parameter `scalar` comes before its last tensor
//    parameter (where(cond, 2.0, x)), "right" (or no side) one where it comes after.
// Returns the op's outputs: one tensor, both of a pair, or every tensor of a list. An in-place row
// returns the tensor it wrote. Throws std::logic_error when no row fits, or more than one does.
std::vector<Tensor> call_registered(const std::string& op, const json& args, std::vector<Input>& in);

}  // namespace tt::reference
