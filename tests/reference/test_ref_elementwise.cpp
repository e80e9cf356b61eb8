// Elementwise ops against PyTorch fixtures (binary.json, unary.json, inplace.json): broadcasting
// corners, type promotion with tensors, 0-d tensors and Python-number scalars, special values,
// strided inputs, and in-place writes through views. The PyTorch side of each op name is
// tools/fixtures/torch_ops.py; both sides take their op lists from backend/op_table.h.
#include <stdexcept>

#include "op_info.h"
#include "reference/runners.h"

namespace tt::reference {

namespace {

Tensor binary_op(const std::string& op, const Tensor& a, const Tensor& b) {
  BinaryOp bop;
  if (!testing::find_binary(op, bop)) throw std::logic_error("no binary op " + op);
  return testing::apply(bop, a, b);
}

Tensor binary_scalar_op(const std::string& op, const Tensor& a, Scalar s, bool scalar_left) {
  if (scalar_left) {
    if (op == "add") return s + a;
    if (op == "sub") return s - a;
    if (op == "mul") return s * a;
    if (op == "div") return s / a;
    throw std::logic_error("no scalar-left form of " + op);
  }
  if (op == "add") return a + s;
  if (op == "sub") return a - s;
  if (op == "mul") return a * s;
  if (op == "div") return a / s;
  if (op == "pow") return tt::pow(a, s);
  if (op == "eq") return a == s;
  if (op == "ne") return a != s;
  if (op == "lt") return a < s;
  if (op == "le") return a <= s;
  if (op == "gt") return a > s;
  if (op == "ge") return a >= s;
  throw std::logic_error("no scalar form of " + op);
}

}  // namespace

std::vector<Tensor> runners::binary(const std::string& op, const json& args, std::vector<Input>& in) {
  if (args.contains("scalar")) {
    bool left = args.value("side", std::string("right")) == "left";
    return {binary_scalar_op(op, in[0].value, parse_scalar(args["scalar"]), left)};
  }
  if (args.contains("alpha")) {
    Scalar alpha = parse_scalar(args["alpha"]);
    if (op == "add") return {tt::add(in[0].value, in[1].value, alpha)};
    if (op == "sub") return {tt::sub(in[0].value, in[1].value, alpha)};
    throw std::logic_error("no alpha form of " + op);
  }
  return {binary_op(op, in[0].value, in[1].value)};
}

std::vector<Tensor> runners::unary(const std::string& op, const json&, std::vector<Input>& in) {
  UnaryOp uop;
  if (!testing::find_unary(op, uop)) throw std::logic_error("no unary op " + op);
  return {testing::apply(uop, in[0].value)};
}

std::vector<Tensor> runners::inplace(const std::string& op, const json& args, std::vector<Input>& in) {
  Tensor& self = in[0].value;
  if (op == "neg_") return {self.neg_()};
  if (op == "exp_") return {self.exp_()};
  if (op == "relu_") return {self.relu_()};
  if (args.contains("scalar")) {
    Scalar s = parse_scalar(args["scalar"]);
    if (op == "add_") return {self.add_(s)};
    if (op == "sub_") return {self.sub_(s)};
    if (op == "mul_") return {self.mul_(s)};
    if (op == "div_") return {self.div_(s)};
  } else {
    const Tensor& other = in[1].value;
    Scalar alpha = args.contains("alpha") ? parse_scalar(args["alpha"]) : Scalar(1);
    if (op == "add_") return {self.add_(other, alpha)};
    if (op == "sub_") return {self.sub_(other, alpha)};
    if (op == "mul_") return {self.mul_(other)};
    if (op == "div_") return {self.div_(other)};
  }
  throw std::logic_error("no in-place op " + op);
}

}  // namespace tt::reference

TEST_CASE("reference: binary elementwise ops match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(run_family("binary", runners::binary) > 400);
}

TEST_CASE("reference: unary elementwise ops match PyTorch", "[reference]") {
  using namespace tt::reference;
  // float32 transcendental functions: PyTorch uses SLEEF's vectorized versions (1.0 ulp), we use
  // libm: both within an ulp or two, far inside the default rtol of 1e-5.
  CHECK(run_family("unary", runners::unary) > 100);
}

TEST_CASE("reference: in-place elementwise ops match PyTorch", "[reference]") {
  using namespace tt::reference;
  CHECK(run_family("inplace", runners::inplace) > 20);
}
