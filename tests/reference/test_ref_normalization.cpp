// LayerNorm and RMSNorm against PyTorch (normalization.json): forward values and the gradients of
// x, weight and bias, over one and several normalized dims, with and without the affine, on
// strided inputs, rows of one element, eps of 0, and x = 1e4 + noise. rms_norm's reference is
// PyTorch 2.4's formula built from torch 1.13 ops. The cases are tools/fixtures/cases_normalization.py
// (run_normalization_torch there is the twin of normalization_op here).
#include "reference/registry_call.h"
#include "reference/test_ref_grad.h"

namespace tt::reference::grad {

// The case's args as its op's parameters (registry_call.h): "affine" says which of the optional
// tensors weight and bias it gives, and "reference" is for PyTorch's side only.
std::vector<Tensor> normalization_op(const std::string& op, const json& args, std::vector<Input>& in) {
  json a = args;
  a.erase("affine");
  a.erase("reference");
  const std::string affine = args.at("affine");
  a["weight"] = affine.find('w') != std::string::npos;
  if (affine.find('b') != std::string::npos) a["bias"] = true;
  return call_registered(op, a, in);
}

}  // namespace tt::reference::grad

TEST_CASE("reference: layer_norm and rms_norm match PyTorch", "[reference][normalization]") {
  using namespace tt::reference;
  CHECK(grad::run_family("normalization", grad::normalization_op) == 64);
}
