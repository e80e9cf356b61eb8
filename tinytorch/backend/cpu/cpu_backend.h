// The CPU backend: the Backend interface implemented with plain loops, OpenMP and OpenBLAS.
// Each kernel family lives in its own file (elementwise.cpp, binary.cpp, reduce.cpp, gemm.cpp,
// linear.cpp, index.cpp, random.cpp, softmax.cpp, activation.cpp, normalization.cpp, optimizer.cpp);
// their CUDA twins carry the same names under backend/cuda.
#pragma once

#include "tinytorch/backend/backend.h"

namespace tt::cpu {

class CpuBackend final : public Backend {
 public:
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
};

CpuBackend& cpu_backend();

}  // namespace tt::cpu
