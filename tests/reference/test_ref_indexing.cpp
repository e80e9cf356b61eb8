// Indexing against PyTorch fixtures (indexing.json): index_select gather scatter_add(_)
// masked_fill(_) where, with duplicate, empty, strided and out-of-range indices, broadcast masks
// and conditions, and where's type promotion with tensors and Python-number operands.
#include "reference/runners.h"

TEST_CASE("reference: index_select, gather, scatter_add, masked_fill and where match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(run_family("indexing", runners::registry) > 60);
}
