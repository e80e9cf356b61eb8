// CUDA flash attention for decoding: a few queries (Tq <= 4) against a long KV cache, the keys
// split across blocks (split-K), each block writing a partial (max, sum, accumulator) that a
// second kernel combines. Any float dtype and head dims. Called from flash_attention_forward.cu.
//
// Note [split-K decode]: with one query per head, the forward's grid would have B * Hq blocks,
// far fewer than the SMs, each walking all Tk keys. Here block (split, head, batch) takes keys
// [split * chunk, +chunk) in tiles of 128 (one key per thread for the scores), keeps the online
// softmax per query row (m, l and acc[Tq, Dv] in shared memory) and writes them unnormalized;
// the combine kernel takes M = max m_s, L = sum l_s e^(m_s - M), out = sum acc_s e^(m_s - M) / L,
// lse = M + log L. A split that sees nothing gives m = -inf, l = 0, acc = 0 and weighs 0.
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/flash_common.cuh"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/scratch.cuh"

namespace tt::cuda::flash {

namespace {

constexpr int kDecodeMaxTq = 4;
constexpr int kDecodeTile = 128;  // keys per tile = threads per block
constexpr int64_t kDecodeMinKeys = 512;

// Shared memory of flash_decode_partial, in elements of T.
int64_t decode_smem_elems(int Tq, int D, int Dv) {
  return int64_t(Tq) * (D + kDecodeTile + Dv) + 3 * kDecodeMaxTq;
}

// q [B, Hq, Tq, D], k/v [B, Hkv, Tk, D/Dv] -> partials pm, pl: [B*Hq, splits, Tq], pacc: [B*Hq, splits, Tq, Dv].
template <typename T>
__global__ void __launch_bounds__(kDecodeTile) flash_decode_partial(FlashArgs<T> a, int splits, int chunk, T* pm,
                                                                     T* pl, T* pacc) {
  extern __shared__ __align__(16) unsigned char decode_smem[];
  T* qs = reinterpret_cast<T*>(decode_smem);  // [Tq][D]
  T* ps = qs + a.Tq * a.D;                    // [Tq][kDecodeTile] scores, then weights
  T* acc = ps + a.Tq * kDecodeTile;           // [Tq][Dv]
  T* ms = acc + a.Tq * a.Dv;                  // [kDecodeMaxTq] running max
  T* ls = ms + kDecodeMaxTq;                  // [kDecodeMaxTq] running sum (NaN once a NaN score is seen)
  T* al = ls + kDecodeMaxTq;                  // [kDecodeMaxTq] this tile's rescale factor
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t bid = blockIdx.x;
  const int split = int(bid % splits);
  const int64_t bh = bid / splits;
  const int b = int(bh / a.Hq), h = int(bh % a.Hq), hk = h / a.G;
  const int64_t kvis = visible_keys(a.causal, a.Tk, a.Tq);
  const int k_begin = split * chunk;
  const int k_end = int(kvis < int64_t(k_begin) + chunk ? kvis : int64_t(k_begin) + chunk);
  const T* Q = a.q + b * a.sq.b + h * a.sq.h;
  const T* K = a.k + b * a.sk.b + hk * a.sk.h;
  const T* V = a.v + b * a.sv.b + hk * a.sv.h;
  for (int idx = tid; idx < a.Tq * a.D; idx += kDecodeTile) qs[idx] = Q[int64_t(idx / a.D) * a.sq.t + idx % a.D];
  for (int idx = tid; idx < a.Tq * a.Dv; idx += kDecodeTile) acc[idx] = T(0);
  if (tid < kDecodeMaxTq) {
    ms[tid] = neg_inf<T>();
    ls[tid] = T(0);
    al[tid] = T(1);
  }
  __syncthreads();
  for (int j0 = k_begin; j0 < k_end; j0 += kDecodeTile) {
    const int j = j0 + tid;
    T s[kDecodeMaxTq] = {};
    if (j < k_end) {
      const T* kr = K + int64_t(j) * a.sk.t;
      for (int d = 0; d < a.D; ++d) {
        const T kd = kr[d];
#pragma unroll
        for (int r = 0; r < kDecodeMaxTq; ++r)
          if (r < a.Tq) s[r] += qs[r * a.D + d] * kd;
      }
    }
#pragma unroll
    for (int r = 0; r < kDecodeMaxTq; ++r)
      if (r < a.Tq) ps[r * kDecodeTile + tid] = j < k_end ? masked_score(a, b, h, r, j, s[r]) : neg_inf<T>();
    __syncthreads();
    if (warp < a.Tq) {  // warp r: the online softmax of query row r over this tile
      const int r = warp;
      T* prow = ps + r * kDecodeTile;
      T x[kDecodeTile / 32];
      T tmax = neg_inf<T>();
      bool nan = false;
#pragma unroll
      for (int u = 0; u < kDecodeTile / 32; ++u) {
        x[u] = prow[lane + 32 * u];
        nan = nan || x[u] != x[u];
        tmax = max_skip_nan(tmax, x[u]);
      }
      tmax = warp_max(tmax);
      nan = __any_sync(0xffffffffu, nan);
      const T mold = ms[r];
      const T mnew = max_skip_nan(mold, tmax);
      T alpha = T(1), sum = T(0);
      if (mnew != neg_inf<T>()) {
        alpha = functors::exp_any(mold - mnew);
#pragma unroll
        for (int u = 0; u < kDecodeTile / 32; ++u) {
          x[u] = functors::exp_any(x[u] - mnew);
          sum += x[u];
        }
      } else {
#pragma unroll
        for (int u = 0; u < kDecodeTile / 32; ++u) x[u] = T(0);
      }
      sum = warp_sum(sum);
#pragma unroll
      for (int u = 0; u < kDecodeTile / 32; ++u) prow[lane + 32 * u] = x[u];
      __syncwarp();
      if (lane == 0) {
        ls[r] = nan ? std::numeric_limits<T>::quiet_NaN() : ls[r] * alpha + sum;
        ms[r] = mnew;
        al[r] = alpha;
      }
    }
    __syncthreads();
    const int n = k_end - j0 < kDecodeTile ? k_end - j0 : kDecodeTile;
    for (int idx = tid; idx < a.Tq * a.Dv; idx += kDecodeTile) {
      const int r = idx / a.Dv, d = idx % a.Dv;
      const T* prow = ps + r * kDecodeTile;
      const T* vcol = V + int64_t(j0) * a.sv.t + d;
      T x = acc[idx] * al[r];
      for (int t = 0; t < n; ++t) x += prow[t] * vcol[int64_t(t) * a.sv.t];
      acc[idx] = x;
    }
    __syncthreads();  // ps, al are rewritten by the next tile
  }
  const int64_t part = bh * splits + split;
  for (int idx = tid; idx < a.Tq * a.Dv; idx += kDecodeTile) pacc[part * a.Tq * a.Dv + idx] = acc[idx];
  if (tid < a.Tq) {
    pm[part * a.Tq + tid] = ms[tid];
    pl[part * a.Tq + tid] = ls[tid];
  }
}

// partials of flash_decode_partial -> out [B, Hq, Tq, Dv], lse [B, Hq, Tq]; one thread per out element.
template <typename T>
__global__ void flash_decode_combine(FlashArgs<T> a, int splits, const T* pm, const T* pl, const T* pacc) {
  const int64_t n = int64_t(a.B) * a.Hq * a.Tq * a.Dv;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  const int d = int(idx % a.Dv), r = int(idx / a.Dv % a.Tq);
  const int64_t bh = idx / (int64_t(a.Dv) * a.Tq);
  const int b = int(bh / a.Hq), h = int(bh % a.Hq);
  T M = neg_inf<T>();
  bool nan = false;
  for (int s = 0; s < splits; ++s) {
    const int64_t p = (bh * splits + s) * a.Tq + r;
    nan = nan || pl[p] != pl[p];
    M = max_skip_nan(M, pm[p]);
  }
  T o = T(0), lse = neg_inf<T>();
  if (nan) {
    o = lse = std::numeric_limits<T>::quiet_NaN();
  } else if (M != neg_inf<T>()) {
    T L = T(0), acc = T(0);
    for (int s = 0; s < splits; ++s) {
      const int64_t p = (bh * splits + s) * a.Tq + r;
      if (pm[p] == neg_inf<T>()) continue;
      const T w = functors::exp_any(pm[p] - M);
      L += w * pl[p];
      acc += w * pacc[p * a.Dv + d];
    }
    o = L > T(0) ? acc / L : T(0);
    lse = L > T(0) ? M + log(L) : neg_inf<T>();
  }
  a.out[b * a.so.b + h * a.so.h + int64_t(r) * a.so.t + d] = o;
  if (d == 0) a.lse[bh * a.Tq + r] = lse;
}

}  // namespace

template <typename T>
bool try_flash_decode(const FlashArgs<T>& a, int device) {
  if (a.Tq > kDecodeMaxTq) return false;
  const int64_t kvis = visible_keys(a.causal, a.Tk, a.Tq);
  const int64_t smem = decode_smem_elems(a.Tq, a.D, a.Dv) * int64_t(sizeof(T));
  if (kvis < kDecodeMinKeys || smem > 48 * 1024) return false;
  int sms = 0;
  TT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t bh = int64_t(a.B) * a.Hq;
  const int64_t tiles = (kvis + kDecodeTile - 1) / kDecodeTile;
  int64_t splits = (2 * int64_t(sms) + bh - 1) / bh;  // about two blocks per SM
  splits = splits < 1 ? 1 : (splits > tiles ? tiles : splits);
  const int64_t chunk = (tiles + splits - 1) / splits * kDecodeTile;
  splits = (kvis + chunk - 1) / chunk;
  if (bh * splits > 0x7fffffff) return false;
  const Scratch<T> scratch(bh * splits * a.Tq * (a.Dv + 2), device);
  T* pacc = scratch.data();
  T* pm = pacc + bh * splits * a.Tq * a.Dv;
  T* pl = pm + bh * splits * a.Tq;
  launch(flash_decode_partial<T>, unsigned(bh * splits), kDecodeTile, size_t(smem), a, int(splits), int(chunk), pm, pl,
                                                                                 pacc);
  const int64_t n = bh * a.Tq * a.Dv;
  TT_CHECK((n + 255) / 256 <= 0x7fffffff, "flash attention (cuda): decode output too large");
  launch(flash_decode_combine<T>, unsigned((n + 255) / 256), 256, 0, a, int(splits), pm, pl, pacc);
  return true;
}

template bool try_flash_decode<float>(const FlashArgs<float>&, int);
template bool try_flash_decode<double>(const FlashArgs<double>&, int);
}  // namespace tt::cuda::flash
