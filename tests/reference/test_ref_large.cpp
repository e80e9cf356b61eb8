// Large inputs against PyTorch fixtures (large.json): tensors beyond the CPU backend's OpenMP
// grain (32768 elements), so the parallel and vectorized kernels (elementwise, reductions with
// ties, GEMM, copies, indexing) are compared too, on contiguous and strided operands. Outputs
// this large are stored as checksums and samples (see reference_util.cpp).
#include <set>
#include <stdexcept>

#include "op_info.h"
#include "reference/runners.h"

namespace tt::reference {

// Any op of the forward families, dispatched by its name (also the bf16 family's runner).
std::vector<Tensor> runners::any(const std::string& op, const json& args, std::vector<Input>& in) {
  static const std::set<std::string> inplace = {"add_", "sub_", "mul_", "div_", "neg_", "exp_", "relu_"};
  static const std::set<std::string> reduction = {"sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std"};
  static const std::set<std::string> view = {"view", "reshape", "flatten", "transpose", "t", "permute",
                                             "unsqueeze", "squeeze", "expand", "slice", "select",
                                             "narrow", "contiguous", "clone"};
  static const std::set<std::string> join = {"cat", "stack", "split", "chunk"};
  static const std::set<std::string> indexing = {"index_select", "gather", "scatter_add", "scatter_add_",
                                                 "masked_fill", "masked_fill_", "where"};
  static const std::set<std::string> matmul = {"matmul", "mm", "bmm", "dot"};
  static const std::set<std::string> convert = {"to", "copy_", "fill_"};
  BinaryOp binary_op;
  UnaryOp unary_op;
  if (testing::find_binary(op, binary_op)) return runners::binary(op, args, in);
  if (testing::find_unary(op, unary_op)) return runners::unary(op, args, in);
  if (inplace.count(op)) return runners::inplace(op, args, in);
  if (reduction.count(op)) return runners::reduction(op, args, in);
  if (view.count(op)) return runners::view(op, args, in);
  if (join.count(op)) return runners::join(op, args, in);
  if (indexing.count(op)) return runners::indexing(op, args, in);
  if (matmul.count(op)) return runners::matmul(op, args, in);
  if (convert.count(op)) return runners::convert(op, args, in);
  throw std::logic_error("no runner for op " + op);
}

}  // namespace tt::reference

TEST_CASE("reference: large tensors (parallel kernels) match PyTorch", "[reference]") {
  // Inputs are exact multiples of 1/8, so sums and GEMMs are exact in any order; only the
  // transcendental functions, division and var/std round, within the default tolerances.
  CHECK(tt::reference::run_family("large", tt::reference::runners::any) > 40);
}
