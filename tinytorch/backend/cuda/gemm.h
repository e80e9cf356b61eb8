// cuBLAS GEMM launchers shared by the CUDA kernels (gemm.cu, attention.cu, linear.cu): row-major operands
// described by pointer, leading dimension and batch stride, so views go to cuBLAS as they are.
// Not here: shape checks and the batch-dim walk of Backend::gemm (gemm.cu).
#pragma once

#include <cstdint>

#include "tinytorch/core/dtype.h"

namespace tt::cuda {

// One matrix of a strided batch: matrix i starts at p + i * batch_stride elements (0: the same
// matrix for every i); rows are `ld` elements apart (row-major storage).
struct GemmMat {
  const void* p = nullptr;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};

// How cuBLAS reads one [rows, cols] matrix with element strides (sr, sc): row-major with leading
// dim sr, or column-major with leading dim sc (see blas_compatible()). Size-1 dims take any stride.
struct Layout {
  bool row_major;
  int64_t ld;
};
Layout layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc);

// Column-major, as cuBLAS: C[i] = alpha * op(A[i]) op(B[i]) + beta * C[i] for i < count, with
// op(A): [m, k], op(B): [k, n], C: [m, n]; trans_x says op(X) = X^T. float32 (TF32 tensor cores
// when tt::cuda::allow_tf32()) or float64. m, n, k > 0. On the device's stream (current_stream()).
void gemm_colmajor(int device, ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                   double alpha, const GemmMat& a, const GemmMat& b, double beta, const GemmMat& c, int64_t count);

// Row-major: C[i] = alpha * op(A[i]) op(B[i]) + beta * C[i], op(A): [M, K], op(B): [K, N],
// C: [M, N]; trans_a says A is stored as [K, M] (likewise B as [N, K]). Computed as the
// column-major C^T = op(B)^T op(A)^T: operands swap, transposes stay flags, nothing is copied.
void gemm_rowmajor(int device, ScalarType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                   double alpha, const GemmMat& a, const GemmMat& b, double beta, const GemmMat& c, int64_t count);

}  // namespace tt::cuda
