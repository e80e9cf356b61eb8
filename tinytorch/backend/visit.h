// The visitors both backends dispatch elementwise, reduction and activation ops through: each
// turns a runtime op into its compile-time functor (or traits), generated from the op tables in
// core/op_table.h, so the CPU loops (cpu/*.cpp) and the CUDA kernels (cuda/*.cu) hold no
// switch of their own and cannot miss an op. Loops, strides and threads are not here.
#pragma once

#include <type_traits>

#include "tinytorch/backend/activation_functors.h"
#include "tinytorch/backend/functors.h"
#include "tinytorch/core/op_table.h"

namespace tt {

// Whether an op whose rule is `rule` has a kernel for element type T.
template <typename T>
constexpr bool accepts_dtype(DtypeRule rule) {
  switch (rule) {
    case DtypeRule::Floating: return std::is_floating_point<T>::value;
    case DtypeRule::NoBool: return !std::is_same<T, bool>::value;
  }
  return false;
}

// Calls f(functor) with op's functor (functors::Neg{} for UnaryOp::Neg) when op has a kernel for
// element type T, and returns whether it did: false means ops/ handed over a dtype the op's rule
// refuses (it converts or rejects them first), so the caller reports an internal error.
template <typename T, typename F>
bool visit_unary(UnaryOp op, F&& f) {
  switch (op) {
#define TT_VISIT_UNARY(Enum, fn, node, dtypes, ...)                \
  case UnaryOp::Enum:                                              \
    if constexpr (accepts_dtype<T>(DtypeRule::dtypes)) {           \
      f(functors::Enum{});                                         \
      return true;                                                 \
    } else {                                                       \
      return false;                                                \
    }
    TT_UNARY_OPS(TT_VISIT_UNARY)
#undef TT_VISIT_UNARY
  }
  return false;
}

// Calls f(functor) with op's functor (functors::Add{} for BinaryOp::Add). A comparison's functor
// returns bool; the others return their operands' type.
template <typename F>
void visit_binary(BinaryOp op, F&& f) {
  switch (op) {
#define TT_VISIT_BINARY(Enum, ...) \
  case BinaryOp::Enum:             \
    return f(functors::Enum{});
    TT_BINARY_OPS(TT_VISIT_BINARY)
#undef TT_VISIT_BINARY
  }
}

// The compile-time columns of one reduction: kKind (Sum, Max, Min) and kArg (the index of the
// extreme rather than its value).
template <ReduceKind kind, bool arg>
struct ReduceTraits {
  static constexpr ReduceKind kKind = kind;
  static constexpr bool kMax = kind == ReduceKind::Max;
  static constexpr bool kArg = arg;
};

// Calls f(ReduceTraits<kind, arg>{}) for op.
template <typename F>
void visit_reduce(ReduceOp op, F&& f) {
  switch (op) {
#define TT_VISIT_REDUCE(Enum, fn, kind, arg) \
  case ReduceOp::Enum:                       \
    return f(ReduceTraits<ReduceKind::kind, arg>{});
    TT_REDUCE_OPS(TT_VISIT_REDUCE)
#undef TT_VISIT_REDUCE
  }
}

// An activation functor: built from the kernels' `param` when it holds a value (LeakyRelu's
// slope), default-built when it is empty.
template <typename Functor, typename T>
Functor make_activation_functor(double param) {
  if constexpr (std::is_empty<Functor>::value) {
    (void)param;
    return Functor{};
  } else {
    return Functor{T(param)};
  }
}

// Calls f(forward, backward) with op's two functors for element type T (see TT_ACTIVATION_OPS).
template <typename T, typename F>
void visit_activation(ActivationOp op, double param, F&& f) {
  using namespace functors;
  switch (op) {
#define TT_VISIT_ACTIVATION(Enum, name, Forward, Backward)                                      \
  case ActivationOp::Enum:                                                                      \
    return f(make_activation_functor<Forward, T>(param), make_activation_functor<Backward, T>(param));
    TT_ACTIVATION_OPS(TT_VISIT_ACTIVATION)
#undef TT_VISIT_ACTIVATION
  }
}

}  // namespace tt
