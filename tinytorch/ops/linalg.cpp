// matmul and friends: shape rules and batch broadcasting here, GEMM in backend/*/gemm.
#include "tinytorch/ops/linalg.h"

#include "tinytorch/ops/autocast_hook.h"
#include "tinytorch/autograd/function.h"
#include "tinytorch/backend/backend.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/reduction.h"
#include "tinytorch/ops/view.h"

namespace tt {

namespace {

void check_operands(const Tensor& a, const Tensor& b, const char* op) {
  detail::check_same_device(op, {&a, &b});
  TT_CHECK_DTYPE(a.dtype() == b.dtype(), op, ": expected both operands to have the same dtype, got ",
                 a.dtype(), " and ", b.dtype());
  TT_CHECK_DTYPE(a.dtype() != kBool, op, ": not supported for bool tensors");
}

Tensor blas_ready(const Tensor& m) {
  return (!m.is_floating_point() || blas_compatible(m)) ? m : contiguous(m);
}

// d(a @ b) = g @ bᵀ for a and aᵀ @ g for b, summed over broadcast batch dims.
struct Matmul {
  static constexpr const char* kName = "MmBackward0";
  struct Saved {
    autograd::SavedVariable a, b;
    Shape a_shape, b_shape;
    ScalarType dtype = kFloat32;
  };
  static autograd::TensorList backward(const Saved& s, const autograd::TensorList& g) {
    // TT_EXERCISE_BEGIN(04, 5)
    Tensor a = s.a.unpack(), b = s.b.unpack(), ga, gb;
    if (b.defined()) ga = autograd::reduce_grad(matmul(g[0], transpose(b, -1, -2)), s.a_shape, s.dtype);
    if (a.defined()) gb = autograd::reduce_grad(matmul(transpose(a, -1, -2), g[0]), s.b_shape, s.dtype);
    return {ga, gb};
    // TT_EXERCISE_END
  }
};

// a: [B.., M, K], b: [B.., K, N] with any batch dims -> [bcast(B..), M, N].
Tensor batched_matmul(const Tensor& a, const Tensor& b, const char* op) {
  int64_t M = a.size(-2), K = a.size(-1), K2 = b.size(-2), N = b.size(-1);
  TT_CHECK_SHAPE(K == K2, op, ": inner dimensions must match, got ", a.shape(), " and ", b.shape());
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, op);
  Shape sa = batch, sb = batch, so = batch;
  sa.push_back(M); sa.push_back(K);
  sb.push_back(K); sb.push_back(N);
  so.push_back(M); so.push_back(N);
  Tensor out = empty(so, a.options());
  {
    NoGradGuard no_grad;  // the expanded operands are plumbing, not part of the graph
    backend_for(a.device()).gemm(out, blas_ready(expand(a, sa)), blas_ready(expand(b, sb)), 0.0);
  }
  if (auto node = autograd::make_node<Matmul>({&a, &b})) {
    // Each operand is needed only for the other's gradient.
    if (b.requires_grad()) node->saved.a = autograd::SavedVariable(a);
    if (a.requires_grad()) node->saved.b = autograd::SavedVariable(b);
    node->saved.a_shape = a.shape();
    node->saved.b_shape = b.shape();
    node->saved.dtype = a.dtype();
    autograd::set_history(out, node);
  }
  return out;
}

// t: [*, n] -> [R, n] with R the product of the leading dims (explicit, so n = 0 works too).
Tensor as_rows(const Tensor& t) {
  int64_t rows = 1;
  for (int d = 0; d + 1 < t.dim(); ++d) rows *= t.size(d);
  return reshape(t, {rows, t.size(-1)});
}

// y = x @ wᵀ + b over the last dim, every leading row in one GEMM (see linear() below).
//
// Note [fused linear backward]: the weight and bias gradients read the same g, so one backend
// call makes both (gemm_bias_grad: cuBLASLt's BGRADB epilogue on CUDA). That call is a black box
// to autograd, so under create_graph (Note [double backward of fused kernels] in activation.cpp)
// the same formulas are built from differentiable ops instead: gw = gᵀ x, gb = sum of g's rows.
struct Linear {
  static constexpr const char* kName = "LinearBackward0";
  struct Saved {
    autograd::SavedVariable x, w;
    Shape x_shape;
    bool has_bias = false;
  };
  // g: [*, out] -> gx: [*, in], gw: [out, in], gb: [out]
  static autograd::TensorList backward(const Saved& s, const autograd::TensorList& g) {
    // TT_EXERCISE_BEGIN(05, 2)
    Tensor g2 = blas_ready(as_rows(g[0]));  // [R, out]
    Tensor x = s.x.unpack(), w = s.w.unpack(), gx, gw, gb;
    if (w.defined()) {
      gx = matmul(g2, w);  // [R, in]
      if (gx.shape() != s.x_shape) gx = reshape(gx, s.x_shape);
    }
    const bool differentiable = GradMode::is_enabled() && (g2.requires_grad() || (x.defined() && x.requires_grad()));
    if (x.defined() && !differentiable) {
      check_operands(g2, x, "linear backward");
      Tensor x2 = blas_ready(as_rows(x)), gt = transpose(g2, 0, 1);  // x2: [R, in], gt: [out, R]
      gw = empty({gt.size(0), x2.size(1)}, x.options());
      Backend& be = backend_for(x.device());
      if (s.has_bias) {
        Tensor gb_col = empty({gt.size(0), 1}, x.options());  // the row sums of gᵀ, kept as a column
        be.gemm_bias_grad(gw, gt, x2, gb_col);
        gb = reshape(gb_col, {gt.size(0)});
      } else {
        be.gemm(gw, gt, x2, 0.0);
      }
    } else {
      if (x.defined()) gw = matmul(transpose(g2, 0, 1), as_rows(x));
      if (s.has_bias) gb = sum(g2, {0});
    }
    return {gx, gw, gb};
    // TT_EXERCISE_END
  }
};

}  // namespace

// x: [*, in], w: [out, in], b: [out] -> [*, out]
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (auto cast = amp::autocast(AutocastOp::linear, {x, w, b})) return linear(cast[0], cast[1], cast[2]);
  detail::check_same_device("linear", {&x, &w, &b});
  check_operands(x, w, "linear");
  TT_CHECK_SHAPE(x.dim() >= 1 && w.dim() == 2, "linear: expected input [*, in] and weight [out, in], got ",
                 x.shape(), " and ", w.shape());
  int64_t in = w.size(1), out_features = w.size(0);
  TT_CHECK_SHAPE(x.size(-1) == in, "linear: the input's last dim must equal the weight's in_features, got input ",
                 x.shape(), " and weight ", w.shape());
  if (b.defined()) {
    check_operands(x, b, "linear");
    TT_CHECK_SHAPE(b.dim() == 1 && b.size(0) == out_features, "linear: expected bias of shape [", out_features,
                   "], got ", b.shape());
  }
  Shape out_shape = x.shape();
  out_shape[out_shape.size() - 1] = out_features;
  Tensor out;
  {
    NoGradGuard no_grad;  // x2 and the transposed weight are plumbing, not part of the graph
    Tensor x2 = as_rows(x);
    out = empty({x2.size(0), out_features}, x.options());
    Backend& be = backend_for(x.device());
    // The bias is fused into the GEMM (the epilogue of cuBLASLt; beta = 1 onto bias rows on the CPU).
    if (b.defined()) {
      be.gemm_bias(out, blas_ready(x2), blas_ready(transpose(w, 0, 1)), expand(b, out.shape()));
    } else {
      be.gemm(out, blas_ready(x2), blas_ready(transpose(w, 0, 1)), 0.0);
    }
  }
  if (auto node = autograd::make_node<Linear>({&x, &w, &b})) {
    if (w.requires_grad()) node->saved.x = autograd::SavedVariable(x);
    if (x.requires_grad()) node->saved.w = autograd::SavedVariable(w);
    node->saved.x_shape = x.shape();
    node->saved.has_bias = b.defined() && b.requires_grad();
    autograd::set_history(out, node);
  }
  return x.dim() == 2 ? out : reshape(out, out_shape);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (auto cast = amp::autocast(AutocastOp::matmul, {a, b})) return matmul(cast[0], cast[1]);
  check_operands(a, b, "matmul");
  TT_CHECK_SHAPE(a.dim() >= 1 && b.dim() >= 1, "matmul: both arguments need at least 1 dimension, got ",
                 a.shape(), " and ", b.shape());
  if (a.dim() == 1 && b.dim() == 1) return dot(a, b);
  if (a.dim() == 1) {  // [K] @ [.., K, N] -> [.., N]
    TT_CHECK_SHAPE(a.size(0) == b.size(-2), "matmul: inner dimensions must match, got ", a.shape(), " and ", b.shape());
    return squeeze(batched_matmul(unsqueeze(a, 0), b, "matmul"), -2);
  }
  if (b.dim() == 1) {  // [.., M, K] @ [K] -> [.., M]
    TT_CHECK_SHAPE(a.size(-1) == b.size(0), "matmul: inner dimensions must match, got ", a.shape(), " and ", b.shape());
    return squeeze(batched_matmul(a, unsqueeze(b, 1), "matmul"), -1);
  }
  return batched_matmul(a, b, "matmul");
}

Tensor mm(const Tensor& a, const Tensor& b) {
  if (auto cast = amp::autocast(AutocastOp::mm, {a, b})) return mm(cast[0], cast[1]);
  check_operands(a, b, "mm");
  TT_CHECK_SHAPE(a.dim() == 2 && b.dim() == 2, "mm: expected 2-d matrices, got ", a.shape(), " and ", b.shape());
  return batched_matmul(a, b, "mm");
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (auto cast = amp::autocast(AutocastOp::bmm, {a, b})) return bmm(cast[0], cast[1]);
  check_operands(a, b, "bmm");
  TT_CHECK_SHAPE(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-d tensors, got ", a.shape(), " and ", b.shape());
  TT_CHECK_SHAPE(a.size(0) == b.size(0), "bmm: batch sizes must match, got ", a.shape(), " and ", b.shape());
  return batched_matmul(a, b, "bmm");
}

Tensor dot(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "dot");
  TT_CHECK_SHAPE(a.dim() == 1 && b.dim() == 1, "dot: expected 1-d tensors, got ", a.shape(), " and ", b.shape());
  TT_CHECK_SHAPE(a.size(0) == b.size(0), "dot: inconsistent tensor size, got ", a.shape(), " and ", b.shape());
  return reshape(batched_matmul(unsqueeze(a, 0), unsqueeze(b, 1), "dot"), {});
}

}  // namespace tt
