// gradcheck: does an op's backward agree with finite differences of its forward?
//
// gradcheck compares two Jacobians of `fn` at `inputs`, for every (output, input) pair:
//   numerical  J[k][r] = (out_r(x + eps e_k) - out_r(x - eps e_k)) / (2 eps)    central differences
//   analytical J[k][r] = autograd::grad(out, x, one_hot(r))[k]                    one backward per r
// and passes when |analytical - numerical| <= atol + rtol * |numerical| for every entry. Only
// inputs that require grad are checked; they must be float64 (float32 finite differences are too
// coarse to tell a wrong formula from rounding). gradgradcheck does the same for the gradient
// itself (the backward built with create_graph), which checks double backward.
//
// Not here: sparse or complex inputs, CUDA inputs (move them to the CPU first), and inputs with a
// stride-0 dimension (an expanded leaf): expand inside `fn` instead, so the expand is checked too.
#pragma once

#include <functional>
#include <string>

#include "tinytorch/autograd/node.h"
#include "tinytorch/core/error.h"

namespace tt::autograd {

// What gradcheck found. `message` is empty when ok; otherwise it names the output and input,
// the worst entry as multi-indices (d output[i, j] / d input[k, l]), both Jacobian entries, the
// tolerance, how many entries were out of it, and both Jacobians in full when they are small.
struct GradcheckResult {
  bool ok = true;
  std::string message;
  explicit operator bool() const { return ok; }
};

// Thrown by gradcheck / gradgradcheck on a mismatch when raise_exception is set.
class GradcheckError : public Error {
  using Error::Error;
};

using GradcheckFn = std::function<Tensor(const TensorList&)>;
using GradcheckMultiFn = std::function<TensorList(const TensorList&)>;

// Design (PyTorch's raise_exception flag, with the opposite default): a Jacobian mismatch is
// reported in the returned result and, with raise_exception = true, thrown as GradcheckError with
// the same message. Misuse (no input requires grad, a float32 input, a CUDA or expanded input, fn
// returning nothing) always throws tt::Error. An exception thrown by a backward is a failure too:
// it is reported (or rethrown as GradcheckError) with the op's own message.
//
// Each input element is perturbed in place, with grad mode off, and restored bit for bit; for a
// non-contiguous input it is the element the view points at that moves. fn must be
// deterministic and must not modify its inputs. Cost: 2 * (elements of the inputs) forward calls
// plus (elements of the outputs) backward calls, so keep shapes small.
GradcheckResult gradcheck(const GradcheckFn& fn, const TensorList& inputs, double eps = 1e-6,
                          double atol = 1e-5, double rtol = 1e-3, bool raise_exception = false);
// Same, for a function with several outputs (every floating-point output is checked).
GradcheckResult gradcheck(const GradcheckMultiFn& fn, const TensorList& inputs, double eps = 1e-6,
                          double atol = 1e-5, double rtol = 1e-3, bool raise_exception = false);

// Second order: gradcheck of (inputs, v) -> autograd::grad(fn(inputs), inputs, v, create_graph),
// where v is a random float64 cotangent per output (seeded, so runs repeat). Checks that each
// backward formula is itself differentiable and correct, for every op whose backward is written
// with differentiable ops.
GradcheckResult gradgradcheck(const GradcheckFn& fn, const TensorList& inputs, double eps = 1e-6,
                              double atol = 1e-5, double rtol = 1e-3, bool raise_exception = false);
GradcheckResult gradgradcheck(const GradcheckMultiFn& fn, const TensorList& inputs, double eps = 1e-6,
                              double atol = 1e-5, double rtol = 1e-3, bool raise_exception = false);

}  // namespace tt::autograd
