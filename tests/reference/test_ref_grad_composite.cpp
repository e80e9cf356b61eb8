// Composite expressions against PyTorch (grad_composite.json), the gradient of every parameter
// compared: an MLP-like chain, a softmax cross-entropy by hand, causal attention scores with a
// -inf mask made by masked_fill (and a broadcast bias), second-order gradients through
// create_graph (the gradient of a gradient, a Hessian-vector product), and one leaf reused along
// several paths. Each expression mirrors run_composite() in tools/fixtures/grad_lib.py.
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include <tinytorch/ops/activation.h>

#include "reference/test_ref_grad.h"

namespace tt::reference::grad {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// d(sum of `y`)/dx with create_graph, so that the result can be differentiated again.
Tensor grad_with_graph(const Tensor& y, const Tensor& x) {
  return tt::autograd::grad({y}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true).at(0);
}

using Scenario = std::vector<Tensor> (*)(const json& args, std::vector<Input>& in);

// Each scenario of the family (a few ops together, not one op of the registry) by its name in the
// fixtures; the PyTorch twins are grad_lib.py's COMPOSITES.
const std::map<std::string, Scenario>& composites() {
  static const std::map<std::string, Scenario> table = {
    {"mlp_chain",
     [](const json& args, std::vector<Input>& in) -> std::vector<Tensor> {
      // x: [N, C], W1: [C, H], b1: [H], W2: [H, K], b2: [K]
      const std::string approximate = args.at("approximate");
      Tensor h = tt::gelu(tt::matmul(in[0].value, in[1].value) + in[2].value, approximate);
      Tensor y = tt::matmul(h, in[3].value) + in[4].value;
      return {(y * y).sum()};
     }},
    {"softmax_xent",
     [](const json& /*args*/, std::vector<Input>& in) -> std::vector<Tensor> {
      // logits: [..., C] (or x @ W + b), targets: [...] int64
      Tensor logits = in.size() == 4 ? tt::matmul(in[0].value, in[2].value) + in[3].value : in[0].value;
      Tensor picked = tt::gather(tt::log_softmax(logits, -1), -1, in[1].value.unsqueeze(-1));
      return {-picked.mean()};
     }},
    {"attention",
     [](const json& args, std::vector<Input>& in) -> std::vector<Tensor> {
      // q, k, v: [B, H, T, D]; optional bias broadcast against the scores [B, H, T, T]
      const Tensor &q = in[0].value, &k = in[1].value, &v = in[2].value;
      const int64_t T = q.size(q.dim() - 2), D = q.size(q.dim() - 1);
      Tensor scores = tt::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(D));
      Tensor above = tt::arange(T).unsqueeze(1) < tt::arange(T).unsqueeze(0);  // [T, T], true above the diagonal
      if (args.at("mask") == "add") {
        scores = scores + tt::zeros({T, T}, TensorOptions(q.dtype())).masked_fill(above, kNegInf);
      } else {
        scores = scores.masked_fill(above, kNegInf);
      }
      if (in.size() == 4) scores = scores + in[3].value;
      Tensor attn = tt::softmax(scores, -1);
      return {tt::matmul(attn, v), attn};
     }},
    {"second_order_cube",
     [](const json& /*args*/, std::vector<Input>& in) -> std::vector<Tensor> {
      const Tensor &x = in[0].value, &w = in[1].value;
      Tensor g = grad_with_graph((x.pow(3) * w).sum(), x);  // 3 x^2 w
      return {g, g.sum()};
     }},
    {"hvp_tanh_matmul",
     [](const json& /*args*/, std::vector<Input>& in) -> std::vector<Tensor> {
      const Tensor &x = in[0].value, &w = in[1].value;
      return {grad_with_graph(tt::tanh(tt::matmul(x, w)).sum(), x)};
     }},
    {"second_order_broadcast",
     [](const json& /*args*/, std::vector<Input>& in) -> std::vector<Tensor> {
      const Tensor &x = in[0].value, &y = in[1].value;  // x: [N, 1], y: [M]
      Tensor g = grad_with_graph((tt::exp(x * y) / (x * x + 1)).sum(), x);
      return {g, (g * g).sum()};
     }},
    {"reuse_accumulate",
     [](const json& /*args*/, std::vector<Input>& in) -> std::vector<Tensor> {
      const Tensor &x = in[0].value, &w = in[1].value;
      Tensor y = x * x + x.t() + tt::sin(x) * x;
      return {(y * w).sum()};
     }},
  };
  return table;
}

std::vector<Tensor> composite_op(const std::string& op, const json& args, std::vector<Input>& in) {
  return composites().at(op)(args, in);
}

}  // namespace

}  // namespace tt::reference::grad

TEST_CASE("reference: gradients of composite expressions match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(grad::run_family("grad_composite", grad::composite_op) > 20);
}
