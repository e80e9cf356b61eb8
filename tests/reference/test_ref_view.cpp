// View ops against PyTorch fixtures (view.json): view reshape flatten transpose t permute
// unsqueeze squeeze expand slice select narrow contiguous clone, on contiguous and strided
// inputs. Beyond values, each result must be a view exactly where PyTorch's is, with PyTorch's
// strides and offset (checked in reference_util.cpp).
#include <stdexcept>

#include "reference/runners.h"

namespace tt::reference {

namespace {
int64_t int_arg(const json& args, const char* name) { return args.at(name).get<int64_t>(); }
}  // namespace

std::vector<Tensor> runners::view(const std::string& op, const json& args, std::vector<Input>& in) {
  const Tensor& t = in[0].value;
  if (op == "view") return {t.view(parse_shape(args.at("shape")))};
  if (op == "reshape") return {t.reshape(parse_shape(args.at("shape")))};
  if (op == "flatten") return {t.flatten(int_arg(args, "start"), int_arg(args, "end"))};
  if (op == "transpose") return {t.transpose(int_arg(args, "d0"), int_arg(args, "d1"))};
  if (op == "t") return {t.t()};
  if (op == "permute") return {t.permute(parse_shape(args.at("dims")))};
  if (op == "unsqueeze") return {t.unsqueeze(int_arg(args, "dim"))};
  if (op == "squeeze") return {args.contains("dim") ? t.squeeze(int_arg(args, "dim")) : t.squeeze()};
  if (op == "expand") return {t.expand(parse_shape(args.at("shape")))};
  if (op == "slice") {
    int64_t end = args.at("end").is_null() ? kEnd : int_arg(args, "end");
    return {t.slice(int_arg(args, "dim"), int_arg(args, "start"), end, int_arg(args, "step"))};
  }
  if (op == "select") return {t.select(int_arg(args, "dim"), int_arg(args, "index"))};
  if (op == "narrow") return {t.narrow(int_arg(args, "dim"), int_arg(args, "start"), int_arg(args, "length"))};
  if (op == "contiguous") return {t.contiguous()};
  if (op == "clone") return {t.clone()};
  throw std::logic_error("no view op " + op);
}

}  // namespace tt::reference

TEST_CASE("reference: view ops match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(run_family("view", runners::view) > 100);
}
