// PLACEHOLDER until the rows kernels land: each method throws. Delete this file when they do.
#include "tinytorch/backend/cuda/cuda_backend.h"

namespace tt::cuda {

void CudaBackend::reduce(ReduceOp, const Tensor&, const Tensor&) {
  throw Error("cuda: reduce is not implemented yet");
}
void CudaBackend::index_select(const Tensor&, const Tensor&, int, const Tensor&) {
  throw Error("cuda: index_select is not implemented yet");
}
void CudaBackend::gather(const Tensor&, const Tensor&, int, const Tensor&) {
  throw Error("cuda: gather is not implemented yet");
}
void CudaBackend::scatter_add(const Tensor&, int, const Tensor&, const Tensor&) {
  throw Error("cuda: scatter_add is not implemented yet");
}
void CudaBackend::softmax(const Tensor&, const Tensor&, int, bool) {
  throw Error("cuda: softmax is not implemented yet");
}
void CudaBackend::softmax_backward(const Tensor&, const Tensor&, const Tensor&, int, bool) {
  throw Error("cuda: softmax_backward is not implemented yet");
}
void CudaBackend::layer_norm(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, double) {
  throw Error("cuda: layer_norm is not implemented yet");
}
void CudaBackend::layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
  throw Error("cuda: layer_norm_backward is not implemented yet");
}
void CudaBackend::rms_norm(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double) {
  throw Error("cuda: rms_norm is not implemented yet");
}
void CudaBackend::rms_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
  throw Error("cuda: rms_norm_backward is not implemented yet");
}

}  // namespace tt::cuda
