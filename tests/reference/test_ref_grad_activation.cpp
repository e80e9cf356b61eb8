// Gradients of the activations against PyTorch (grad_activation.json): softmax and log_softmax
// over every dim, on strided inputs, at +-1e4 and with -inf entries (a row that is all -inf is
// NaN in PyTorch; tinytorch's documented value is checked there instead), relu, leaky_relu,
// gelu (erf and tanh forms), silu, sigmoid, tanh. The cases are
// tools/fixtures/cases_grad_activation.py; the PyTorch side is run_grad_torch() in grad_lib.py.
#include <tinytorch/ops/activation.h>

#include "reference/test_ref_grad.h"

namespace tt::reference::grad {

std::vector<Tensor> activation_op(const std::string& op, const json& args, std::vector<Input>& in) {
  const Tensor& x = in[0].value;
  if (op == "softmax") return {tt::softmax(x, args.at("dim").get<int64_t>())};
  if (op == "log_softmax") return {tt::log_softmax(x, args.at("dim").get<int64_t>())};
  if (op == "gelu") {
    const std::string approximate = args.at("approximate");
    return {tt::gelu(x, approximate)};
  }
  if (op == "silu") return {tt::silu(x)};
  if (op == "leaky_relu") {
    if (args.contains("negative_slope")) return {tt::leaky_relu(x, args["negative_slope"].get<double>())};
    return {tt::leaky_relu(x)};
  }
  return foundation_op(op, args, in);  // relu sigmoid tanh
}

}  // namespace tt::reference::grad

TEST_CASE("reference: gradients of activations match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(grad::run_family("grad_activation", grad::activation_op) > 100);
}
