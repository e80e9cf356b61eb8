// PLACEHOLDER until the gemm_attention kernels land: each method throws. Delete this file when they do.
#include "tinytorch/backend/cuda/cuda_backend.h"

namespace tt::cuda {

void CudaBackend::gemm(const Tensor&, const Tensor&, const Tensor&, double) {
  throw Error("cuda: gemm is not implemented yet");
}
void CudaBackend::attention_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const AttentionArgs&) {
  throw Error("cuda: attention_forward is not implemented yet");
}
void CudaBackend::attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const AttentionArgs&) {
  throw Error("cuda: attention_backward is not implemented yet");
}
void CudaBackend::flash_attention_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const AttentionArgs&) {
  throw Error("cuda: flash_attention_forward is not implemented yet");
}
void CudaBackend::flash_attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const AttentionArgs&) {
  throw Error("cuda: flash_attention_backward is not implemented yet");
}

}  // namespace tt::cuda
