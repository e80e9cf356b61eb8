// LayerNorm and RMSNorm against PyTorch (normalization.json): forward values and the gradients of
// x, weight and bias, over one and several normalized dims, with and without the affine, on
// strided inputs, rows of one element, eps of 0, and x = 1e4 + noise. rms_norm's reference is
// PyTorch 2.4's formula built from torch 1.13 ops. The cases are tools/fixtures/cases_normalization.py
// (run_normalization_torch there is the twin of normalization_op here).
#include <tinytorch/ops/normalization.h>

#include "reference/test_ref_grad.h"

namespace tt::reference::grad {

std::vector<Tensor> normalization_op(const std::string& op, const json& args, std::vector<Input>& in) {
  const Tensor& x = in[0].value;
  const std::string affine = args.at("affine");
  size_t next = 1;
  Tensor w, b;
  if (affine == "wb" || affine == "w") w = in.at(next++).value;
  if (affine == "wb" || affine == "b") b = in.at(next++).value;
  const Shape shape(args.at("normalized_shape").get<std::vector<int64_t>>());
  if (op == "layer_norm") return {tt::layer_norm(x, shape, w, b, args.value("eps", 1e-5))};
  if (op == "rms_norm") {
    std::optional<double> eps;
    if (args.contains("eps")) eps = args["eps"].get<double>();
    return {tt::rms_norm(x, shape, w, eps)};
  }
  throw std::runtime_error("normalization_op: unknown op " + op);
}

}  // namespace tt::reference::grad

TEST_CASE("reference: layer_norm and rms_norm match PyTorch", "[reference][normalization]") {
  using namespace tt::reference;
  CHECK(grad::run_family("normalization", grad::normalization_op) == 64);
}
