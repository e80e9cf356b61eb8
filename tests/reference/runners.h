// The op runners of the reference suite, shared by its fixture families: the op tables' rows
// (test_ref_elementwise.cpp), the op registry's (registry_call.h), and any of them
// (test_ref_large.cpp). A runner finds the op by its name in a table or the registry.
#pragma once

#include "reference/reference_util.h"
#include "reference/registry_call.h"

namespace tt::reference::runners {

#define TT_REFERENCE_RUNNER(name) \
  std::vector<Tensor> name(const std::string& op, const json& args, std::vector<Input>& in)
TT_REFERENCE_RUNNER(binary);    // the binary rows of core/op_table.h, of two tensors or with a scalar
TT_REFERENCE_RUNNER(unary);     // the unary rows of core/op_table.h
TT_REFERENCE_RUNNER(registry);  // any op of core/op_registry.h, by its row (registry_call.h)
TT_REFERENCE_RUNNER(any);       // an op of the tables or of the registry (test_ref_large.cpp)
#undef TT_REFERENCE_RUNNER

}  // namespace tt::reference::runners
