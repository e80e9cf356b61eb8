// Indexing ops: checks (dtypes, shapes, every index in range: on the CPU here, on a GPU in the
// kernels) here, loops in backend/*/index.
#include "tinytorch/ops/indexing.h"

#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/core/checked.h"
#include "tinytorch/ops/inplace.h"
#include "tinytorch/ops/join.h"
#include "tinytorch/ops/view.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/reduction.h"

namespace tt {

namespace {
// Every index in [0, size), read on the host for CPU tensors. A GPU's indices are not read here: its
// kernels check them and report the first bad one at the next synchronization (Note [device error
// flag] in backend/device_error.h), so an index check costs no host sync inside a training step.
void check_index(const Tensor& index, int64_t size, const char* op, int dim) {
  TT_CHECK_DTYPE(index.dtype() == kInt64, op, ": expected an int64 index tensor, got dtype ", index.dtype());
  if (index.numel() == 0 || !index.device().is_cpu()) return;
  int64_t lo = min(index).item<int64_t>(), hi = max(index).item<int64_t>();
  TT_CHECK_INDEX(lo >= 0 && hi < size, op, ": index ", (lo < 0 ? lo : hi),
                 " is out of bounds for dimension ", dim, " with size ", size);
}
}  // namespace

using autograd::SavedVariable;
using autograd::TensorList;
Tensor scatter_add_kernel(Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);

// index_select's gradient: each picked slice's gradient is added back where it came from.
struct IndexSelect {
  static constexpr const char* kName = "IndexSelectBackward0";
  struct Saved { Shape in_shape; int64_t dim = 0; SavedVariable index; };
  static TensorList backward(const Saved& s, const TensorList& g) {
    if (s.in_shape.empty()) return {g[0].reshape({})};
    Shape ishape = Shape::filled(g[0].dim(), 1);
    ishape[int(s.dim)] = g[0].size(s.dim);
    Tensor idx = expand(reshape(s.index.unpack(), ishape), g[0].shape());
    return {scatter_add(zeros(s.in_shape, g[0].options()), s.dim, idx, g[0])};
  }
};
// gather's gradient: scatter-add back along dim.
struct Gather {
  static constexpr const char* kName = "GatherBackward0";
  struct Saved { Shape in_shape; int64_t dim = 0; SavedVariable index; };
  static TensorList backward(const Saved& s, const TensorList& g) {
    return {scatter_add(zeros(s.in_shape, g[0].options()), s.dim, s.index.unpack(), g[0])};
  }
};
// scatter_add's gradient: self gets g; src gets g gathered at the indices (zero where src is
// larger than index).
struct ScatterAdd {
  static constexpr const char* kName = "ScatterAddBackward0";
  struct Saved { int64_t dim = 0; SavedVariable index; Shape src_shape; };
  static TensorList backward(const Saved& s, const TensorList& g) {
    Tensor index = s.index.unpack();
    Tensor gs = gather(g[0], s.dim, index);
    for (int d = 0; d < gs.dim(); ++d) {  // pad with zeros up to src's shape (cat keeps it differentiable)
      if (gs.size(d) == s.src_shape[d]) continue;
      Shape pad = gs.shape();
      pad[d] = s.src_shape[d] - gs.size(d);
      gs = cat({gs, zeros(pad, gs.options())}, d);
    }
    return {g[0], Tensor(), gs};
  }
};

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
  TT_CHECK_INDEX(index.dim() <= 1, "index_select: index must be 0-d or 1-d, got shape ", index.shape());
  detail::check_same_device("index_select", {&t, &index});
  int d = wrap_dim(dim, t.dim(), "index_select");
  check_index(index, t.dim() ? t.size(d) : 1, "index_select", d);
  Shape shape = t.shape();
  if (t.dim() > 0) shape[d] = index.numel();
  Tensor out = empty(shape, t.options());
  if (out.numel()) backend_for(t.device()).index_select(out, t, d, index);
  if (auto node = autograd::make_node<IndexSelect>({&t})) {
    node->saved = {t.shape(), d, SavedVariable(index)};
    autograd::set_history(out, node);
  }
  return out;
}

Tensor gather(const Tensor& t, int64_t dim, const Tensor& index) {
  detail::check_same_device("gather", {&t, &index});
  int d = wrap_dim(dim, t.dim(), "gather");
  TT_CHECK_SHAPE(index.dim() == t.dim(), "gather: index tensor must have the same number of dimensions "
                 "as the input, got ", index.shape(), " and ", t.shape());
  for (int k = 0; k < t.dim(); ++k)
    TT_CHECK_SHAPE(k == d || index.size(k) <= t.size(k), "gather: size of index ", index.shape(),
                   " must not exceed the input's ", t.shape(), " in dimension ", k);
  check_index(index, t.dim() ? t.size(d) : 1, "gather", d);
  Tensor out = empty(index.shape(), t.options());
  if (out.numel()) backend_for(t.device()).gather(out, t, d, index);
  if (auto node = autograd::make_node<Gather>({&t})) {
    node->saved = {t.shape(), d, SavedVariable(index)};
    autograd::set_history(out, node);
  }
  return out;
}

Tensor& scatter_add_(Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::check_same_device("scatter_add_", {&t, &index, &src});  // before clone(t) runs a kernel
  if (detail::inplace_needs_history(t, {&src}))  // Note [in-place ops and autograd]
    return detail::adopt_result(t, scatter_add(clone(t), dim, index, src), "scatter_add_");
  scatter_add_kernel(t, dim, index, src);
  return t;
}

Tensor scatter_add_kernel(Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::check_same_device("scatter_add_", {&t, &index, &src});
  int d = wrap_dim(dim, t.dim(), "scatter_add_");
  TT_CHECK_DTYPE(src.dtype() == t.dtype(), "scatter_add_: expected src dtype ", t.dtype(), ", got ", src.dtype());
  TT_CHECK_SHAPE(index.dim() == t.dim() && src.dim() == t.dim(), "scatter_add_: index and src must have "
                 "as many dimensions as self, got self ", t.shape(), ", index ", index.shape(), ", src ", src.shape());
  for (int k = 0; k < t.dim(); ++k) {
    TT_CHECK_SHAPE(index.size(k) <= src.size(k), "scatter_add_: index ", index.shape(),
                   " must not be larger than src ", src.shape(), " in dimension ", k);
    TT_CHECK_SHAPE(k == d || index.size(k) <= t.size(k), "scatter_add_: index ", index.shape(),
                   " must not be larger than self ", t.shape(), " in dimension ", k);
  }
  check_index(index, t.dim() ? t.size(d) : 1, "scatter_add_", d);
  detail::check_writable(t, "scatter_add_");
  // Note [overlapping in-place operands]
  if (index.numel())
    backend_for(t.device()).scatter_add(t, d, detail::unaliased(index, t), detail::unaliased(src, t));
  t.bump_version();
  return t;
}

Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::check_same_device("scatter_add", {&t, &index, &src});  // before clone(t) runs a kernel
  Tensor out;
  {
    NoGradGuard no_grad;
    out = clone(t);
  }
  scatter_add_kernel(out, dim, index, src);
  if (auto node = autograd::make_node<ScatterAdd>({&t, &index, &src})) {
    node->saved = {t.dim() ? wrap_dim(dim, t.dim(), "scatter_add") : 0, SavedVariable(index), src.shape()};
    autograd::set_history(out, node);
  }
  return out;
}

Tensor masked_fill(const Tensor& t, const Tensor& mask, Scalar value) {
  TT_CHECK_DTYPE(mask.dtype() == kBool, "masked_fill: expected a bool mask, got dtype ", mask.dtype());
  detail::check_same_device("masked_fill", {&t, &mask});
  Shape b = broadcast_shapes(t.shape(), mask.shape(), "masked_fill");
  TT_CHECK_SHAPE(b == t.shape(), "masked_fill: mask of shape ", mask.shape(),
                 " must broadcast to the input's shape ", t.shape());
  check_scalar_fits(value, t.dtype(), "masked_fill");
  return where(mask, full({}, value, t.options()), t);
}

Tensor& masked_fill_(Tensor& t, const Tensor& mask, Scalar value) {
  detail::check_writable(t, "masked_fill_");
  Tensor filled = masked_fill(t, mask, value);
  return copy_(t, filled);
}

}  // namespace tt
