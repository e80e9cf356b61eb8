// The op tables: every elementwise, reduction and activation op the backends run, each listed
// once. From these lists come the op enums, their names, the dtype rules and input domains, the
// visitors both backends dispatch through (backend/visit.h), and, for the elementwise ops, the
// autograd nodes with what they save and their derivative (ops/elementwise.cpp). Adding an op is
// one line here plus its scalar functor in backend/functors.h; docs/adding_an_op.md walks
// through it. Not here: the Backend interface (backend/backend.h), the kernels' loops.
//
// Note [op tables]: each table is an X-macro, TT_XXX_OPS(X), that calls X once per op with the
// op's columns. A user of a table defines X to pick the columns it needs and ignores the rest,
// so the same line feeds the enum, a name array, a switch in a visitor and an autograd node.
// Switches generated from a table have no `default:`; the library builds with -Werror=switch,
// so a switch that misses an op stops the build. The derivative columns are C++ expressions
// written with tensor ops; they are only ever expanded in ops/ (which knows tensors and
// autograd), never in backend/, which ignores those columns.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tt {

// Which dtypes an op takes. Floating: float32/float64 (ops/ turns integer and bool inputs into
// float32 first, as PyTorch does); NoBool: every dtype but bool, kept as it is.
enum class DtypeRule : uint8_t { Floating, NoBool };

// Where an op is defined, for the tests and the fixture generator that draw its inputs (the op
// itself accepts any value and follows IEEE: log(-1) is NaN, as in PyTorch).
//   Real: every real x;  Positive: x > 0;  AboveMinusOne: x > -1.
enum class Domain : uint8_t { Real, Positive, AboveMinusOne };

// What a backward needs kept from the forward, as bits. An op saves a tensor only when one of the
// gradients it must compute reads it (ops/elementwise.cpp, Note [save policy]).
enum SaveBits : uint8_t { kSaveNone = 0, kSaveA = 1, kSaveB = 2, kSaveOut = 4 };
constexpr uint8_t kSaveIn = kSaveA;  // a unary op's input

// --- unary elementwise ops ----------------------------------------------------------------------
// X(Enum, fn, node, dtypes, domain, saves, bool_hint, derivative)
//   Enum        the UnaryOp value; functors::Enum is its scalar math (backend/functors.h)
//   fn          the public function tt::fn(x) (ops/elementwise.h) and the op's name in messages
//   node        the autograd node's name, as PyTorch's grad_fn names it
//   dtypes      a DtypeRule;  domain: a Domain
//   saves       kSaveIn, kSaveOut or kSaveNone: what `derivative` reads besides g
//   bool_hint   appended to the error for a bool input ("" for none)
//   derivative  dL/dx from g = dL/dy, the input `in` and the output `out` (the rest of the line)
#define TT_UNARY_OPS(X)                                                                                           \
  X(Neg, neg, "NegBackward0", NoBool, Real, kSaveNone, "; to invert a mask use logical_not", neg(g))              \
  X(Exp, exp, "ExpBackward0", Floating, Real, kSaveOut, "", mul(g, out))                                          \
  X(Log, log, "LogBackward0", Floating, Positive, kSaveIn, "", div(g, in))                                        \
  X(Log1p, log1p, "Log1PBackward0", Floating, AboveMinusOne, kSaveIn, "", div(g, add(in, 1)))                     \
  X(Expm1, expm1, "Expm1Backward0", Floating, Real, kSaveOut, "", mul(g, add(out, 1)))                            \
  X(Sqrt, sqrt, "SqrtBackward0", Floating, Positive, kSaveOut, "", div(g, mul(out, 2)))                           \
  X(Rsqrt, rsqrt, "RsqrtBackward0", Floating, Positive, kSaveOut, "", mul(g, mul(pow(out, 3), -0.5)))             \
  X(Abs, abs, "AbsBackward0", NoBool, Real, kSaveIn, "", where(in > 0, g, where(in < 0, neg(g), zeros_like(g))))  \
  X(Sin, sin, "SinBackward0", Floating, Real, kSaveIn, "", mul(g, cos(in)))                                       \
  X(Cos, cos, "CosBackward0", Floating, Real, kSaveIn, "", neg(mul(g, sin(in))))                                  \
  X(Tanh, tanh, "TanhBackward0", Floating, Real, kSaveOut, "", mul(g, one_minus(mul(out, out))))                 \
  X(Sigmoid, sigmoid, "SigmoidBackward0", Floating, Real, kSaveOut, "", mul(g, mul(out, one_minus(out))))        \
  X(Relu, relu, "ReluBackward0", NoBool, Real, kSaveOut, "", where(out > 0, g, zeros_like(g)))

// --- binary elementwise ops ---------------------------------------------------------------------
// X(Enum, fn, node, kind, saves_for_a, saves_for_b, grad_a, grad_b)
//   kind         Arith: out has the promoted dtype; TrueDiv: as Arith, integers give float32;
//                Compare: out is bool and has no gradient
//   saves_for_a  what grad_a reads of a, b and out (kSave* bits); saves_for_b likewise
//   grad_a       dL/da from g, a, b and out, before it is summed back to a's shape (broadcasting);
//                grad_b likewise. Compare ops write Tensor().
enum class BinaryKind : uint8_t { Arith, TrueDiv, Compare };
#define TT_BINARY_OPS(X)                                                                                       \
  X(Add, add, "AddBackward0", Arith, kSaveNone, kSaveNone, g, g)                                               \
  X(Sub, sub, "SubBackward0", Arith, kSaveNone, kSaveNone, g, neg(g))                                          \
  X(Mul, mul, "MulBackward0", Arith, kSaveB, kSaveA, mul_grad(g, b), mul_grad(g, a))                           \
  X(Div, div, "DivBackward0", TrueDiv, kSaveB, kSaveA | kSaveB, div(g, b), neg(div(mul(div(g, b), a), b)))     \
  X(Pow, pow, "PowBackward0", Arith, kSaveA | kSaveB, kSaveA | kSaveB | kSaveOut, pow_grad_base(g, a, b),      \
    pow_grad_exponent(g, a, b, out))                                                                           \
  X(Maximum, maximum, "MaximumBackward0", Arith, kSaveA | kSaveB, kSaveA | kSaveB,                             \
    extremum_grad(g, a, b, true), extremum_grad(g, b, a, true))                                                \
  X(Minimum, minimum, "MinimumBackward0", Arith, kSaveA | kSaveB, kSaveA | kSaveB,                             \
    extremum_grad(g, a, b, false), extremum_grad(g, b, a, false))                                              \
  X(Eq, eq, "", Compare, kSaveNone, kSaveNone, Tensor(), Tensor())                                             \
  X(Ne, ne, "", Compare, kSaveNone, kSaveNone, Tensor(), Tensor())                                             \
  X(Lt, lt, "", Compare, kSaveNone, kSaveNone, Tensor(), Tensor())                                             \
  X(Le, le, "", Compare, kSaveNone, kSaveNone, Tensor(), Tensor())                                             \
  X(Gt, gt, "", Compare, kSaveNone, kSaveNone, Tensor(), Tensor())                                             \
  X(Ge, ge, "", Compare, kSaveNone, kSaveNone, Tensor(), Tensor())

// --- reductions ---------------------------------------------------------------------------------
// X(Enum, fn, kind, arg)
//   kind  Sum, Max or Min: what is folded;  arg  true: the result is the index (int64) of the
//   extreme, not its value. Their derivatives depend on the overload (a dim list, keepdim, ties)
//   and live with them in ops/reduction.cpp.
enum class ReduceKind : uint8_t { Sum, Max, Min };
#define TT_REDUCE_OPS(X)            \
  X(Sum, sum, Sum, false)           \
  X(Max, max, Max, false)           \
  X(Min, min, Min, false)           \
  X(ArgMax, argmax, Max, true)      \
  X(ArgMin, argmin, Min, true)

// --- pointwise activations with a fused backward (ops/activation.cpp) ---------------------------
// X(Enum, name, forward, backward)
//   forward, backward: the functors (backend/activation_functors.h) for out = f(x) and
//   dx = dy * f'(x), spelled with the element type T in scope; a functor that holds a value is
//   built from the kernels' `param` (LeakyRelu's negative slope). GeluTanh is GELU's tanh
//   approximation. Their autograd nodes, with double backward, are in ops/activation.cpp.
#define TT_ACTIVATION_OPS(X)                                                    \
  X(Gelu, "gelu", Gelu, GeluBackward)                                           \
  X(GeluTanh, "gelu_tanh", GeluTanh, GeluTanhBackward)                          \
  X(Silu, "silu", Silu, SiluBackward)                                           \
  X(LeakyRelu, "leaky_relu", LeakyRelu<T>, LeakyReluBackward<T>)

// --- what follows from the tables -----------------------------------------------------------------
#define TT_OP_ENUM_VALUE(Enum, ...) Enum,
#define TT_OP_COUNT(...) +1
enum class UnaryOp : uint8_t { TT_UNARY_OPS(TT_OP_ENUM_VALUE) };
enum class BinaryOp : uint8_t { TT_BINARY_OPS(TT_OP_ENUM_VALUE) };
enum class ReduceOp : uint8_t { TT_REDUCE_OPS(TT_OP_ENUM_VALUE) };
enum class ActivationOp : uint8_t { TT_ACTIVATION_OPS(TT_OP_ENUM_VALUE) };
constexpr size_t kNumUnaryOps = 0 TT_UNARY_OPS(TT_OP_COUNT);
constexpr size_t kNumBinaryOps = 0 TT_BINARY_OPS(TT_OP_COUNT);
constexpr size_t kNumReduceOps = 0 TT_REDUCE_OPS(TT_OP_COUNT);
constexpr size_t kNumActivationOps = 0 TT_ACTIVATION_OPS(TT_OP_COUNT);
#undef TT_OP_ENUM_VALUE
#undef TT_OP_COUNT

// The columns of one unary op, for ops/ and the tests, indexed by UnaryOp.
struct UnaryInfo {
  const char* name;
  const char* node_name;
  DtypeRule dtypes;
  Domain domain;
  uint8_t saves;
  const char* bool_hint;
};
#define TT_UNARY_INFO(Enum, fn, node, dtypes, domain, saves, hint, ...) \
  UnaryInfo{#fn, node, DtypeRule::dtypes, Domain::domain, saves, hint},
inline constexpr UnaryInfo kUnaryInfo[] = {TT_UNARY_OPS(TT_UNARY_INFO)};
#undef TT_UNARY_INFO
// (The `% count` keeps the index provably in range for the optimizer's array-bounds checks; every
// enum value is below its count.)
constexpr const UnaryInfo& unary_info(UnaryOp op) { return kUnaryInfo[size_t(op) % kNumUnaryOps]; }

// The columns of one binary op, indexed by BinaryOp.
struct BinaryInfo {
  const char* name;
  const char* node_name;
  BinaryKind kind;
  uint8_t saves_for_a, saves_for_b;
};
#define TT_BINARY_INFO(Enum, fn, node, kind, saves_a, saves_b, ...) \
  BinaryInfo{#fn, node, BinaryKind::kind, uint8_t(saves_a), uint8_t(saves_b)},
inline constexpr BinaryInfo kBinaryInfo[] = {TT_BINARY_OPS(TT_BINARY_INFO)};
#undef TT_BINARY_INFO
constexpr const BinaryInfo& binary_info(BinaryOp op) { return kBinaryInfo[size_t(op) % kNumBinaryOps]; }
constexpr bool is_comparison(BinaryOp op) { return binary_info(op).kind == BinaryKind::Compare; }

// The columns of one reduction, indexed by ReduceOp.
struct ReduceInfo {
  const char* name;
  ReduceKind kind;
  bool arg;
};
#define TT_REDUCE_INFO(Enum, fn, kind, arg) ReduceInfo{#fn, ReduceKind::kind, arg},
inline constexpr ReduceInfo kReduceInfo[] = {TT_REDUCE_OPS(TT_REDUCE_INFO)};
#undef TT_REDUCE_INFO
constexpr const ReduceInfo& reduce_info(ReduceOp op) { return kReduceInfo[size_t(op) % kNumReduceOps]; }

#define TT_ACTIVATION_NAME(Enum, name, ...) name,
inline constexpr const char* kActivationNames[] = {TT_ACTIVATION_OPS(TT_ACTIVATION_NAME)};
#undef TT_ACTIVATION_NAME

// "neg", "add", "sum", "gelu": the op's name in messages and fixtures.
constexpr const char* op_name(UnaryOp op) { return unary_info(op).name; }
constexpr const char* op_name(BinaryOp op) { return binary_info(op).name; }
constexpr const char* op_name(ReduceOp op) { return reduce_info(op).name; }
constexpr const char* op_name(ActivationOp op) { return kActivationNames[size_t(op) % kNumActivationOps]; }

}  // namespace tt
