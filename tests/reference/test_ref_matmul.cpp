// Matrix products against PyTorch fixtures (matmul.json): matmul in every form (1-D.1-D,
// 1-D.N-D, N-D.1-D, 2-D, batched, broadcast batch dims), transposed, sliced and expanded
// operands, float64, int64, empty dims; mm, bmm, dot and their shape errors.
#include "reference/runners.h"

TEST_CASE("reference: matmul, mm, bmm and dot match PyTorch", "[reference]") {
  using namespace tt::reference;
  // float32 GEMMs accumulate K products in an order of the BLAS's choosing; with K <= 32 and
  // N(0, 1) inputs the rounding differs by ~1e-6 absolute, which is large relative to results
  // that cancel to near zero: atol 1e-5.
  CHECK(run_family("matmul", runners::registry, {1e-5, 1e-5}) > 50);
}
