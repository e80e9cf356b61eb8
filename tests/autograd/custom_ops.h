// Tiny custom ops built with autograd/function.h, for testing the engine, gradcheck and the graph
// printers independently of the library's own backward formulas. Each forward runs with grad mode
// off and records one node by hand, exactly as ops/<family>.cpp do.
#pragma once

#include <tinytorch/tinytorch.h>

namespace tt::testing {

using autograd::SavedVariable;

// y = x * x; the backward is chosen by `Kind`.
enum class SquareKind { kRight, kWrongFactor, kDetached, kWrongShape };

template <SquareKind Kind>
struct SquareOp {
  static constexpr const char* kName = "SquareBackward";
  struct Saved {
    SavedVariable x;
  };
  static autograd::TensorList backward(const Saved& s, const autograd::TensorList& grads) {
    Tensor x = s.x.unpack();
    const Tensor& g = grads[0];
    switch (Kind) {
      case SquareKind::kRight: return {g * x * 2.0};                 // d(x^2) = 2x
      case SquareKind::kWrongFactor: return {g * x * 3.0};           // wrong: 3x
      case SquareKind::kDetached: return {g * (x.detach() * 2.0)};   // right, but not differentiable in x
      case SquareKind::kWrongShape: return {(g * x * 2.0).sum()};    // wrong: a scalar
    }
    return {};
  }
};

template <SquareKind Kind = SquareKind::kRight>
Tensor square(const Tensor& x) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = x * x;
  }
  if (auto node = autograd::make_node<SquareOp<Kind>>({&x})) {
    node->saved.x = SavedVariable(x);
    autograd::set_history(out, node);
  }
  return out;
}

// y = a + b (same shapes), gradient passed to both.
struct PairOp {
  static constexpr const char* kName = "PairBackward";
  struct Saved {};
  static autograd::TensorList backward(const Saved&, const autograd::TensorList& grads) {
    return {grads[0], grads[0]};
  }
};

inline Tensor pair(const Tensor& a, const Tensor& b) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = a + b;
  }
  if (auto node = autograd::make_node<PairOp>({&a, &b})) autograd::set_history(out, node);
  return out;
}

}  // namespace tt::testing
