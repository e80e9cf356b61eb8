// cat/stack copy their inputs into slices of one new tensor; split/chunk return views, all of them
// outputs of one autograd node whose backward is one cat (Note [split backward]).
#include "tinytorch/ops/join.h"

#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/core/checked.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/view.h"

namespace tt {

// cat's gradient: each input gets its slice of the output's gradient (and nothing for the skipped
// legacy empty inputs).
struct Cat {
  static constexpr const char* kName = "CatBackward0";
  struct Saved {
    int64_t dim = 0;
    std::vector<int64_t> sizes;  // size along dim per input; -1 for a skipped input
    std::vector<ScalarType> dtypes;
  };
  static autograd::TensorList backward(const Saved& s, const autograd::TensorList& g) {
    autograd::TensorList out;
    int64_t pos = 0;
    for (size_t i = 0; i < s.sizes.size(); ++i) {
      if (s.sizes[i] < 0) {
        out.push_back(Tensor());
        continue;
      }
      Tensor part = slice(g[0], s.dim, pos, pos + s.sizes[i]);
      out.push_back(part.dtype() == s.dtypes[i] ? part : part.to(s.dtypes[i]));
      pos += s.sizes[i];
    }
    return out;
  }
};

// Note [split backward]: the pieces of a split are outputs of ONE node, so their gradients meet
// there and become the input's gradient in one cat: each piece's gradient is copied once into a
// fresh tensor. Pieces recorded as separate slices would each zero-fill an input-sized buffer,
// scatter into it, and the engine would then add those buffers up (for the q, k, v pieces of an
// attention projection: three zero-fills, three scatters and two full-size adds per layer). A
// piece that received no gradient contributes zeros of its own size only. cat is differentiable,
// so double backward through a split works.
struct Split {
  static constexpr const char* kName = "SplitBackward0";
  struct Saved {
    int64_t dim = 0;
    std::vector<int64_t> sizes;  // the pieces' sizes along dim
    Shape in_shape;
  };
  // g[i]: piece i's gradient (or undefined) -> the input's gradient, in_shape.
  static autograd::TensorList backward(const Saved& s, const autograd::TensorList& g) {
    const Tensor* given = nullptr;
    for (const Tensor& t : g)
      if (t.defined()) given = &t;
    std::vector<Tensor> parts;
    parts.reserve(s.sizes.size());
    for (size_t i = 0; i < s.sizes.size(); ++i) {
      if (i < g.size() && g[i].defined()) {
        parts.push_back(g[i]);
      } else {
        Shape shape = s.in_shape;
        shape[int(s.dim)] = s.sizes[i];
        parts.push_back(zeros(shape, given->options()));
      }
    }
    return {cat(parts, s.dim)};
  }
};
struct SplitWithSizes : Split {
  static constexpr const char* kName = "SplitWithSizesBackward0";
};

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  TT_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  detail::check_same_device("cat", tensors);
  // Legacy PyTorch rule: 1-d tensors of size 0 are skipped whatever the others' shapes.
  std::vector<const Tensor*> parts;
  for (const Tensor& t : tensors)
    if (!(t.dim() == 1 && t.size(0) == 0)) parts.push_back(&t);
  if (parts.empty()) return tensors[0].clone();
  const Tensor& ref = *parts[0];
  TT_CHECK_SHAPE(ref.dim() > 0, "cat: zero-dimensional tensor cannot be concatenated");
  int d = wrap_dim(dim, ref.dim(), "cat");
  ScalarType dtype = ref.dtype();
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = *parts[i];
    TT_CHECK_SHAPE(t.dim() == ref.dim(), "cat: tensors must have the same number of dimensions, got ",
                   ref.shape(), " and ", t.shape(), " (tensor ", i, ")");
    for (int k = 0; k < t.dim(); ++k)
      TT_CHECK_SHAPE(k == d || t.size(k) == ref.size(k), "cat: sizes of tensors must match except in "
                     "dimension ", d, ", got ", ref.shape(), " and ", t.shape(), " (tensor ", i, ")");
    dtype = promote_types(dtype, t.dtype());
    total = checked_add(total, t.size(d), "cat");
  }
  Shape shape = ref.shape();
  shape[d] = total;
  Tensor out = empty(shape, ref.options().dtype(dtype));
  Backend& be = backend_for(out.device());
  int64_t pos = 0;
  for (const Tensor* t : parts) {
    be.copy(slice(out, d, pos, pos + t->size(d)), *t);
    pos += t->size(d);
  }
  if (auto node = autograd::make_node<Cat>(tensors)) {
    node->saved.dim = d;
    for (const Tensor& t : tensors) {
      bool skipped = t.dim() == 1 && t.size(0) == 0;
      node->saved.sizes.push_back(skipped ? -1 : t.size(d));
      node->saved.dtypes.push_back(t.dtype());
    }
    autograd::set_history(out, node);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  TT_CHECK(!tensors.empty(), "stack: expected a non-empty list of tensors");
  detail::check_same_device("stack", tensors);
  int d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    TT_CHECK_SHAPE(tensors[i].shape() == tensors[0].shape(), "stack: expects each tensor to be equal "
                   "size, but got ", tensors[0].shape(), " at entry 0 and ", tensors[i].shape(),
                   " at entry ", i);
    parts.push_back(unsqueeze(tensors[i], d));
  }
  return cat(parts, d);
}

namespace {

// Views of t: pieces of `sizes` along dim d (summing to t.size(d)), each an output of one Op node.
template <typename Op>
std::vector<Tensor> split_pieces(const Tensor& t, int d, const std::vector<int64_t>& sizes) {
  std::vector<Tensor> out;
  out.reserve(sizes.size());
  {
    NoGradGuard no_grad;  // the pieces join the graph through the one node below, not a slice node each
    int64_t start = 0;
    for (int64_t s : sizes) {
      out.push_back(narrow(t, d, start, s));
      start += s;
    }
  }
  if (auto node = autograd::make_node<Op>({&t})) {
    node->num_outputs = uint32_t(out.size());
    node->saved.dim = d;
    node->saved.sizes = sizes;
    node->saved.in_shape = t.shape();
    for (size_t i = 0; i < out.size(); ++i) autograd::set_history(out[i], node, uint32_t(i));
  }
  return out;
}

}  // namespace

std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim) {
  TT_CHECK(t.dim() > 0, "split: cannot split a 0-dim tensor");
  int d = wrap_dim(dim, t.dim(), "split");
  int64_t n = t.size(d);
  TT_CHECK(split_size > 0 || (split_size == 0 && n == 0), "split: split_size must be positive, got ", split_size);
  if (n == 0) return {t.slice(d, 0, 0)};
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < n; start += split_size) sizes.push_back(std::min(split_size, n - start));
  return split_pieces<Split>(t, d, sizes);
}

std::vector<Tensor> split(const Tensor& t, const std::vector<int64_t>& sizes, int64_t dim) {
  TT_CHECK(t.dim() > 0, "split: cannot split a 0-dim tensor");
  int d = wrap_dim(dim, t.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    TT_CHECK(s >= 0, "split: split sizes must be non-negative, got ", Shape(sizes));
    total = checked_add(total, s, "split");
  }
  TT_CHECK_SHAPE(total == t.size(d), "split: split sizes ", Shape(sizes), " must sum to the size of dimension ",
                 d, " (", t.size(d), ")");
  return split_pieces<SplitWithSizes>(t, d, sizes);
}

std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim) {
  TT_CHECK(chunks > 0, "chunk: number of chunks must be positive, got ", chunks);
  TT_CHECK(t.dim() > 0, "chunk: cannot chunk a 0-dim tensor");
  int d = wrap_dim(dim, t.dim(), "chunk");
  // An empty dim gives `chunks` empty pieces, as PyTorch; but not billions of them (PyTorch runs out
  // of memory building that list): a deliberate limit.
  constexpr int64_t kMaxEmptyChunks = int64_t(1) << 20;
  if (t.size(d) == 0) {
    TT_CHECK(chunks <= kMaxEmptyChunks, "chunk: ", chunks, " empty pieces of an empty dimension requested, at most ",
             kMaxEmptyChunks, " are made");
    return split(t, std::vector<int64_t>(size_t(chunks), 0), d);
  }
  return split(t, 1 + (t.size(d) - 1) / chunks, d);  // ceil(size / chunks), without overflow
}

}  // namespace tt
