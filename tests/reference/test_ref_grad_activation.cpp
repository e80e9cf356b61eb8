// Gradients of the activations against PyTorch (grad_activation.json): softmax and log_softmax
// over every dim, on strided inputs, at +-1e4 and with -inf entries (a row that is all -inf is
// NaN in PyTorch; tinytorch's documented value is checked there instead), relu, leaky_relu,
// gelu (erf and tanh forms), silu, softplus (beta, threshold, large inputs), sigmoid, tanh. The
// cases are tools/fixtures/cases_grad_activation.py; both sides call the ops by their rows in
// core/op_table.h and core/op_registry.h.
#include "reference/test_ref_grad.h"

TEST_CASE("reference: gradients of activations match PyTorch", "[reference]") {
  using namespace tt::reference;
  // relu, sigmoid and tanh are op-table rows; the others registry rows (grad::foundation_op).
  CHECK(grad::run_family("grad_activation", grad::foundation_op) > 100);
}
