// In-place ops under autograd: see Note [in-place ops and autograd] in inplace.h.
#include "tinytorch/ops/inplace.h"

#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/ops/copy.h"

namespace tt::detail {

bool inplace_needs_history(const Tensor& self, std::initializer_list<const Tensor*> operands) {
  if (!GradMode::is_enabled()) return false;
  if (self.requires_grad()) return true;
  for (const Tensor* t : operands)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

Tensor& adopt_result(Tensor& self, const Tensor& result, const char* op) {
  TT_CHECK(!(self.is_leaf() && self.requires_grad()), op, ": a leaf tensor that requires grad is being "
           "used in an in-place operation; do it under tt::NoGradGuard, or on a clone()");
  TT_CHECK(!self.unsafe_impl()->is_view, op, ": in-place operations on a view are not supported while "
           "recording gradients (the tensor it views would not see the change); clone() the view first");
  Tensor r = to_dtype(result, self.dtype());  // recorded: the cast joins the history
  {
    NoGradGuard no_grad;
    backend_for(self.device()).copy(self, r);
  }
  self.bump_version();
  if (r.grad_fn()) {
    autograd::set_history(self, r.grad_fn(), r.unsafe_impl()->output_nr);
  } else {
    self.unsafe_impl()->grad_fn = nullptr;
    self.unsafe_impl()->requires_grad = false;
  }
  return self;
}

}  // namespace tt::detail
