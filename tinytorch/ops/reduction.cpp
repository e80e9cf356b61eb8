// Reductions: dim handling, output dtypes and shapes here; the loops in backend/*/reduce.
#include "tinytorch/ops/reduction.h"

#include <algorithm>
#include <cmath>

#include "tinytorch/ops/autocast_hook.h"
#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/indexing.h"
#include "tinytorch/ops/view.h"

namespace tt {

namespace {

// Which dims a reduction covers; an empty `dims` list means all of them (as PyTorch's sum).
struct DimMask {
  bool reduce[kMaxDims] = {};
};

DimMask make_mask(const Tensor& t, const Shape& dims, const char* op) {
  DimMask m;
  if (dims.empty()) {
    for (int d = 0; d < t.dim(); ++d) m.reduce[d] = true;
    return m;
  }
  for (int64_t dim : dims) {
    int d = wrap_dim(dim, t.dim(), op);
    TT_CHECK_INDEX(t.dim() == 0 || !m.reduce[d], op, ": dim ", d, " appears multiple times in the list of dims ", dims);
    if (t.dim() > 0) m.reduce[d] = true;
  }
  return m;
}

Shape keepdim_shape(const Tensor& t, const DimMask& m) {
  Shape s = t.shape();
  for (int d = 0; d < t.dim(); ++d)
    if (m.reduce[d]) s[d] = 1;
  return s;
}

Shape final_shape(const Tensor& t, const DimMask& m, bool keepdim) {
  if (keepdim) return keepdim_shape(t, m);
  Shape s;
  for (int d = 0; d < t.dim(); ++d)
    if (!m.reduce[d]) s.push_back(t.size(d));
  return s;
}

int64_t reduced_count(const Tensor& t, const DimMask& m) {
  int64_t n = 1;
  for (int d = 0; d < t.dim(); ++d)
    if (m.reduce[d]) n *= t.size(d);
  return n;
}

// Runs a reduce kernel into a keepdim-shaped output, then drops the reduced dims.
Tensor run_reduce(ReduceOp op, const Tensor& in, const DimMask& m, bool keepdim, ScalarType out_dtype) {
  Tensor out = empty(keepdim_shape(in, m), in.options().dtype(out_dtype));
  backend_for(in.device()).reduce(op, out, in);
  return keepdim ? out : view(out, final_shape(in, m, keepdim));
}

using autograd::SavedVariable;
using autograd::TensorList;

// The gradient of a reduction, broadcast back over the reduced dims.
Tensor expand_reduced(const Tensor& g, const Shape& in_shape, const DimMask& m, bool keepdim) {
  Shape kd = in_shape;
  for (int d = 0; d < kd.size(); ++d)
    if (m.reduce[d]) kd[d] = 1;
  return expand(keepdim ? g : reshape(g, kd), in_shape);
}

struct Sum {
  static constexpr const char* kName = "SumBackward1";
  struct Saved { Shape in_shape; DimMask mask; bool keepdim = false; };
  static Tensor forward(const Tensor& t, const DimMask& m, bool keepdim) {
    // bool and int64 sum to int64, like PyTorch.
    Tensor in = t.is_floating_point() ? t : to_dtype(t, kInt64);
    if (in.numel() == 0) return zeros(final_shape(in, m, keepdim), in.options());
    return run_reduce(ReduceOp::Sum, in, m, keepdim, in.dtype());
  }
  static TensorList backward(const Saved& s, const TensorList& g) {
    // TT_EXERCISE_BEGIN(04, 3)
    return {expand_reduced(g[0], s.in_shape, s.mask, s.keepdim)};
    // TT_EXERCISE_END
  }
};

Tensor sum_impl(const Tensor& t, const DimMask& m, bool keepdim) {
  Tensor out = Sum::forward(t, m, keepdim);
  if (auto node = autograd::make_node<Sum>({&t})) {
    node->saved = {t.shape(), m, keepdim};
    autograd::set_history(out, node);
  }
  return out;
}

// bool_indices: max(dim)/min(dim) return indices for bool input too (argmax/argmin do not).
Tensor extreme(ReduceOp op, const Tensor& t, int64_t dim, bool keepdim, const char* name,
               bool bool_indices = false) {
  TT_CHECK_DTYPE(t.dtype() != kBool || op == ReduceOp::Max || op == ReduceOp::Min || bool_indices, name,
                 ": not implemented for bool tensors");
  Tensor in = t.dtype() == kBool ? to_dtype(t, kInt64) : t;
  DimMask m = make_mask(in, {dim}, name);
  int d = t.dim() ? wrap_dim(dim, t.dim(), name) : 0;
  TT_CHECK_INDEX(t.dim() == 0 || t.size(d) > 0, name, ": cannot reduce over dimension ", d,
                 " of size 0 (the operation has no identity), input shape ", t.shape());
  bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  Tensor r = run_reduce(op, in, m, keepdim, arg ? kInt64 : in.dtype());
  return (!arg && t.dtype() == kBool) ? to_dtype(r, kBool) : r;
}

Tensor extreme_all(ReduceOp op, const Tensor& t, const char* name) {
  TT_CHECK(t.numel() > 0, name, ": expected a non-empty tensor, got shape ", t.shape(),
           " (the operation has no identity)");
  NoGradGuard no_grad;  // the callers record the whole reduction
  Tensor flat = reshape(t, {-1});
  return extreme(op, flat, 0, false, name);
}

// max()/min() over everything: ties share the gradient equally (as PyTorch's max()).
template <bool kMax>
struct ExtremeAll {
  static constexpr const char* kName = kMax ? "MaxBackward1" : "MinBackward1";
  struct Saved { SavedVariable in, out; };
  static TensorList backward(const Saved& s, const TensorList& g) {
    Tensor in = s.in.unpack(), out = s.out.unpack();
    Tensor hit = to_dtype(eq(in, out), g[0].dtype());
    return {div(mul(hit, g[0]), sum(hit))};
  }
};
template <bool kMax>
Tensor record_extreme_all(const Tensor& t, Tensor out) {
  if (auto node = autograd::make_node<ExtremeAll<kMax>>({&t})) {
    autograd::set_history(out, node);
    node->saved = {SavedVariable(t), autograd::save_output(out, *node)};
  }
  return out;
}

// max(dim)/min(dim): the gradient goes to the index that was returned.
template <bool kMax>
struct ExtremeDim {
  static constexpr const char* kName = kMax ? "MaxBackward0" : "MinBackward0";
  struct Saved { Shape in_shape; int64_t dim = 0; bool keepdim = false; SavedVariable indices; };
  static TensorList backward(const Saved& s, const TensorList& g) {
    if (s.in_shape.empty()) return {g[0]};
    Tensor idx = s.indices.unpack(), gk = g[0];
    if (!s.keepdim) {
      idx = unsqueeze(idx, s.dim);
      gk = unsqueeze(gk, s.dim);
    }
    return {scatter_add(zeros(s.in_shape, gk.options()), s.dim, idx, gk)};
  }
};
template <bool kMax>
std::tuple<Tensor, Tensor> extreme_dim(ReduceOp value_op, ReduceOp index_op, const Tensor& t, int64_t dim,
                                       bool keepdim, const char* name) {
  Tensor values = extreme(value_op, t, dim, keepdim, name);
  Tensor indices = extreme(index_op, t, dim, keepdim, name, true);
  if (auto node = autograd::make_node<ExtremeDim<kMax>>({&t})) {
    node->saved = {t.shape(), t.dim() ? wrap_dim(dim, t.dim(), name) : 0, keepdim, SavedVariable(indices)};
    autograd::set_history(values, node);
  }
  return {values, indices};
}

// amax/amin over a dim list: ties share the gradient equally (as torch.amax).
template <bool kMax>
struct ExtremeDims {
  static constexpr const char* kName = kMax ? "AmaxBackward0" : "AminBackward0";
  struct Saved { SavedVariable in, out; DimMask mask; bool keepdim = false; };
  static TensorList backward(const Saved& s, const TensorList& g) {
    Tensor in = s.in.unpack(), out = s.out.unpack();
    Tensor hit = to_dtype(eq(in, expand_reduced(out, in.shape(), s.mask, s.keepdim)), g[0].dtype());
    Shape dims;
    for (int d = 0; d < in.dim(); ++d)
      if (s.mask.reduce[d]) dims.push_back(d);
    return {div(mul(hit, expand_reduced(g[0], in.shape(), s.mask, s.keepdim)), sum(hit, dims, true))};
  }
};

template <bool kMax>
Tensor extreme_dims(const Tensor& t, const Shape& dims, bool keepdim) {
  const char* name = kMax ? "amax" : "amin";
  DimMask m = make_mask(t, dims, name);
  for (int d = 0; d < t.dim(); ++d)
    TT_CHECK_INDEX(!m.reduce[d] || t.size(d) > 0, name, ": cannot reduce over dimension ", d,
                   " of size 0 (the operation has no identity), input shape ", t.shape());
  Tensor in = t.dtype() == kBool ? to_dtype(t, kInt64) : t;
  Tensor out = run_reduce(kMax ? ReduceOp::Max : ReduceOp::Min, in, m, keepdim, in.dtype());
  if (t.dtype() == kBool) out = to_dtype(out, kBool);
  if (auto node = autograd::make_node<ExtremeDims<kMax>>({&t})) {
    autograd::set_history(out, node);
    node->saved = {SavedVariable(t), autograd::save_output(out, *node), m, keepdim};
  }
  return out;
}

}  // namespace

Tensor sum(const Tensor& t) {
  if (auto cast = amp::autocast(AutocastOp::sum, {t})) return sum(cast[0]);
  return sum_impl(t, make_mask(t, {}, "sum"), false);
}
Tensor sum(const Tensor& t, DimList dims, bool keepdim) {
  if (auto cast = amp::autocast(AutocastOp::sum, {t})) return sum(cast[0], dims, keepdim);
  return sum_impl(t, make_mask(t, dims.dims, "sum"), keepdim);
}

Tensor mean(const Tensor& t, DimList dims, bool keepdim) {
  if (auto cast = amp::autocast(AutocastOp::mean, {t})) return mean(cast[0], dims, keepdim);
  TT_CHECK_DTYPE(t.is_floating_point(), "mean: could not infer output dtype, the input dtype must be "
                 "floating point, got ", t.dtype());
  DimMask m = make_mask(t, dims.dims, "mean");
  int64_t n = reduced_count(t, m);
  Tensor s = sum_impl(t, m, keepdim);
  return div(s, Scalar(double(n)));  // n == 0 gives NaN, as in PyTorch
}
Tensor mean(const Tensor& t) { return mean(t, {}, false); }

Tensor max(const Tensor& t) { return record_extreme_all<true>(t, extreme_all(ReduceOp::Max, t, "max")); }
Tensor min(const Tensor& t) { return record_extreme_all<false>(t, extreme_all(ReduceOp::Min, t, "min")); }
Tensor argmax(const Tensor& t) { return extreme_all(ReduceOp::ArgMax, t, "argmax"); }
Tensor argmin(const Tensor& t) { return extreme_all(ReduceOp::ArgMin, t, "argmin"); }
std::tuple<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  return extreme_dim<true>(ReduceOp::Max, ReduceOp::ArgMax, t, dim, keepdim, "max");
}
std::tuple<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) {
  return extreme_dim<false>(ReduceOp::Min, ReduceOp::ArgMin, t, dim, keepdim, "min");
}
Tensor argmax(const Tensor& t, int64_t dim, bool keepdim) {
  return extreme(ReduceOp::ArgMax, t, dim, keepdim, "argmax");
}
Tensor argmin(const Tensor& t, int64_t dim, bool keepdim) {
  return extreme(ReduceOp::ArgMin, t, dim, keepdim, "argmin");
}

Tensor amax(const Tensor& t, DimList dims, bool keepdim) { return extreme_dims<true>(t, dims.dims, keepdim); }
Tensor amin(const Tensor& t, DimList dims, bool keepdim) { return extreme_dims<false>(t, dims.dims, keepdim); }

Tensor var(const Tensor& t, DimList dims, int64_t correction, bool keepdim) {
  TT_CHECK_DTYPE(t.is_floating_point(), "var: expected a floating-point tensor, got dtype ", t.dtype());
  DimMask m = make_mask(t, dims.dims, "var");
  int64_t n = reduced_count(t, m);
  Tensor mu = mean(t, dims, /*keepdim=*/true);
  Tensor dev = sub(t, mu);
  Tensor ss = sum_impl(mul(dev, dev), m, keepdim);
  // As PyTorch, the divisor is max(0, n - correction): too few samples give inf or NaN, never a
  // negative variance.
  return div(ss, Scalar(double(std::max<int64_t>(0, n - correction))));
}
Tensor var(const Tensor& t) { return var(t, {}, 1, false); }
Tensor std(const Tensor& t, DimList dims, int64_t correction, bool keepdim) {
  return sqrt(var(t, dims, correction, keepdim));
}
Tensor std(const Tensor& t) { return sqrt(var(t)); }

}  // namespace tt
