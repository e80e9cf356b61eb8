// Conversions, copies and factories against PyTorch fixtures (convert.json, factory.json):
// to(dtype) for every dtype pair (truncation toward zero, float->bool, int64->float rounding,
// float64->float32 overflow), copy_ with broadcasting and conversion into views, fill_, and
// arange linspace eye full zeros ones.
#include "reference/runners.h"

TEST_CASE("reference: to(dtype), copy_ and fill_ match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(run_family("convert", runners::registry) > 50);
}

TEST_CASE("reference: factories match PyTorch", "[reference]") {
  using namespace tt::reference;
  // float32 arange/linspace: PyTorch computes in double and rounds once; a float32 computation
  // may be an ulp or two away, inside the default tolerance.
  CHECK(run_family("factory", runners::registry) > 30);
}
