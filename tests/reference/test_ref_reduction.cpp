// Reductions against PyTorch fixtures (reduction.json): sum mean max min amax amin argmax argmin var std
// over all dims, one dim and dim lists, keepdim, float32/float64/int64/bool, strided, empty and
// 0-d inputs, NaN and infinities. An empty dims list means every dim, in both libraries.
#include <stdexcept>

#include "reference/runners.h"

namespace tt::reference {

std::vector<Tensor> runners::reduction(const std::string& op, const json& args, std::vector<Input>& in) {
  const Tensor& t = in[0].value;
  if (op == "sum" || op == "mean") {
    if (!args.contains("dims")) return {op == "sum" ? tt::sum(t) : tt::mean(t)};
    Shape dims = parse_shape(args["dims"]);
    bool keep = args.at("keepdim").get<bool>();
    return {op == "sum" ? tt::sum(t, dims, keep) : tt::mean(t, dims, keep)};
  }
  if (op == "max" || op == "min") {
    if (!args.contains("dim")) return {op == "max" ? tt::max(t) : tt::min(t)};
    int64_t dim = args["dim"].get<int64_t>();
    bool keep = args.at("keepdim").get<bool>();
    auto [values, indices] = op == "max" ? tt::max(t, dim, keep) : tt::min(t, dim, keep);
    return {values, indices};
  }
  if (op == "argmax" || op == "argmin") {
    if (!args.contains("dim")) return {op == "argmax" ? tt::argmax(t) : tt::argmin(t)};
    int64_t dim = args["dim"].get<int64_t>();
    bool keep = args.at("keepdim").get<bool>();
    return {op == "argmax" ? tt::argmax(t, dim, keep) : tt::argmin(t, dim, keep)};
  }
  if (op == "amax" || op == "amin") {
    Shape dims = parse_shape(args["dims"]);
    bool keep = args["keepdim"].get<bool>();
    return {op == "amax" ? t.amax(dims, keep) : t.amin(dims, keep)};
  }
  if (op == "var" || op == "std") {
    if (!args.contains("dims")) return {op == "var" ? tt::var(t) : tt::std(t)};
    Shape dims = parse_shape(args["dims"]);
    int64_t correction = args.at("correction").get<int64_t>();
    bool keep = args.at("keepdim").get<bool>();
    return {op == "var" ? tt::var(t, dims, correction, keep) : tt::std(t, dims, correction, keep)};
  }
  throw std::logic_error("no reduction op " + op);
}

}  // namespace tt::reference

TEST_CASE("reference: reductions match PyTorch", "[reference]") {
  using namespace tt::reference;
  // float32: the libraries sum in different orders (PyTorch cascades, we sum pairwise), so
  // results differ by a few ulps of the largest partial sum; 1000-element rows of N(0, 1)
  // values have partial sums near 30, hence atol 1e-5.
  CHECK(run_family("reduction", runners::reduction, {1e-5, 1e-5}) > 300);
}
