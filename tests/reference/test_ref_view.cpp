// View ops against PyTorch fixtures (view.json): view reshape flatten transpose t permute
// unsqueeze squeeze expand slice select narrow contiguous clone, on contiguous and strided
// inputs. Beyond values, each result must be a view exactly where PyTorch's is, with PyTorch's
// strides and offset (checked in reference_util.cpp).
#include "reference/runners.h"

TEST_CASE("reference: view ops match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(run_family("view", runners::registry) > 100);
}
