// Matrix products against PyTorch fixtures (matmul.json): matmul in every form (1-D.1-D,
// 1-D.N-D, N-D.1-D, 2-D, batched, broadcast batch dims), transposed, sliced and expanded
// operands, float64, int64, empty dims; mm, bmm, dot and their shape errors.
#include <stdexcept>

#include "reference/runners.h"

namespace tt::reference {

std::vector<Tensor> runners::matmul(const std::string& op, const json&, std::vector<Input>& in) {
  const Tensor& a = in[0].value;
  const Tensor& b = in[1].value;
  if (op == "matmul") return {tt::matmul(a, b)};
  if (op == "mm") return {tt::mm(a, b)};
  if (op == "bmm") return {tt::bmm(a, b)};
  if (op == "dot") return {tt::dot(a, b)};
  if (op == "linear") return {tt::linear(a, b, in.size() > 2 ? in[2].value : Tensor())};
  throw std::logic_error("no matmul op " + op);
}

}  // namespace tt::reference

TEST_CASE("reference: matmul, mm, bmm and dot match PyTorch", "[reference]") {
  using namespace tt::reference;
  // float32 GEMMs accumulate K products in an order of the BLAS's choosing; with K <= 32 and
  // N(0, 1) inputs the rounding differs by ~1e-6 absolute, which is large relative to results
  // that cancel to near zero: atol 1e-5.
  CHECK(run_family("matmul", runners::matmul, {1e-5, 1e-5}) > 50);
}
