// PLACEHOLDER until the elementwise kernels land: each method throws. Delete this file when they do.
#include "tinytorch/backend/cuda/cuda_backend.h"

namespace tt::cuda {

void CudaBackend::copy(const Tensor&, const Tensor&) {
  throw Error("cuda: copy is not implemented yet");
}
void CudaBackend::fill(const Tensor&, Scalar) {
  throw Error("cuda: fill is not implemented yet");
}
void CudaBackend::unary(UnaryOp, const Tensor&, const Tensor&) {
  throw Error("cuda: unary is not implemented yet");
}
void CudaBackend::binary(BinaryOp, const Tensor&, const Tensor&, const Tensor&) {
  throw Error("cuda: binary is not implemented yet");
}
void CudaBackend::where(const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
  throw Error("cuda: where is not implemented yet");
}
void CudaBackend::uniform(const Tensor&, double, double, uint64_t, uint64_t) {
  throw Error("cuda: uniform is not implemented yet");
}
void CudaBackend::normal(const Tensor&, double, double, uint64_t, uint64_t) {
  throw Error("cuda: normal is not implemented yet");
}
void CudaBackend::randint(const Tensor&, int64_t, int64_t, uint64_t, uint64_t) {
  throw Error("cuda: randint is not implemented yet");
}
void CudaBackend::arange(const Tensor&, double, double) {
  throw Error("cuda: arange is not implemented yet");
}
void CudaBackend::transfer(const Tensor&, const Tensor&) {
  throw Error("cuda: transfer is not implemented yet");
}
void CudaBackend::activation(ActivationOp, const Tensor&, const Tensor&, double) {
  throw Error("cuda: activation is not implemented yet");
}
void CudaBackend::activation_backward(ActivationOp, const Tensor&, const Tensor&, const Tensor&, double) {
  throw Error("cuda: activation_backward is not implemented yet");
}
void CudaBackend::sgd_step(const Tensor&, const Tensor&, const Tensor&, const SgdStepArgs&) {
  throw Error("cuda: sgd_step is not implemented yet");
}
void CudaBackend::adam_step(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const AdamStepArgs&) {
  throw Error("cuda: adam_step is not implemented yet");
}

}  // namespace tt::cuda
