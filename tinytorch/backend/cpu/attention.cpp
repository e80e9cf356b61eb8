// CPU fused scaled dot-product attention (the "math" kernel): per (batch, head), scores by one
// GEMM, mask + softmax in one pass over each row, output by one GEMM; the backward from the saved
// weights. Not here: argument checks, mask conversion and the choice of path (ops/attention.cpp).
//
// Note [fused attention on the CPU]: heads are independent, so threads split the (batch, head)
// pairs and each thread calls the BLAS on its own head, single-threaded (BlasSingleThread and
// Note [threading policy] in backend/threads.cpp). Per head:
//   forward   S = scale * Q K^T (+ bias),  P = softmax(S) per row,  O = P V
//   backward  dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)) * scale,
//             dQ = dS K,  dK = dS^T Q
// Causal attention (query i sees keys j <= i) splits the queries into blocks of kCausalBlock rows;
// block [r0, r1) only multiplies against keys [0, r1), so the GEMMs skip the tiles above the
// diagonal (for T = 256: 62% of the full work; tends to half as T grows). Inside a block the row
// pass masks the remaining j > i and writes zeros there, so P stays exactly lower-triangular.
// A row with no finite score (every key masked) gets P = 0: output 0 and zero gradients.
//
// With GQA, query head h reads key/value head h / G (G = Hq / Hkv). In the backward a thread owns
// one key/value head and runs its G query heads in turn, accumulating dK and dV (GEMM beta = 1),
// so no two threads write the same dK/dV.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tinytorch/backend/activation_functors.h"
#include "tinytorch/backend/cpu/blas_threads.h"
#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/cpu/loop.h"
#include "tinytorch/backend/cpu/row_sum.h"
#include "tinytorch/backend/cpu/scratch.h"

namespace tt::cpu {

namespace {

constexpr int64_t kCausalBlock = 64;

// One matrix of a [B, H, T, X] tensor: base pointer of (b, h) and the row stride.
template <typename T>
struct Mat {
  T* p;
  int64_t ld;
};
template <typename T>
Mat<T> mat(const Tensor& t, int64_t b, int64_t h) {
  return {const_cast<T*>(t.data_ptr<T>()) + b * t.stride(0) + h * t.stride(1), t.stride(2)};
}

// The query blocks of one head: [r0, r1) with keys [0, kend).
struct Block {
  int64_t r0, r1, kend;
};
std::vector<Block> query_blocks(int64_t Tq, int64_t Tk, bool causal) {
  if (!causal) return {{0, Tq, Tk}};
  std::vector<Block> blocks;
  for (int64_t r0 = 0; r0 < Tq; r0 += kCausalBlock) {
    const int64_t r1 = std::min(Tq, r0 + kCausalBlock);
    blocks.push_back({r0, r1, std::min(Tk, r1)});
  }
  return blocks;
}

// Row i of P (Tk wide, holding scale * q_i . k_j for j < kend): adds the bias row, applies the
// causal limit, and turns the first n entries into softmax weights; the rest become 0.
template <typename T>
void softmax_row(T* __restrict p, const T* bias, int64_t bias_step, int64_t n, int64_t Tk) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  if (bias != nullptr) {
    if (bias_step == 1) {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) p[j] += bias[j];
    } else {
      for (int64_t j = 0; j < n; ++j) p[j] += bias[j * bias_step];
    }
  }
  T m = kNegInf;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < n; ++j) m = p[j] > m ? p[j] : m;
  if (m == kNegInf) {  // no finite score: nothing to attend to (all zeros), unless a NaN hid
    bool nan = false;    // from the max, which then makes the whole row NaN, as softmax does
    for (int64_t j = 0; j < n && !nan; ++j) nan = p[j] != p[j];
    if (nan) {
      std::fill(p, p + Tk, std::numeric_limits<T>::quiet_NaN());
      return;
    }
    n = 0;
  }
  const double sum = row_sum<T>(n, [&](int64_t j) { return p[j] = functors::exp_any(p[j] - m); });
  const T inv = T(1.0 / sum);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) p[j] *= inv;
  std::fill(p + n, p + Tk, T(0));
}

template <typename T>
void forward_impl(const Tensor& out, const Tensor& weights, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& bias, const AttentionArgs& args) {
  const int64_t B = q.size(0), Hq = q.size(1), Tq = q.size(2), D = q.size(3);
  const int64_t G = Hq / k.size(1), Tk = k.size(2), Dv = v.size(3);
  const std::vector<Block> blocks = query_blocks(Tq, Tk, args.causal);
  const T* bias_p = bias.defined() ? bias.data_ptr<T>() : nullptr;
  BlasSingleThread single;
  const int64_t tasks = B * Hq;
  const int64_t grain = attention_grain(tasks, double(B * Hq) * Tq * Tk * (D + Dv));
  parallel_for(tasks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / Hq, h = bh % Hq;
      const Mat<T> Q = mat<T>(q, b, h), K = mat<T>(k, b, h / G), V = mat<T>(v, b, h / G), O = mat<T>(out, b, h);
      T* P = weights.data_ptr<T>() + bh * Tq * Tk;
      for (const Block& blk : blocks) {
        const int64_t rows = blk.r1 - blk.r0;
        T* Pb = P + blk.r0 * Tk;
        tile_gemm(false, true, rows, blk.kend, D, args.scale, Q.p + blk.r0 * Q.ld, Q.ld, K.p, K.ld, 0.0, Pb, Tk);
        for (int64_t i = blk.r0; i < blk.r1; ++i) {
          const int64_t n = args.causal ? std::min(blk.kend, i + 1) : Tk;
          const T* brow = bias_p == nullptr
                              ? nullptr
                              : bias_p + b * bias.stride(0) + h * bias.stride(1) + i * bias.stride(2);
          softmax_row(P + i * Tk, brow, bias_p == nullptr ? 1 : bias.stride(3), n, Tk);
        }
        tile_gemm(false, false, rows, Dv, blk.kend, 1.0, Pb, Tk, V.p, V.ld, 0.0, O.p + blk.r0 * O.ld, O.ld);
      }
    }
  });
}

template <typename T>
void backward_impl(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                   const Tensor& k, const Tensor& v, const Tensor& weights, const AttentionArgs& args) {
  const int64_t B = q.size(0), Hq = q.size(1), Tq = q.size(2), D = q.size(3);
  const int64_t Hkv = k.size(1), G = Hq / Hkv, Tk = k.size(2), Dv = v.size(3);
  const std::vector<Block> blocks = query_blocks(Tq, Tk, args.causal);
  BlasSingleThread single;
  const int64_t tasks = B * Hkv;
  const int64_t grain = attention_grain(tasks, double(B * Hq) * Tq * Tk * (D + Dv));
  parallel_for(tasks, grain, [&](int64_t begin, int64_t end) {
    const Scratch<T> scratch(Tq * Tk);  // dP, then dS, of one head
    T* const dP = scratch.data();
    for (int64_t bk = begin; bk < end; ++bk) {
      const int64_t b = bk / Hkv, hk = bk % Hkv;
      const Mat<T> K = mat<T>(k, b, hk), V = mat<T>(v, b, hk), dK = mat<T>(dk, b, hk), dV = mat<T>(dv, b, hk);
      for (int64_t g = 0; g < G; ++g) {
        const int64_t h = hk * G + g;
        const Mat<T> Q = mat<T>(q, b, h), dO = mat<T>(dout, b, h), dQ = mat<T>(dq, b, h);
        const T* P = weights.data_ptr<T>() + (b * Hq + h) * Tq * Tk;
        for (size_t bi = 0; bi < blocks.size(); ++bi) {
          const Block& blk = blocks[bi];
          const int64_t rows = blk.r1 - blk.r0, n = blk.kend;
          const T* Pb = P + blk.r0 * Tk;
          T* dPb = dP + blk.r0 * Tk;
          tile_gemm(false, true, rows, n, Dv, 1.0, dO.p + blk.r0 * dO.ld, dO.ld, V.p, V.ld, 0.0, dPb, Tk);
          for (int64_t i = blk.r0; i < blk.r1; ++i) {
            const T* p = P + i * Tk;
            T* d = dP + i * Tk;
            const T dot = T(row_sum<T>(n, [&](int64_t j) { return d[j] * p[j]; }));
            const T scale = T(args.scale);
#pragma omp simd
            for (int64_t j = 0; j < n; ++j) d[j] = p[j] * (d[j] - dot) * scale;
          }
          tile_gemm(false, false, rows, D, n, 1.0, dPb, Tk, K.p, K.ld, 0.0, dQ.p + blk.r0 * dQ.ld, dQ.ld);
          tile_gemm(true, false, n, Dv, rows, 1.0, Pb, Tk, dO.p + blk.r0 * dO.ld, dO.ld, 1.0, dV.p, dV.ld);
          tile_gemm(true, false, n, D, rows, 1.0, dPb, Tk, Q.p + blk.r0 * Q.ld, Q.ld, 1.0, dK.p, dK.ld);
        }
      }
    }
  });
}

}  // namespace

// out: [B, Hq, Tq, Dv], weights: [B, Hq, Tq, Tk] contiguous; q, k, v, bias: see backend.h.
void CpuBackend::attention_forward(const Tensor& out, const Tensor& weights, const Tensor& q, const Tensor& k,
                                   const Tensor& v, const Tensor& bias, const AttentionArgs& args) {
  if (q.dtype() == kFloat32)
    forward_impl<float>(out, weights, q, k, v, bias, args);
  else
    forward_impl<double>(out, weights, q, k, v, bias, args);
}

// dq, dk, dv: q, k, v's shapes (dk, dv zero-filled by the caller); dout: out's shape.
void CpuBackend::attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& weights,
                                    const AttentionArgs& args) {
  if (q.dtype() == kFloat32)
    backward_impl<float>(dq, dk, dv, dout, q, k, v, weights, args);
  else
    backward_impl<double>(dq, dk, dv, dout, q, k, v, weights, args);
}

}  // namespace tt::cpu
