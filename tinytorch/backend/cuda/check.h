// Checked CUDA runtime and cuBLAS calls: TT_CUDA_CHECK(cudaMemcpy(...)) throws tt::CudaError
// naming the call, the file and the line; TT_CUDA_CHECK_LAUNCH() checks the last kernel launch.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "tinytorch/core/error.h"

namespace tt::cuda::detail {
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
}  // namespace tt::cuda::detail

#define TT_CUDA_CHECK(expr)                                                               \
  do {                                                                                    \
    cudaError_t tt_cuda_err_ = (expr);                                                    \
    if (tt_cuda_err_ != cudaSuccess)                                                      \
      ::tt::cuda::detail::throw_cuda_error(tt_cuda_err_, #expr, __FILE__, __LINE__);      \
  } while (0)

#define TT_CUBLAS_CHECK(expr)                                                             \
  do {                                                                                    \
    cublasStatus_t tt_cublas_status_ = (expr);                                            \
    if (tt_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                       \
      ::tt::cuda::detail::throw_cublas_error(tt_cublas_status_, #expr, __FILE__, __LINE__); \
  } while (0)

#define TT_CUDA_CHECK_LAUNCH() TT_CUDA_CHECK(cudaGetLastError())
