// CPU activation kernels with a fused backward: GELU (erf and tanh forms), SiLU, LeakyReLU.
// Each forward is one pass out = f(x) and each backward one pass dx = dy * f'(x), on the
// StridedLoop engine (loop.h), so a backward never builds a graph of small ops. The math is in
// backend/activation_functors.h, shared with the CUDA twins. ReLU, sigmoid and tanh are unary ops
// (elementwise.cpp); softmax is in softmax.cpp.
#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/cpu/loop.h"
#include "tinytorch/backend/visit.h"

namespace tt::cpu {

namespace {

// out = f(in). out, in: same shape, any strides.
template <typename T, typename F>
void forward_loop(const Tensor& out, const Tensor& in, F f) {
  const Tensor* ops[2] = {&out, &in};
  StridedLoop<2> loop(ops);
  loop.run([f](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t es = sizeof(T);
    if (s[0] == es && s[1] == es) {
      T* __restrict o = reinterpret_cast<T*>(p[0]);
      const T* __restrict x = reinterpret_cast<const T*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = f(*reinterpret_cast<const T*>(p[1] + i * s[1]));
    }
  });
}

// dx = f(dy, x). dx, x: same shape; dy: bcast to it (a stride-0 dy is the gradient of a sum).
template <typename T, typename F>
void backward_loop(const Tensor& dx, const Tensor& dy, const Tensor& x, F f) {
  const Tensor* ops[3] = {&dx, &dy, &x};
  StridedLoop<3> loop(ops);
  loop.run([f](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t es = sizeof(T);
    T* __restrict o = reinterpret_cast<T*>(p[0]);
    const T* __restrict g = reinterpret_cast<const T*>(p[1]);
    const T* __restrict x = reinterpret_cast<const T*>(p[2]);
    if (s[0] == es && s[1] == es && s[2] == es) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(g[i], x[i]);
    } else if (s[0] == es && s[1] == 0 && s[2] == es) {
      const T gv = *g;
      for (int64_t i = 0; i < n; ++i) o[i] = f(gv, x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            f(*reinterpret_cast<const T*>(p[1] + i * s[1]), *reinterpret_cast<const T*>(p[2] + i * s[2]));
    }
  });
}

}  // namespace

void CpuBackend::activation(ActivationOp op, const Tensor& out, const Tensor& in, double param) {
  TT_DISPATCH_FLOATING(in.dtype(), op_name(op), [&] {
    visit_activation<scalar_t>(op, param, [&](auto forward, auto) { forward_loop<scalar_t>(out, in, forward); });
  });
}

void CpuBackend::activation_backward(ActivationOp op, const Tensor& grad_in, const Tensor& grad_out,
                                     const Tensor& in, double param) {
  TT_DISPATCH_FLOATING(in.dtype(), op_name(op),
                       [&] {
                         visit_activation<scalar_t>(op, param, [&](auto, auto backward) {
                           backward_loop<scalar_t>(grad_in, grad_out, in, backward);
                         });
                       });
}

}  // namespace tt::cpu
