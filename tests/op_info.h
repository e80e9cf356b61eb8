// OpInfo: the test side of core/op_table.h. One row per unary and per binary op with its
// float64 reference (from <cmath>), and the helpers every op test iterates with: the value tests (ops/test_unary.cpp),
// gradcheck (autograd/test_grad_elementwise.cpp), CPU<->CUDA parity (cuda/test_parity_elementwise.cpp)
// and the PyTorch fixture runners (reference/). The op's name, dtype rule and domain come from the
// library's table; only the reference (and a binary op's operand domains) is written here. An op
// missing from kUnaryRefs or kBinaryRefs stops the build (the static_assert below); the fixture generator reads the same header
// (tools/fixtures/op_table.py).
#pragma once

#include <cmath>
#include <cstddef>
#include <string>

#include <tinytorch/tinytorch.h>

namespace tt::testing {

struct UnaryRef {
  UnaryOp op;
  double (*reference)(double);  // the op on one float64 value
};

// In TT_UNARY_OPS order (checked by the test "op tables: ..." in ops/test_unary.cpp).
inline constexpr UnaryRef kUnaryRefs[] = {
    {UnaryOp::Neg, [](double x) { return -x; }},
    {UnaryOp::Exp, [](double x) { return std::exp(x); }},
    {UnaryOp::Log, [](double x) { return std::log(x); }},
    {UnaryOp::Log1p, [](double x) { return std::log1p(x); }},
    {UnaryOp::Expm1, [](double x) { return std::expm1(x); }},
    {UnaryOp::Sqrt, [](double x) { return std::sqrt(x); }},
    {UnaryOp::Rsqrt, [](double x) { return 1 / std::sqrt(x); }},
    {UnaryOp::Abs, [](double x) { return std::fabs(x); }},
    {UnaryOp::Sin, [](double x) { return std::sin(x); }},
    {UnaryOp::Cos, [](double x) { return std::cos(x); }},
    {UnaryOp::Tanh, [](double x) { return std::tanh(x); }},
    {UnaryOp::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }},
    {UnaryOp::Relu, [](double x) { return x > 0 ? x : 0.0; }},
};
static_assert(sizeof(kUnaryRefs) / sizeof(kUnaryRefs[0]) == kNumUnaryOps,
              "every unary op of core/op_table.h needs its reference in kUnaryRefs");

struct BinaryRef {
  BinaryOp op;
  double (*reference)(double, double);  // the op on two float64 values (a comparison: 0 or 1)
  Domain a_domain, b_domain;            // where each operand is drawn (pow: a positive base)
};

// In TT_BINARY_OPS order (checked beside kUnaryRefs).
inline constexpr BinaryRef kBinaryRefs[] = {
    {BinaryOp::Add, [](double x, double y) { return x + y; }, Domain::Real, Domain::Real},
    {BinaryOp::Sub, [](double x, double y) { return x - y; }, Domain::Real, Domain::Real},
    {BinaryOp::Mul, [](double x, double y) { return x * y; }, Domain::Real, Domain::Real},
    {BinaryOp::Div, [](double x, double y) { return x / y; }, Domain::Real, Domain::Positive},
    {BinaryOp::Pow, [](double x, double y) { return std::pow(x, y); }, Domain::Positive, Domain::Real},
    {BinaryOp::Maximum, [](double x, double y) { return x < y ? y : x; }, Domain::Real, Domain::Real},
    {BinaryOp::Minimum, [](double x, double y) { return y < x ? y : x; }, Domain::Real, Domain::Real},
    {BinaryOp::Eq, [](double x, double y) { return double(x == y); }, Domain::Real, Domain::Real},
    {BinaryOp::Ne, [](double x, double y) { return double(x != y); }, Domain::Real, Domain::Real},
    {BinaryOp::Lt, [](double x, double y) { return double(x < y); }, Domain::Real, Domain::Real},
    {BinaryOp::Le, [](double x, double y) { return double(x <= y); }, Domain::Real, Domain::Real},
    {BinaryOp::Gt, [](double x, double y) { return double(x > y); }, Domain::Real, Domain::Real},
    {BinaryOp::Ge, [](double x, double y) { return double(x >= y); }, Domain::Real, Domain::Real},
};
static_assert(sizeof(kBinaryRefs) / sizeof(kBinaryRefs[0]) == kNumBinaryOps,
              "every binary op of core/op_table.h needs its reference in kBinaryRefs");

// The op by its enum, as its public function (tt::exp for UnaryOp::Exp) would run it.
inline Tensor apply(UnaryOp op, const Tensor& x) { return ::tt::detail::unary(op, x); }
inline Tensor apply(BinaryOp op, const Tensor& a, const Tensor& b) { return ::tt::detail::binary(op, a, b); }

// Maps a value of (-inf, inf) into `domain`: Positive gets |x| + 0.1, AboveMinusOne gets
// |x| - 0.9, so inputs near the edges are drawn too.
inline Tensor in_domain(Domain domain, const Tensor& x) {
  switch (domain) {
    case Domain::Real: return x;
    case Domain::Positive: return x.abs() + 0.1;
    case Domain::AboveMinusOne: return x.abs() - 0.9;
  }
  return x;
}
inline Tensor in_domain(UnaryOp op, const Tensor& x) { return in_domain(unary_info(op).domain, x); }

// The op of a fixture name ("log1p"), or false.
inline bool find_unary(const std::string& name, UnaryOp& op) {
  for (size_t i = 0; i < kNumUnaryOps; ++i)
    if (name == unary_info(UnaryOp(i)).name) return op = UnaryOp(i), true;
  return false;
}
inline bool find_binary(const std::string& name, BinaryOp& op) {
  for (size_t i = 0; i < kNumBinaryOps; ++i)
    if (name == binary_info(BinaryOp(i)).name) return op = BinaryOp(i), true;
  return false;
}

}  // namespace tt::testing
