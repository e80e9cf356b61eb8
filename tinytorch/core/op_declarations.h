// The declarations of every op of the op registry (core/op_registry.h): tt::view, tt::sum,
// tt::cross_entropy and the rest, with their defaults, generated from the rows. The ops are defined
// in tinytorch/ops/*.cpp, whose headers include this one and document each op. Code below ops/
// (autograd: the engine adds gradients, nodes sum and reshape them) calls the ops through this
// header, so no folder includes one above it (docs/architecture.md, "Layers").
#pragma once

#include "tinytorch/core/generator.h"
#include "tinytorch/core/op_registry.h"
#include "tinytorch/core/tensor.h"

namespace tt {

TT_OPS(TT_DECLARE_OP)

}  // namespace tt
