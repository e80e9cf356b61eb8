// bfloat16 against PyTorch fixtures (bf16.json, tools/fixtures/cases_bf16.py): every unary and
// binary elementwise op on bf16 tensors, promotion with float32, int64, 0-d tensors and scalars,
// reductions, matrix products, joins, indexing and conversions (round to nearest even, NaN,
// infinities, overflow to inf). Both libraries compute in float32 and round once to bf16.
#include "reference/runners.h"

TEST_CASE("reference: bf16 ops match PyTorch within one bf16 ulp", "[reference][bf16]") {
  using namespace tt::reference;
  // One bf16 ulp is at most 2^-7 of the value: where the float32 results of the two libraries'
  // exp or tanh differ in their last bit, the rounding to bf16 may land one ulp apart. Exact ops
  // (sums of these inputs, products, conversions, moves) agree bit for bit within that bound.
  CHECK(run_family("bf16", runners::any, Tolerance{0.0078125, 1e-30}) > 70);
}
