// Bf16Compute: the bf16 path of every kernel that computes. It wraps a device's backend; kernels
// that only move elements (copy, fill, where, indexing) and GEMM take bf16 natively, and every
// other kernel is run in float32 on float32 copies of its bf16 operands, whose results are rounded
// back to bf16 once (Note [bf16 compute]).
#pragma once

#include "tinytorch/backend/backend.h"

namespace tt {

// Note [bf16 compute]
// ~~~~~~~~~~~~~~~~~~~
// A bf16 tensor is a storage format; arithmetic happens in float32 (Note [bfloat16] in
// core/bfloat16.h). PyTorch's CPU and CUDA kernels load bf16, compute in float ("opmath") and
// round once at the store. Bf16Compute gives every backend the same semantics without a bf16
// twin of each kernel: for a kernel called with a bf16 operand it
//   1. makes a float32 copy of each bf16 input (and of each bf16 output the kernel also reads:
//      an optimizer's parameter, gemm's `out` when beta != 0, scatter_add's target),
//   2. runs the backend's float32 kernel on the copies (bf16 * bf16 is exact in float32, so a dot
//      product or a sum sees exactly the bf16 values, accumulated in float32),
//   3. rounds each float32 result into its bf16 output, once.
// The results are those of PyTorch's bf16 kernels (one rounding per op, float32 inside); the
// price is memory traffic: a unary op on bf16 reads 2 bytes and writes 4, then reads 4 and writes
// 2 more than a native kernel would. The kernels that matter for speed take bf16 natively, and
// come first in bf16_compute.cpp: GEMM (the tensor cores on a GPU, AVX512-BF16
// on a CPU: backend/cpu/gemm_bf16.cpp), the kernels that only move elements, and flash attention
// on a GPU (cuda/flash_mma_bf16_*.cu: float32 softmax and sums, but P and dS rounded to bf16 for
// their tensor-core products, as FlashAttention-2 and PyTorch's bf16 kernels do).
class Bf16Compute final : public Backend {
 public:
  explicit Bf16Compute(Backend& inner) : inner_(inner) {}

  void copy(const Tensor& out, const Tensor& src) override;
  void fill(const Tensor& out, Scalar value) override;
  void unary(UnaryOp op, const Tensor& out, const Tensor& in) override;
  void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) override;
  void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) override;
  void reduce(ReduceOp op, const Tensor& out, const Tensor& in) override;
  void gemm(const Tensor& out, const Tensor& a, const Tensor& b, double beta) override;
  void gemm_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) override;
  void gemm_bias_grad(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& grad_bias) override;
  void index_select(const Tensor& out, const Tensor& in, int dim, const Tensor& index) override;
  void gather(const Tensor& out, const Tensor& in, int dim, const Tensor& index) override;
  void scatter_add(const Tensor& out, int dim, const Tensor& index, const Tensor& src) override;
  void uniform(const Tensor& out, double low, double high, uint64_t seed, uint64_t offset) override;
  void normal(const Tensor& out, double mean, double std, uint64_t seed, uint64_t offset) override;
  void randint(const Tensor& out, int64_t low, int64_t high, uint64_t seed, uint64_t offset) override;
  void arange(const Tensor& out, double start, double step) override;
  void transfer(const Tensor& out, const Tensor& src) override;
  void softmax(const Tensor& out, const Tensor& in, int dim, bool log) override;
  void softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int dim,
                        bool log) override;
  void activation(ActivationOp op, const Tensor& out, const Tensor& in, double param) override;
  void activation_backward(ActivationOp op, const Tensor& grad_in, const Tensor& grad_out, const Tensor& in,
                           double param) override;
  void layer_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                  const Tensor& bias, double eps) override;
  void layer_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                           const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) override;
  void rms_norm(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& weight, double eps) override;
  void rms_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dy, const Tensor& x,
                         const Tensor& rstd, const Tensor& weight) override;
  void attention_forward(const Tensor& out, const Tensor& weights, const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& bias, const AttentionArgs& args) override;
  void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                          const Tensor& k, const Tensor& v, const Tensor& weights, const AttentionArgs& args) override;
  void flash_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                               const Tensor& v, const Tensor& bias, const AttentionArgs& args) override;
  void flash_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                const Tensor& bias, const AttentionArgs& args) override;
  void sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, const SgdStepArgs& args) override;
  void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const Tensor& max_exp_avg_sq, const AdamStepArgs& args) override;
  void sgd_step_multi(const std::vector<SgdParamState>& params, const SgdStepArgs& args) override;
  void adam_step_multi(const std::vector<AdamParamState>& params, const AdamStepArgs& args) override;

 private:
  Backend& inner_;
};

}  // namespace tt
