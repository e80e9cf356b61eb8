// Gradient hooks: Tensor::register_hook (a function run on a tensor's gradient during backward),
// Tensor::register_post_accumulate_grad_hook (a function run once a leaf's .grad has been
// updated) and Tensor::retain_grad (keep a non-leaf's gradient in .grad), declared on Tensor in
// core/tensor.h. A leaf keeps its hooks on the tensor, since its AccumulateGrad node may come and
// go with graphs; a non-leaf's hooks live on its grad_fn as pre-hooks of its output (the engine,
// engine.cpp, runs them before the node). A hook may replace a gradient's values, never its
// shape, dtype or device: the engine checks what a hook returns (check_hook_result).
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "tinytorch/autograd/node.h"
#include "tinytorch/core/op_declarations.h"
#include "tinytorch/core/tensor.h"

namespace tt {

void Tensor::register_hook(std::function<Tensor(const Tensor&)> fn) const {
  TT_CHECK(requires_grad(), "register_hook: cannot register a hook on a tensor that does not require grad");
  if (is_leaf()) {  // kept on the tensor: its AccumulateGrad node may come and go with graphs
    std::lock_guard<std::recursive_mutex> lock(impl().autograd_mutex);  // Note [threads] in node.cpp
    impl().hooks.push_back(std::move(fn));
    return;
  }
  grad_fn()->pre_hooks.emplace_back(impl().output_nr, std::move(fn));
}

// Note [post-accumulate hooks]: a leaf's post-accumulate-grad hooks live on its TensorImpl, like
// its register_hook hooks, because the AccumulateGrad node is made afresh by every forward. The
// engine's AccumulateGrad::apply (node.cpp) runs them after the addition, outside the leaf's lock
// and in registration order, on a copy of the list (a hook may add or remove hooks). Together
// with the engine running every AccumulateGrad as soon as it is ready (Note [engine order]) and
// autograd::queue_callback, this is all DistributedDataParallel needs to start each bucket's
// all-reduce while the rest of backward still runs (distributed/reducer.cpp).
HookHandle Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> fn) const {
  TT_CHECK(requires_grad() && is_leaf(), "register_post_accumulate_grad_hook: only a leaf tensor that "
           "requires grad has a .grad to accumulate into; this tensor ",
           requires_grad() ? "is not a leaf (it has a grad_fn)" : "does not require grad");
  TT_CHECK(fn != nullptr, "register_post_accumulate_grad_hook: the hook is empty");
  static std::atomic<uint64_t> next_id{1};
  const uint64_t id = next_id++;
  std::lock_guard<std::recursive_mutex> lock(impl().autograd_mutex);
  impl().post_accumulate_grad_hooks.emplace_back(id, std::move(fn));
  return HookHandle(impl_, id);
}

void HookHandle::remove() {
  std::shared_ptr<TensorImpl> t = tensor_.lock();
  if (!t) return;
  std::lock_guard<std::recursive_mutex> lock(t->autograd_mutex);
  auto& hooks = t->post_accumulate_grad_hooks;
  for (auto it = hooks.begin(); it != hooks.end(); ++it)
    if (it->first == id_) {
      hooks.erase(it);
      break;
    }
  tensor_.reset();
}

void Tensor::retain_grad() const {
  TT_CHECK(requires_grad(), "retain_grad: cannot retain the grad of a tensor that does not require grad");
  if (is_leaf() || impl().retains_grad) return;  // leaves keep their grad anyway
  impl().retains_grad = true;
  std::weak_ptr<TensorImpl> weak = impl_;
  grad_fn()->pre_hooks.emplace_back(impl().output_nr, [weak](const Tensor& g) {
    if (auto t = weak.lock()) {
      Tensor d = g.detach();
      std::lock_guard<std::recursive_mutex> lock(t->autograd_mutex);
      t->grad = t->grad ? (Tensor(t->grad) + d).impl_ptr() : d.clone().impl_ptr();
    }
    return Tensor();
  });
}

namespace autograd {

void check_hook_result(const Tensor& given, const Tensor& returned, const std::function<std::string()>& whose) {
  if (returned.shape() == given.shape() && returned.dtype() == given.dtype() && returned.device() == given.device())
    return;
  TT_CHECK_SHAPE(returned.shape() == given.shape(), "register_hook: a hook on ", whose(),
                 " has changed the shape of the gradient: expected ", given.shape(), ", got ", returned.shape(),
                 "; a hook may return new values, not a new shape");
  TT_CHECK_DTYPE(returned.dtype() == given.dtype(), "register_hook: a hook on ", whose(),
                 " has changed the dtype of the gradient: expected ", given.dtype(), ", got ", returned.dtype(),
                 "; a hook may return new values, not a new dtype");
  TT_CHECK_DEVICE(false, "register_hook: a hook on ", whose(), " has moved the gradient to another device: expected ",
                  given.device(), ", got ", returned.device(), "; a hook may return new values, not a new device");
}

}  // namespace autograd
}  // namespace tt
