// Embedding and rotary positions against PyTorch: values and gradients (embedding.json, through
// the gradient machinery of test_ref_grad.h). The cases are tools/fixtures/cases_embedding.py,
// whose run_embedding_torch() is the PyTorch twin of embedding_op() below.
#include <map>
#include <optional>
#include <stdexcept>

#include <tinytorch/nn/positional.h>
#include <tinytorch/ops/embedding.h>

#include "reference/registry_call.h"
#include "reference/test_ref_grad.h"

namespace tt::reference {

namespace {

// args "offset" (default 0) or "positions" (a list [T] or [B, T]), "base" (default 10000).
Tensor rope(const Tensor& x, const json& args) {
  nn::RotaryEmbedding r(nn::RotaryOptions(x.size(-1)).base(args.value("base", 10000.0)));
  if (!args.contains("positions")) return r.apply(x, args.value("offset", int64_t{0}));
  const json& p = args.at("positions");
  std::vector<int64_t> flat;
  Shape shape;
  if (p.at(0).is_array()) {
    for (const json& row : p)
      for (const json& v : row) flat.push_back(v.get<int64_t>());
    shape = {int64_t(p.size()), int64_t(p.at(0).size())};
  } else {
    for (const json& v : p) flat.push_back(v.get<int64_t>());
    shape = {int64_t(p.size())};
  }
  return r.apply(x, tensor(flat, shape));
}

using Rotary = std::vector<Tensor> (*)(const json& args, std::vector<Input>& in);

// Rotary positions (nn::RotaryEmbedding, a module, not an op of the registry) by their fixture
// names; the PyTorch twins are cases_embedding.py's ROTARY. inputs: rope [x]; rope_scores [q, k].
const std::map<std::string, Rotary>& rotary_cases() {
  static const std::map<std::string, Rotary> table = {
      {"rope",
       [](const json& args, std::vector<Input>& in) -> std::vector<Tensor> { return {rope(in.at(0).value, args)}; }},
      {"rope_scores", [](const json& args, std::vector<Input>& in) -> std::vector<Tensor> {
         return {rope(in.at(0).value, args).matmul(rope(in.at(1).value, args).transpose(-1, -2))};
       }}};
  return table;
}

// inputs: embedding [weight, indices] (its registry row); the rotary cases above.
std::vector<Tensor> embedding_op(const std::string& op, const json& args, std::vector<Input>& in) {
  if (is_registered(op)) return call_registered(op, args, in);
  return rotary_cases().at(op)(args, in);
}

}  // namespace

}  // namespace tt::reference

TEST_CASE("reference: embedding and rotary positions match PyTorch, values and gradients",
          "[reference][embedding]") {
  using namespace tt::reference;
  CHECK(grad::run_family("embedding", embedding_op) >= 43);
}
