// Large inputs against PyTorch fixtures (large.json): tensors beyond the CPU backend's OpenMP
// grain (32768 elements), so the parallel and vectorized kernels (elementwise, reductions with
// ties, GEMM, copies, indexing) are compared too, on contiguous and strided operands. Outputs
// this large are stored as checksums and samples (see reference_util.cpp).
#include "op_info.h"
#include "reference/runners.h"

namespace tt::reference {

// Any op of the forward families (also the bf16 family's runner): a row of the op tables or of
// the op registry.
std::vector<Tensor> runners::any(const std::string& op, const json& args, std::vector<Input>& in) {
  BinaryOp binary_op;
  UnaryOp unary_op;
  if (testing::find_binary(op, binary_op)) return runners::binary(op, args, in);
  if (testing::find_unary(op, unary_op)) return runners::unary(op, args, in);
  return call_registered(op, args, in);
}

}  // namespace tt::reference

TEST_CASE("reference: large tensors (parallel kernels) match PyTorch", "[reference]") {
  // Inputs are exact multiples of 1/8, so sums and GEMMs are exact in any order; only the
  // transcendental functions, division and var/std round, within the default tolerances.
  CHECK(tt::reference::run_family("large", tt::reference::runners::any) > 40);
}
