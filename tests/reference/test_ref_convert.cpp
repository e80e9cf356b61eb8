// Conversions, copies and factories against PyTorch fixtures (convert.json, factory.json):
// to(dtype) for every dtype pair (truncation toward zero, float->bool, int64->float rounding,
// float64->float32 overflow), copy_ with broadcasting and conversion into views, fill_, and
// arange linspace eye full zeros ones.
#include <stdexcept>

#include "reference/runners.h"

namespace tt::reference {

std::vector<Tensor> runners::convert(const std::string& op, const json& args, std::vector<Input>& in) {
  if (op == "to") return {in[0].value.to(parse_dtype(args.at("dtype")))};
  if (op == "copy_") return {in[0].value.copy_(in[1].value)};
  if (op == "fill_") return {in[0].value.fill_(parse_scalar(args.at("value")))};
  throw std::logic_error("no conversion op " + op);
}

std::vector<Tensor> runners::factory(const std::string& op, const json& args, std::vector<Input>&) {
  const bool has_dtype = args.contains("dtype");
  const TensorOptions opts = has_dtype ? TensorOptions(parse_dtype(args["dtype"])) : TensorOptions();
  if (op == "arange") {
    Scalar start = parse_scalar(args.at("start")), end = parse_scalar(args.at("end"));
    Scalar step = parse_scalar(args.at("step"));
    // Without a dtype, arange infers it from its arguments (int64 for integers), as in PyTorch.
    return {has_dtype ? tt::arange(start, end, step, opts) : tt::arange(start, end, step)};
  }
  if (op == "linspace")
    return {tt::linspace(args.at("start").get<double>(), args.at("end").get<double>(),
                         args.at("steps").get<int64_t>(), opts)};
  if (op == "eye") {
    int64_t n = args.at("n").get<int64_t>();
    return {args.contains("m") ? tt::eye(n, args["m"].get<int64_t>(), opts) : tt::eye(n, opts)};
  }
  if (op == "full") return {tt::full(parse_shape(args.at("shape")), parse_scalar(args.at("value")), opts)};
  if (op == "zeros") return {tt::zeros(parse_shape(args.at("shape")), opts)};
  if (op == "ones") return {tt::ones(parse_shape(args.at("shape")), opts)};
  throw std::logic_error("no factory " + op);
}

}  // namespace tt::reference

TEST_CASE("reference: to(dtype), copy_ and fill_ match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(run_family("convert", runners::convert) > 50);
}

TEST_CASE("reference: factories match PyTorch", "[reference]") {
  using namespace tt::reference;
  // float32 arange/linspace: PyTorch computes in double and rounds once; a float32 computation
  // may be an ulp or two away, inside the default tolerance.
  CHECK(run_family("factory", runners::factory) > 30);
}
