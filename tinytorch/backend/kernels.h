// The kernel registry: every kernel a device provides, listed once with its arguments marked in,
// out or in-and-out. From this list come the Backend interface (backend.h), the override lists of
// the CPU, CUDA and bf16 backends (cpu/cpu_backend.h, cuda/cuda_backend.h, bf16_compute.h) and
// Bf16Compute's widen-compute-round bodies (bf16_compute.cpp). Adding a kernel is one entry here
// plus its CPU body (backend/cpu/) and its CUDA body (backend/cuda/, the file named like the CPU
// one); a forgotten body fails the link. docs/adding_an_op.md walks through it.
//
// Note [kernel registry]
// ~~~~~~~~~~~~~~~~~~~~~~
// TT_KERNELS(X) calls X(name, bf16, ARG...) once per kernel. Each ARG says what the argument is:
//   In(t)       a tensor the kernel reads
//   Out(t)      a tensor the kernel writes (allocated by the op with its shape and dtype)
//   InOut(t)    a tensor the kernel writes after reading it (accumulates into it, or updates it)
//   Keep(t)     a tensor used in its own dtype whatever the others are (int64 indices, bool
//               masks, float64 statistics): the bf16 path passes it through
//   Val(T, v)   a value of type T, passed as it is
// and `bf16` is how Bf16Compute (Note [bf16 compute] in bf16_compute.h) runs the kernel:
//   Native      the kernel takes bf16 as it is (it moves elements, or it is a GEMM)
//   Widen       float32 stand-ins for the bf16 In/Out/InOut tensors, the float32 kernel, the
//               outputs rounded back once; InOut stand-ins start as the old values
//   CudaNative  Native where the tensors live on a GPU (its bf16 flash kernels), else Widen
//   Own         a hand-written body in bf16_compute.cpp (arguments that hold tensor lists)
// The users of the list paste "TT_KARG_<use>_" onto each ARG (`In(src)` becomes
// `TT_KARG_DECL_In(src)`, then `const Tensor& src`), so one entry gives a declaration, a call's
// argument list, and the bf16 body. Documentation goes in /* */ comments: a // comment inside the
// macro would swallow every line after it.
//
// Shape legend: B batch, M/N/K matrix sizes, "bcast" = broadcastable to out.
#pragma once

#include <cstdint>
#include <vector>

#include "tinytorch/backend/kernel_args.h"
#include "tinytorch/core/op_table.h"
#include "tinytorch/core/scalar.h"
#include "tinytorch/core/tensor.h"

// clang-format off
#define TT_KERNELS(X)                                                                                                 \
  /* --- elements ---------------------------------------------------------------------------------------- */       \
  /* out[i] = src[i], converting dtype. out: [*]; src: bcast to out (any strides). */                                \
  X(copy, Native, Out(out), In(src))                                                                                  \
  /* out[i] = value. out: [*], any strides. */                                                                       \
  X(fill, Native, Out(out), Val(Scalar, value))                                                                       \
  /* out = op(in). out, in: same shape and dtype, any strides. */                                                    \
  X(unary, Widen, Val(UnaryOp, op), Out(out), In(in))                                                                 \
  /* out = op(a, b). a, b: same dtype, bcast to out. out: that dtype, or bool for comparisons. `out` may alias */    \
  /* `a` exactly (in-place ops). `b` may be a 0-d CPU tensor holding a wrapped scalar whatever this backend's */     \
  /* device is. */                                                                                                   \
  X(binary, Widen, Val(BinaryOp, op), Out(out), In(a), In(b))                                                         \
  /* out = cond ? a : b. cond: bool; a, b: out's dtype; all bcast to out. */                                         \
  X(where, Native, Out(out), Keep(cond), In(a), In(b))                                                                \
  /* Reduces `in` over every dim where out.size(d) == 1 and in.size(d) != 1 (out keeps dims). out: in's shape */    \
  /* with reduced dims of size 1; dtype = in's (int64 for arg ops). */                                               \
  X(reduce, Widen, Val(ReduceOp, op), Out(out), In(in))                                                               \
  /* --- matrix products --------------------------------------------------------------------------------- */       \
  /* out = a @ b + beta * out. a: [B.., M, K], b: [B.., K, N], out: [B.., M, N], float dtypes. Batch dims of a */    \
  /* and b are already broadcast to out's (stride 0 allowed). */                                                     \
  X(gemm, Native, InOut(out), In(a), In(b), Val(double, beta))                                                        \
  /* GEMMs with linear's bias folded in (ops/linalg.cpp: linear and its backward). */                                \
  /* out = a @ b + bias. out: [M, N], last-dim stride 1; a: [M, K], b: [K, N], each blas_compatible; bias: out's */  \
  /* shape and dtype, a bias row broadcast down the rows (strides [0, 1] as expand gives). One float dtype. CUDA */  \
  /* adds the bias in cuBLASLt's epilogue (cuda/linear.cu); the CPU twin starts each row of out as the bias and */   \
  /* accumulates the product onto it (beta = 1). bf16 natively: the bias sum of the fallback path reduces */         \
  /* through backend_for(), so through Bf16Compute. */                                                               \
  X(gemm_bias, Native, Out(out), In(a), In(b), In(bias))                                                              \
  /* out = a @ b and grad_bias = the sums of a's rows (over K), in one pass where the device can (cuBLASLt's */      \
  /* BGRADB epilogue): with a = g^T, b = x, linear's weight and bias gradients. out: [M, N], last-dim stride 1; */   \
  /* a, b: as gemm_bias; grad_bias: [M, 1] contiguous, out's dtype. */                                               \
  X(gemm_bias_grad, Native, Out(out), In(a), In(b), Out(grad_bias))                                                   \
  /* --- indexing ---------------------------------------------------------------------------------------- */       \
  /* out = in.index_select(dim, index). index: int64 [n]; out: in's shape with size n at dim. */                     \
  X(index_select, Native, Out(out), In(in), Val(int, dim), Keep(index))                                               \
  /* out[..i..] = in[..index[..i..]..] along dim. index: int64, out's shape. */                                      \
  X(gather, Native, Out(out), In(in), Val(int, dim), Keep(index))                                                     \
  /* out[..index[..i..]..] += src[..i..] along dim. index, src: same shape. */                                       \
  X(scatter_add, Widen, InOut(out), Val(int, dim), Keep(index), In(src))                                              \
  /* --- factories: counter-based random numbers, element i of `out` (contiguous) depending only on */              \
  /* (seed, offset + i), so results do not depend on thread count or device. A bf16 out gets the float32 */          \
  /* draws rounded (randint's integers exact up to 256). */                                                          \
  X(uniform, Widen, Out(out), Val(double, low), Val(double, high), Val(uint64_t, seed), Val(uint64_t, offset))        \
  X(normal, Widen, Out(out), Val(double, mean), Val(double, std), Val(uint64_t, seed), Val(uint64_t, offset))         \
  X(randint, Widen, Out(out), Val(int64_t, low), Val(int64_t, high), Val(uint64_t, seed), Val(uint64_t, offset))      \
  /* out[i] = start + i * step. out: contiguous [n]. */                                                              \
  X(arange, Native, Out(out), Val(double, start), Val(double, step))                                                  \
  /* Moves bytes between devices. out, src: contiguous, same dtype and numel; one of them is on this backend's */    \
  /* device and the other on the CPU (or both on this device). */                                                    \
  X(transfer, Native, Out(out), In(src))                                                                              \
  /* --- activations (ops/activation.cpp) ----------------------------------------------------------------- */       \
  /* Softmax over `dim`, fused and stable: out = exp(in - max) / sum(exp(in - max)), or with log = true */           \
  /* out = in - max - log(sum(exp(in - max))). in, out: same shape, float dtype, any strides. A 0-d tensor is */     \
  /* one row of one element. A row whose elements are all -inf gives zeros (softmax) or -inf (log_softmax), */       \
  /* never NaN; see ops/activation.h. */                                                                             \
  X(softmax, Widen, Out(out), In(in), Val(int, dim), Val(bool, log))                                                  \
  /* The fused backward of softmax from its output `out` (sums over `dim`): */                                       \
  /*   softmax:     grad_in = out * (grad_out - sum(grad_out * out)) */                                              \
  /*   log_softmax: grad_in = grad_out - exp(out) * sum(grad_out) */                                                 \
  /* grad_in, grad_out, out: same shape and float dtype, any strides (grad_out may be expanded). */                  \
  X(softmax_backward, Widen, Out(grad_in), In(grad_out), In(out), Val(int, dim), Val(bool, log))                      \
  /* out = op(in); param is LeakyRelu's negative slope (unused by the others). out, in: same shape and float */      \
  /* dtype, any strides. */                                                                                          \
  X(activation, Widen, Val(ActivationOp, op), Out(out), In(in), Val(double, param))                                   \
  /* grad_in = grad_out * op'(in). grad_in, in: same shape and float dtype; grad_out: bcast to it. */                \
  X(activation_backward, Widen, Val(ActivationOp, op), Out(grad_in), In(grad_out), In(in), Val(double, param))        \
  /* --- normalization (ops/normalization.cpp) ------------------------------------------------------------ */       \
  /* Rows of C elements normalized over the last dim, fused (Note [normalization rows] in */                         \
  /* cpu/normalization.cpp). x, y, dy, dx: [R, C] contiguous, one float dtype; weight, bias: [C] contiguous or */    \
  /* undefined (no affine); mean, rstd: [R] contiguous float64 whatever x's dtype (float32 rows accumulate in */     \
  /* float lanes folded into a double; Note [split mean] in cpu/normalization.cpp says why the mean stays in */      \
  /* float64). */                                                                                                    \
  /* layer_norm:  mean = sum(x)/C, rstd = 1/sqrt(sum((x - mean)^2)/C + eps), y = (x - mean) * rstd * weight + */    \
  /* bias */                                                                                                         \
  X(layer_norm, Widen, Out(y), Keep(mean), Keep(rstd), In(x), In(weight), In(bias), Val(double, eps))                 \
  /* With xhat = (x - mean) * rstd and g = dy * weight (dy without weight): */                                       \
  /*   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (means over the row) */                                   \
  /*   dweight = sum over rows of dy * xhat, dbias = sum over rows of dy   ([C], full reductions) */                 \
  /* Any of dx, dweight, dbias may be undefined (not wanted). The row sums are taken over fixed blocks of rows */    \
  /* in a fixed order, so results do not depend on the thread count. */                                              \
  X(layer_norm_backward, Widen, Out(dx), Out(dweight), Out(dbias), In(dy), In(x), Keep(mean), Keep(rstd),             \
    In(weight))                                                                                                       \
  /* rms_norm: rstd = 1/sqrt(sum(x^2)/C + eps), y = x * rstd * weight. */                                            \
  X(rms_norm, Widen, Out(y), Keep(rstd), In(x), In(weight), Val(double, eps))                                         \
  /* With xhat = x * rstd, g = dy * weight: dx = rstd * (g - xhat * mean(g * xhat)), dweight = sum over rows of */   \
  /* dy * xhat. dx or dweight may be undefined; deterministic as above. */                                           \
  X(rms_norm_backward, Widen, Out(dx), Out(dweight), In(dy), In(x), Keep(rstd), In(weight))                           \
  /* --- attention (ops/attention.cpp) -------------------------------------------------------------------- */       \
  /* Fused scaled dot-product attention (Note [fused attention on the CPU] in cpu/attention.cpp): */                 \
  /*   S = scale * Q K^T + bias (keys j > i dropped when causal),  P = softmax(S) per row,  O = P V */               \
  /* q: [B, Hq, Tq, D], k: [B, Hkv, Tk, D], v: [B, Hkv, Tk, Dv], Hkv dividing Hq (query head h reads key/value */    \
  /* head h / (Hq / Hkv)); last dim stride 1, row stride >= the last dim (BLAS reads the rows), other strides */      \
  /* any. bias: undefined, or q's dtype with shape [B, Hq, Tq, Tk] and any strides (0 for broadcast dims); */        \
  /* -inf forbids. out: [B, Hq, Tq, Dv], last dim stride 1. weights: [B, Hq, Tq, Tk] contiguous, receives P */       \
  /* (exactly 0 where masked, and for a whole row with nothing to attend to). Float dtypes; all sizes > 0. */        \
  X(attention_forward, Widen, Out(out), Out(weights), In(q), In(k), In(v), In(bias),                                  \
    Val(const AttentionArgs&, args))                                                                                  \
  /* From dout ([B, Hq, Tq, Dv], last dim stride 1) and the forward's weights P: */                                  \
  /*   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)) * scale,  dQ = dS K,  dK = dS^T Q */               \
  /* dq: q's shape; dk, dv: k's and v's shapes, ZERO-FILLED by the caller (they accumulate over the query heads */   \
  /* of a group); last dim stride 1 each. */                                                                         \
  X(attention_backward, Widen, Out(dq), InOut(dk), InOut(dv), In(dout), In(q), In(k), In(v), In(weights),             \
    Val(const AttentionArgs&, args))                                                                                  \
  /* Flash attention (Note [flash attention on the CPU] in cpu/flash_attention.cpp): the same output as */           \
  /* attention_forward, computed in tiles with an online softmax, without any [Tq, Tk] buffer. Arguments as */       \
  /* attention_forward, except lse: [B, Hq, Tq] contiguous in q's compute dtype (float32 for bf16 q), receiving */   \
  /* each row's logsumexp of the scaled, masked scores (-inf for a row with nothing to attend to, whose output */    \
  /* is 0). The CUDA backend takes bf16 as it is (cuda/flash_mma_bf16_forward.cu, _backward.cu). */                  \
  X(flash_attention_forward, CudaNative, Out(out), Out(lse), In(q), In(k), In(v), In(bias),                           \
    Val(const AttentionArgs&, args))                                                                                  \
  /* FlashAttention-2's backward from the forward's out and lse, scores rebuilt tile by tile: */                     \
  /*   Dvec = rowsum(dO * O), P = exp(S - lse), dV = P^T dO, dS = P * (dO V^T - Dvec) * scale, dQ = dS K, */         \
  /*   dK = dS^T Q. */                                                                                               \
  /* dq, dk, dv: ZERO-FILLED by the caller (they accumulate); shapes and strides as attention_backward. */           \
  X(flash_attention_backward, CudaNative, InOut(dq), InOut(dk), InOut(dv), In(dout), In(q), In(k), In(v), In(out),    \
    In(lse), In(bias), Val(const AttentionArgs&, args))                                                               \
  /* --- optimizers (ops/optim_step.cpp): one pass over each tensor, PyTorch's formula order ---------------- */      \
  /* g is the gradient, negated first when args.maximize. */                                                         \
  /* SGD (torch.optim.SGD): d = g + wd*p; buf = first_step ? d : momentum*buf + (1-dampening)*d; */                  \
  /* d = nesterov ? d + momentum*buf : buf; p -= lr*d (with momentum = 0: p -= lr*d, no buf). */                     \
  /* param, grad, momentum_buf (undefined when momentum is 0): same shape, float dtype, contiguous. */                \
  X(sgd_step, Widen, InOut(param), In(grad), InOut(momentum_buf), Val(const SgdStepArgs&, args))                      \
  /* Adam / AdamW (torch.optim.Adam(W)): g += wd*p (Adam) or p *= 1 - lr*wd (AdamW); */                              \
  /* m = beta1*m + (1-beta1)*g; v = beta2*v + (1-beta2)*g*g; vmax = max(vmax, v) with amsgrad; */                    \
  /* p -= step_size * m / (sqrt(v or vmax) / bias_correction2_sqrt + eps). */                                        \
  /* All tensors: same shape, float dtype, contiguous; max_exp_avg_sq undefined unless amsgrad. */                   \
  X(adam_step, Widen, InOut(param), In(grad), InOut(exp_avg), InOut(exp_avg_sq), InOut(max_exp_avg_sq),               \
    Val(const AdamStepArgs&, args))                                                                                   \
  /* The same updates over a list of parameters of one device and dtype (ops/optim_step.h), one launch on a */       \
  /* GPU (Note [multi-tensor optimizer step] in cuda/optimizer.cu). Each parameter gets exactly sgd_step's / */      \
  /* adam_step's bits. Adam: args.step_size and args.bias_correction2_sqrt are ignored; each parameter's are */      \
  /* computed (adam_bias_corrections) from its `step` + 1, read on the device, which is then incremented, so */      \
  /* no host value changes from step to step. */                                                                     \
  X(sgd_step_multi, Own, Val(const std::vector<SgdParamState>&, params), Val(const SgdStepArgs&, args))               \
  X(adam_step_multi, Own, Val(const std::vector<AdamParamState>&, params), Val(const AdamStepArgs&, args))
// clang-format on

// --- what the users of the list paste onto each argument ----------------------------------------------
// DECL: the parameter's declaration; NAME: the argument as passed on.
#define TT_KARG_DECL_In(t) const ::tt::Tensor& t
#define TT_KARG_DECL_Out(t) const ::tt::Tensor& t
#define TT_KARG_DECL_InOut(t) const ::tt::Tensor& t
#define TT_KARG_DECL_Keep(t) const ::tt::Tensor& t
#define TT_KARG_DECL_Val(T, v) T v
#define TT_KARG_NAME_In(t) t
#define TT_KARG_NAME_Out(t) t
#define TT_KARG_NAME_InOut(t) t
#define TT_KARG_NAME_Keep(t) t
#define TT_KARG_NAME_Val(T, v) v

// TT_KMAP(P, a, b, ...) gives P##a, P##b, ...: each argument with a prefix pasted on, comma
// separated (up to 12 arguments; the longest kernel, flash_attention_backward, has 11).
#define TT_KMAP(P, ...) TT_KCAT(TT_KMAP_, TT_KCOUNT(__VA_ARGS__))(P, __VA_ARGS__)
#define TT_KCOUNT(...) TT_KCOUNT_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define TT_KCOUNT_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, n, ...) n
#define TT_KCAT(a, b) TT_KCAT_(a, b)
#define TT_KCAT_(a, b) a##b
#define TT_KPASTE(P, a) P##a
#define TT_KMAP_1(P, a) TT_KPASTE(P, a)
#define TT_KMAP_2(P, a, ...) TT_KPASTE(P, a), TT_KMAP_1(P, __VA_ARGS__)
#define TT_KMAP_3(P, a, ...) TT_KPASTE(P, a), TT_KMAP_2(P, __VA_ARGS__)
#define TT_KMAP_4(P, a, ...) TT_KPASTE(P, a), TT_KMAP_3(P, __VA_ARGS__)
#define TT_KMAP_5(P, a, ...) TT_KPASTE(P, a), TT_KMAP_4(P, __VA_ARGS__)
#define TT_KMAP_6(P, a, ...) TT_KPASTE(P, a), TT_KMAP_5(P, __VA_ARGS__)
#define TT_KMAP_7(P, a, ...) TT_KPASTE(P, a), TT_KMAP_6(P, __VA_ARGS__)
#define TT_KMAP_8(P, a, ...) TT_KPASTE(P, a), TT_KMAP_7(P, __VA_ARGS__)
#define TT_KMAP_9(P, a, ...) TT_KPASTE(P, a), TT_KMAP_8(P, __VA_ARGS__)
#define TT_KMAP_10(P, a, ...) TT_KPASTE(P, a), TT_KMAP_9(P, __VA_ARGS__)
#define TT_KMAP_11(P, a, ...) TT_KPASTE(P, a), TT_KMAP_10(P, __VA_ARGS__)
#define TT_KMAP_12(P, a, ...) TT_KPASTE(P, a), TT_KMAP_11(P, __VA_ARGS__)

// A kernel's parameter list and argument list, from its entry's ARGs.
#define TT_KERNEL_PARAMS(...) TT_KMAP(TT_KARG_DECL_, __VA_ARGS__)
#define TT_KERNEL_ARGS(...) TT_KMAP(TT_KARG_NAME_, __VA_ARGS__)

// The declarations a backend class writes: `TT_KERNELS(TT_KERNEL_OVERRIDE)` in its body.
#define TT_KERNEL_OVERRIDE(name, bf16, ...) void name(TT_KERNEL_PARAMS(__VA_ARGS__)) override;
