// CUDA GEMM: float32/float64/bf16 through cuBLAS (cublasGemmEx with FP32 or TF32 compute, bf16
// operands with FP32 compute; cublasDgemm), int64 and empty inner dims by a plain strided kernel.
// Twin of cpu/gemm.cpp: transposed views go to cuBLAS as transpose flags with their own leading
// dimension, broadcast (stride-0) batch dims as a zero batch stride, and batch dims that form one
// evenly strided run as one strided-batched call. Nothing is copied or allocated.
#include <algorithm>
#include <climits>
#include <type_traits>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/gemm.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/libraries.h"
#include "tinytorch/backend/cuda/loop.cuh"

namespace tt::cuda {

namespace {

bool fits_int(int64_t x) { return x >= 0 && x <= INT_MAX; }

cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

// The batch dims of a GEMM as a kernel argument: out's sizes and each operand's strides.
struct BatchDims {
  int n = 0;
  int64_t size[kMaxDims];
  int64_t sa[kMaxDims], sb[kMaxDims], sc[kMaxDims];
};

// c[z, i, j] = beta * c[z, i, j] + sum_k a[z, i, k] * b[z, k, j] over every batch z (all strides in
// elements). a: [Z.., M, K], b: [Z.., K, N], c: [Z.., M, N]. One thread per output element, a
// grid-stride loop over Z·M·N; beta == 0 writes without reading c (as BLAS does).
template <typename T>
__global__ void gemm_naive_kernel(BatchDims bd, const T* a, const T* b, T* c, int64_t M, int64_t N, int64_t K,
                                  int64_t sa0, int64_t sa1, int64_t sb0, int64_t sb1, int64_t sc0, int64_t sc1,
                                  double beta, int64_t total) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(blockDim.x) * gridDim.x) {
    const int64_t j = e % N, i = (e / N) % M;
    int64_t z = e / (M * N), oa = 0, ob = 0, oc = 0;
    for (int d = bd.n - 1; d >= 0; --d) {
      const int64_t idx = z % bd.size[d];
      z /= bd.size[d];
      oa += idx * bd.sa[d];
      ob += idx * bd.sb[d];
      oc += idx * bd.sc[d];
    }
    T* cp = c + oc + i * sc0 + j * sc1;
    using acc_t = std::conditional_t<std::is_same<T, BFloat16>::value, float, T>;  // bf16 sums in float32
    acc_t acc = beta != 0.0 ? acc_t(beta) * acc_t(*cp) : acc_t(0);
    for (int64_t k = 0; k < K; ++k) acc += acc_t(a[oa + i * sa0 + k * sa1]) * acc_t(b[ob + k * sb0 + j * sb1]);
    *cp = T(acc);
  }
}

template <typename T>
void gemm_naive(const Tensor& out, const Tensor& a, const Tensor& b, double beta) {
  const int nd = out.dim();
  const int64_t M = out.size(nd - 2), N = out.size(nd - 1), K = a.size(nd - 1);
  BatchDims bd;
  int64_t total = M * N;
  for (int d = 0; d < nd - 2; ++d) {
    bd.size[bd.n] = out.size(d);
    bd.sa[bd.n] = a.stride(d);
    bd.sb[bd.n] = b.stride(d);
    bd.sc[bd.n] = out.stride(d);
    total *= out.size(d);
    ++bd.n;
  }
  launch(gemm_naive_kernel<T>, blocks_for(total), kThreads, 0, bd, a.data_ptr<T>(), b.data_ptr<T>(), out.data_ptr<T>(),
         M, N, K, a.stride(nd - 2), a.stride(nd - 1), b.stride(nd - 2), b.stride(nd - 1), out.stride(nd - 2),
         out.stride(nd - 1), beta, total);
}

// One strided batch of `count` [M, K] @ [K, N] products in any mix of row- and column-major
// operands; pa, pb, pc point at the first matrices, sa, sb, sc are the batch strides (elements).
void gemm_batch(int device, ScalarType dtype, int64_t M, int64_t N, int64_t K, Layout la, const void* pa,
                int64_t sa, Layout lb, const void* pb, int64_t sb, double beta, Layout lc, void* pc, int64_t sc,
                int64_t count) {
  const GemmMat A{pa, la.ld, sa}, B{pb, lb.ld, sb}, C{pc, lc.ld, sc};
  if (lc.row_major) {
    // out row-major is the column-major out^T = b^T a^T; a row-major X is a column-major X^T.
    gemm_colmajor(device, dtype, !lb.row_major, !la.row_major, N, M, K, 1.0, B, A, beta, C, count);
  } else {
    gemm_colmajor(device, dtype, la.row_major, lb.row_major, M, N, K, 1.0, A, B, beta, C, count);
  }
}

// Note [folding batches] (cpu/gemm.cpp): b shared by every batch (stride 0) and the rows of a and
// out forming one evenly strided run make [B.., M, K] @ [K, N] one [B..·M, K] @ [K, N] product.
bool rows_fold(const Tensor& t, int nd) {
  int64_t expect = t.stride(nd - 2) * t.size(nd - 2);
  for (int d = nd - 3; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (t.stride(d) != expect) return false;
    expect *= t.size(d);
  }
  return t.size(nd - 2) > 1;  // with one row, its stride says nothing about the next batch
}

}  // namespace

Layout layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
  if ((sc == 1 || cols == 1) && (sr >= std::max<int64_t>(1, cols) || rows == 1))
    return {true, rows == 1 ? std::max<int64_t>(1, cols) : sr};
  return {false, cols == 1 ? std::max<int64_t>(1, rows) : sc};
}

void gemm_colmajor(int device, ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                   double alpha, const GemmMat& a, const GemmMat& b, double beta, const GemmMat& c, int64_t count) {
  if (m == 0 || n == 0 || count == 0) return;
  TT_CHECK(k > 0, "gemm: cuBLAS needs a non-empty inner dimension, got k = ", k);
  TT_CHECK(fits_int(m) && fits_int(n) && fits_int(k) && fits_int(a.ld) && fits_int(b.ld) && fits_int(c.ld) &&
               fits_int(count),
           "gemm: cuBLAS takes 32-bit sizes, got m = ", m, ", n = ", n, ", k = ", k, ", leading dims ", a.ld, ", ",
           b.ld, ", ", c.ld, " and batch ", count);
  cublasHandle_t handle = cublas_handle(device);
  const lib::Cublas& blas = lib::cublas();  // loaded by cublas_handle
  const int im = int(m), in = int(n), ik = int(k), lda = int(a.ld), ldb = int(b.ld), ldc = int(c.ld);
  const int batch = int(count);
  if (dtype == kFloat32) {
    const float al = float(alpha), be = float(beta);
    const cublasComputeType_t compute = allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    if (count == 1) {
      TT_CUBLAS_CHECK(blas.cublasGemmEx(handle, op(trans_a), op(trans_b), im, in, ik, &al, a.p, CUDA_R_32F, lda, b.p,
                                        CUDA_R_32F, ldb, &be, const_cast<void*>(c.p), CUDA_R_32F, ldc, compute,
                                        CUBLAS_GEMM_DEFAULT));
    } else {
      TT_CUBLAS_CHECK(blas.cublasGemmStridedBatchedEx(handle, op(trans_a), op(trans_b), im, in, ik, &al, a.p,
                                                      CUDA_R_32F, lda, a.batch_stride, b.p, CUDA_R_32F, ldb,
                                                      b.batch_stride, &be, const_cast<void*>(c.p), CUDA_R_32F, ldc,
                                                      c.batch_stride, batch, compute, CUBLAS_GEMM_DEFAULT));
    }
  } else if (dtype == kBFloat16) {
    // bf16 operands on the tensor cores, float32 accumulation (CUBLAS_COMPUTE_32F), bf16 output.
    const float al = float(alpha), be = float(beta);
    if (count == 1) {
      TT_CUBLAS_CHECK(blas.cublasGemmEx(handle, op(trans_a), op(trans_b), im, in, ik, &al, a.p, CUDA_R_16BF, lda, b.p,
                                        CUDA_R_16BF, ldb, &be, const_cast<void*>(c.p), CUDA_R_16BF, ldc,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    } else {
      TT_CUBLAS_CHECK(blas.cublasGemmStridedBatchedEx(handle, op(trans_a), op(trans_b), im, in, ik, &al, a.p,
                                                      CUDA_R_16BF, lda, a.batch_stride, b.p, CUDA_R_16BF, ldb,
                                                      b.batch_stride, &be, const_cast<void*>(c.p), CUDA_R_16BF, ldc,
                                                      c.batch_stride, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
  } else {
    TT_CHECK_DTYPE(dtype == kFloat64, "gemm: cuBLAS path takes float32, float64 or bfloat16, got ", dtype);
    const double al = alpha, be = beta;
    const auto* A = static_cast<const double*>(a.p);
    const auto* B = static_cast<const double*>(b.p);
    auto* C = static_cast<double*>(const_cast<void*>(c.p));
    if (count == 1) {
      TT_CUBLAS_CHECK(blas.cublasDgemm(handle, op(trans_a), op(trans_b), im, in, ik, &al, A, lda, B, ldb, &be, C, ldc));
    } else {
      TT_CUBLAS_CHECK(blas.cublasDgemmStridedBatched(handle, op(trans_a), op(trans_b), im, in, ik, &al, A, lda,
                                                     a.batch_stride, B, ldb, b.batch_stride, &be, C, ldc,
                                                     c.batch_stride, batch));
    }
  }
}

void gemm_rowmajor(int device, ScalarType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                   double alpha, const GemmMat& a, const GemmMat& b, double beta, const GemmMat& c, int64_t count) {
  gemm_colmajor(device, dtype, trans_b, trans_a, N, M, K, alpha, b, a, beta, c, count);
}

// out: [B.., M, N]; a: [B.., M, K]; b: [B.., K, N] (batch dims of a and b already broadcast to
// out's, stride 0 allowed); for float dtypes each of the three blas_compatible (plain or
// transposed layout).
void CudaBackend::gemm(const Tensor& out, const Tensor& a, const Tensor& b, double beta) {
  DeviceGuard guard(out.device().index);
  const int nd = out.dim();
  const int64_t M = out.size(nd - 2), N = out.size(nd - 1), K = a.size(nd - 1);
  if (out.numel() == 0) return;
  if (!out.is_floating_point() || K == 0) {  // integers, or out = beta * out
    TT_DISPATCH_NUMERIC_BF16(out.dtype(), "matmul", [&] { gemm_naive<scalar_t>(out, a, b, beta); });
    return;
  }
  TT_CHECK(blas_compatible(a) && blas_compatible(b) && blas_compatible(out),
           "gemm: each operand needs a unit stride in one of its last two dims, got strides ", a.strides(), ", ",
           b.strides(), " and out ", out.strides());
  const int dev = out.device().index;
  const ScalarType dtype = out.dtype();
  const int64_t esize = int64_t(out.element_size());
  const Layout la = layout(M, K, a.stride(nd - 2), a.stride(nd - 1));
  const Layout lb = layout(K, N, b.stride(nd - 2), b.stride(nd - 1));
  const Layout lc = layout(M, N, out.stride(nd - 2), out.stride(nd - 1));
  const char* pa = static_cast<const char*>(a.raw_data_ptr());
  const char* pb = static_cast<const char*>(b.raw_data_ptr());
  char* pc = static_cast<char*>(out.raw_data_ptr());

  int64_t batch = 1;
  for (int d = 0; d < nd - 2; ++d) batch *= out.size(d);
  if (batch > 1) {
    bool fold = la.row_major && lc.row_major && la.ld == a.stride(nd - 2) && lc.ld == out.stride(nd - 2) &&
                fits_int(batch * M);
    for (int d = 0; d < nd - 2 && fold; ++d)
      if (b.stride(d) != 0 && out.size(d) != 1) fold = false;
    if (fold && rows_fold(a, nd) && rows_fold(out, nd)) {
      gemm_batch(dev, dtype, batch * M, N, K, la, pa, 0, lb, pb, 0, beta, lc, pc, 0, 1);
      return;
    }
  }

  // Batch dims of size > 1, outermost first; the innermost run that is evenly strided in all
  // three operands becomes one strided-batched call, the dims outside it a host loop.
  int dims[kMaxDims], nb = 0;
  for (int d = 0; d < nd - 2; ++d)
    if (out.size(d) != 1) dims[nb++] = d;
  int first = nb;  // dims[first..nb) form the run
  int64_t inner = 1;
  while (first > 0) {
    const int d = dims[first - 1];
    if (first < nb) {
      const int e = dims[first];
      const int64_t size_e = out.size(e);
      if (a.stride(d) != a.stride(e) * size_e || b.stride(d) != b.stride(e) * size_e ||
          out.stride(d) != out.stride(e) * size_e)
        break;
    }
    inner *= out.size(d);
    --first;
  }
  const int64_t sa = nb > 0 ? a.stride(dims[nb - 1]) : 0, sb = nb > 0 ? b.stride(dims[nb - 1]) : 0;
  const int64_t sc = nb > 0 ? out.stride(dims[nb - 1]) : 0;
  const int64_t outer = batch / inner;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t oa = 0, ob = 0, oc = 0, rest = o;
    for (int i = first - 1; i >= 0; --i) {
      const int d = dims[i];
      const int64_t idx = rest % out.size(d);
      rest /= out.size(d);
      oa += idx * a.stride(d);
      ob += idx * b.stride(d);
      oc += idx * out.stride(d);
    }
    gemm_batch(dev, dtype, M, N, K, la, pa + oa * esize, sa, lb, pb + ob * esize, sb, beta, lc, pc + oc * esize, sc,
               inner);
  }
}

}  // namespace tt::cuda
