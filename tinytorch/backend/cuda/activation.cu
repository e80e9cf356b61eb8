// CUDA activation kernels with a fused backward, twin of cpu/activation.cpp: GELU (erf and tanh
// forms), SiLU, LeakyReLU. Each forward is one map out = f(x) and each backward one map
// dx = dy * f'(x) (launch_map in loop.cuh: vectorized when contiguous, strided otherwise), with
// the math of backend/activation_functors.h shared with the CPU. ReLU, sigmoid and tanh are unary
// ops (elementwise.cu); softmax is in softmax.cu.
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/loop.cuh"
#include "tinytorch/backend/visit.h"

namespace tt::cuda {

namespace {

// out = f(in). out, in: T, same shape, any strides.
template <typename T, typename F>
void forward_map(const Tensor& out, const Tensor& in, const F& f) {
  launch_map<T>(out, f, map_arg<T>(in));
}

// dx = f(dy, x). dx, x: T, same shape; dy: bcast to it (a stride-0 dy is the gradient of a sum).
template <typename T, typename F>
void backward_map(const Tensor& dx, const Tensor& dy, const Tensor& x, const F& f) {
  launch_map<T>(dx, f, map_arg<T>(dy), map_arg<T>(x));
}

}  // namespace

void CudaBackend::activation(ActivationOp op, const Tensor& out, const Tensor& in, double param) {
  DeviceGuard guard(out.device().index);
  TT_DISPATCH_FLOATING(in.dtype(), op_name(op), [&] {
    visit_activation<scalar_t>(op, param, [&](auto forward, auto) { forward_map<scalar_t>(out, in, forward); });
  });
}

void CudaBackend::activation_backward(ActivationOp op, const Tensor& grad_in, const Tensor& grad_out,
                                      const Tensor& in, double param) {
  DeviceGuard guard(grad_in.device().index);
  TT_DISPATCH_FLOATING(in.dtype(), op_name(op),
                       [&] {
                         visit_activation<scalar_t>(op, param, [&](auto, auto backward) {
                           backward_map<scalar_t>(grad_in, grad_out, in, backward);
                         });
                       });
}

}  // namespace tt::cuda
