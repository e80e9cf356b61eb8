// The op registry: every public op of tinytorch/ops, one row per overload, with what the rest of
// the library and the tests need to know about it. From these rows come the ops' declarations
// (core/op_declarations.h), the Tensor methods (core/tensor.h, defined in ops/tensor_methods.cpp),
// the F:: names (nn/functional.h), autocast's list (amp/autocast.h) and the test metadata: the
// dtype rules tests/ops/test_registry.cpp checks, and the callers through which the reference
// suite (tests/reference/registry_call.h) and the fixture generator (tools/fixtures/registry.py)
// run a case's op. The bodies are hand-written in ops/*.cpp; the elementwise ops' bodies, nodes
// and derivatives come from core/op_table.h, whose unary rows are registry rows too
// (TT_OPS_ELEMENTWISE). docs/adding_an_op.md walks through adding an op. core/tensor.h includes
// this file, so a changed row rebuilds the whole library, as a changed Tensor method always did.
//
// Note [op registry]: each group below is an X-macro, TT_OPS_<GROUP>(X), calling
//   X(name, surface, autocast, dtypes, ret, params, torch)
//     name      tt::name, and the op's name in messages
//     surface   Fn: tt::name only; Method: also const Tensor::name (the first parameter is self);
//               MethodMut: also a non-const Tensor::name (self is Tensor&: in-place ops);
//               F: also F::name (nn/functional.h); MethodF: both; Own / OwnMut: a const /
//               non-const Tensor method only, whose body is hand-written (ops/tensor_methods.cpp:
//               to(dtype) and the in-place arithmetic, which run the op tables' kernels in place)
//     autocast  None; Lower: float32 inputs run in the autocast dtype (bf16); Float32: bf16 inputs
//               run in float32; Same: as the row above it (an overload of the same op).
//               A listed op calls amp::autocast(AutocastOp::name, ...) first (ops/autocast_hook.h)
//     dtypes    Any; NoBool: every dtype but bool; Floating: integer and bool inputs are turned
//               into float32 first; FloatOnly: integer and bool inputs throw DtypeError. The
//               body enforces it, and tests/ops/test_registry.cpp checks every row against it
//     ret       the return type (TensorPair for two tensors, TensorList for several)
//     params    (TT_P(type, name), TT_D(type, name, default), ...): the parameters in order, a
//               TT_D with its default value; a Method's first is TT_P(const Tensor&, self)
//     torch     the same op in PyTorch, a Python expression over the parameters' names, which the
//               fixture generator evaluates with the case's inputs and arguments
//               (tools/fixtures/registry.py; "" where PyTorch has no such op). A parameter the
//               case leaves out takes its default, read from the row
// The elementwise group also expands TT_UNARY_OPS(X##_UNARY): a consumer X defines X_UNARY,
// usually as TT_UNARY_AS_OP(X, ...), which turns a unary table row into a registry row.
// TT_OPS(X) is every group. The standard consumers are below the rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tinytorch/core/op_table.h"

namespace tt {

class Tensor;
using TensorPair = std::tuple<Tensor, Tensor>;
using TensorList = std::vector<Tensor>;
using IntList = std::vector<int64_t>;
// "To the end" in slice(): t.slice(0, 2) is t.slice(0, 2, tt::kEnd).
constexpr int64_t kEnd = INT64_MAX;
// How the per-element losses are combined: kept as they are (None), averaged (Mean) or added
// (Sum). LibTorch spells them torch::kNone, torch::kMean, torch::kSum; so does tinytorch.
// reduction_name() is in ops/loss.h.
enum class Reduction : uint8_t { None, Mean, Sum, NumReductions };
constexpr Reduction kNone = Reduction::None;
constexpr Reduction kMean = Reduction::Mean;
constexpr Reduction kSum = Reduction::Sum;
// The ignore_index default of cross_entropy and nll_loss, as PyTorch's.
constexpr int64_t kDefaultIgnoreIndex = -100;

}  // namespace tt

// A parameter, and a parameter with its default: (type, name, "= default" or nothing, P or D).
#define TT_P(T, n) (T, n, , P)
#define TT_D(T, n, d) (T, n, = d, D)

// clang-format off
// --- views (share storage, no data copied; ops/view.cpp) -----------------------------------------
#define TT_OPS_VIEW(X) \
  X(view, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Shape&, shape)), "self.view(shape)") \
  X(reshape, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Shape&, shape)), "self.reshape(shape)") \
  X(flatten, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_D(int64_t, start, 0), TT_D(int64_t, end, -1)), "self.flatten(start, end)") \
  X(transpose, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, d0), TT_P(int64_t, d1)), "self.transpose(d0, d1)") \
  X(permute, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Shape&, dims)), "self.permute(dims)") \
  X(unsqueeze, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim)), "self.unsqueeze(dim)") \
  X(squeeze, Method, None, Any, Tensor, (TT_P(const Tensor&, self)), "self.squeeze()") \
  X(squeeze, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim)), "self.squeeze(dim)") \
  X(t, Method, None, Any, Tensor, (TT_P(const Tensor&, self)), "self.t()") \
  X(expand, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Shape&, shape)), "self.expand(shape)") \
  X(slice, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim), TT_P(int64_t, start), TT_D(int64_t, end, kEnd), TT_D(int64_t, step, 1)), "fx.slice_like_python(self, dim, start, end, step)") \
  X(select, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim), TT_P(int64_t, index)), "self.select(dim, index)") \
  X(narrow, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim), TT_P(int64_t, start), TT_P(int64_t, length)), "self.narrow(dim, start, length)")

// --- copies and conversions (ops/copy.cpp) -----------------------------------------------------------
#define TT_OPS_COPY(X) \
  X(to, Own, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(ScalarType, dtype), TT_D(bool, copy, false)), "self.to(fx.DTYPES[dtype])") \
  X(to_dtype, Fn, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(ScalarType, dtype), TT_D(bool, copy, false)), "") \
  X(to_device, Fn, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Device&, device), TT_D(bool, copy, false)), "") \
  X(contiguous, Method, None, Any, Tensor, (TT_P(const Tensor&, self)), "self.contiguous()") \
  X(clone, Method, None, Any, Tensor, (TT_P(const Tensor&, self)), "self.clone()") \
  X(copy_, MethodMut, None, Any, Tensor&, (TT_P(Tensor&, self), TT_P(const Tensor&, src)), "self.copy_(src)") \
  X(fill_, MethodMut, None, Any, Tensor&, (TT_P(Tensor&, self), TT_P(Scalar, value)), "self.fill_(value)")

// --- joining and splitting (ops/join.cpp) --------------------------------------------------------
#define TT_OPS_JOIN(X) \
  X(cat, Fn, None, Any, Tensor, (TT_P(const TensorList&, tensors), TT_D(int64_t, dim, 0)), "torch.cat(tensors, dim)") \
  X(stack, Fn, None, Any, Tensor, (TT_P(const TensorList&, tensors), TT_D(int64_t, dim, 0)), "torch.stack(tensors, dim)") \
  X(split, Method, None, Any, TensorList, (TT_P(const Tensor&, self), TT_P(int64_t, size), TT_D(int64_t, dim, 0)), "torch.split(self, size, dim)") \
  X(split, Method, None, Any, TensorList, (TT_P(const Tensor&, self), TT_P(const IntList&, sizes), TT_D(int64_t, dim, 0)), "torch.split(self, sizes, dim)") \
  X(chunk, Method, None, Any, TensorList, (TT_P(const Tensor&, self), TT_P(int64_t, chunks), TT_D(int64_t, dim, 0)), "torch.chunk(self, chunks, dim)")

// --- indexing (ops/indexing.cpp) -------------------------------------------------------------------
#define TT_OPS_INDEXING(X) \
  X(index_select, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim), TT_P(const Tensor&, index)), "torch.index_select(self, dim, index)") \
  X(gather, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim), TT_P(const Tensor&, index)), "torch.gather(self, dim, index)") \
  X(scatter_add, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim), TT_P(const Tensor&, index), TT_P(const Tensor&, src)), "torch.scatter_add(self, dim, index, src)") \
  X(scatter_add_, MethodMut, None, Any, Tensor&, (TT_P(Tensor&, self), TT_P(int64_t, dim), TT_P(const Tensor&, index), TT_P(const Tensor&, src)), "self.scatter_add_(dim, index, src)") \
  X(masked_fill, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, mask), TT_P(Scalar, value)), "self.masked_fill(mask, value)") \
  X(masked_fill_, MethodMut, None, Any, Tensor&, (TT_P(Tensor&, self), TT_P(const Tensor&, mask), TT_P(Scalar, value)), "self.masked_fill_(mask, value)")

// --- elementwise (ops/elementwise.cpp; the unary ops are the rows of TT_UNARY_OPS) ------------------
#define TT_OPS_ELEMENTWISE(X) \
  X(add, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other), TT_D(Scalar, alpha, 1)), "torch.add(self, other, alpha=alpha)") \
  X(sub, Method, None, NoBool, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other), TT_D(Scalar, alpha, 1)), "torch.sub(self, other, alpha=alpha)") \
  X(mul, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.mul(self, other)") \
  X(div, Method, None, Floating, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.div(self, other)") \
  X(pow, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, exponent)), "torch.pow(self, exponent)") \
  X(pow, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(Scalar, scalar)), "torch.pow(self, scalar)") \
  X(maximum, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.maximum(self, other)") \
  X(minimum, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.minimum(self, other)") \
  X(eq, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.eq(self, other)") \
  X(ne, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.ne(self, other)") \
  X(lt, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.lt(self, other)") \
  X(le, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.le(self, other)") \
  X(gt, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.gt(self, other)") \
  X(ge, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.ge(self, other)") \
  X(add, Fn, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(Scalar, scalar)), "torch.add(self, scalar)") \
  X(sub, Fn, None, NoBool, Tensor, (TT_P(const Tensor&, self), TT_P(Scalar, scalar)), "torch.sub(self, scalar)") \
  X(mul, Fn, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(Scalar, scalar)), "torch.mul(self, scalar)") \
  X(div, Fn, None, Floating, Tensor, (TT_P(const Tensor&, self), TT_P(Scalar, scalar)), "torch.div(self, scalar)") \
  X(where, Fn, None, Any, Tensor, (TT_P(const Tensor&, condition), TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.where(condition, self, other)") \
  X(where, Fn, None, Any, Tensor, (TT_P(const Tensor&, condition), TT_P(const Tensor&, self), TT_P(Scalar, scalar)), "torch.where(condition, self, scalar)") \
  X(where, Fn, None, Any, Tensor, (TT_P(const Tensor&, condition), TT_P(Scalar, scalar), TT_P(const Tensor&, other)), "torch.where(condition, scalar, other)") \
  X(add_, OwnMut, None, Any, Tensor&, (TT_P(Tensor&, self), TT_P(const Tensor&, other), TT_D(Scalar, alpha, 1)), "self.add_(other, alpha=alpha)") \
  X(add_, OwnMut, None, Any, Tensor&, (TT_P(Tensor&, self), TT_P(Scalar, scalar)), "self.add_(scalar)") \
  X(sub_, OwnMut, None, NoBool, Tensor&, (TT_P(Tensor&, self), TT_P(const Tensor&, other), TT_D(Scalar, alpha, 1)), "self.sub_(other, alpha=alpha)") \
  X(sub_, OwnMut, None, NoBool, Tensor&, (TT_P(Tensor&, self), TT_P(Scalar, scalar)), "self.sub_(scalar)") \
  X(mul_, OwnMut, None, Any, Tensor&, (TT_P(Tensor&, self), TT_P(const Tensor&, other)), "self.mul_(other)") \
  X(mul_, OwnMut, None, Any, Tensor&, (TT_P(Tensor&, self), TT_P(Scalar, scalar)), "self.mul_(scalar)") \
  X(div_, OwnMut, None, FloatOnly, Tensor&, (TT_P(Tensor&, self), TT_P(const Tensor&, other)), "self.div_(other)") \
  X(div_, OwnMut, None, FloatOnly, Tensor&, (TT_P(Tensor&, self), TT_P(Scalar, scalar)), "self.div_(scalar)") \
  X(neg_, OwnMut, None, NoBool, Tensor&, (TT_P(Tensor&, self)), "self.neg_()") \
  X(exp_, OwnMut, None, FloatOnly, Tensor&, (TT_P(Tensor&, self)), "self.exp_()") \
  X(relu_, OwnMut, None, NoBool, Tensor&, (TT_P(Tensor&, self)), "self.relu_()") \
  TT_UNARY_OPS(X##_UNARY)

// A unary table row (core/op_table.h) as a registry row: a Method, tt::fn(self), PyTorch's torch.fn.
#define TT_UNARY_AS_OP(X, Enum, fn, node, dtypes, ...) \
  X(fn, Method, None, dtypes, Tensor, (TT_P(const Tensor&, self)), "torch." #fn "(self)")

// --- reductions (ops/reduction.cpp): a DimList takes {0, 2}, a Shape or one dim ---------------------
#define TT_OPS_REDUCTION(X) \
  X(sum, Method, Float32, Any, Tensor, (TT_P(const Tensor&, self)), "torch.sum(self)") \
  X(sum, Method, Same, Any, Tensor, (TT_P(const Tensor&, self), TT_P(DimList, dims), TT_D(bool, keepdim, false)), "torch.sum(self, dims, keepdim=keepdim)") \
  X(mean, Method, Float32, FloatOnly, Tensor, (TT_P(const Tensor&, self)), "torch.mean(self)") \
  X(mean, Method, Same, FloatOnly, Tensor, (TT_P(const Tensor&, self), TT_P(DimList, dims), TT_D(bool, keepdim, false)), "torch.mean(self, dims, keepdim=keepdim)") \
  X(max, Method, None, Any, Tensor, (TT_P(const Tensor&, self)), "torch.max(self)") \
  X(max, Method, None, Any, TensorPair, (TT_P(const Tensor&, self), TT_P(int64_t, dim), TT_D(bool, keepdim, false)), "torch.max(self, dim, keepdim=keepdim)") \
  X(min, Method, None, Any, Tensor, (TT_P(const Tensor&, self)), "torch.min(self)") \
  X(min, Method, None, Any, TensorPair, (TT_P(const Tensor&, self), TT_P(int64_t, dim), TT_D(bool, keepdim, false)), "torch.min(self, dim, keepdim=keepdim)") \
  X(argmax, Method, None, NoBool, Tensor, (TT_P(const Tensor&, self)), "torch.argmax(self)") \
  X(argmax, Method, None, NoBool, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim), TT_D(bool, keepdim, false)), "torch.argmax(self, dim, keepdim=keepdim)") \
  X(argmin, Method, None, NoBool, Tensor, (TT_P(const Tensor&, self)), "torch.argmin(self)") \
  X(argmin, Method, None, NoBool, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim), TT_D(bool, keepdim, false)), "torch.argmin(self, dim, keepdim=keepdim)") \
  X(amax, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_D(DimList, dims, {}), TT_D(bool, keepdim, false)), "torch.amax(self, dims, keepdim=keepdim)") \
  X(amin, Method, None, Any, Tensor, (TT_P(const Tensor&, self), TT_D(DimList, dims, {}), TT_D(bool, keepdim, false)), "torch.amin(self, dims, keepdim=keepdim)") \
  X(var, Method, None, FloatOnly, Tensor, (TT_P(const Tensor&, self)), "torch.var(self)") \
  X(var, Method, None, FloatOnly, Tensor, (TT_P(const Tensor&, self), TT_P(DimList, dims), TT_D(int64_t, correction, 1), TT_D(bool, keepdim, false)), "torch.var(self, dims, correction=correction, keepdim=keepdim)") \
  X(std, Method, None, FloatOnly, Tensor, (TT_P(const Tensor&, self)), "torch.std(self)") \
  X(std, Method, None, FloatOnly, Tensor, (TT_P(const Tensor&, self), TT_P(DimList, dims), TT_D(int64_t, correction, 1), TT_D(bool, keepdim, false)), "torch.std(self, dims, correction=correction, keepdim=keepdim)")

// --- matrix products (ops/linalg.cpp) ------------------------------------------------------------
#define TT_OPS_LINALG(X) \
  X(matmul, Method, Lower, NoBool, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.matmul(self, other)") \
  X(mm, Method, Lower, NoBool, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.mm(self, other)") \
  X(bmm, Method, Lower, NoBool, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.bmm(self, other)") \
  X(dot, Method, None, NoBool, Tensor, (TT_P(const Tensor&, self), TT_P(const Tensor&, other)), "torch.dot(self, other)") \
  X(linear, F, Lower, NoBool, Tensor, (TT_P(const Tensor&, input), TT_P(const Tensor&, weight), TT_D(const Tensor&, bias, Tensor())), "torch.nn.functional.linear(input, weight, bias)")

// --- activations (ops/activation.cpp): fused kernels with their own backward, and composites ------
#define TT_OPS_ACTIVATION(X) \
  X(softmax, MethodF, Float32, FloatOnly, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim)), "torch.softmax(self, dim)") \
  X(log_softmax, MethodF, Float32, FloatOnly, Tensor, (TT_P(const Tensor&, self), TT_P(int64_t, dim)), "torch.log_softmax(self, dim)") \
  X(gelu, F, None, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_D(const std::string&, approximate, "none")), "torch.nn.functional.gelu(input, approximate=approximate)") \
  X(silu, F, None, FloatOnly, Tensor, (TT_P(const Tensor&, input)), "torch.nn.functional.silu(input)") \
  X(leaky_relu, F, None, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_D(double, negative_slope, 0.01)), "torch.nn.functional.leaky_relu(input, negative_slope)") \
  /* softplus(x) = log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (PyTorch's    \
     cut-off, which keeps its gradient exactly 1 there). Computed as max(z, 0) + log1p(exp(-|z|)),  \
     z = beta x, so no exp overflows for any x; its derivative is sigmoid(beta x). A composite of    \
     elementwise ops (ops/activation.cpp): autograd differentiates it to any order. */               \
  X(softplus, F, Float32, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_D(double, beta, 1.0), TT_D(double, threshold, 20.0)), "torch.nn.functional.softplus(input, beta, threshold)") \
  X(softmax_backward, Fn, None, FloatOnly, Tensor, (TT_P(const Tensor&, grad_out), TT_P(const Tensor&, out), TT_P(int64_t, dim)), "") \
  X(log_softmax_backward, Fn, None, FloatOnly, Tensor, (TT_P(const Tensor&, grad_out), TT_P(const Tensor&, out), TT_P(int64_t, dim)), "") \
  X(gelu_backward, Fn, None, FloatOnly, Tensor, (TT_P(const Tensor&, grad_out), TT_P(const Tensor&, input), TT_D(const std::string&, approximate, "none")), "")

// --- normalization over the trailing dims (ops/normalization.cpp) ---------------------------------
#define TT_OPS_NORMALIZATION(X) \
  X(layer_norm, F, Float32, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_P(const Shape&, normalized_shape), TT_D(const Tensor&, weight, Tensor()), TT_D(const Tensor&, bias, Tensor()), TT_D(double, eps, 1e-5)), "torch.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)") \
  X(rms_norm, F, Float32, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_P(const Shape&, normalized_shape), TT_D(const Tensor&, weight, Tensor()), TT_D(std::optional<double>, eps, std::nullopt)), "fx.rms_norm_reference(input, normalized_shape, weight, eps)")

// --- losses (ops/loss.cpp; their F:: forms with options structs are in nn/loss.h) -----------------
#define TT_OPS_LOSS(X) \
  X(mse_loss, Fn, Float32, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_P(const Tensor&, target), TT_D(Reduction, reduction, kMean)), "torch.nn.functional.mse_loss(input, target, reduction=reduction)") \
  X(l1_loss, Fn, None, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_P(const Tensor&, target), TT_D(Reduction, reduction, kMean)), "torch.nn.functional.l1_loss(input, target, reduction=reduction)") \
  X(cross_entropy, Fn, Float32, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_P(const Tensor&, target), TT_D(const Tensor&, weight, Tensor()), TT_D(Reduction, reduction, kMean), TT_D(int64_t, ignore_index, kDefaultIgnoreIndex), TT_D(double, label_smoothing, 0.0)), "torch.nn.functional.cross_entropy(input, target, weight, reduction=reduction, ignore_index=ignore_index, label_smoothing=label_smoothing)") \
  X(nll_loss, Fn, Float32, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_P(const Tensor&, target), TT_D(const Tensor&, weight, Tensor()), TT_D(Reduction, reduction, kMean), TT_D(int64_t, ignore_index, kDefaultIgnoreIndex)), "torch.nn.functional.nll_loss(input, target, weight, reduction=reduction, ignore_index=ignore_index)") \
  X(binary_cross_entropy, Fn, Float32, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_P(const Tensor&, target), TT_D(const Tensor&, weight, Tensor()), TT_D(Reduction, reduction, kMean)), "torch.nn.functional.binary_cross_entropy(input, target, weight, reduction=reduction)") \
  X(binary_cross_entropy_with_logits, Fn, Float32, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_P(const Tensor&, target), TT_D(const Tensor&, weight, Tensor()), TT_D(const Tensor&, pos_weight, Tensor()), TT_D(Reduction, reduction, kMean)), "torch.nn.functional.binary_cross_entropy_with_logits(input, target, weight, reduction=reduction, pos_weight=pos_weight)")

// --- attention (ops/attention.cpp) ---------------------------------------------------------------
#define TT_OPS_ATTENTION(X) \
  X(scaled_dot_product_attention, F, Lower, FloatOnly, Tensor, (TT_P(const Tensor&, query), TT_P(const Tensor&, key), TT_P(const Tensor&, value), TT_D(const Tensor&, attn_mask, Tensor()), TT_D(double, dropout_p, 0.0), TT_D(bool, is_causal, false), TT_D(std::optional<double>, scale, std::nullopt), TT_D(bool, enable_gqa, false), TT_D(Generator*, gen, nullptr)), "fx.sdpa_reference(query, key, attn_mask, value, is_causal, scale, enable_gqa)[1]") \
  X(attention_weights, F, None, FloatOnly, Tensor, (TT_P(const Tensor&, query), TT_P(const Tensor&, key), TT_D(const Tensor&, attn_mask, Tensor()), TT_D(bool, is_causal, false), TT_D(std::optional<double>, scale, std::nullopt), TT_D(bool, enable_gqa, false)), "fx.sdpa_reference(query, key, attn_mask, None, is_causal, scale, enable_gqa)[0]")

// --- embedding lookup (ops/embedding.cpp; F::embedding takes the indices first, nn/functional.h) --
#define TT_OPS_EMBEDDING(X) \
  X(embedding, Fn, None, Any, Tensor, (TT_P(const Tensor&, weight), TT_P(const Tensor&, indices), TT_D(std::optional<int64_t>, padding_idx, std::nullopt)), "torch.nn.functional.embedding(indices, weight, padding_idx)")

// --- dropout (ops/dropout.cpp; F::dropout is LibTorch's spelling, nn/functional.h) ----------------
#define TT_OPS_DROPOUT(X) \
  X(dropout, Fn, None, FloatOnly, Tensor, (TT_P(const Tensor&, input), TT_P(double, p), TT_D(bool, train, true), TT_D(Generator*, gen, nullptr)), "torch.dropout(input, p, train)")

// --- factories (ops/factory.cpp): a TensorOptions parameter takes a case's "dtype" ------------------
// Not here: tensor({...}) and from_blob, which make tensors from host data (ops/factory.h).
#define TT_OPS_FACTORY(X) \
  X(empty, Fn, None, Any, Tensor, (TT_P(const Shape&, shape), TT_D(const TensorOptions&, options, {})), "torch.empty(shape, dtype=fx.dtype(options))") \
  X(zeros, Fn, None, Any, Tensor, (TT_P(const Shape&, shape), TT_D(const TensorOptions&, options, {})), "torch.zeros(shape, dtype=fx.dtype(options))") \
  X(ones, Fn, None, Any, Tensor, (TT_P(const Shape&, shape), TT_D(const TensorOptions&, options, {})), "torch.ones(shape, dtype=fx.dtype(options))") \
  X(full, Fn, None, Any, Tensor, (TT_P(const Shape&, shape), TT_P(Scalar, value), TT_D(const TensorOptions&, options, {})), "torch.full(shape, value, dtype=fx.dtype(options))") \
  X(empty_like, Fn, None, Any, Tensor, (TT_P(const Tensor&, self)), "torch.empty_like(self)") \
  X(zeros_like, Fn, None, Any, Tensor, (TT_P(const Tensor&, self)), "torch.zeros_like(self)") \
  X(ones_like, Fn, None, Any, Tensor, (TT_P(const Tensor&, self)), "torch.ones_like(self)") \
  X(full_like, Fn, None, Any, Tensor, (TT_P(const Tensor&, self), TT_P(Scalar, value)), "torch.full_like(self, value)") \
  X(rand_like, Fn, None, FloatOnly, Tensor, (TT_P(const Tensor&, self)), "") \
  X(randn_like, Fn, None, FloatOnly, Tensor, (TT_P(const Tensor&, self)), "") \
  X(arange, Fn, None, Any, Tensor, (TT_P(Scalar, end), TT_P(const TensorOptions&, options)), "torch.arange(end, dtype=fx.dtype(options))") \
  X(arange, Fn, None, Any, Tensor, (TT_P(Scalar, start), TT_P(Scalar, end), TT_P(Scalar, step), TT_P(const TensorOptions&, options)), "torch.arange(start, end, step, dtype=fx.dtype(options))") \
  X(arange, Fn, None, Any, Tensor, (TT_P(Scalar, end)), "torch.arange(end)") \
  X(arange, Fn, None, Any, Tensor, (TT_P(Scalar, start), TT_P(Scalar, end), TT_D(Scalar, step, 1)), "torch.arange(start, end, step)") \
  X(linspace, Fn, None, Any, Tensor, (TT_P(double, start), TT_P(double, end), TT_P(int64_t, steps), TT_D(const TensorOptions&, options, {})), "torch.linspace(start, end, steps, dtype=fx.dtype(options))") \
  X(eye, Fn, None, Any, Tensor, (TT_P(int64_t, n), TT_D(const TensorOptions&, options, {})), "torch.eye(n, dtype=fx.dtype(options))") \
  X(eye, Fn, None, Any, Tensor, (TT_P(int64_t, n), TT_P(int64_t, m), TT_D(const TensorOptions&, options, {})), "torch.eye(n, m, dtype=fx.dtype(options))") \
  X(rand, Fn, None, FloatOnly, Tensor, (TT_P(const Shape&, shape), TT_D(const TensorOptions&, options, {}), TT_D(Generator*, gen, nullptr)), "") \
  X(randn, Fn, None, FloatOnly, Tensor, (TT_P(const Shape&, shape), TT_D(const TensorOptions&, options, {}), TT_D(Generator*, gen, nullptr)), "") \
  X(randint, Fn, None, Any, Tensor, (TT_P(int64_t, low), TT_P(int64_t, high), TT_P(const Shape&, shape), TT_D(const TensorOptions&, options, kInt64), TT_D(Generator*, gen, nullptr)), "") \
  X(randint, Fn, None, Any, Tensor, (TT_P(int64_t, high), TT_P(const Shape&, shape), TT_D(const TensorOptions&, options, kInt64), TT_D(Generator*, gen, nullptr)), "") \
  X(scalar_tensor, Fn, None, Any, Tensor, (TT_P(Scalar, value), TT_D(const TensorOptions&, options, {})), "torch.scalar_tensor(value, dtype=fx.dtype(options))")

#define TT_OPS(X) \
  TT_OPS_VIEW(X) TT_OPS_COPY(X) TT_OPS_JOIN(X) TT_OPS_INDEXING(X) TT_OPS_ELEMENTWISE(X) TT_OPS_REDUCTION(X) \
  TT_OPS_LINALG(X) TT_OPS_ACTIVATION(X) TT_OPS_NORMALIZATION(X) TT_OPS_LOSS(X) TT_OPS_ATTENTION(X) \
  TT_OPS_EMBEDDING(X) TT_OPS_DROPOUT(X) TT_OPS_FACTORY(X)

// Other names the test fixtures use for an op: X(alias, name). The reference suite and the fixture
// generator take a case's op `alias` as the registry's `name`.
#define TT_OP_ALIASES(X) X(sdpa, scaled_dot_product_attention)

// F:: names for table ops (their rows come from TT_UNARY_OPS, which has no surface column).
#define TT_F_TABLE_OPS(X) X(relu) X(sigmoid) X(tanh)
// clang-format on

// --- parameter lists ------------------------------------------------------------------------------
// TT_PARAMS(M, (a, b, ...)) is M a, M b, ...: each parameter (type, name, default) through M.
// TT_PARAMS_TAIL drops the first (a method's self); TT_PARAMS_SELF gives the first to S.
#define TT_PARAM_DECL(T, n, d, k) T n d
#define TT_PARAM_DEF(T, n, d, k) T n
#define TT_PARAM_NAME(T, n, d, k) n
#define TT_PARAM_THIS(T, n, d, k) *this
#define TT_REG_CAT_(a, b) a##b
#define TT_REG_CAT(a, b) TT_REG_CAT_(a, b)
#define TT_REG_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, n, ...) n
#define TT_REG_NARGS(...) TT_REG_NARGS_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define TT_REG_UNPAREN(...) __VA_ARGS__
// Rest_k(M, a...): ", M a" for each of k parameters.
#define TT_REG_REST_0(M)
#define TT_REG_REST_1(M, a) , M a
#define TT_REG_REST_2(M, a, ...) , M a TT_REG_REST_1(M, __VA_ARGS__)
#define TT_REG_REST_3(M, a, ...) , M a TT_REG_REST_2(M, __VA_ARGS__)
#define TT_REG_REST_4(M, a, ...) , M a TT_REG_REST_3(M, __VA_ARGS__)
#define TT_REG_REST_5(M, a, ...) , M a TT_REG_REST_4(M, __VA_ARGS__)
#define TT_REG_REST_6(M, a, ...) , M a TT_REG_REST_5(M, __VA_ARGS__)
#define TT_REG_REST_7(M, a, ...) , M a TT_REG_REST_6(M, __VA_ARGS__)
#define TT_REG_REST_8(M, a, ...) , M a TT_REG_REST_7(M, __VA_ARGS__)
#define TT_REG_REST_9(M, a, ...) , M a TT_REG_REST_8(M, __VA_ARGS__)
#define TT_REG_REST_10(M, a, ...) , M a TT_REG_REST_9(M, __VA_ARGS__)
#define TT_REG_REST_11(M, a, ...) , M a TT_REG_REST_10(M, __VA_ARGS__)
// First_n(S, M, a, rest...): "S a, M rest..."; Tail_n(M, a, rest...): "M rest..." (no comma first).
// n counts the whole list (a row has at least one parameter), so no macro sees an empty list.
#define TT_REG_FIRST_1(S, M, a) S a
#define TT_REG_FIRST_N(S, M, a, ...) S a TT_REG_CAT(TT_REG_REST_, TT_REG_NARGS(__VA_ARGS__))(M, __VA_ARGS__)
#define TT_REG_FIRST_2 TT_REG_FIRST_N
#define TT_REG_FIRST_3 TT_REG_FIRST_N
#define TT_REG_FIRST_4 TT_REG_FIRST_N
#define TT_REG_FIRST_5 TT_REG_FIRST_N
#define TT_REG_FIRST_6 TT_REG_FIRST_N
#define TT_REG_FIRST_7 TT_REG_FIRST_N
#define TT_REG_FIRST_8 TT_REG_FIRST_N
#define TT_REG_FIRST_9 TT_REG_FIRST_N
#define TT_REG_FIRST_10 TT_REG_FIRST_N
#define TT_REG_FIRST_11 TT_REG_FIRST_N
#define TT_REG_FIRST_12 TT_REG_FIRST_N
#define TT_REG_FIRST(S, M, ...) TT_REG_CAT(TT_REG_FIRST_, TT_REG_NARGS(__VA_ARGS__))(S, M, __VA_ARGS__)
#define TT_REG_TAIL_1(M, a)
#define TT_REG_TAIL_N(M, a, b, ...) M b TT_REG_CAT(TT_REG_REST_, TT_REG_NARGS(__VA_ARGS__))(M, __VA_ARGS__)
#define TT_REG_TAIL_2(M, a, b) M b
#define TT_REG_TAIL_3 TT_REG_TAIL_N
#define TT_REG_TAIL_4 TT_REG_TAIL_N
#define TT_REG_TAIL_5 TT_REG_TAIL_N
#define TT_REG_TAIL_6 TT_REG_TAIL_N
#define TT_REG_TAIL_7 TT_REG_TAIL_N
#define TT_REG_TAIL_8 TT_REG_TAIL_N
#define TT_REG_TAIL_9 TT_REG_TAIL_N
#define TT_REG_TAIL_10 TT_REG_TAIL_N
#define TT_REG_TAIL_11 TT_REG_TAIL_N
#define TT_REG_TAIL_12 TT_REG_TAIL_N
#define TT_PARAMS_(M, ...) TT_REG_FIRST(M, M, __VA_ARGS__)
#define TT_PARAMS(M, params) TT_PARAMS_(M, TT_REG_UNPAREN params)
#define TT_PARAMS_SELF_(S, M, ...) TT_REG_FIRST(S, M, __VA_ARGS__)
#define TT_PARAMS_SELF(S, M, params) TT_PARAMS_SELF_(S, M, TT_REG_UNPAREN params)
#define TT_PARAMS_TAIL_(M, ...) TT_REG_CAT(TT_REG_TAIL_, TT_REG_NARGS(__VA_ARGS__))(M, __VA_ARGS__)
#define TT_PARAMS_TAIL(M, params) TT_PARAMS_TAIL_(M, TT_REG_UNPAREN params)

// --- the standard consumers -----------------------------------------------------------------------
// TT_DECLARE_OP: the function's declaration, with its defaults (ops/*.h).
#define TT_DECLARE_OP(name, surface, autocast, dtypes, ret, params, ...) \
  TT_REG_CAT(TT_DECLARE_OP_, surface)(name, ret, params)
#define TT_DECLARE_OP_Fn(name, ret, params) ret name(TT_PARAMS(TT_PARAM_DECL, params));
#define TT_DECLARE_OP_Method TT_DECLARE_OP_Fn
#define TT_DECLARE_OP_MethodMut TT_DECLARE_OP_Fn
#define TT_DECLARE_OP_F TT_DECLARE_OP_Fn
#define TT_DECLARE_OP_MethodF TT_DECLARE_OP_Fn
#define TT_DECLARE_OP_Own(name, ret, params)
#define TT_DECLARE_OP_OwnMut(name, ret, params)
#define TT_DECLARE_OP_UNARY(...) TT_UNARY_AS_OP(TT_DECLARE_OP, __VA_ARGS__)

// TT_DECLARE_METHOD: inside class Tensor, the method of each Method / MethodMut / MethodF row.
#define TT_DECLARE_METHOD(name, surface, autocast, dtypes, ret, params, ...) \
  TT_REG_CAT(TT_DECLARE_METHOD_, surface)(name, ret, params)
#define TT_DECLARE_METHOD_UNARY(...) TT_UNARY_AS_OP(TT_DECLARE_METHOD, __VA_ARGS__)
#define TT_DECLARE_METHOD_Fn(name, ret, params)
#define TT_DECLARE_METHOD_F(name, ret, params)
#define TT_DECLARE_METHOD_Method(name, ret, params) ret name(TT_PARAMS_TAIL(TT_PARAM_DECL, params)) const;
#define TT_DECLARE_METHOD_MethodF TT_DECLARE_METHOD_Method
#define TT_DECLARE_METHOD_MethodMut(name, ret, params) ret name(TT_PARAMS_TAIL(TT_PARAM_DECL, params));
#define TT_DECLARE_METHOD_Own TT_DECLARE_METHOD_Method
#define TT_DECLARE_METHOD_OwnMut TT_DECLARE_METHOD_MethodMut

// TT_DEFINE_METHOD: the method's body, which calls tt::name with *this first (ops/tensor_methods.cpp).
#define TT_DEFINE_METHOD(name, surface, autocast, dtypes, ret, params, ...) \
  TT_REG_CAT(TT_DEFINE_METHOD_, surface)(name, ret, params)
#define TT_DEFINE_METHOD_UNARY(...) TT_UNARY_AS_OP(TT_DEFINE_METHOD, __VA_ARGS__)
#define TT_DEFINE_METHOD_Fn(name, ret, params)
#define TT_DEFINE_METHOD_F(name, ret, params)
#define TT_DEFINE_METHOD_Method(name, ret, params)                    \
  ret Tensor::name(TT_PARAMS_TAIL(TT_PARAM_DEF, params)) const {        \
    return tt::name(TT_PARAMS_SELF(TT_PARAM_THIS, TT_PARAM_NAME, params)); \
  }
#define TT_DEFINE_METHOD_MethodF TT_DEFINE_METHOD_Method
#define TT_DEFINE_METHOD_Own(name, ret, params)
#define TT_DEFINE_METHOD_OwnMut(name, ret, params)
#define TT_DEFINE_METHOD_MethodMut(name, ret, params)                 \
  ret Tensor::name(TT_PARAMS_TAIL(TT_PARAM_DEF, params)) {              \
    return tt::name(TT_PARAMS_SELF(TT_PARAM_THIS, TT_PARAM_NAME, params)); \
  }

// TT_USING_F: `using tt::name;` in namespace F for each F / MethodF row (nn/functional.h).
#define TT_USING_F(name, surface, ...) TT_REG_CAT(TT_USING_F_, surface)(name)
#define TT_USING_F_UNARY(...)
#define TT_USING_F_Fn(name)
#define TT_USING_F_Method(name)
#define TT_USING_F_MethodMut(name)
#define TT_USING_F_Own(name)
#define TT_USING_F_OwnMut(name)
#define TT_USING_F_F(name) using tt::name;
#define TT_USING_F_MethodF(name) using tt::name;
#define TT_USING_F_TABLE(name) using tt::name;

// TT_OP_CALL(surface, name, v): calls a row's op on a pack of arguments v (self first), in code
// generated from the rows (the tests): tt::name(v...), or self.name(rest...) for Own / OwnMut rows,
// which are methods only.
#define TT_OP_CALL(surface, name, v) TT_REG_CAT(TT_OP_CALL_, surface)(name, v)
#define TT_OP_CALL_Fn(name, v) tt::name(v...)
#define TT_OP_CALL_Method TT_OP_CALL_Fn
#define TT_OP_CALL_MethodMut TT_OP_CALL_Fn
#define TT_OP_CALL_F TT_OP_CALL_Fn
#define TT_OP_CALL_MethodF TT_OP_CALL_Fn
#define TT_OP_CALL_Own(name, v) [](auto& self, auto&... rest) -> decltype(auto) { return self.name(rest...); }(v...)
#define TT_OP_CALL_OwnMut TT_OP_CALL_Own

// TT_AUTOCAST_ROW: calls TT_AUTOCAST_X(name, CastPolicy) for each op with an autocast policy, once
// per op (amp/autocast.h defines TT_AUTOCAST_X to build its enum and tables).
#define TT_AUTOCAST_ROW(name, surface, autocast, ...) TT_REG_CAT(TT_AUTOCAST_ROW_, autocast)(name)
#define TT_AUTOCAST_ROW_UNARY(...)
#define TT_AUTOCAST_ROW_None(name)
#define TT_AUTOCAST_ROW_Same(name)
#define TT_AUTOCAST_ROW_Lower(name) TT_AUTOCAST_X(name, LowerPrecision)
#define TT_AUTOCAST_ROW_Float32(name) TT_AUTOCAST_X(name, Float32)
