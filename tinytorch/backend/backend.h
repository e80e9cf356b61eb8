// The device seam: a plain list of the kernels a device must provide. ops/ calls these through
// backend_for(device) and never touches raw memory itself; a backend knows nothing about
// autograd. Kernels read data, shapes and strides from the tensors they are given and write
// into `out` tensors that the op has already allocated with the right shape and dtype.
//
// Shape legend used in comments: B batch, M/N/K matrix sizes, "bcast" = broadcastable to out.
#pragma once

#include <cstdint>
#include <vector>

#include "tinytorch/backend/kernel_args.h"
#include "tinytorch/backend/op_table.h"
#include "tinytorch/core/device.h"
#include "tinytorch/core/scalar.h"
#include "tinytorch/core/tensor.h"

namespace tt {

class Backend {
 public:
  virtual ~Backend() = default;

  // out[i] = src[i], converting dtype. out: [*]; src: bcast to out (any strides).
  virtual void copy(const Tensor& out, const Tensor& src) = 0;
  // out[i] = value. out: [*], any strides.
  virtual void fill(const Tensor& out, Scalar value) = 0;
  // out = op(in). out, in: same shape and dtype, any strides.
  virtual void unary(UnaryOp op, const Tensor& out, const Tensor& in) = 0;
  // out = op(a, b). a, b: same dtype, bcast to out. out: that dtype, or bool for comparisons.
  // `out` may alias `a` exactly (in-place ops). `b` may be a 0-d CPU tensor holding a wrapped
  // scalar whatever this backend's device is.
  virtual void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) = 0;
  // out = cond ? a : b. cond: bool; a, b: out's dtype; all bcast to out.
  virtual void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) = 0;
  // Reduces `in` over every dim where out.size(d) == 1 and in.size(d) != 1 (out keeps dims).
  // out: in's shape with reduced dims of size 1; dtype = in's (int64 for arg ops).
  virtual void reduce(ReduceOp op, const Tensor& out, const Tensor& in) = 0;
  // out = a @ b + beta * out. a: [B.., M, K], b: [B.., K, N], out: [B.., M, N], float dtypes.
  // Batch dims of a and b are already broadcast to out's (stride 0 allowed).
  virtual void gemm(const Tensor& out, const Tensor& a, const Tensor& b, double beta) = 0;
  // --- GEMMs with linear's bias folded in (ops/linalg.cpp: linear and its backward) -------------
  // out = a @ b + bias. out: [M, N], last-dim stride 1; a: [M, K], b: [K, N], each blas_compatible;
  // bias: out's shape and dtype, a bias row broadcast down the rows (strides [0, 1] as expand gives).
  // One float dtype. CUDA adds the bias in cuBLASLt's epilogue (cuda/linear.cu); the CPU twin
  // starts each row of out as the bias and accumulates the product onto it (beta = 1).
  virtual void gemm_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) = 0;
  // out = a @ b and grad_bias = the sums of a's rows (over K), in one pass where the device can
  // (cuBLASLt's BGRADB epilogue): with a = g^T, b = x, linear's weight and bias gradients.
  // out: [M, N], last-dim stride 1; a, b: as gemm_bias; grad_bias: [M, 1] contiguous, out's dtype.
  virtual void gemm_bias_grad(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& grad_bias) = 0;
  // out = in.index_select(dim, index). index: int64 [n]; out: in's shape with size n at dim.
  virtual void index_select(const Tensor& out, const Tensor& in, int dim, const Tensor& index) = 0;
  // out[..i..] = in[..index[..i..]..] along dim. index: int64, out's shape.
  virtual void gather(const Tensor& out, const Tensor& in, int dim, const Tensor& index) = 0;
  // out[..index[..i..]..] += src[..i..] along dim. index, src: same shape.
  virtual void scatter_add(const Tensor& out, int dim, const Tensor& index, const Tensor& src) = 0;
  // Counter-based random numbers: element i of `out` (contiguous) depends only on
  // (seed, offset + i), so results do not depend on thread count or device.
  virtual void uniform(const Tensor& out, double low, double high, uint64_t seed, uint64_t offset) = 0;
  virtual void normal(const Tensor& out, double mean, double std, uint64_t seed, uint64_t offset) = 0;
  virtual void randint(const Tensor& out, int64_t low, int64_t high, uint64_t seed, uint64_t offset) = 0;
  // out[i] = start + i * step. out: contiguous [n].
  virtual void arange(const Tensor& out, double start, double step) = 0;
  // Moves bytes between devices. out, src: contiguous, same dtype and numel; one of them is on
  // this backend's device and the other on the CPU (or both on this device).
  virtual void transfer(const Tensor& out, const Tensor& src) = 0;

  // --- activations (ops/activation.cpp) --------------------------------------------------------
  // Softmax over `dim`, fused and stable: out = exp(in - max) / sum(exp(in - max)), or with
  // log = true out = in - max - log(sum(exp(in - max))). in, out: same shape, float dtype, any
  // strides. A 0-d tensor is one row of one element. A row whose elements are all -inf gives
  // zeros (softmax) or -inf (log_softmax), never NaN; see ops/activation.h.
  virtual void softmax(const Tensor& out, const Tensor& in, int dim, bool log) = 0;
  // The fused backward of softmax from its output `out` (sums over `dim`):
  //   softmax:     grad_in = out * (grad_out - sum(grad_out * out))
  //   log_softmax: grad_in = grad_out - exp(out) * sum(grad_out)
  // grad_in, grad_out, out: same shape and float dtype, any strides (grad_out may be expanded).
  virtual void softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int dim,
                                bool log) = 0;
  // out = op(in); param is LeakyRelu's negative slope (unused by the others). out, in: same
  // shape and float dtype, any strides.
  virtual void activation(ActivationOp op, const Tensor& out, const Tensor& in, double param) = 0;
  // grad_in = grad_out * op'(in). grad_in, in: same shape and float dtype; grad_out: bcast to it.
  virtual void activation_backward(ActivationOp op, const Tensor& grad_in, const Tensor& grad_out,
                                   const Tensor& in, double param) = 0;

  // --- normalization (ops/normalization.cpp) ---------------------------------------------------
  // Rows of C elements normalized over the last dim, fused (Note [normalization rows] in
  // cpu/normalization.cpp). x, y, dy, dx: [R, C] contiguous, one float dtype; weight, bias: [C]
  // contiguous or undefined (no affine); mean, rstd: [R] contiguous float64 whatever x's dtype
  // (float32 rows accumulate in float lanes folded into a double; Note [split mean] in
  // cpu/normalization.cpp says why the mean stays in float64).
  // layer_norm:  mean = sum(x)/C, rstd = 1/sqrt(sum((x - mean)^2)/C + eps),
  //              y = (x - mean) * rstd * weight + bias
  virtual void layer_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                          const Tensor& weight, const Tensor& bias, double eps) = 0;
  // With xhat = (x - mean) * rstd and g = dy * weight (dy without weight):
  //   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (means over the row)
  //   dweight = sum over rows of dy * xhat, dbias = sum over rows of dy   ([C], full reductions)
  // Any of dx, dweight, dbias may be undefined (not wanted). The row sums are taken over fixed
  // blocks of rows in a fixed order, so results do not depend on the thread count.
  virtual void layer_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                                   const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                   const Tensor& weight) = 0;
  // rms_norm: rstd = 1/sqrt(sum(x^2)/C + eps), y = x * rstd * weight.
  virtual void rms_norm(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& weight, double eps) = 0;
  // With xhat = x * rstd, g = dy * weight: dx = rstd * (g - xhat * mean(g * xhat)),
  // dweight = sum over rows of dy * xhat. dx or dweight may be undefined; deterministic as above.
  virtual void rms_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dy, const Tensor& x,
                                 const Tensor& rstd, const Tensor& weight) = 0;

  // --- attention (ops/attention.cpp) -----------------------------------------------------------
  // Fused scaled dot-product attention (Note [fused attention on the CPU] in cpu/attention.cpp):
  //   S = scale * Q K^T + bias (keys j > i dropped when causal),  P = softmax(S) per row,  O = P V
  // q: [B, Hq, Tq, D], k: [B, Hkv, Tk, D], v: [B, Hkv, Tk, Dv], Hkv dividing Hq (query head h
  // reads key/value head h / (Hq / Hkv)); last dim stride 1, row stride >= the last dim (BLAS
  // reads the rows), other strides any. bias: undefined,
  // or q's dtype with shape [B, Hq, Tq, Tk] and any strides (0 for broadcast dims); -inf forbids.
  // out: [B, Hq, Tq, Dv], last dim stride 1. weights: [B, Hq, Tq, Tk] contiguous, receives P
  // (exactly 0 where masked, and for a whole row with nothing to attend to). Float dtypes; all
  // sizes > 0.
  virtual void attention_forward(const Tensor& out, const Tensor& weights, const Tensor& q, const Tensor& k,
                                 const Tensor& v, const Tensor& bias, const AttentionArgs& args) = 0;
  // From dout ([B, Hq, Tq, Dv], last dim stride 1) and the forward's weights P:
  //   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)) * scale,  dQ = dS K,  dK = dS^T Q
  // dq: q's shape; dk, dv: k's and v's shapes, ZERO-FILLED by the caller (they accumulate over
  // the query heads of a group); last dim stride 1 each.
  virtual void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                  const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                                  const AttentionArgs& args) = 0;

  // Flash attention (Note [flash attention on the CPU] in cpu/flash_attention.cpp): the same
  // output as attention_forward, computed in tiles with an online softmax, without any [Tq, Tk]
  // buffer. Arguments as attention_forward, except lse: [B, Hq, Tq] contiguous in q's compute
  // dtype (float32 for bf16 q), receiving each row's logsumexp of the scaled, masked scores (-inf
  // for a row with nothing to attend to, whose output is 0).
  virtual void flash_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& bias, const AttentionArgs& args) = 0;
  // FlashAttention-2's backward from the forward's out and lse, scores rebuilt tile by tile:
  //   Dvec = rowsum(dO * O), P = exp(S - lse), dV = P^T dO, dS = P * (dO V^T - Dvec) * scale,
  //   dQ = dS K, dK = dS^T Q.
  // dq, dk, dv: ZERO-FILLED by the caller (they accumulate); shapes and strides as attention_backward.
  virtual void flash_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                        const Tensor& lse, const Tensor& bias, const AttentionArgs& args) = 0;

  // --- optimizers (ops/optim_step.cpp): one pass over each tensor, PyTorch's formula order ----
  // g is the gradient, negated first when args.maximize.
  // SGD (torch.optim.SGD): d = g + wd*p; buf = first_step ? d : momentum*buf + (1-dampening)*d;
  // d = nesterov ? d + momentum*buf : buf; p -= lr*d (with momentum = 0: p -= lr*d, no buf).
  // param, grad, momentum_buf (undefined when momentum is 0): same shape, float dtype, contiguous.
  virtual void sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf,
                        const SgdStepArgs& args) = 0;
  // Adam / AdamW (torch.optim.Adam(W)): g += wd*p (Adam) or p *= 1 - lr*wd (AdamW);
  // m = beta1*m + (1-beta1)*g; v = beta2*v + (1-beta2)*g*g; vmax = max(vmax, v) with amsgrad;
  // p -= step_size * m / (sqrt(v or vmax) / bias_correction2_sqrt + eps).
  // All tensors: same shape, float dtype, contiguous; max_exp_avg_sq undefined unless amsgrad.
  virtual void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                         const Tensor& max_exp_avg_sq, const AdamStepArgs& args) = 0;
  // The same updates over a list of parameters of one device and dtype (ops/optim_step.h), one
  // launch on a GPU (Note [multi-tensor optimizer step] in cuda/optimizer.cu). Each parameter gets
  // exactly sgd_step's / adam_step's bits. Adam: args.step_size and args.bias_correction2_sqrt are
  // ignored; each parameter's are computed (adam_bias_corrections) from its `step` + 1, read on
  // the device, which is then incremented, so no host value changes from step to step.
  virtual void sgd_step_multi(const std::vector<SgdParamState>& params, const SgdStepArgs& args) = 0;
  virtual void adam_step_multi(const std::vector<AdamParamState>& params, const AdamStepArgs& args) = 0;
};

// True when the last two dims of `m` can be handed to a BLAS GEMM as they are: one of them has
// stride 1 and the other a leading dimension large enough (plain or transposed layout). ops/
// makes a matrix contiguous first only when this is false.
bool blas_compatible(const Tensor& m);

// The backend of a device. Throws DeviceError when the build or the machine cannot use it.
Backend& backend_for(const Device& device);

}  // namespace tt
