// View ops: each computes a new (offset, shape, strides) over the input's storage.
//
//   t = [[0, 1, 2],        storage: 0 1 2 3 4 5
//        [3, 4, 5]]        shape [2, 3], strides [3, 1]
//   t.t()                  shape [3, 2], strides [1, 3]   (same storage, nothing copied)
//   t.slice(1, 0, 3, 2)    shape [2, 2], strides [3, 2]
//   t[:, 1:2].expand       stride 0 along the expanded dim
#include "tinytorch/ops/view.h"

#include <numeric>

#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/core/checked.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/factory.h"

namespace tt {

namespace {
Tensor make_view(const Tensor& t, const Shape& shape, const Shape& strides, int64_t offset, const char* op) {
  Tensor v = detail::make_tensor(t.storage(), offset, shape, strides, t.dtype(), op);
  v.unsafe_impl()->is_view = true;
  return v;
}

// Resolves one -1 in `shape` against numel; checks the product, which may not wrap around
// into a valid-looking count ([2^32, 2^32] is not a shape for 0 elements).
Shape infer_size(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int infer = -1;
  int64_t known = 1;
  bool overflow = false, has_zero = false;
  for (int i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      TT_CHECK_SHAPE(infer < 0, op, ": only one dimension can be inferred, got ", shape);
      infer = i;
    } else {
      TT_CHECK_SHAPE(out[i] >= 0, op, ": invalid shape dimension ", out[i], " in ", shape);
      overflow |= __builtin_mul_overflow(known, out[i], &known);
      has_zero |= out[i] == 0;
    }
  }
  if (has_zero) known = 0;
  if (overflow && !has_zero) {
    // The known sizes alone hold more than int64 counts: only an empty input fits, with -1 -> 0.
    TT_CHECK_SHAPE(infer >= 0 && numel == 0, op, ": shape ", shape, " is invalid for input of size ", numel,
                   " (its number of elements overflows int64)");
    out[infer] = 0;
    return out;
  }
  if (infer >= 0) {
    TT_CHECK_SHAPE(known != 0 && numel % known == 0, op, ": shape ", shape,
                   " is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    TT_CHECK_SHAPE(known == numel, op, ": shape ", shape, " is invalid for input of size ", numel);
  }
  return out;
}

// Strides for viewing (old shape, old strides) as new_shape without a copy, or false.
// Groups of old dims that are contiguous with each other may be split or merged freely.
bool compute_view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& new_shape,
                          Shape& new_strides) {
  // TT_EXERCISE_BEGIN(01, 1)
  new_strides.resize(new_shape.size());
  if (numel_of(old_shape) == 0 || old_shape.empty()) {
    new_strides = contiguous_strides(new_shape);
    return true;
  }
  int view_d = new_shape.size() - 1;
  int64_t chunk_base_stride = old_strides.size() ? old_strides.back() : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int d = old_shape.size() - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    // A chunk ends where the next-outer old dim is not contiguous with this one.
    if (d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
  // TT_EXERCISE_END
}

// --- derivatives: a view's gradient is the same view taken backwards ---------------------------
using autograd::TensorList;

struct Reshape {  // view, reshape (as a view), squeeze, unsqueeze
  static constexpr const char* kName = "ViewBackward0";
  struct Saved { Shape in_shape; };
  static TensorList backward(const Saved& s, const TensorList& g) { return {reshape(g[0], s.in_shape)}; }
};
struct Transpose {
  static constexpr const char* kName = "TransposeBackward0";
  struct Saved { int64_t d0 = 0, d1 = 0; };
  static TensorList backward(const Saved& s, const TensorList& g) { return {transpose(g[0], s.d0, s.d1)}; }
};
struct Permute {
  static constexpr const char* kName = "PermuteBackward0";
  struct Saved { Shape inverse; };
  static TensorList backward(const Saved& s, const TensorList& g) { return {permute(g[0], s.inverse)}; }
};
struct Expand {  // broadcast dims sum back
  static constexpr const char* kName = "ExpandBackward0";
  struct Saved { Shape in_shape; ScalarType dtype = kFloat32; };
  static TensorList backward(const Saved& s, const TensorList& g) {
    return {autograd::reduce_grad(g[0], s.in_shape, s.dtype)};
  }
};

// Places g into zeros of the input's shape, at the elements a view (slice, select) picked.
// Itself differentiable (its gradient is the same view of the upstream gradient), so double
// backward through slicing works.
struct ViewScatter {
  static constexpr const char* kName = "ViewScatterBackward0";
  struct Saved { std::function<Tensor(const Tensor&)> view_of; };
  static Tensor forward(const Tensor& g, const Shape& in_shape, const std::function<Tensor(const Tensor&)>& view_of) {
    Tensor r = zeros(in_shape, g.options());
    NoGradGuard no_grad;
    backend_for(r.device()).copy(view_of(r), g);
    return r;
  }
  static TensorList backward(const Saved& s, const TensorList& g) { return {s.view_of(g[0])}; }
};
Tensor view_scatter(const Tensor& g, const Shape& in_shape, std::function<Tensor(const Tensor&)> view_of) {
  Tensor r = ViewScatter::forward(g, in_shape, view_of);
  if (auto node = autograd::make_node<ViewScatter>({&g})) {
    node->saved.view_of = std::move(view_of);
    autograd::set_history(r, node);
  }
  return r;
}

struct Slice {
  static constexpr const char* kName = "SliceBackward0";
  struct Saved { Shape in_shape; int64_t dim = 0, start = 0, end = 0, step = 1; };
  static TensorList backward(const Saved& s, const TensorList& g) {
    Saved c = s;
    return {view_scatter(g[0], s.in_shape, [c](const Tensor& t) { return slice(t, c.dim, c.start, c.end, c.step); })};
  }
};
struct Select {
  static constexpr const char* kName = "SelectBackward0";
  struct Saved { Shape in_shape; int64_t dim = 0, index = 0; };
  static TensorList backward(const Saved& s, const TensorList& g) {
    Saved c = s;
    return {view_scatter(g[0], s.in_shape, [c](const Tensor& t) { return select(t, c.dim, c.index); })};
  }
};

template <typename Op>
Tensor record_view(const Tensor& in, Tensor out, typename Op::Saved saved) {
  if (auto node = autograd::make_node<Op>({&in})) {
    node->saved = std::move(saved);
    autograd::set_history(out, node);
  }
  return out;
}

}  // namespace

Tensor view(const Tensor& t, const Shape& shape) {
  Shape target = infer_size(shape, t.numel(), "view");
  Shape strides;
  TT_CHECK_SHAPE(compute_view_strides(t.shape(), t.strides(), target, strides),
                 "view: size is not compatible with the input tensor's size and stride (at least "
                 "one dimension spans across two contiguous subspaces), input shape ", t.shape(),
                 " strides ", t.strides(), ", requested ", target, "; use reshape() instead");
  return record_view<Reshape>(t, make_view(t, target, strides, t.storage_offset(), "view"), {t.shape()});
}

Tensor reshape(const Tensor& t, const Shape& shape) {
  Shape target = infer_size(shape, t.numel(), "reshape");
  Shape strides;
  if (compute_view_strides(t.shape(), t.strides(), target, strides))
    return record_view<Reshape>(t, make_view(t, target, strides, t.storage_offset(), "reshape"), {t.shape()});
  return view(clone(t), target);
}

Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  if (t.dim() == 0) return reshape(t, {1});
  int s = wrap_dim(start_dim, t.dim(), "flatten"), e = wrap_dim(end_dim, t.dim(), "flatten");
  TT_CHECK_INDEX(s <= e, "flatten: start_dim cannot come after end_dim, got ", start_dim, " and ", end_dim);
  Shape shape;
  for (int d = 0; d < s; ++d) shape.push_back(t.size(d));
  int64_t n = 1;
  for (int d = s; d <= e; ++d) n *= t.size(d);
  shape.push_back(n);
  for (int d = e + 1; d < t.dim(); ++d) shape.push_back(t.size(d));
  return reshape(t, shape);
}

Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) {
  if (t.dim() == 0) {
    wrap_dim(d0, 0, "transpose");
    wrap_dim(d1, 0, "transpose");
    return record_view<Reshape>(t, make_view(t, t.shape(), t.strides(), t.storage_offset(), "transpose"), {t.shape()});
  }
  int a = wrap_dim(d0, t.dim(), "transpose"), b = wrap_dim(d1, t.dim(), "transpose");
  Shape shape = t.shape(), strides = t.strides();
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  return record_view<Transpose>(t, make_view(t, shape, strides, t.storage_offset(), "transpose"), {a, b});
}

// t(): transpose(0, 1) of a 2-D tensor; a 0-D or 1-D tensor comes back as it is (a view).
Tensor t(const Tensor& self) {
  TT_CHECK_SHAPE(self.dim() <= 2, "t: expects a tensor with <= 2 dimensions, got ", self.dim(), "-d shape ",
                 self.shape());
  return self.dim() < 2 ? transpose(self, 0, 0) : transpose(self, 0, 1);
}

Tensor permute(const Tensor& t, const Shape& dims) {
  TT_CHECK_SHAPE(dims.size() == t.dim(), "permute: number of dims don't match, the input has ",
                 t.dim(), " dims but the permutation ", dims, " has ", dims.size());
  Shape shape, strides;
  bool seen[kMaxDims] = {};
  for (int i = 0; i < dims.size(); ++i) {
    int d = wrap_dim(dims[i], t.dim(), "permute");
    TT_CHECK_INDEX(!seen[d], "permute: repeated dim ", dims[i], " in permutation ", dims);
    seen[d] = true;
    shape.push_back(t.size(d));
    strides.push_back(t.stride(d));
  }
  Shape inverse = Shape::filled(t.dim(), 0);
  for (int i = 0; i < dims.size(); ++i) inverse[wrap_dim(dims[i], t.dim(), "permute")] = i;
  return record_view<Permute>(t, make_view(t, shape, strides, t.storage_offset(), "permute"), {inverse});
}

Tensor unsqueeze(const Tensor& t, int64_t dim) {
  int d = wrap_dim(dim, t.dim() + 1, "unsqueeze");
  Shape shape = t.shape(), strides = t.strides();
  int64_t st = d < t.dim() ? t.stride(d) * t.size(d) : 1;
  shape.insert(d, 1);
  strides.insert(d, st);
  return record_view<Reshape>(t, make_view(t, shape, strides, t.storage_offset(), "unsqueeze"), {t.shape()});
}

Tensor squeeze(const Tensor& t) {
  Shape shape, strides;
  for (int d = 0; d < t.dim(); ++d)
    if (t.size(d) != 1) {
      shape.push_back(t.size(d));
      strides.push_back(t.stride(d));
    }
  return record_view<Reshape>(t, make_view(t, shape, strides, t.storage_offset(), "squeeze"), {t.shape()});
}

Tensor squeeze(const Tensor& t, int64_t dim) {
  if (t.dim() == 0) {
    wrap_dim(dim, 0, "squeeze");
    return record_view<Reshape>(t, make_view(t, t.shape(), t.strides(), t.storage_offset(), "squeeze"), {t.shape()});
  }
  int d = wrap_dim(dim, t.dim(), "squeeze");
  if (t.size(d) != 1)
    return record_view<Reshape>(t, make_view(t, t.shape(), t.strides(), t.storage_offset(), "squeeze"), {t.shape()});
  Shape shape = t.shape(), strides = t.strides();
  shape.erase(d);
  strides.erase(d);
  return record_view<Reshape>(t, make_view(t, shape, strides, t.storage_offset(), "squeeze"), {t.shape()});
}

Tensor expand(const Tensor& t, const Shape& sizes) {
  TT_CHECK_SHAPE(sizes.size() >= t.dim(), "expand: the number of sizes provided (", sizes.size(),
                 ") must be greater or equal to the number of dimensions in the tensor (", t.dim(),
                 "), got ", sizes, " for a tensor of shape ", t.shape());
  Shape shape, strides;
  int off = sizes.size() - t.dim();
  for (int i = 0; i < sizes.size(); ++i) {
    int j = i - off;
    int64_t want = sizes[i];
    if (j < 0) {
      TT_CHECK_SHAPE(want >= 0, "expand: a new leading dimension needs a size >= 0 (-1 cannot keep a size "
                     "that does not exist), got ", sizes);
      shape.push_back(want);
      strides.push_back(0);
      continue;
    }
    int64_t have = t.size(j);
    if (want == -1) want = have;
    TT_CHECK_SHAPE(want >= 0, "expand: sizes must be non-negative or -1 (keep the size), got ", sizes);
    TT_CHECK_SHAPE(have == want || have == 1, "expand: the expanded size of the tensor (", want,
                   ") must match the existing size (", have, ") at non-singleton dimension ", i,
                   ", target sizes ", sizes, ", tensor shape ", t.shape());
    shape.push_back(want);
    strides.push_back(have == want ? t.stride(j) : 0);
  }
  return record_view<Expand>(t, make_view(t, shape, strides, t.storage_offset(), "expand"), {t.shape(), t.dtype()});
}

Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step) {
  TT_CHECK_INDEX(t.dim() > 0, "slice: cannot be applied to a 0-dim tensor");
  int d = wrap_dim(dim, t.dim(), "slice");
  TT_CHECK(step > 0, "slice: step must be positive, got ", step);
  int64_t n = t.size(d);
  // Python slicing: negative indices count from the end; out-of-range bounds clamp.
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::min(std::max<int64_t>(start, 0), n);
  end = std::min(std::max<int64_t>(end, start), n);
  Shape shape = t.shape(), strides = t.strides();
  shape[d] = end > start ? 1 + (end - start - 1) / step : 0;  // ceil((end - start) / step), no overflow
  // A step past the dim's end picks one element, whatever its stride would multiply to.
  strides[d] = shape[d] > 1 ? checked_mul(t.stride(d), step, "slice") : t.stride(d);
  return record_view<Slice>(t, make_view(t, shape, strides, t.storage_offset() + start * t.stride(d), "slice"),
                            {t.shape(), d, start, end, step});
}

Tensor select(const Tensor& t, int64_t dim, int64_t index) {
  TT_CHECK_INDEX(t.dim() > 0, "select: cannot be applied to a 0-dim tensor");
  int d = wrap_dim(dim, t.dim(), "select");
  int64_t n = t.size(d);
  TT_CHECK_INDEX(index >= -n && index < n, "select: index ", index, " is out of bounds for dimension ",
                 d, " with size ", n);
  if (index < 0) index += n;
  Shape shape = t.shape(), strides = t.strides();
  shape.erase(d);
  strides.erase(d);
  return record_view<Select>(t, make_view(t, shape, strides, t.storage_offset() + index * t.stride(d), "select"),
                             {t.shape(), d, index});
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  TT_CHECK_INDEX(t.dim() > 0, "narrow: cannot be applied to a 0-dim tensor");
  int d = wrap_dim(dim, t.dim(), "narrow");
  int64_t n = t.size(d);
  TT_CHECK_INDEX(start >= -n && start <= n, "narrow: start (", start, ") is out of range for dimension ", d,
                 " of size ", n, " (expected to be in range of [", -n, ", ", n, "])");
  if (start < 0) start += n;
  TT_CHECK_INDEX(length >= 0, "narrow: length must be non-negative, got ", length);  // PyTorch's words
  // length <= n - start, not start + length <= n: the sum may overflow.
  TT_CHECK_INDEX(length <= n - start, "narrow: start (", start, ") + length (", length,
                 ") exceeds dimension size (", n, ") of dimension ", d);
  return slice(t, d, start, start + length, 1);
}

}  // namespace tt
