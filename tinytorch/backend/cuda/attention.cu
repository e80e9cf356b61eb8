// CUDA fused scaled dot-product attention (the "math" kernel), twin of cpu/attention.cpp: the
// scores of every (batch, head) by strided-batched cuBLAS straight into `weights`, one row kernel
// for bias + causal mask + softmax, the output by cuBLAS again; the backward from the saved
// weights with one [Tq, Tk] scratch per key/value head. Not here: argument checks, mask
// conversion and the choice of path (ops/attention.cpp); the tiled kernel (flash_attention.cu).
//
// Note [math attention on the GPU]: per query head h of batch b (key/value head hk = h / G):
//   forward   S = scale * Q K^T           cuBLAS, into weights[b, h]
//             P = softmax(S + bias) rows  row kernel, in place, keys j > i zeroed when causal
//             O = P V                     cuBLAS
//   backward  dV += P^T dO,  dP = dO V^T (scratch),  dS = P * (dP - rowsum(dP * P)) * scale (row
//             kernel, in place),  dQ = dS K,  dK += dS^T Q
// Unlike the CPU the causal GEMMs run over the whole [Tq, Tk] square (the row kernel writes the
// zeros): cuBLAS on full tiles beats many small triangular blocks. The GEMMs are batched over
// (b, hk), one call per g = h % G: query head hk * G + g is then an evenly strided batch in q,
// out and weights. When (b, hk) collapse to one batch stride in every operand that is a single
// strided-batched call; otherwise (e.g. the [B, T, H, D] layout of a projection's heads) a host
// loop over b, each call batched over the heads. dK and dV accumulate over g with beta = 1 into
// the caller's zero-filled tensors; the calls of one stream run in order, so no two writes race.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "tinytorch/backend/activation_functors.h"
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/gemm.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/loop.cuh"
#include "tinytorch/backend/cuda/scratch.cuh"

namespace tt::cuda {

namespace {

constexpr int kRowWarps = 8;  // rows (one warp each) per block of the row kernels

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}
// Max that ignores NaN (a NaN never wins the comparison), as the CPU's row max.
template <typename T>
__device__ __forceinline__ T warp_max(T v) {
  for (int m = 16; m > 0; m >>= 1) {
    const T o = __shfl_xor_sync(0xffffffffu, v, m);
    v = o > v ? o : v;
  }
  return v;
}

// Where the bias row of score row r lives: bias[b, h, i, :] with any strides (0 = broadcast).
struct BiasView {
  const void* p = nullptr;
  int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
};

// weights: [B·H·Tq, Tk] contiguous, holding scale * Q K^T; bias: [B, H, Tq, Tk] strided or null.
// One warp per row (grid-stride over rows): adds the bias, keeps keys j <= i when causal, and
// turns the row into softmax weights in place, 0 for masked keys and for a row with no finite
// score; a NaN score with no finite one makes the whole row NaN (cpu/attention.cpp softmax_row).
template <typename T>
__global__ void softmax_rows_kernel(T* weights, BiasView bias, int64_t rows, int64_t H, int64_t Tq, int64_t Tk,
                                    bool causal) {
  const int lane = threadIdx.x % 32;
  const T* bp = static_cast<const T*>(bias.p);
  for (int64_t r = blockIdx.x * int64_t(kRowWarps) + threadIdx.x / 32; r < rows;
       r += int64_t(gridDim.x) * kRowWarps) {
    const int64_t i = r % Tq, h = (r / Tq) % H, b = r / (Tq * H);
    T* p = weights + r * Tk;
    const T* brow = bp == nullptr ? nullptr : bp + b * bias.s0 + h * bias.s1 + i * bias.s2;
    int64_t n = causal ? std::min<int64_t>(Tk, i + 1) : Tk;
    T m = -std::numeric_limits<T>::infinity();
    bool nan = false;
    for (int64_t j = lane; j < n; j += 32) {
      T x = p[j];
      if (brow != nullptr) x += brow[j * bias.s3];
      p[j] = x;
      m = x > m ? x : m;
      nan = nan || x != x;
    }
    m = warp_max(m);
    nan = __any_sync(0xffffffffu, nan);
    if (m == -std::numeric_limits<T>::infinity()) {
      if (nan) {  // no finite score but a NaN: the whole row is NaN, as softmax makes it
        for (int64_t j = lane; j < Tk; j += 32) p[j] = std::numeric_limits<T>::quiet_NaN();
        continue;
      }
      n = 0;  // nothing to attend to: all zeros
    }
    T s = 0;
    for (int64_t j = lane; j < n; j += 32) {
      const T e = functors::exp_any(p[j] - m);
      p[j] = e;
      s += e;
    }
    const T inv = T(1) / warp_sum(s);
    for (int64_t j = lane; j < Tk; j += 32) p[j] = j < n ? p[j] * inv : T(0);
  }
}

// ds: [B·Hkv·Tq, Tk] contiguous holding dP = dO V^T of query heads hk·G + g; weights: P as
// [B, Hq, Tq, Tk] contiguous. One warp per row: ds = P * (dP - rowsum(dP * P)) * scale in place,
// 0 for keys j > i when causal.
template <typename T>
__global__ void softmax_grad_rows_kernel(T* ds, const T* weights, int64_t rows, int64_t Hkv, int64_t G, int64_t g,
                                         int64_t Tq, int64_t Tk, bool causal, T scale) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = blockIdx.x * int64_t(kRowWarps) + threadIdx.x / 32; r < rows;
       r += int64_t(gridDim.x) * kRowWarps) {
    const int64_t i = r % Tq, hk = (r / Tq) % Hkv, b = r / (Tq * Hkv);
    T* d = ds + r * Tk;
    const T* p = weights + (((b * Hkv + hk) * G + g) * Tq + i) * Tk;
    const int64_t n = causal ? std::min<int64_t>(Tk, i + 1) : Tk;
    T dot = 0;
    for (int64_t j = lane; j < n; j += 32) dot += d[j] * p[j];
    dot = warp_sum(dot);
    for (int64_t j = lane; j < Tk; j += 32) d[j] = j < n ? p[j] * (d[j] - dot) * scale : T(0);
  }
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((rows + kRowWarps - 1) / kRowWarps, 1 << 20)));
}

// One operand of the per-head GEMMs: matrix (b, j) of the batch starts at p + b * sb + j * sj
// elements (j the key/value head), rows ld apart.
struct HeadMat {
  const char* p;
  int64_t ld, sb, sj;
};
HeadMat head_mat(const Tensor& t, int64_t head0, int64_t head_step) {
  const char* p = static_cast<const char*>(t.raw_data_ptr()) + head0 * t.stride(1) * int64_t(t.element_size());
  const int64_t ld = t.size(2) == 1 ? std::max<int64_t>(1, t.size(3)) : t.stride(2);  // one row: any stride
  return {p, ld, t.stride(0), head_step * t.stride(1)};
}
// Matrix (b, hk, g) of a contiguous [B, Hkv·G, Tq, Tk] buffer.
HeadMat square_mat(const Tensor& t, int64_t Hkv, int64_t G, int64_t g, int64_t Tq, int64_t Tk) {
  const char* p = static_cast<const char*>(t.raw_data_ptr()) + g * Tq * Tk * int64_t(t.element_size());
  return {p, Tk, Hkv * G * Tq * Tk, G * Tq * Tk};
}

// C(b, j) = alpha * op(A(b, j)) op(B(b, j)) + beta * C(b, j) for b < nb, j < nj, row-major
// (gemm_rowmajor): one strided-batched call when (b, j) collapse to one stride in all three
// operands, else one call per b.
void head_gemm(int device, ScalarType dtype, int64_t nb, int64_t nj, bool ta, bool tb, int64_t M, int64_t N,
               int64_t K, double alpha, const HeadMat& A, const HeadMat& B, double beta, const HeadMat& C) {
  const int64_t es = int64_t(element_size(dtype));
  auto mat = [&](const HeadMat& h, int64_t b, int64_t stride) {
    return GemmMat{h.p + b * h.sb * es, h.ld, stride};
  };
  if (nj == 1) {
    gemm_rowmajor(device, dtype, ta, tb, M, N, K, alpha, mat(A, 0, A.sb), mat(B, 0, B.sb), beta, mat(C, 0, C.sb), nb);
    return;
  }
  const bool collapse = nb == 1 || (A.sb == nj * A.sj && B.sb == nj * B.sj && C.sb == nj * C.sj);
  if (collapse) {
    gemm_rowmajor(device, dtype, ta, tb, M, N, K, alpha, mat(A, 0, A.sj), mat(B, 0, B.sj), beta, mat(C, 0, C.sj),
                  nb * nj);
    return;
  }
  for (int64_t b = 0; b < nb; ++b)
    gemm_rowmajor(device, dtype, ta, tb, M, N, K, alpha, mat(A, b, A.sj), mat(B, b, B.sj), beta, mat(C, b, C.sj), nj);
}

void check_rows(const Tensor& t, const char* op, const char* name) {
  TT_CHECK((t.stride(3) == 1 || t.size(3) == 1) && (t.stride(2) >= std::max<int64_t>(1, t.size(3)) || t.size(2) == 1),
           op, ": ", name,
           " needs a unit last-dim stride and a row stride >= its last dim, got strides ", t.strides());
}

}  // namespace

// out: [B, Hq, Tq, Dv], weights: [B, Hq, Tq, Tk] contiguous; q, k, v, bias: see backend.h.
void CudaBackend::attention_forward(const Tensor& out, const Tensor& weights, const Tensor& q, const Tensor& k,
                                    const Tensor& v, const Tensor& bias, const AttentionArgs& args) {
  DeviceGuard guard(out.device().index);
  const int dev = out.device().index;
  const ScalarType dtype = q.dtype();
  const int64_t B = q.size(0), Hq = q.size(1), Tq = q.size(2), D = q.size(3);
  const int64_t Hkv = k.size(1), G = Hq / Hkv, Tk = k.size(2), Dv = v.size(3);
  if (out.numel() == 0 || weights.numel() == 0) return;
  for (const Tensor* t : {&q, &k, &v, &out}) check_rows(*t, "attention_forward", "each of q, k, v, out");
  TT_CHECK(weights.is_contiguous(), "attention_forward: weights must be contiguous");

  const HeadMat K = head_mat(k, 0, 1), V = head_mat(v, 0, 1);
  for (int64_t g = 0; g < G; ++g) {  // S = scale * Q K^T into weights
    head_gemm(dev, dtype, B, Hkv, false, true, Tq, Tk, D, args.scale, head_mat(q, g, G), K, 0.0,
              square_mat(weights, Hkv, G, g, Tq, Tk));
  }
  BiasView bv;
  if (bias.defined()) bv = {bias.raw_data_ptr(), bias.stride(0), bias.stride(1), bias.stride(2), bias.stride(3)};
  const int64_t rows = B * Hq * Tq;
  TT_DISPATCH_FLOATING(dtype, "attention_forward", [&] {
    launch(softmax_rows_kernel<scalar_t>, row_blocks(rows), kRowWarps * 32, 0, weights.data_ptr<scalar_t>(), bv, rows,
           Hq, Tq, Tk, args.causal);
  });
  for (int64_t g = 0; g < G; ++g) {  // O = P V
    head_gemm(dev, dtype, B, Hkv, false, false, Tq, Dv, Tk, 1.0, square_mat(weights, Hkv, G, g, Tq, Tk), V, 0.0,
              head_mat(out, g, G));
  }
}

// dq, dk, dv: q, k, v's shapes (dk, dv zero-filled by the caller); dout: out's shape.
void CudaBackend::attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                     const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                                     const AttentionArgs& args) {
  DeviceGuard guard(q.device().index);
  const int dev = q.device().index;
  const ScalarType dtype = q.dtype();
  const int64_t B = q.size(0), Hq = q.size(1), Tq = q.size(2), D = q.size(3);
  const int64_t Hkv = k.size(1), G = Hq / Hkv, Tk = k.size(2), Dv = v.size(3);
  if (q.numel() == 0 || k.numel() == 0) return;
  for (const Tensor* t : {&q, &k, &v, &dout, &dq, &dk, &dv})
    check_rows(*t, "attention_backward", "each of q, k, v, dout, dq, dk, dv");
  TT_CHECK(weights.is_contiguous(), "attention_backward: weights must be contiguous");

  // dP, then dS in place, of the query heads hk * G + g of every (b, hk).
  const Scratch<char> scratch(B * Hkv * Tq * Tk * int64_t(element_size(dtype)), q.device().index);
  const HeadMat S = {scratch.data(), Tk, Hkv * Tq * Tk, Tq * Tk};  // as square_mat of a [B, Hkv, Tq, Tk] tensor
  const HeadMat K = head_mat(k, 0, 1), V = head_mat(v, 0, 1), dK = head_mat(dk, 0, 1), dV = head_mat(dv, 0, 1);
  const int64_t rows = B * Hkv * Tq;
  for (int64_t g = 0; g < G; ++g) {
    const HeadMat P = square_mat(weights, Hkv, G, g, Tq, Tk);
    const HeadMat Q = head_mat(q, g, G), dO = head_mat(dout, g, G), dQ = head_mat(dq, g, G);
    head_gemm(dev, dtype, B, Hkv, true, false, Tk, Dv, Tq, 1.0, P, dO, 1.0, dV);    // dV += P^T dO
    head_gemm(dev, dtype, B, Hkv, false, true, Tq, Tk, Dv, 1.0, dO, V, 0.0, S);     // dP = dO V^T
    TT_DISPATCH_FLOATING(dtype, "attention_backward", [&] {
      launch(softmax_grad_rows_kernel<scalar_t>, row_blocks(rows), kRowWarps * 32, 0,
             reinterpret_cast<scalar_t*>(scratch.data()), weights.data_ptr<scalar_t>(), rows, Hkv, G, g, Tq, Tk,
             args.causal, scalar_t(args.scale));
    });
    head_gemm(dev, dtype, B, Hkv, false, false, Tq, D, Tk, 1.0, S, K, 0.0, dQ);     // dQ = dS K
    head_gemm(dev, dtype, B, Hkv, true, false, Tk, D, Tq, 1.0, S, Q, 1.0, dK);      // dK += dS^T Q
  }
}

}  // namespace tt::cuda
