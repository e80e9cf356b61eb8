// Gradients against PyTorch: reads tests/fixtures/grad_*.json (written by
// tools/fixtures/gen_fixtures.py; grad_lib.py documents the format), makes each case's inputs
// leaves that require grad (the contiguous base, whose gradient then flows back through the view
// steps, or the strided view itself), runs the op, compares the forward outputs, backpropagates
// the fixture's upstream gradients (through tt::autograd::grad or backward()), and compares the
// gradient of every leaf: dtype, shape and values.
// Not here: the ops themselves (the runners: runners.h for the foundation ops,
// test_ref_grad_activation.cpp and test_ref_grad_composite.cpp for the rest).
#pragma once

#include "reference/runners.h"

namespace tt::reference::grad {

// |actual - expected| <= atol + rtol * |expected|: float64 always at 1e-10 (the cases are
// small, so only rounding separates the two libraries); float32 at 1e-5 unless a case's own
// "tol" says otherwise.
constexpr double kF64Tol = 1e-10;
constexpr double kF32Tol = 1e-5;

// Runs every case of one gradient family through `run`; failures name the case, the output or
// input, and the first differing element. Returns the number of cases.
size_t run_family(const std::string& family, const Runner& run);

// The foundation ops, dispatched by name onto the forward suite's runners (runners.h).
std::vector<Tensor> foundation_op(const std::string& op, const json& args, std::vector<Input>& in);

}  // namespace tt::reference::grad
