// Joining and splitting against PyTorch fixtures (join.json): cat and stack (dims, strided and
// empty parts, PyTorch's legacy skipping of 1-D empty tensors in cat, dtype promotion) and split
// and chunk (uneven, empty, strided; every piece a view of the input).
#include "reference/runners.h"

TEST_CASE("reference: cat, stack, split and chunk match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(run_family("join", runners::registry) > 40);
}
