// The autograd graph. Every op that sees an input requiring grad (with grad mode on) records a
// Node: the op's backward, the tensors it saved, and one Edge per input pointing at the node that
// produced that input (or, for a leaf, at the leaf's AccumulateGrad). The graph is a DAG of
// shared pointers from outputs back to leaves; backward() walks it in reverse (engine.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tinytorch/core/tensor.h"

namespace tt::autograd {

struct Node;

// Where a gradient goes: input number `input_nr` of node `fn`.
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

using TensorList = std::vector<Tensor>;
using Hook = std::function<Tensor(const Tensor&)>;

struct Node : std::enable_shared_from_this<Node> {
  Node();
  virtual ~Node();  // iterative: see Note [deep graphs] in node.cpp
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // "MulBackward0"
  virtual std::string name() const = 0;
  // Gradients w.r.t. this node's outputs -> gradients w.r.t. its inputs (one per next edge;
  // an undefined Tensor means "no gradient").
  virtual TensorList apply(TensorList&& grad_outputs) = 0;
  // Drops saved tensors after a backward without retain_graph.
  virtual void release_variables() {}

  std::vector<Edge> next_edges;
  uint32_t num_outputs = 1;
  uint64_t sequence_nr;  // creation order: later nodes run first among ready ones
  // AccumulateGrad nodes run before any other ready node (Note [engine order]).
  bool runs_first = false;
  // Hooks on the gradient of output k (register_hook on a non-leaf tensor).
  std::vector<std::pair<uint32_t, Hook>> pre_hooks;
  bool released = false;
};

// The sink of a leaf tensor: adds the incoming gradient into leaf.grad.
struct AccumulateGrad final : Node {
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : variable(std::move(leaf)) { runs_first = true; }
  std::string name() const override { return "AccumulateGrad"; }
  TensorList apply(TensorList&& grads) override;
  std::shared_ptr<TensorImpl> variable;

 private:
  void run_post_accumulate_grad_hooks(std::unique_lock<std::recursive_mutex>& lock);
};

// A tensor saved for backward, with the version it had when saved: unpacking after an in-place
// change throws. A tensor with a grad_fn is kept as an alias without it plus a weak pointer to
// the node (an op's own output would otherwise be a cycle, and long chains would be destroyed
// recursively); unpack() reattaches it, so double backward still sees the graph.
class SavedVariable {
 public:
  SavedVariable() = default;
  explicit SavedVariable(const Tensor& t);
  Tensor unpack() const;
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_;
  uint64_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool has_fn_ = false;
  std::weak_ptr<Node> weak_fn_;
};

// Saves an op's own output `out` for the backward of `node`, the node that produced it. It must
// be called after set_history(out, node): the output is then kept as a weak link to its node,
// which is what keeps node -> saved output -> node from being a cycle that leaks the graph. A
// call in the wrong order throws (the rule used to live in comments beside each caller).
SavedVariable save_output(const Tensor& out, const Node& node);

// Throws ShapeError, DtypeError or DeviceError when a hook's `returned` gradient differs from the
// `given` one in shape, dtype or device; whose() names the tensor ("output 0 of MulBackward0"),
// and is called only to write the message.
void check_hook_result(const Tensor& given, const Tensor& returned, const std::function<std::string()>& whose);

// Graph-recording helpers used by ops.
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
// The edge a gradient for `t` should travel along (its grad_fn, or its AccumulateGrad).
Edge gradient_edge(const Tensor& t);
// Points `out` at `fn` as output number `output_nr` and marks it as requiring grad.
void set_history(const Tensor& out, const std::shared_ptr<Node>& fn, uint32_t output_nr = 0);

}  // namespace tt::autograd
