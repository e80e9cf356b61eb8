// CUDA optimizer kernels, twin of cpu/optimizer.cpp: the fused SGD and Adam/AdamW steps. One
// thread per element reads every tensor once and writes the parameter and its state once, in
// PyTorch's formula order (torch/optim/sgd.py, adam.py, adamw.py) exactly as the CPU does.
//
// Note [optimizer parity]: every operation is an explicitly rounded intrinsic (__fmul_rn,
// __fadd_rn, __fdiv_rn, __fsqrt_rn and their double twins), so nvcc cannot fuse a multiply and an
// add into an FMA that the CPU loop does not do: a step gives the CPU's bits exactly, and
// training trajectories on the two devices agree bit for bit. The flags are runtime arguments
// (uniform branches, no divergence) rather than template parameters: one kernel per dtype.
// Contiguous float32/float64 only: ops/optim_step.cpp makes the inputs so. Not here: the step
// counter, bias corrections and option checks (optim/).
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/loop.cuh"

namespace tt::cuda {

namespace {

// Correctly rounded float/double arithmetic that is never contracted into an FMA.
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float sqrt_rn(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double sqrt_rn(double a) { return __dsqrt_rn(a); }

// The SGD hyperparameters in the parameter's dtype, converted on the host as the CPU does.
template <typename T>
struct SgdConsts {
  T sign, wd, mom, keep, neg_lr;
  bool decay, momentum, first, nesterov;
};

// p, g, buf: [n] contiguous (buf unused without momentum).
template <typename T>
__global__ void sgd_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf, int64_t n,
                           SgdConsts<T> c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const T pi = p[i];
    T d = mul_rn(c.sign, g[i]);
    if (c.decay) d = add_rn(d, mul_rn(c.wd, pi));  // d_p.add(param, alpha=weight_decay)
    if (c.momentum) {
      // buf.mul_(momentum).add_(d_p, alpha=1-dampening); the first step's buffer is d_p itself
      const T m = c.first ? d : add_rn(mul_rn(buf[i], c.mom), mul_rn(c.keep, d));
      buf[i] = m;
      d = c.nesterov ? add_rn(d, mul_rn(c.mom, m)) : m;
    }
    p[i] = add_rn(pi, mul_rn(c.neg_lr, d));  // param.add_(d_p, alpha=-lr)
  }
}

// The Adam(W) hyperparameters in the parameter's dtype, converted on the host as the CPU does.
template <typename T>
struct AdamConsts {
  T sign, wd, decay, beta1, beta2, one_minus_beta1, one_minus_beta2, bc2_sqrt, eps, neg_step_size;
  bool weight_decay, decoupled, amsgrad;
};

// p, g, m, v, vmax: [n] contiguous (vmax unused without amsgrad).
template <typename T>
__global__ void adam_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m, T* __restrict__ v,
                            T* __restrict__ vmax, int64_t n, AdamConsts<T> c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    T gi = mul_rn(c.sign, g[i]);
    T pi = p[i];
    if (c.weight_decay && c.decoupled) pi = mul_rn(pi, c.decay);  // param.mul_(1 - lr * weight_decay)
    if (c.weight_decay && !c.decoupled) gi = add_rn(gi, mul_rn(c.wd, pi));  // grad.add(param, alpha=wd)
    // exp_avg.mul_(beta1).add_(grad, alpha=1-beta1)
    const T mi = add_rn(mul_rn(m[i], c.beta1), mul_rn(c.one_minus_beta1, gi));
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1-beta2)
    T vi = add_rn(mul_rn(v[i], c.beta2), mul_rn(mul_rn(c.one_minus_beta2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    if (c.amsgrad) {
      const T vm = vmax[i];
      vi = vm < vi ? vi : vm;  // std::max(vmax, v), as the CPU
      vmax[i] = vi;
    }
    const T denom = add_rn(div_rn(sqrt_rn(vi), c.bc2_sqrt), c.eps);  // (v.sqrt() / bc2_sqrt).add_(eps)
    p[i] = add_rn(pi, mul_rn(c.neg_step_size, div_rn(mi, denom)));  // param.addcdiv_(m, denom, -step_size)
  }
}

template <typename T>
void sgd_typed(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, const SgdStepArgs& a) {
  SgdConsts<T> c;
  c.sign = a.maximize ? T(-1) : T(1);
  c.wd = T(a.weight_decay);
  c.mom = T(a.momentum);
  c.keep = T(1 - a.dampening);
  c.neg_lr = T(-a.lr);
  c.decay = a.weight_decay != 0;
  c.momentum = a.momentum != 0;
  c.first = a.first_step;
  c.nesterov = a.nesterov;
  TT_CHECK(!c.momentum || momentum_buf.defined(), "sgd_step: momentum needs a momentum buffer");
  T* buf = c.momentum ? momentum_buf.data_ptr<T>() : nullptr;
  const int64_t n = param.numel();
  if (n == 0) return;
  launch(sgd_kernel<T>, blocks_for(n), kThreads, 0, param.data_ptr<T>(), grad.data_ptr<T>(), buf, n, c);
}

template <typename T>
void adam_typed(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const Tensor& max_exp_avg_sq, const AdamStepArgs& a) {
  AdamConsts<T> c;
  c.sign = a.maximize ? T(-1) : T(1);
  c.wd = T(a.weight_decay);
  c.decay = T(1 - a.lr * a.weight_decay);
  c.beta1 = T(a.beta1);
  c.beta2 = T(a.beta2);
  c.one_minus_beta1 = T(1 - a.beta1);
  c.one_minus_beta2 = T(1 - a.beta2);
  c.bc2_sqrt = T(a.bias_correction2_sqrt);
  c.eps = T(a.eps);
  c.neg_step_size = T(-a.step_size);
  c.weight_decay = a.weight_decay != 0;
  c.decoupled = a.decoupled;
  c.amsgrad = a.amsgrad;
  TT_CHECK(!c.amsgrad || max_exp_avg_sq.defined(), "adam_step: amsgrad needs a max_exp_avg_sq buffer");
  T* vmax = c.amsgrad ? max_exp_avg_sq.data_ptr<T>() : nullptr;
  const int64_t n = param.numel();
  if (n == 0) return;
  launch(adam_kernel<T>, blocks_for(n), kThreads, 0, param.data_ptr<T>(), grad.data_ptr<T>(), exp_avg.data_ptr<T>(),
                                              exp_avg_sq.data_ptr<T>(), vmax, n, c);
}

}  // namespace

void CudaBackend::sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf,
                           const SgdStepArgs& args) {
  DeviceGuard guard(param.device().index);
  if (param.dtype() == kFloat64) return sgd_typed<double>(param, grad, momentum_buf, args);
  if (param.dtype() == kFloat32) return sgd_typed<float>(param, grad, momentum_buf, args);
  throw DtypeError(tt::detail::concat("sgd_step: expected a float32 or float64 parameter, got ", param.dtype()));
}

void CudaBackend::adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                            const Tensor& max_exp_avg_sq, const AdamStepArgs& args) {
  DeviceGuard guard(param.device().index);
  if (param.dtype() == kFloat64) return adam_typed<double>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args);
  if (param.dtype() == kFloat32) return adam_typed<float>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args);
  throw DtypeError(tt::detail::concat("adam_step: expected a float32 or float64 parameter, got ", param.dtype()));
}

}  // namespace tt::cuda
