// Indexing against PyTorch fixtures (indexing.json): index_select gather scatter_add(_)
// masked_fill(_) where, with duplicate, empty, strided and out-of-range indices, broadcast masks
// and conditions, and where's type promotion with tensors and Python-number operands.
#include <stdexcept>

#include "reference/runners.h"

namespace tt::reference {

std::vector<Tensor> runners::indexing(const std::string& op, const json& args, std::vector<Input>& in) {
  if (op == "where") {
    if (!args.contains("scalar")) return {tt::where(in[0].value, in[1].value, in[2].value)};
    Scalar s = parse_scalar(args["scalar"]);
    if (args.value("side", std::string("right")) == "left") return {tt::where(in[0].value, s, in[1].value)};
    return {tt::where(in[0].value, in[1].value, s)};
  }
  if (op == "masked_fill") return {tt::masked_fill(in[0].value, in[1].value, parse_scalar(args.at("value")))};
  if (op == "masked_fill_") return {in[0].value.masked_fill_(in[1].value, parse_scalar(args.at("value")))};
  int64_t dim = args.at("dim").get<int64_t>();
  if (op == "index_select") return {tt::index_select(in[0].value, dim, in[1].value)};
  if (op == "gather") return {tt::gather(in[0].value, dim, in[1].value)};
  if (op == "scatter_add") return {tt::scatter_add(in[0].value, dim, in[1].value, in[2].value)};
  if (op == "scatter_add_") return {in[0].value.scatter_add_(dim, in[1].value, in[2].value)};
  throw std::logic_error("no indexing op " + op);
}

}  // namespace tt::reference

TEST_CASE("reference: index_select, gather, scatter_add, masked_fill and where match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(run_family("indexing", runners::indexing) > 60);
}
