// CPU flash attention: exact scaled dot-product attention in tiles with an online softmax, forward
// and backward, never holding a [Tq, Tk] matrix. Not here: checks, masks turned into a bias and
// the choice of path (ops/attention.cpp); the materializing kernel is cpu/attention.cpp.
//
// Note [flash attention on the CPU]: FlashAttention-2 (Dao 2023) on a CPU.
// Forward, per (batch, head, tile of kBlockQ queries), a task of its own:
//   m = -inf, l = 0, acc = 0                                 per query row
//   for each tile of kBlockK keys (causal: only tiles that start at or left of the last row):
//     S = scale * Q_i K_j^T + bias                          [kBlockQ, kBlockK], one GEMM
//     per row (online_softmax_update, Note [online softmax]):
//       m' = max(m, rowmax S);  P = exp(S - m');  alpha = exp(m - m')
//       l = alpha * l + rowsum P;  acc = alpha * acc
//     acc += P V_j                                          (second GEMM, beta = 1)
//   out = acc / l,  lse = m + log l                          written once
// Backward, per (batch, key/value head) a task (so dK, dV and the group's dQ have one writer):
//   Dvec = rowsum(dO * O) per query row
//   for each tile j of kBwdBlockK keys, for each panel i of kBwdBlockQ queries that can see it
//   (causal: panels start at row j0, the first that sees key j0):
//     P = exp(S - lse) (S rebuilt from Q_i, K_j)   dV_j += P^T dO_i
//     dP = dO_i V_j^T   dS = P * (dP - Dvec) * scale
//     dQ_i += dS K_j    dK_j += dS^T Q_i
// When those tasks are fewer than the threads (MQA at batch 1 has one), each (batch, key/value
// head) is split further into chunks of its key tiles; every chunk but the first accumulates dQ in
// a buffer of its own, added to dq in chunk order at the end (backward_chunks below).
// Every product is a single-threaded OpenBLAS GEMM on tiles (threads split the tasks; see Note
// [fused attention on the CPU] for why OpenBLAS's own pool is switched off meanwhile). Memory per
// thread: one [kBlockQ, kBlockK] tile and one accumulator forward, two [kBwdBlockQ, kBwdBlockK]
// tiles backward (1 MiB in float32); per call: lse [B, Hq, Tq].
//
// Note [flash tile sizes]: FLOPs are the GEMMs', so speed is how close the tile GEMMs get to a
// large SGEMM. Wider key tiles halve the forward's rescaling passes and give P V_j a longer inner
// dimension; taller query panels in the backward give dV_j += P^T dO_i and dK_j += dS^T Q_i an
// inner dimension of 512 instead of 128. Interleaved on 2 cores at [1, 8, 4096, 64] causal
// (tools/bench sdpa_4096 measures the whole op): forward key tiles 256 and 512 were 7% faster than
// 128; backward 512 x 256 was 8% faster than 128 x 128, and 2048 x 128 no better than 512 x 256.
// Query tiles of 256 in the forward were slower than 128.
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
#include "tinytorch/backend/cpu/online_softmax.h"
#include "tinytorch/backend/cpu/scratch.h"

namespace tt::cpu {
namespace {

// Tile sizes, measured (Note [flash tile sizes]): the forward's query and key tiles, and the
// backward's, whose query panels are taller because each key tile walks all of them.
constexpr int64_t kBlockQ = 128;
constexpr int64_t kBlockK = 256;
constexpr int64_t kBwdBlockQ = 512;
constexpr int64_t kBwdBlockK = 256;
constexpr int64_t kDiagRows = 128;  // backward panels on the causal diagonal

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

}  // namespace

// Note [online softmax]: one query row's step of the forward (module 13's README, section 3). The
// row keeps a running max m, a running sum l of exp(s - m) over the scores seen so far, and an
// unnormalized output acc [Dv]. A new block of its scores s [cols] (one key tile) updates them:
//   m' = max(m, max_c s[c])        alpha = exp(m - m')   (0 while m was -inf, 1 if the max stays)
//   l = alpha l + sum_c exp(s[c] - m')        acc = alpha acc        s[c] = exp(s[c] - m')
//   m = m'
// and the caller adds the block's values, acc += s V_j, as one GEMM for all rows of a tile. The
// block's sum is formed first and then added to l: short float sums, not one long one. While
// neither the row so far nor the block has a finite score (all masked), m, l and acc stay as they
// are and s becomes all 0; a NaN among such scores sets l to NaN, so that the row's output is NaN,
// as softmax's would be. Declared in cpu/online_softmax.h, for module 13's suite.
template <typename T>
void online_softmax_update(T* s, int64_t cols, T& m, T& l, T* acc, int64_t Dv) {
  // TT_EXERCISE_BEGIN(13, 1)
  T mx = m;
#pragma omp simd reduction(max : mx)
  for (int64_t c = 0; c < cols; ++c) mx = s[c] > mx ? s[c] : mx;
  if (mx == -std::numeric_limits<T>::infinity()) {  // nothing visible (or only NaN, which the max skips)
    bool nan = false;
    for (int64_t c = 0; c < cols && !nan; ++c) nan = s[c] != s[c];
    if (nan) l = std::numeric_limits<T>::quiet_NaN();  // the row's output becomes NaN
    std::fill(s, s + cols, T(0));
    return;
  }
  const T alpha = functors::exp_any(m - mx);  // 0 when m was -inf
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < cols; ++c) {
    s[c] = functors::exp_any(s[c] - mx);
    sum += s[c];
  }
  l = l * alpha + sum;
  m = mx;
  if (alpha != T(1)) {
#pragma omp simd
    for (int64_t d = 0; d < Dv; ++d) acc[d] *= alpha;
  }
  // TT_EXERCISE_END
}
template void online_softmax_update<float>(float*, int64_t, float&, float&, float*, int64_t);
template void online_softmax_update<double>(double*, int64_t, double&, double&, double*, int64_t);

namespace {

template <typename T>
void forward_impl(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& bias, const AttentionArgs& args) {
  // TT_EXERCISE_BEGIN(13, 2)
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t B = q.size(0), Hq = q.size(1), Tq = q.size(2), D = q.size(3);
  const int64_t G = Hq / k.size(1), Tk = k.size(2), Dv = v.size(3);
  constexpr int64_t bk = kBlockK;
  const int64_t q_tiles = (Tq + kBlockQ - 1) / kBlockQ;
  const T* bias_p = bias.defined() ? bias.data_ptr<T>() : nullptr;
  BlasSingleThread single;
  const int64_t tasks = B * Hq * q_tiles;
  const int64_t grain = attention_grain(tasks, double(B * Hq) * Tq * Tk * (D + Dv));
  parallel_for(tasks, grain, [&](int64_t begin, int64_t end) {
    const Scratch<T> scratch(kBlockQ * (bk + Dv + 2));
    T* const S = scratch.data();               // [kBlockQ, bk] scores, then weights
    T* const acc = S + kBlockQ * bk;       // [kBlockQ, Dv] unnormalized output
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
      for (int64_t j0 = 0; j0 < kend; j0 += bk) {
        const int64_t cols = std::min(bk, kend - j0);
        tile_gemm(false, true, rows, cols, D, args.scale, Q, q.stride(2), K + j0 * k.stride(2), k.stride(2), 0.0, S,
             bk);
        mask_tile(S, bk, rows, cols, i0, j0, bias_bh, bias_p ? bias.stride(2) : 0,
                  bias_p ? bias.stride(3) : 0, args.causal && j0 + cols > i0);
        for (int64_t r = 0; r < rows; ++r) online_softmax_update(S + r * bk, cols, m[r], l[r], acc + r * Dv, Dv);
        tile_gemm(false, false, rows, Dv, cols, 1.0, S, bk, V + j0 * v.stride(2), v.stride(2), 1.0, acc,
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

// Key-tile chunks per (batch, key/value head) in the backward: 1 when those pairs already give
// every thread work; else enough to reach the thread count (MQA at batch 1 has one pair), as far as
// the key tiles and 32 MiB of extra dQ buffers allow.
int64_t backward_chunks(int64_t pairs, int64_t k_tiles, int64_t dq_bytes) {
  const int64_t threads = parallel_threads();
  if (pairs >= threads) return 1;
  const int64_t by_memory = 1 + (int64_t(32) << 20) / std::max<int64_t>(dq_bytes, 1);
  return std::max<int64_t>(1, std::min({(threads + pairs - 1) / pairs, k_tiles, by_memory}));
}

// dq [B, Hq, Tq, D] += the dQ of key chunks 1 .. chunks - 1, which `partial` holds one after the
// other, each [B, Hq, Tq, D] contiguous; added in chunk order, so the sum does not depend on which
// thread ran which chunk.
template <typename T>
void add_partial_dq(const Tensor& dq, const T* partial, int64_t chunks) {
  const int64_t B = dq.size(0), Hq = dq.size(1), Tq = dq.size(2), D = dq.size(3);
  parallel_for(B * Hq, attention_grain(B * Hq, double(chunks) * B * Hq * Tq * D), [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      T* dQ = at<T>(dq, bh / Hq, bh % Hq);
      for (int64_t c = 1; c < chunks; ++c) {
        const T* part = partial + ((c - 1) * B * Hq + bh) * Tq * D;
        for (int64_t i = 0; i < Tq; ++i) {
          T* row = dQ + i * dq.stride(2);
          const T* add = part + i * D;
#pragma omp simd
          for (int64_t d = 0; d < D; ++d) row[d] += add[d];
        }
      }
    }
  });
}

template <typename T>
void backward_impl(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                   const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& bias,
                   const AttentionArgs& args) {
  // TT_EXERCISE_BEGIN(13, 3)
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t B = q.size(0), Hq = q.size(1), Tq = q.size(2), D = q.size(3);
  const int64_t Hkv = k.size(1), G = Hq / Hkv, Tk = k.size(2), Dv = v.size(3);
  const T* bias_p = bias.defined() ? bias.data_ptr<T>() : nullptr;
  const T scale = T(args.scale);
  constexpr int64_t bq = kBwdBlockQ, bk = kBwdBlockK;
  BlasSingleThread single;
  // Tasks own disjoint key tiles of one (batch, key/value head): chunk c of `chunks` takes tiles
  // c, c + chunks, ... (interleaved, so causal work stays balanced). With chunks > 1, chunk c > 0
  // accumulates its dQ in a buffer of its own, summed into dq in chunk order afterwards.
  const int64_t k_tiles = (Tk + bk - 1) / bk;
  const int64_t chunks = backward_chunks(B * Hkv, k_tiles, B * Hq * Tq * D * int64_t(sizeof(T)));
  const Scratch<T> partial_dq((chunks - 1) * B * Hq * Tq * D);
  if (chunks > 1) std::fill(partial_dq.data(), partial_dq.data() + (chunks - 1) * B * Hq * Tq * D, T(0));
  const int64_t tasks = B * Hkv * chunks;
  const int64_t grain = attention_grain(tasks, double(B * Hq) * Tq * Tk * (D + Dv));
  parallel_for(tasks, grain, [&](int64_t begin, int64_t end) {
    const Scratch<T> scratch(2 * bq * bk + Tq);
    T* const P = scratch.data();          // [bq, bk] weights rebuilt
    T* const dP = P + bq * bk;  // [bq, bk] dP, then dS
    T* const Dvec = dP + bq * bk;  // [Tq] rowsum(dO * O) of one head
    for (int64_t task = begin; task < end; ++task) {
      const int64_t chunk = task % chunks, b = task / chunks / Hkv, hk = task / chunks % Hkv;
      const T* K = at<T>(k, b, hk);
      const T* V = at<T>(v, b, hk);
      T* dK = at<T>(dk, b, hk);
      T* dV = at<T>(dv, b, hk);
      for (int64_t g = 0; g < G; ++g) {
        const int64_t h = hk * G + g;
        const T* Q = at<T>(q, b, h);
        const T* dO = at<T>(dout, b, h);
        const T* O = at<T>(out, b, h);
        T* dQ = chunk == 0 ? at<T>(dq, b, h) : partial_dq.data() + (((chunk - 1) * B + b) * Hq + h) * Tq * D;
        const int64_t ldq = chunk == 0 ? dq.stride(2) : D;
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
        for (int64_t jt = chunk; jt < k_tiles; jt += chunks) {
          const int64_t j0 = jt * bk, tile_cols = std::min(bk, Tk - j0);
          // Causal: query i sees key j only when j <= i, so the first query row that matters is j0.
          // Panels that cross the diagonal are kDiagRows tall and drop the keys beyond their last
          // row, which halves the masked work a full panel would do there.
          const int64_t first_i = args.causal ? j0 : 0;
          for (int64_t i0 = first_i, rows = 0; i0 < Tq; i0 += rows) {
            const bool diagonal = args.causal && i0 < j0 + tile_cols;
            rows = std::min(diagonal ? kDiagRows : bq, Tq - i0);
            const int64_t cols = diagonal ? std::min(tile_cols, i0 + rows - j0) : tile_cols;
            tile_gemm(false, true, rows, cols, D, args.scale, Q + i0 * q.stride(2), q.stride(2), K + j0 * k.stride(2),
                 k.stride(2), 0.0, P, bk);
            mask_tile(P, bk, rows, cols, i0, j0, bias_bh, bias_p ? bias.stride(2) : 0,
                      bias_p ? bias.stride(3) : 0, args.causal && j0 + cols > i0);
            for (int64_t r = 0; r < rows; ++r) {
              T* p = P + r * bk;
              const T lr = L[i0 + r];
              if (lr == kNegInf) {
                std::fill(p, p + cols, T(0));
                continue;
              }
#pragma omp simd
              for (int64_t c = 0; c < cols; ++c) p[c] = functors::exp_any(p[c] - lr);
            }
            // dV_j += P^T dO_i
            tile_gemm(true, false, cols, Dv, rows, 1.0, P, bk, dO + i0 * dout.stride(2), dout.stride(2), 1.0,
                 dV + j0 * dv.stride(2), dv.stride(2));
            // dP = dO_i V_j^T
            tile_gemm(false, true, rows, cols, Dv, 1.0, dO + i0 * dout.stride(2), dout.stride(2), V + j0 * v.stride(2),
                 v.stride(2), 0.0, dP, bk);
            for (int64_t r = 0; r < rows; ++r) {
              const T* p = P + r * bk;
              T* d = dP + r * bk;
              const T Di = Dvec[i0 + r];
#pragma omp simd
              for (int64_t c = 0; c < cols; ++c) d[c] = p[c] * (d[c] - Di) * scale;
            }
            // dQ_i += dS K_j ; dK_j += dS^T Q_i
            tile_gemm(false, false, rows, D, cols, 1.0, dP, bk, K + j0 * k.stride(2), k.stride(2), 1.0,
                 dQ + i0 * ldq, ldq);
            tile_gemm(true, false, cols, D, rows, 1.0, dP, bk, Q + i0 * q.stride(2), q.stride(2), 1.0,
                 dK + j0 * dk.stride(2), dk.stride(2));
          }
        }
      }
    }
  });
  if (chunks > 1) add_partial_dq(dq, partial_dq.data(), chunks);
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
