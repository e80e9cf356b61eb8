// How an op joins the graph. Each differentiable op is one struct in ops/<family>.cpp with its
// forward and its backward side by side:
//
//   struct Mul {
//     static constexpr const char* kName = "MulBackward0";
//     struct Saved { SavedVariable a, b; ... };          // what backward needs
//     static Tensor forward(const Tensor& a, const Tensor& b);
//     static TensorList backward(const Saved& s, const TensorList& grads);
//   };
//
// and its public function records it:
//
//   Tensor out = Mul::forward(a, b);
//   if (auto node = autograd::make_node<Mul>({&a, &b})) {   // null unless a graph is needed
//     node->saved = {...};
//     autograd::set_history(out, node);
//   }
#pragma once

#include <initializer_list>
#include <memory>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/autograd/node.h"

namespace tt::autograd {

template <typename Op>
struct OpNode final : Node {
  typename Op::Saved saved;
  std::string name() const override { return Op::kName; }
  TensorList apply(TensorList&& grads) override { return Op::backward(saved, grads); }
  void release_variables() override { saved = typename Op::Saved{}; }
};

// A node for Op with one edge per input, or nullptr when grad mode is off or no input requires
// grad (then the op records nothing and costs nothing extra).
template <typename Op>
std::shared_ptr<OpNode<Op>> make_node(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled() || !any_requires_grad(inputs)) return nullptr;
  auto node = std::make_shared<OpNode<Op>>();
  node->next_edges.reserve(inputs.size());
  for (const Tensor* t : inputs)
    node->next_edges.push_back((t->defined() && t->requires_grad()) ? gradient_edge(*t) : Edge{});
  return node;
}

// Same, for ops with a variable number of inputs (cat).
template <typename Op>
std::shared_ptr<OpNode<Op>> make_node(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return nullptr;
  bool any = false;
  for (const Tensor& t : inputs) any = any || t.requires_grad();
  if (!any) return nullptr;
  auto node = std::make_shared<OpNode<Op>>();
  for (const Tensor& t : inputs) node->next_edges.push_back(t.requires_grad() ? gradient_edge(t) : Edge{});
  return node;
}

// The gradient `grad` of a broadcast result, summed back to an input's shape and dtype.
Tensor reduce_grad(const Tensor& grad, const Shape& shape, ScalarType dtype);

}  // namespace tt::autograd
