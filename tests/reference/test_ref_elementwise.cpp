// Elementwise ops against PyTorch fixtures (binary.json, unary.json, inplace.json): broadcasting
// corners, type promotion with tensors, 0-d tensors and Python-number scalars, special values,
// strided inputs, and in-place writes through views. Both sides take the ops from core/op_table.h
// (binary, unary) and core/op_registry.h (the in-place rows; tools/fixtures/registry.py).
#include <stdexcept>

#include "op_info.h"
#include "reference/runners.h"

namespace tt::reference {

namespace {

// a op s, or s op a when the scalar is on the left, as Python spells `x - 2` and `2 - x`: the
// operators of core/tensor.h. A switch over the table's rows, so a new binary op stops the build
// here until its scalar forms are known.
Tensor binary_scalar_op(BinaryOp op, const Tensor& a, Scalar s, bool left) {
  switch (op) {
    case BinaryOp::Add: return left ? s + a : a + s;
    case BinaryOp::Sub: return left ? s - a : a - s;
    case BinaryOp::Mul: return left ? s * a : a * s;
    case BinaryOp::Div: return left ? s / a : a / s;
    case BinaryOp::Pow: if (!left) return tt::pow(a, s); break;
    case BinaryOp::Eq: if (!left) return a == s; break;
    case BinaryOp::Ne: if (!left) return a != s; break;
    case BinaryOp::Lt: if (!left) return a < s; break;
    case BinaryOp::Le: if (!left) return a <= s; break;
    case BinaryOp::Gt: if (!left) return a > s; break;
    case BinaryOp::Ge: if (!left) return a >= s; break;
    case BinaryOp::Maximum:
    case BinaryOp::Minimum: break;
  }
  throw std::logic_error(std::string("no scalar form of ") + op_name(op) + (left ? " with the scalar first" : ""));
}

}  // namespace

std::vector<Tensor> runners::binary(const std::string& op, const json& args, std::vector<Input>& in) {
  BinaryOp bop;
  if (!testing::find_binary(op, bop)) throw std::logic_error("no binary op " + op);
  if (args.contains("scalar")) {
    bool left = args.value("side", std::string("right")) == "left";
    return {binary_scalar_op(bop, in[0].value, parse_scalar(args["scalar"]), left)};
  }
  if (args.contains("alpha")) return call_registered(op, args, in);  // add and sub's alpha: their rows
  return {testing::apply(bop, in[0].value, in[1].value)};
}

std::vector<Tensor> runners::unary(const std::string& op, const json&, std::vector<Input>& in) {
  UnaryOp uop;
  if (!testing::find_unary(op, uop)) throw std::logic_error("no unary op " + op);
  return {testing::apply(uop, in[0].value)};
}

std::vector<Tensor> runners::registry(const std::string& op, const json& args, std::vector<Input>& in) {
  return call_registered(op, args, in);
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
  CHECK(run_family("inplace", runners::registry) > 20);
}
