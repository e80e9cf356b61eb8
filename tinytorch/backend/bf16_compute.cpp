// Bf16Compute's kernels: bf16 operands widened to float32, the wrapped backend's float32 kernel,
// results rounded back to bf16 once (Note [bf16 compute] in bf16_compute.h).
#include "tinytorch/backend/bf16_compute.h"

#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "tinytorch/backend/cpu/cpu_backend.h"

namespace tt {

namespace {

bool any_bf16(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->defined() && t->dtype() == kBFloat16) return true;
  return false;
}

// The float32 stand-ins of one kernel call's bf16 operands. in() and out() hand the kernel a
// contiguous float32 tensor in place of each bf16 one (other tensors pass through unchanged);
// finish() rounds every output stand-in into its bf16 tensor.
class Widen {
 public:
  explicit Widen(Backend& inner) : inner_(inner) {}

  // A bf16 input's float32 copy (exact: float32 holds every bf16 value).
  Tensor in(const Tensor& t) {
    if (!t.defined() || t.dtype() != kBFloat16) return t;
    Tensor f = float32_like(t);
    backend_of(t).copy(f, t);
    return f;
  }
  // A bf16 output's float32 stand-in; `reads`: the kernel reads the output's old values too.
  Tensor out(const Tensor& t, bool reads = false) {
    if (!t.defined() || t.dtype() != kBFloat16) return t;
    Tensor f = reads ? in(t) : float32_like(t);
    outputs_.emplace_back(t, f);
    return f;
  }
  void finish() {
    for (auto& [bf16, f32] : outputs_) backend_of(bf16).copy(bf16, f32);
  }

 private:
  // A 0-d operand may live on the CPU whatever the kernel's device (binary's wrapped scalar).
  Backend& backend_of(const Tensor& t) { return t.device().is_cpu() ? cpu::cpu_backend() : inner_; }
  static Tensor float32_like(const Tensor& t) {
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = std::make_shared<StorageImpl>(size_t(t.numel()) * sizeof(float), t.device());
    impl->shape = t.shape();
    impl->strides = contiguous_strides(t.shape());
    impl->dtype = kFloat32;
    return Tensor(std::move(impl));
  }

  Backend& inner_;
  std::vector<std::pair<Tensor, Tensor>> outputs_;
};

}  // namespace

// --- kernels that take bf16 as it is: they move elements, or are the GEMM -----------------------
void Bf16Compute::copy(const Tensor& out, const Tensor& src) { inner_.copy(out, src); }
void Bf16Compute::fill(const Tensor& out, Scalar value) { inner_.fill(out, value); }
void Bf16Compute::where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  inner_.where(out, cond, a, b);
}
void Bf16Compute::index_select(const Tensor& out, const Tensor& in, int dim, const Tensor& index) {
  inner_.index_select(out, in, dim, index);
}
void Bf16Compute::gather(const Tensor& out, const Tensor& in, int dim, const Tensor& index) {
  inner_.gather(out, in, dim, index);
}
void Bf16Compute::arange(const Tensor& out, double start, double step) { inner_.arange(out, start, step); }
void Bf16Compute::transfer(const Tensor& out, const Tensor& src) { inner_.transfer(out, src); }
void Bf16Compute::gemm(const Tensor& out, const Tensor& a, const Tensor& b, double beta) {
  inner_.gemm(out, a, b, beta);
}
// bf16 natively: the bias sum of the fallback path reduces through backend_for(), so through here.
void Bf16Compute::gemm_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  inner_.gemm_bias(out, a, b, bias);
}
void Bf16Compute::gemm_bias_grad(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& grad_bias) {
  inner_.gemm_bias_grad(out, a, b, grad_bias);
}

// --- kernels that compute: float32 inside ---------------------------------------------------------
void Bf16Compute::unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  if (!any_bf16({&out, &in})) return inner_.unary(op, out, in);
  Widen w(inner_);
  inner_.unary(op, w.out(out), w.in(in));
  w.finish();
}
void Bf16Compute::binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (!any_bf16({&out, &a, &b})) return inner_.binary(op, out, a, b);
  Widen w(inner_);
  inner_.binary(op, w.out(out), w.in(a), w.in(b));
  w.finish();
}
void Bf16Compute::reduce(ReduceOp op, const Tensor& out, const Tensor& in) {
  if (!any_bf16({&out, &in})) return inner_.reduce(op, out, in);
  Widen w(inner_);
  inner_.reduce(op, w.out(out), w.in(in));
  w.finish();
}
void Bf16Compute::scatter_add(const Tensor& out, int dim, const Tensor& index, const Tensor& src) {
  if (!any_bf16({&out, &src})) return inner_.scatter_add(out, dim, index, src);
  Widen w(inner_);
  inner_.scatter_add(w.out(out, /*reads=*/true), dim, index, w.in(src));
  w.finish();
}
void Bf16Compute::uniform(const Tensor& out, double low, double high, uint64_t seed, uint64_t offset) {
  if (!any_bf16({&out})) return inner_.uniform(out, low, high, seed, offset);
  Widen w(inner_);
  inner_.uniform(w.out(out), low, high, seed, offset);
  w.finish();
}
void Bf16Compute::normal(const Tensor& out, double mean, double std, uint64_t seed, uint64_t offset) {
  if (!any_bf16({&out})) return inner_.normal(out, mean, std, seed, offset);
  Widen w(inner_);
  inner_.normal(w.out(out), mean, std, seed, offset);
  w.finish();
}
void Bf16Compute::randint(const Tensor& out, int64_t low, int64_t high, uint64_t seed, uint64_t offset) {
  if (!any_bf16({&out})) return inner_.randint(out, low, high, seed, offset);
  Widen w(inner_);  // the same integers as a float32 tensor draws, rounded to bf16 (exact up to 256)
  inner_.randint(w.out(out), low, high, seed, offset);
  w.finish();
}
void Bf16Compute::softmax(const Tensor& out, const Tensor& in, int dim, bool log) {
  if (!any_bf16({&out, &in})) return inner_.softmax(out, in, dim, log);
  Widen w(inner_);
  inner_.softmax(w.out(out), w.in(in), dim, log);
  w.finish();
}
void Bf16Compute::softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int dim,
                                   bool log) {
  if (!any_bf16({&grad_in, &grad_out, &out})) return inner_.softmax_backward(grad_in, grad_out, out, dim, log);
  Widen w(inner_);
  inner_.softmax_backward(w.out(grad_in), w.in(grad_out), w.in(out), dim, log);
  w.finish();
}
void Bf16Compute::activation(ActivationOp op, const Tensor& out, const Tensor& in, double param) {
  if (!any_bf16({&out, &in})) return inner_.activation(op, out, in, param);
  Widen w(inner_);
  inner_.activation(op, w.out(out), w.in(in), param);
  w.finish();
}
void Bf16Compute::activation_backward(ActivationOp op, const Tensor& grad_in, const Tensor& grad_out,
                                      const Tensor& in, double param) {
  if (!any_bf16({&grad_in, &grad_out, &in})) return inner_.activation_backward(op, grad_in, grad_out, in, param);
  Widen w(inner_);
  inner_.activation_backward(op, w.out(grad_in), w.in(grad_out), w.in(in), param);
  w.finish();
}
void Bf16Compute::layer_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                             const Tensor& weight, const Tensor& bias, double eps) {
  if (!any_bf16({&y, &x, &weight, &bias})) return inner_.layer_norm(y, mean, rstd, x, weight, bias, eps);
  Widen w(inner_);
  inner_.layer_norm(w.out(y), mean, rstd, w.in(x), w.in(weight), w.in(bias), eps);
  w.finish();
}
void Bf16Compute::layer_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dbias,
                                      const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& weight) {
  if (!any_bf16({&dx, &dweight, &dbias, &dy, &x, &weight}))
    return inner_.layer_norm_backward(dx, dweight, dbias, dy, x, mean, rstd, weight);
  Widen w(inner_);
  inner_.layer_norm_backward(w.out(dx), w.out(dweight), w.out(dbias), w.in(dy), w.in(x), mean, rstd, w.in(weight));
  w.finish();
}
void Bf16Compute::rms_norm(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& weight, double eps) {
  if (!any_bf16({&y, &x, &weight})) return inner_.rms_norm(y, rstd, x, weight, eps);
  Widen w(inner_);
  inner_.rms_norm(w.out(y), rstd, w.in(x), w.in(weight), eps);
  w.finish();
}
void Bf16Compute::rms_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dy, const Tensor& x,
                                    const Tensor& rstd, const Tensor& weight) {
  if (!any_bf16({&dx, &dweight, &dy, &x, &weight})) return inner_.rms_norm_backward(dx, dweight, dy, x, rstd, weight);
  Widen w(inner_);
  inner_.rms_norm_backward(w.out(dx), w.out(dweight), w.in(dy), w.in(x), rstd, w.in(weight));
  w.finish();
}
void Bf16Compute::attention_forward(const Tensor& out, const Tensor& weights, const Tensor& q, const Tensor& k,
                                    const Tensor& v, const Tensor& bias, const AttentionArgs& args) {
  if (!any_bf16({&out, &weights, &q, &k, &v, &bias}))
    return inner_.attention_forward(out, weights, q, k, v, bias, args);
  Widen w(inner_);
  inner_.attention_forward(w.out(out), w.out(weights), w.in(q), w.in(k), w.in(v), w.in(bias), args);
  w.finish();
}
void Bf16Compute::attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                     const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                                     const AttentionArgs& args) {
  if (!any_bf16({&dq, &dk, &dv, &dout, &q, &k, &v, &weights}))
    return inner_.attention_backward(dq, dk, dv, dout, q, k, v, weights, args);
  Widen w(inner_);
  // dk and dv accumulate (the caller zero-fills them), so their old values are read.
  inner_.attention_backward(w.out(dq), w.out(dk, true), w.out(dv, true), w.in(dout), w.in(q), w.in(k), w.in(v),
                            w.in(weights), args);
  w.finish();
}
// The CUDA backend takes bf16 flash attention as it is (cuda/flash_mma_bf16_forward.cu, _backward.cu).
void Bf16Compute::flash_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                          const Tensor& v, const Tensor& bias, const AttentionArgs& args) {
  if (!any_bf16({&out, &lse, &q, &k, &v, &bias}) || q.device().is_cuda())
    return inner_.flash_attention_forward(out, lse, q, k, v, bias, args);
  Widen w(inner_);
  inner_.flash_attention_forward(w.out(out), w.out(lse), w.in(q), w.in(k), w.in(v), w.in(bias), args);
  w.finish();
}
void Bf16Compute::flash_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                           const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                           const Tensor& lse, const Tensor& bias, const AttentionArgs& args) {
  if (!any_bf16({&dq, &dk, &dv, &dout, &q, &k, &v, &out, &lse, &bias}) || q.device().is_cuda())
    return inner_.flash_attention_backward(dq, dk, dv, dout, q, k, v, out, lse, bias, args);
  Widen w(inner_);
  inner_.flash_attention_backward(w.out(dq, true), w.out(dk, true), w.out(dv, true), w.in(dout), w.in(q), w.in(k),
                                  w.in(v), w.in(out), w.in(lse), w.in(bias), args);
  w.finish();
}
void Bf16Compute::sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf,
                           const SgdStepArgs& args) {
  if (!any_bf16({&param, &grad, &momentum_buf})) return inner_.sgd_step(param, grad, momentum_buf, args);
  Widen w(inner_);
  inner_.sgd_step(w.out(param, true), w.in(grad), w.out(momentum_buf, true), args);
  w.finish();
}
void Bf16Compute::adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                            const Tensor& max_exp_avg_sq, const AdamStepArgs& args) {
  if (!any_bf16({&param, &grad, &exp_avg, &exp_avg_sq, &max_exp_avg_sq}))
    return inner_.adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args);
  Widen w(inner_);
  inner_.adam_step(w.out(param, true), w.in(grad), w.out(exp_avg, true), w.out(exp_avg_sq, true),
                   w.out(max_exp_avg_sq, true), args);
  w.finish();
}
// The multi-tensor steps: float32 stand-ins for the bf16 tensors (the step counters are int64).
void Bf16Compute::sgd_step_multi(const std::vector<SgdParamState>& params, const SgdStepArgs& args) {
  bool bf16 = false;
  for (const SgdParamState& e : params) bf16 = bf16 || any_bf16({&e.param, &e.grad, &e.momentum_buf});
  if (!bf16) return inner_.sgd_step_multi(params, args);
  Widen w(inner_);
  std::vector<SgdParamState> wide;
  for (const SgdParamState& e : params)
    wide.push_back({w.out(e.param, true), w.in(e.grad), w.out(e.momentum_buf, true), e.first_step});
  inner_.sgd_step_multi(wide, args);
  w.finish();
}
void Bf16Compute::adam_step_multi(const std::vector<AdamParamState>& params, const AdamStepArgs& args) {
  bool bf16 = false;
  for (const AdamParamState& e : params)
    bf16 = bf16 || any_bf16({&e.param, &e.grad, &e.exp_avg, &e.exp_avg_sq, &e.max_exp_avg_sq});
  if (!bf16) return inner_.adam_step_multi(params, args);
  Widen w(inner_);
  std::vector<AdamParamState> wide;
  for (const AdamParamState& e : params)
    wide.push_back({w.out(e.param, true), w.in(e.grad), w.out(e.exp_avg, true), w.out(e.exp_avg_sq, true),
                    w.out(e.max_exp_avg_sq, true), e.step});
  inner_.adam_step_multi(wide, args);
  w.finish();
}

}  // namespace tt
