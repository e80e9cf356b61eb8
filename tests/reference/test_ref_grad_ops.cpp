// Gradients of the foundation ops against PyTorch (grad_elementwise.json, grad_reduction.json,
// grad_shape.json, grad_matmul.json): broadcasting reduced back to each input's shape, scalar
// operands, mixed dtypes, PyTorch's tie rules for maximum/minimum and max/min, every view op on
// strided inputs and strided leaves, cat/stack/split/chunk with unused pieces, index_select,
// gather and scatter_add with duplicate indices, to(dtype), and matmul in every form. The
// cases are tools/fixtures/cases_grad.py and cases_grad_shape.py.
#include "reference/test_ref_grad.h"

TEST_CASE("reference: gradients of elementwise ops, where and masked_fill match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(grad::run_family("grad_elementwise", grad::foundation_op) > 300);
}

TEST_CASE("reference: gradients of reductions match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(grad::run_family("grad_reduction", grad::foundation_op) > 200);
}

TEST_CASE("reference: gradients of view, join and indexing ops and to(dtype) match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(grad::run_family("grad_shape", grad::foundation_op) > 150);
}

TEST_CASE("reference: gradients of matmul, mm, bmm and dot match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(grad::run_family("grad_matmul", grad::foundation_op) > 60);
}
