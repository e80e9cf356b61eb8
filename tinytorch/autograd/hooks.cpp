// Gradient hooks: Tensor::register_hook (a function run on a tensor's gradient during backward)
// and Tensor::retain_grad (keep a non-leaf's gradient in .grad), declared on Tensor in
// core/tensor.h. A leaf keeps its hooks on the tensor, since its AccumulateGrad node may come and
// go with graphs; a non-leaf's hooks live on its grad_fn as pre-hooks of its output (the engine,
// engine.cpp, runs them before the node). A hook may replace a gradient's values, never its
// shape, dtype or device: the engine checks what a hook returns (check_hook_result).
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "tinytorch/autograd/node.h"
#include "tinytorch/core/tensor.h"
#include "tinytorch/ops/elementwise.h"

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
