// Reductions against PyTorch fixtures (reduction.json): sum mean max min amax amin argmax argmin var std
// over all dims, one dim and dim lists, keepdim, float32/float64/int64/bool, strided, empty and
// 0-d inputs, NaN and infinities. An empty dims list means every dim, in both libraries.
#include "reference/runners.h"

TEST_CASE("reference: reductions match PyTorch", "[reference]") {
  using namespace tt::reference;
  // float32: the libraries sum in different orders (PyTorch cascades, we sum pairwise), so
  // results differ by a few ulps of the largest partial sum; 1000-element rows of N(0, 1)
  // values have partial sums near 30, hence atol 1e-5.
  CHECK(run_family("reduction", runners::registry, {1e-5, 1e-5}) > 300);
}
