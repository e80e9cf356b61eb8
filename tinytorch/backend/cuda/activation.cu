// CUDA activation kernels with a fused backward, twin of cpu/activation.cpp: GELU (erf and tanh
// forms), SiLU, LeakyReLU. Each forward is one map out = f(x) and each backward one map
// dx = dy * f'(x) (launch_map in loop.cuh: vectorized when contiguous, strided otherwise), with
// the math of backend/activation_functors.h shared with the CPU. ReLU, sigmoid and tanh are unary
// ops (elementwise.cu); softmax is in softmax.cu.
#include "tinytorch/backend/activation_functors.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/loop.cuh"

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

template <typename T>
void activation_typed(ActivationOp op, const Tensor& out, const Tensor& in, double param) {
  namespace fn = functors;
  switch (op) {
    case ActivationOp::Gelu: return forward_map<T>(out, in, fn::Gelu{});
    case ActivationOp::GeluTanh: return forward_map<T>(out, in, fn::GeluTanh{});
    case ActivationOp::Silu: return forward_map<T>(out, in, fn::Silu{});
    case ActivationOp::LeakyRelu: return forward_map<T>(out, in, fn::LeakyRelu<T>{T(param)});
    default: break;
  }
  throw Error(tt::detail::concat("activation: unknown op ", int(op)));
}

template <typename T>
void activation_backward_typed(ActivationOp op, const Tensor& grad_in, const Tensor& grad_out, const Tensor& in,
                               double param) {
  namespace fn = functors;
  switch (op) {
    case ActivationOp::Gelu: return backward_map<T>(grad_in, grad_out, in, fn::GeluBackward{});
    case ActivationOp::GeluTanh: return backward_map<T>(grad_in, grad_out, in, fn::GeluTanhBackward{});
    case ActivationOp::Silu: return backward_map<T>(grad_in, grad_out, in, fn::SiluBackward{});
    case ActivationOp::LeakyRelu:
      return backward_map<T>(grad_in, grad_out, in, fn::LeakyReluBackward<T>{T(param)});
    default: break;
  }
  throw Error(tt::detail::concat("activation_backward: unknown op ", int(op)));
}

}  // namespace

void CudaBackend::activation(ActivationOp op, const Tensor& out, const Tensor& in, double param) {
  DeviceGuard guard(out.device().index);
  TT_DISPATCH_FLOATING(in.dtype(), op_name(op), [&] { activation_typed<scalar_t>(op, out, in, param); });
}

void CudaBackend::activation_backward(ActivationOp op, const Tensor& grad_in, const Tensor& grad_out,
                                      const Tensor& in, double param) {
  DeviceGuard guard(grad_in.device().index);
  TT_DISPATCH_FLOATING(in.dtype(), op_name(op),
                       [&] { activation_backward_typed<scalar_t>(op, grad_in, grad_out, in, param); });
}

}  // namespace tt::cuda
