// Joining and splitting against PyTorch fixtures (join.json): cat and stack (dims, strided and
// empty parts, PyTorch's legacy skipping of 1-D empty tensors in cat, dtype promotion) and split
// and chunk (uneven, empty, strided; every piece a view of the input).
#include <stdexcept>

#include "reference/runners.h"

namespace tt::reference {

std::vector<Tensor> runners::join(const std::string& op, const json& args, std::vector<Input>& in) {
  int64_t dim = args.at("dim").get<int64_t>();
  if (op == "cat" || op == "stack") {
    std::vector<Tensor> parts;
    for (const Input& i : in) parts.push_back(i.value);
    return {op == "cat" ? tt::cat(parts, dim) : tt::stack(parts, dim)};
  }
  if (op == "split") {
    if (args.contains("sizes")) return tt::split(in[0].value, parse_ints(args["sizes"]), dim);
    return in[0].value.split(args.at("size").get<int64_t>(), dim);
  }
  if (op == "chunk") return in[0].value.chunk(args.at("chunks").get<int64_t>(), dim);
  throw std::logic_error("no join op " + op);
}

}  // namespace tt::reference

TEST_CASE("reference: cat, stack, split and chunk match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(run_family("join", runners::join) > 40);
}
