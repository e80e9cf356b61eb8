// CPU flash attention: exact scaled dot-product attention in tiles with an online softmax, forward
// and backward, never holding a [Tq, Tk] matrix. Not here: checks, masks turned into a bias and
// the choice of path (ops/attention.cpp); the materializing kernel is cpu/attention.cpp.
//
// Note [flash attention on the CPU]: FlashAttention-2 (Dao 2023) on a CPU.
// Forward, per (batch, head, tile of kBlockQ queries), a task of its own:
//   m = -inf, l = 0, acc = 0                                 per query row
//   for each tile of kBlockK keys (causal: only tiles that start at or left of the last row):
//     S = scale * Q_i K_j^T + bias                          [kBlockQ, kBlockK], one GEMM
//     m' = max(m, rowmax S);  P = exp(S - m');  alpha = exp(m - m')
//     l = alpha * l + rowsum P;  acc = alpha * acc + P V_j   (second GEMM, beta = 1)
//   out = acc / l,  lse = m + log l                          written once
// Backward, per (batch, key/value head) a task (so dK, dV and the group's dQ have one writer):
//   Dvec = rowsum(dO * O) per query row
//   for each key tile j, for each query tile i that can see it:
//     P = exp(S - lse) (S rebuilt from Q_i, K_j)   dV_j += P^T dO_i
//     dP = dO_i V_j^T   dS = P * (dP - Dvec) * scale
//     dQ_i += dS K_j    dK_j += dS^T Q_i
// Every product is a single-threaded OpenBLAS GEMM on tiles (threads split the tasks; see Note
// [fused attention on the CPU] for why OpenBLAS's own pool is switched off meanwhile). Memory per
// thread: two [kBlockQ, kBlockK] tiles and one accumulator; per call: lse [B, Hq, Tq].
//
// Masked scores are -inf. A row whose keys are all masked keeps m = -inf: its P stays 0, its output
// 0 and its lse -inf, and the backward treats lse = -inf as P = 0, so gradients are 0, never NaN.
// A NaN score (a NaN in q or k) makes its row's output, lse and gradients NaN, as softmax does.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tinytorch/backend/activation_functors.h"
#include "tinytorch/backend/cpu/blas_threads.h"
#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/cpu/loop.h"
#include "tinytorch/backend/cpu/scratch.h"

namespace tt::cpu {

namespace {

constexpr int64_t kBlockQ = 128;
constexpr int64_t kBlockK = 128;

template <typename T>
T* at(const Tensor& t, int64_t b, int64_t h) {
  return const_cast<T*>(t.data_ptr<T>()) + b * t.stride(0) + h * t.stride(1);
}

// Adds the bias to a tile of scores and masks what causality forbids. S: [rows, cols] with row
// stride ld, query rows from i0, key columns from j0. Returns the number of leading columns any
// row may use (the rest of each row is -inf).
template <typename T>
void mask_tile(T* S, int64_t ld, int64_t rows, int64_t cols, int64_t i0, int64_t j0, const T* bias, int64_t bs_i,
               int64_t bs_j, bool causal) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    T* s = S + r * ld;
    if (bias != nullptr) {
      const T* brow = bias + (i0 + r) * bs_i + j0 * bs_j;
      if (bs_j == 1) {
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) s[c] += brow[c];
      } else {
        for (int64_t c = 0; c < cols; ++c) s[c] += brow[c * bs_j];
      }
    }
    if (causal) {
      const int64_t first_hidden = std::max<int64_t>(0, i0 + r + 1 - j0);  // key j0 + c > query i0 + r
      for (int64_t c = first_hidden; c < cols; ++c) s[c] = kNegInf;
    }
  }
}

template <typename T>
void forward_impl(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& bias, const AttentionArgs& args) {
  // TT_EXERCISE_BEGIN(13)
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t B = q.size(0), Hq = q.size(1), Tq = q.size(2), D = q.size(3);
  const int64_t G = Hq / k.size(1), Tk = k.size(2), Dv = v.size(3);
  const int64_t q_tiles = (Tq + kBlockQ - 1) / kBlockQ;
  const T* bias_p = bias.defined() ? bias.data_ptr<T>() : nullptr;
  BlasSingleThread single;
  const int64_t tasks = B * Hq * q_tiles;
  const int64_t grain = attention_grain(tasks, double(B * Hq) * Tq * Tk * (D + Dv));
  parallel_for(tasks, grain, [&](int64_t begin, int64_t end) {
    const Scratch<T> scratch(kBlockQ * (kBlockK + Dv + 2));
    T* const S = scratch.data();               // [kBlockQ, kBlockK] scores, then weights
    T* const acc = S + kBlockQ * kBlockK;       // [kBlockQ, Dv] unnormalized output
    T* const m = acc + kBlockQ * Dv;            // [kBlockQ] running max
    T* const l = m + kBlockQ;                   // [kBlockQ] running sum
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / q_tiles, b = bh / Hq, h = bh % Hq;
      const int64_t i0 = (task % q_tiles) * kBlockQ, rows = std::min(kBlockQ, Tq - i0);
      const T* Q = at<T>(q, b, h) + i0 * q.stride(2);
      const T* K = at<T>(k, b, h / G);
      const T* V = at<T>(v, b, h / G);
      const T* bias_bh = bias_p == nullptr ? nullptr : bias_p + b * bias.stride(0) + h * bias.stride(1);
      std::fill(m, m + kBlockQ, kNegInf);
      std::fill(l, l + kBlockQ, T(0));
      std::fill(acc, acc + kBlockQ * Dv, T(0));
      const int64_t kend = args.causal ? std::min(Tk, i0 + rows) : Tk;
      for (int64_t j0 = 0; j0 < kend; j0 += kBlockK) {
        const int64_t cols = std::min(kBlockK, kend - j0);
        tile_gemm(false, true, rows, cols, D, args.scale, Q, q.stride(2), K + j0 * k.stride(2), k.stride(2), 0.0, S,
             kBlockK);
        mask_tile(S, kBlockK, rows, cols, i0, j0, bias_bh, bias_p ? bias.stride(2) : 0,
                  bias_p ? bias.stride(3) : 0, args.causal && j0 + cols > i0);
        for (int64_t r = 0; r < rows; ++r) {
          T* s = S + r * kBlockK;
          T mx = m[r];
#pragma omp simd reduction(max : mx)
          for (int64_t c = 0; c < cols; ++c) mx = s[c] > mx ? s[c] : mx;
          if (mx == kNegInf) {  // nothing visible in this tile (or only NaN, which the max skips)
            bool nan = false;
            for (int64_t c = 0; c < cols && !nan; ++c) nan = s[c] != s[c];
            if (nan) l[r] = std::numeric_limits<T>::quiet_NaN();  // the row's output becomes NaN
            std::fill(s, s + cols, T(0));
            continue;
          }
          const T alpha = functors::exp_any(m[r] - mx);  // 0 when m was -inf
          T sum = 0;
#pragma omp simd reduction(+ : sum)
          for (int64_t c = 0; c < cols; ++c) {
            s[c] = functors::exp_any(s[c] - mx);
            sum += s[c];
          }
          l[r] = l[r] * alpha + sum;
          m[r] = mx;
          if (alpha != T(1)) {
            T* a = acc + r * Dv;
#pragma omp simd
            for (int64_t d = 0; d < Dv; ++d) a[d] *= alpha;
          }
        }
        tile_gemm(false, false, rows, Dv, cols, 1.0, S, kBlockK, V + j0 * v.stride(2), v.stride(2), 1.0, acc,
             Dv);
      }
      T* O = at<T>(out, b, h) + i0 * out.stride(2);
      T* L = lse.data_ptr<T>() + bh * Tq + i0;
      for (int64_t r = 0; r < rows; ++r) {
        const T lr = l[r];
        const bool nan = lr != lr;  // a NaN score: the whole row is NaN, as in softmax
        const T inv = lr > T(0) ? T(1) / lr : (nan ? lr : T(0));
        T* o = O + r * out.stride(2);
        const T* a = acc + r * Dv;
#pragma omp simd
        for (int64_t d = 0; d < Dv; ++d) o[d] = a[d] * inv;
        L[r] = lr > T(0) ? m[r] + T(std::log(lr)) : (nan ? lr : kNegInf);
      }
    }
  });
  // TT_EXERCISE_END
}

template <typename T>
void backward_impl(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                   const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& bias,
                   const AttentionArgs& args) {
  // TT_EXERCISE_BEGIN(13)
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t B = q.size(0), Hq = q.size(1), Tq = q.size(2), D = q.size(3);
  const int64_t Hkv = k.size(1), G = Hq / Hkv, Tk = k.size(2), Dv = v.size(3);
  const T* bias_p = bias.defined() ? bias.data_ptr<T>() : nullptr;
  const T scale = T(args.scale);
  BlasSingleThread single;
  const int64_t tasks = B * Hkv;
  const int64_t grain = attention_grain(tasks, double(B * Hq) * Tq * Tk * (D + Dv));
  parallel_for(tasks, grain, [&](int64_t begin, int64_t end) {
    const Scratch<T> scratch(2 * kBlockQ * kBlockK + Tq);
    T* const P = scratch.data();          // [kBlockQ, kBlockK] weights rebuilt
    T* const dP = P + kBlockQ * kBlockK;  // [kBlockQ, kBlockK] dP, then dS
    T* const Dvec = dP + kBlockQ * kBlockK;  // [Tq] rowsum(dO * O) of one head
    for (int64_t bk = begin; bk < end; ++bk) {
      const int64_t b = bk / Hkv, hk = bk % Hkv;
      const T* K = at<T>(k, b, hk);
      const T* V = at<T>(v, b, hk);
      T* dK = at<T>(dk, b, hk);
      T* dV = at<T>(dv, b, hk);
      for (int64_t g = 0; g < G; ++g) {
        const int64_t h = hk * G + g;
        const T* Q = at<T>(q, b, h);
        const T* dO = at<T>(dout, b, h);
        const T* O = at<T>(out, b, h);
        T* dQ = at<T>(dq, b, h);
        const T* L = lse.data_ptr<T>() + (b * Hq + h) * Tq;
        const T* bias_bh = bias_p == nullptr ? nullptr : bias_p + b * bias.stride(0) + h * bias.stride(1);
        for (int64_t i = 0; i < Tq; ++i) {
          const T* o = O + i * out.stride(2);
          const T* d = dO + i * dout.stride(2);
          T s = 0;
#pragma omp simd reduction(+ : s)
          for (int64_t e = 0; e < Dv; ++e) s += o[e] * d[e];
          Dvec[i] = s;
        }
        for (int64_t j0 = 0; j0 < Tk; j0 += kBlockK) {
          const int64_t cols = std::min(kBlockK, Tk - j0);
          // Causal: query i sees key j only when j <= i, so the first query tile that matters is the
          // one holding row j0.
          const int64_t first_i = args.causal ? (j0 / kBlockQ) * kBlockQ : 0;
          for (int64_t i0 = first_i; i0 < Tq; i0 += kBlockQ) {
            const int64_t rows = std::min(kBlockQ, Tq - i0);
            tile_gemm(false, true, rows, cols, D, args.scale, Q + i0 * q.stride(2), q.stride(2), K + j0 * k.stride(2),
                 k.stride(2), 0.0, P, kBlockK);
            mask_tile(P, kBlockK, rows, cols, i0, j0, bias_bh, bias_p ? bias.stride(2) : 0,
                      bias_p ? bias.stride(3) : 0, args.causal && j0 + cols > i0);
            for (int64_t r = 0; r < rows; ++r) {
              T* p = P + r * kBlockK;
              const T lr = L[i0 + r];
              if (lr == kNegInf) {
                std::fill(p, p + cols, T(0));
                continue;
              }
#pragma omp simd
              for (int64_t c = 0; c < cols; ++c) p[c] = functors::exp_any(p[c] - lr);
            }
            // dV_j += P^T dO_i
            tile_gemm(true, false, cols, Dv, rows, 1.0, P, kBlockK, dO + i0 * dout.stride(2), dout.stride(2), 1.0,
                 dV + j0 * dv.stride(2), dv.stride(2));
            // dP = dO_i V_j^T
            tile_gemm(false, true, rows, cols, Dv, 1.0, dO + i0 * dout.stride(2), dout.stride(2), V + j0 * v.stride(2),
                 v.stride(2), 0.0, dP, kBlockK);
            for (int64_t r = 0; r < rows; ++r) {
              const T* p = P + r * kBlockK;
              T* d = dP + r * kBlockK;
              const T Di = Dvec[i0 + r];
#pragma omp simd
              for (int64_t c = 0; c < cols; ++c) d[c] = p[c] * (d[c] - Di) * scale;
            }
            // dQ_i += dS K_j ; dK_j += dS^T Q_i
            tile_gemm(false, false, rows, D, cols, 1.0, dP, kBlockK, K + j0 * k.stride(2), k.stride(2), 1.0,
                 dQ + i0 * dq.stride(2), dq.stride(2));
            tile_gemm(true, false, cols, D, rows, 1.0, dP, kBlockK, Q + i0 * q.stride(2), q.stride(2), 1.0,
                 dK + j0 * dk.stride(2), dk.stride(2));
          }
        }
      }
    }
  });
  // TT_EXERCISE_END
}

}  // namespace

// out: [B, Hq, Tq, Dv]; lse: [B, Hq, Tq] contiguous; q, k, v, bias as attention_forward.
void CpuBackend::flash_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                         const Tensor& v, const Tensor& bias, const AttentionArgs& args) {
  if (q.dtype() == kFloat32)
    forward_impl<float>(out, lse, q, k, v, bias, args);
  else
    forward_impl<double>(out, lse, q, k, v, bias, args);
}

// dq, dk, dv: zero-filled by the caller; the rest as the forward left them.
void CpuBackend::flash_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                          const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                          const Tensor& lse, const Tensor& bias, const AttentionArgs& args) {
  if (q.dtype() == kFloat32)
    backward_impl<float>(dq, dk, dv, dout, q, k, v, out, lse, bias, args);
  else
    backward_impl<double>(dq, dk, dv, dout, q, k, v, out, lse, bias, args);
}

}  // namespace tt::cpu
