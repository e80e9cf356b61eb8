// The backward engine.
//
// Note [engine order]: backward first counts, for every node reachable from the roots, how many
// edges point at it (an explicit stack, not recursion, so a 100,000-op chain is fine). A node runs
// once all gradients flowing into it have arrived (its count reaches zero); among ready nodes a
// leaf's AccumulateGrad runs first, then the most recently created node. AccumulateGrad first
// means a parameter's .grad is final (and its post-accumulate hooks have run) as soon as its last
// gradient arrives, not when its creation order comes up: an AccumulateGrad is made at the leaf's
// first use in the forward, so by creation order alone it would wait behind every node made after
// that use, which for a parameter used early and again late (tied weights) is the whole backward.
// DistributedDataParallel relies on this to start all-reducing early. When the queue is empty,
// the callbacks queued during this backward (queue_callback) run, in the order they were queued.
// Each node's incoming gradients are summed in a buffer, the node's hooks see that sum, its backward turns it into gradients for its inputs, and those are
// added into the buffers of the nodes its edges point at. AccumulateGrad nodes at the leaves add
// the final sum into .grad.
#include "tinytorch/autograd/engine.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "tinytorch/amp/autocast.h"
#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/core/op_declarations.h"

namespace tt::autograd {

namespace {

struct ByCreationOrder {
  bool operator()(const Node* a, const Node* b) const {
    if (a->runs_first != b->runs_first) return b->runs_first;
    return a->sequence_nr < b->sequence_nr;
  }
};

// One backward pass. With `captures` (autograd::grad), the summed gradients arriving at those
// edges are recorded and leaves are left alone.
struct GraphTask {
  bool retain_graph = false;
  bool create_graph = false;
  bool accumulate = true;
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, TensorList> buffers;
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;  // node -> (input_nr, slot)
  TensorList captured;
  std::vector<std::function<void()>> callbacks;  // queue_callback, run when the graph is done

  void count_dependencies(const std::vector<Node*>& roots) {
    // TT_EXERCISE_BEGIN(04, 1)
    std::unordered_set<Node*> seen(roots.begin(), roots.end());
    std::vector<Node*> stack(roots.begin(), roots.end());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next_edges) {
        if (!e.fn) continue;
        ++dependencies[e.fn.get()];
        if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
      }
    }
    // TT_EXERCISE_END
  }

  void add_to_buffer(Node* n, uint32_t input_nr, const Tensor& g) {
    TensorList& buf = buffers[n];
    if (buf.size() < n->num_outputs) buf.resize(n->num_outputs);
    if (!g.defined()) return;
    Tensor& slot = buf[input_nr];
    slot = slot.defined() ? add(slot, g) : g;
  }

  void run(const std::vector<Node*>& roots) {
    count_dependencies(roots);
    std::priority_queue<Node*, std::vector<Node*>, ByCreationOrder> ready;
    std::unordered_set<Node*> queued;
    for (Node* r : roots)
      if (dependencies[r] == 0 && queued.insert(r).second) ready.push(r);
    AutoGradMode mode(create_graph);
    // Gradients keep their forward values' dtypes: no autocast in a backward (Note [autocast]).
    AutocastGuard no_autocast_cpu(kCPU, kBFloat16, false), no_autocast_cuda(kCUDA, kBFloat16, false);
    while (!ready.empty()) {
      Node* n = ready.top();
      ready.pop();
      TensorList grads = std::move(buffers[n]);
      buffers.erase(n);
      grads.resize(n->num_outputs);
      for (auto& [k, hook] : n->pre_hooks) {
        if (!grads[k].defined()) continue;
        Tensor replaced = hook(grads[k]);
        if (!replaced.defined()) continue;
        check_hook_result(grads[k], replaced, [&] { return "output " + std::to_string(k) + " of " + n->name(); });
        grads[k] = replaced;
      }
      if (auto* acc = dynamic_cast<AccumulateGrad*>(n)) {  // a leaf's own hooks
        // A copy taken under the leaf's lock: another thread may register one meanwhile, and a
        // hook may itself use the leaf (Note [threads] in node.cpp).
        std::vector<Hook> hooks;
        {
          std::lock_guard<std::recursive_mutex> lock(acc->variable->autograd_mutex);
          hooks = acc->variable->hooks;
        }
        for (auto& hook : hooks) {
          if (!grads[0].defined()) break;
          Tensor replaced = hook(grads[0]);
          if (!replaced.defined()) continue;
          check_hook_result(grads[0], replaced, [&] { return detail::concat("a leaf of shape ", acc->variable->shape); });
          grads[0] = replaced;
        }
      }
      auto cap = captures.find(n);
      if (cap != captures.end())
        for (auto& [input_nr, slot] : cap->second) captured[slot] = grads[input_nr];
      bool is_leaf_sink = dynamic_cast<AccumulateGrad*>(n) != nullptr;
      TensorList outputs;
      bool any_grad = false;
      for (const Tensor& g : grads) any_grad = any_grad || g.defined();
      if (any_grad && !(is_leaf_sink && !accumulate)) {
        TT_CHECK(!n->released, "backward: trying to backward through the graph a second time (or to "
                 "use saved tensors after they were freed) at ", n->name(), "; the saved tensors are "
                 "freed after backward, pass retain_graph=true the first time if you need to backward twice");
        outputs = n->apply(std::move(grads));
        if (!retain_graph && !is_leaf_sink) {  // a leaf's sink saves nothing and is shared by graphs
          n->release_variables();
          n->released = true;
        }
      }
      for (size_t i = 0; i < n->next_edges.size(); ++i) {
        const Edge& e = n->next_edges[i];
        if (!e.fn) continue;
        add_to_buffer(e.fn.get(), e.input_nr, i < outputs.size() ? outputs[i] : Tensor());
        if (--dependencies[e.fn.get()] == 0 && queued.insert(e.fn.get()).second) ready.push(e.fn.get());
      }
    }
    // A callback may queue another; each runs once, in order.
    for (size_t i = 0; i < callbacks.size(); ++i) {
      std::function<void()> fn = std::move(callbacks[i]);
      fn();
    }
  }
};

// The backward running on this thread, for queue_callback; nested backward passes (a hook that
// calls backward) restore the outer one when they end.
thread_local GraphTask* current_task = nullptr;

struct CurrentTask {
  explicit CurrentTask(GraphTask* t) : prev(current_task) { current_task = t; }
  ~CurrentTask() { current_task = prev; }
  GraphTask* prev;
};

// Roots as edges with their seed gradients.
void seed(GraphTask& task, const TensorList& roots, const TensorList& grad_roots, std::vector<Node*>& nodes,
          std::vector<std::shared_ptr<Node>>& keep_alive, const char* op) {
  TT_CHECK(grad_roots.empty() || grad_roots.size() == roots.size(), op, ": got ", roots.size(),
           " tensors but ", grad_roots.size(), " gradients");
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    TT_CHECK(r.defined() && r.requires_grad(), op, ": element ", i, " of the tensors does not require "
             "grad and does not have a grad_fn");
    Tensor g = grad_roots.empty() ? Tensor() : grad_roots[i];
    if (!g.defined()) {
      TT_CHECK(r.numel() == 1, op, ": grad can be implicitly created only for one-element outputs, got "
               "shape ", r.shape(), "; pass a gradient of that shape");
      g = ones_like(r);
    }
    TT_CHECK_SHAPE(g.shape() == r.shape(), op, ": gradient of shape ", g.shape(),
                   " does not match the output's shape ", r.shape());
    Edge e = gradient_edge(r);
    keep_alive.push_back(e.fn);
    task.add_to_buffer(e.fn.get(), e.input_nr, g);
    // Each node once, however many of its outputs are roots (the pieces of one split): a node
    // listed twice would count its edges twice, and what it feeds would never become ready.
    if (std::find(nodes.begin(), nodes.end(), e.fn.get()) == nodes.end()) nodes.push_back(e.fn.get());
  }
}

}  // namespace

void backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph, bool create_graph) {
  GraphTask task;
  task.retain_graph = retain_graph || create_graph;
  task.create_graph = create_graph;
  std::vector<Node*> nodes;
  std::vector<std::shared_ptr<Node>> keep_alive;
  seed(task, roots, grad_roots, nodes, keep_alive, "backward");
  CurrentTask current(&task);
  task.run(nodes);
}

void queue_callback(std::function<void()> fn) {
  TT_CHECK(current_task != nullptr, "queue_callback: no backward pass is running on this thread; call "
           "it from a hook (register_hook, register_post_accumulate_grad_hook) during backward");
  TT_CHECK(fn != nullptr, "queue_callback: the callback is empty");
  current_task->callbacks.push_back(std::move(fn));
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                bool retain_graph, bool create_graph, bool allow_unused) {
  GraphTask task;
  task.retain_graph = retain_graph || create_graph;
  task.create_graph = create_graph;
  task.accumulate = false;
  std::vector<Node*> nodes;
  std::vector<std::shared_ptr<Node>> keep_alive;
  task.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    TT_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "grad: input ", i,
             " does not require grad, so no gradient can be computed for it");
    Edge e = gradient_edge(inputs[i]);
    keep_alive.push_back(e.fn);
    task.captures[e.fn.get()].push_back({e.input_nr, i});
  }
  seed(task, outputs, grad_outputs, nodes, keep_alive, "grad");
  CurrentTask current(&task);
  task.run(nodes);
  for (size_t i = 0; i < inputs.size(); ++i)
    TT_CHECK(allow_unused || task.captured[i].defined(), "grad: input ", i, " was not used in the graph "
             "of the outputs; pass allow_unused=true if that is expected");
  return task.captured;
}

}  // namespace tt::autograd
