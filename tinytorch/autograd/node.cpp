// Nodes, saved variables, and the helpers ops use to record the graph.
#include "tinytorch/autograd/node.h"

#include <atomic>
#include <mutex>

#include "tinytorch/autograd/function.h"
#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/core/op_declarations.h"

namespace tt {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
}  // namespace

namespace autograd {

Node::Node() : sequence_nr(next_sequence_nr++) {}

// Note [deep graphs]: a chain of 100,000 ops is a chain of 100,000 nodes, each owning the next
// through its edges. Letting shared_ptr destroy them would recurse 100,000 deep and overflow the
// stack, so a node about to free the last reference to a child moves it onto a local stack and
// frees the chain in a loop. (Saved tensors never own a grad_fn; see SavedVariable.)
Node::~Node() {
  std::vector<std::shared_ptr<Node>> stack;
  // Each edge's reference is dropped one at a time, so a child reached by two edges is seen as
  // uniquely owned at the second one and still freed by the loop.
  auto steal = [&stack](std::vector<Edge>& edges) {
    for (Edge& e : edges) {
      std::shared_ptr<Node> child = std::move(e.fn);
      if (child && child.use_count() == 1) stack.push_back(std::move(child));
    }
  };
  steal(next_edges);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    steal(n->next_edges);
  }  // n is freed here with no children left to recurse into
}

// Note [threads]: what may be shared between threads.
//
// Safe. Threads may share leaves (a model's parameters) for concurrent forward AND backward
// passes, each thread building and running its own graph: every leaf's lazily made
// AccumulateGrad node, its .grad and its hook list are guarded by the leaf's autograd_mutex
// (core/tensor.h), so each backward's contribution is added exactly once, in some order. With
// float arithmetic the order can change the last bits of .grad (a + b + c vs a + c + b); adding
// equal terms is order-free. Version counters are atomic, so in-place writes to DISJOINT views
// of one storage from several threads all count. Grad mode (NoGradGuard, AutoGradMode) is per
// thread, as is the eval behaviour of nn::EvalModeGuard, which is how GPT::generate runs a
// shared model without touching its training flags. The allocator and the random generators
// lock. Separate models on separate threads share nothing and give bitwise the results of
// serial runs (given that each is built and seeded before the threads start, or draws from its
// own Generator).
//
// Not safe (the caller must serialize them against any other use of the same tensors):
//  * in-place ops on the same tensor, or on overlapping views, from two threads;
//  * optimizer.step(), zero_grad() or set_grad() while another thread runs a forward or backward
//    on those parameters (step writes the parameters in place: a concurrent backward sees the
//    version change and throws, or worse, a forward reads half-updated values);
//  * reading .grad's values while backward passes into it are still running;
//  * Module::train()/eval(), to(), load_state_dict() and register_* while the module is in use;
//  * backward through the SAME graph (a shared non-leaf's grad_fn) from two threads, and
//    register_hook/retain_grad on a non-leaf another thread is differentiating;
//  * a TransformerBlock that records its attention maps (record_attention): its forward writes
//    the last map into the module. (RotaryEmbedding's table cache is locked and is safe.)
// The lock is per leaf and uncontended on one thread: a single-threaded backward pays one
// uncontended mutex per leaf it reaches, as PyTorch does.

// A leaf's .grad is its own contiguous tensor, so optimizers may update it in place: the
// incoming gradient is kept as it is only when nothing else can see its memory (a fresh result
// of backward), and copied otherwise (an expanded view, or a gradient the caller passed in).
// Later gradients are added in place; with create_graph they are added out of place so the sum
// stays differentiable.
// Several threads' backward passes may arrive at once: the leaf's lock makes each addition
// whole (Note [threads]).
TensorList AccumulateGrad::apply(TensorList&& grads) {
  Tensor g = std::move(grads[0]);
  if (!g.defined()) return {};
  const bool graph = GradMode::is_enabled();
  std::unique_lock<std::recursive_mutex> lock(variable->autograd_mutex);
  if (!variable->grad) {
    // A gradient nobody else can see (its handle and its storage are ours alone) and that fills
    // its storage contiguously is kept as it is, not copied. A reshaped view of a fresh result
    // (Linear's dX reshaped to the input's shape) qualifies: with the storage's only user being
    // this handle, its base is gone.
    bool owned = g.impl_ptr().use_count() == 1 && g.storage().use_count() == 1 && g.is_contiguous() &&
                 g.storage_offset() == 0 && size_t(g.numel()) * g.element_size() == g.storage()->nbytes;
    Tensor kept = graph ? (owned && !g.unsafe_impl()->is_view ? g : clone(g))
                        : (owned ? g.detach() : clone(g.detach()));
    variable->grad = kept.impl_ptr();
  } else if (graph) {
    variable->grad = (Tensor(variable->grad) + g).impl_ptr();
  } else {
    Tensor acc(variable->grad);
    acc.add_(g.detach());
  }
  run_post_accumulate_grad_hooks(lock);
  return {};
}

// Runs the leaf's post-accumulate-grad hooks on a copy of their list, with the leaf's lock
// released: a hook may read .grad, start communication, or register and remove hooks
// (Note [post-accumulate hooks] in hooks.cpp).
void AccumulateGrad::run_post_accumulate_grad_hooks(std::unique_lock<std::recursive_mutex>& lock) {
  if (variable->post_accumulate_grad_hooks.empty()) return;
  auto hooks = variable->post_accumulate_grad_hooks;
  lock.unlock();
  Tensor leaf(variable);
  for (auto& [id, hook] : hooks) hook(leaf);
}

SavedVariable::SavedVariable(const Tensor& t) {
  if (!t.defined()) return;
  version_ = t.version();
  if (t.unsafe_impl()->grad_fn) {
    has_fn_ = true;
    weak_fn_ = t.unsafe_impl()->grad_fn;
    output_nr_ = t.unsafe_impl()->output_nr;
    data_ = t.detach();
  } else {
    data_ = t;
  }
}

SavedVariable save_output(const Tensor& out, const Node& node) {
  TT_CHECK(out.grad_fn().get() == &node, node.name(), ": internal error: an output is saved before "
           "set_history points it at its node, which would make a reference cycle");
  return SavedVariable(out);
}

Tensor SavedVariable::unpack() const {
  if (!data_.defined()) return Tensor();
  TT_CHECK(data_.version() == version_,
           "backward: one of the tensors needed for gradient computation has been modified by an "
           "inplace operation: a tensor of shape ", data_.shape(), " is at version ", data_.version(),
           "; expected version ", version_, " instead");
  if (!has_fn_) return data_;
  Tensor t = data_.detach();
  if (auto fn = weak_fn_.lock()) {
    t.unsafe_impl()->grad_fn = fn;
    t.unsafe_impl()->output_nr = output_nr_;
    t.unsafe_impl()->requires_grad = true;
  }
  return t;
}

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  TensorImpl* impl = t.unsafe_impl();
  if (impl->grad_fn) return Edge{impl->grad_fn, impl->output_nr};
  // Threads sharing this leaf must all get the same node (Note [threads]).
  std::lock_guard<std::recursive_mutex> lock(impl->autograd_mutex);
  std::shared_ptr<Node> acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    impl->grad_accumulator = acc;
  }
  return Edge{acc, 0};
}

void set_history(const Tensor& out, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
  TensorImpl* impl = out.unsafe_impl();
  impl->grad_fn = fn;
  impl->output_nr = output_nr;
  impl->requires_grad = true;
}

Tensor reduce_grad(const Tensor& grad, const Shape& shape, ScalarType dtype) {
  // TT_EXERCISE_BEGIN(04, 2)
  Tensor g = grad;
  if (g.shape() != shape) {
    Shape dims;
    int lead = g.dim() - shape.size();
    for (int d = 0; d < g.dim(); ++d)
      if (d < lead || (shape[d - lead] == 1 && g.size(d) != 1)) dims.push_back(d);
    if (!dims.empty()) g = sum(g, dims, /*keepdim=*/true);
    g = reshape(g, shape);
  }
  return g.dtype() == dtype ? g : g.to(dtype);
  // TT_EXERCISE_END
}

}  // namespace autograd
}  // namespace tt
