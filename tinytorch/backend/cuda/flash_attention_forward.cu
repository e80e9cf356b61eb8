// CUDA flash attention, forward: the tiled FFMA kernel (float32, D = Dv in {32, 64, 128}; the exact
// reference, SDPBackend::FlashExact), its wmma TF32 twin, a generic warp-per-row kernel (float64 and
// other head dims), and the CudaBackend::flash_attention_forward dispatch: split-K decode first,
// then the mma.sync tensor-core kernels of flash_mma_forward.cu (the float32 default), then these.
// Twin of cpu/flash_attention.cpp.
//
// Note [flash attention on the GPU]: FlashAttention-2's forward, one block per (query tile, head,
// batch), query tiles in reverse order so that the longest causal tiles start first:
//   Q tile [BM, D] in shared memory; for each key tile [BN, D] (causal: only tiles left of the
//   tile's last row) K and V go through shared memory, S = scale * Q K^T + bias in registers,
//   online softmax per row (running max m and sum l, accumulator rescaled by exp(m - m')),
//   P through shared memory, O += P V in registers; out = O / l and lse = m + log l written once.
// FFMA kernel: 128 threads as 16 x 8; a thread holds BM/16 rows x BN/8 strided columns of S and
// BM/16 rows x D/8 columns of O (float4 groups); the 8 threads of a row group are 8 adjacent
// lanes, so row max and row sum are 3 shuffles. TF32 kernel (since issue 18 only for TF32 calls whose rows
// are not 16-byte aligned, which flash_mma_forward.cu cannot take): 4 warps of 16 rows, S and O through
// wmma m16n16k8 (tf32 in, float accumulate), the accumulator O kept in shared memory so that the
// per-row rescale is plain code. Rows with nothing visible keep m = -inf: out 0, lse -inf; a NaN
// score makes its row NaN (as softmax). Split-K decode for few queries: flash_decode.cu.
// Tiles (BM x BN) and dynamic shared memory per block, D = 32 / 64 / 128:
//   FFMA 64x64, 64x64, 64x32: Q, K, V rows padded to D + 4, P to BN + 4: 45, 70, 77 KB
//   TF32 64x64, 64x64, 64x32: rows padded to multiples of 8 floats, Q's buffer reused for O:
//   48, 72, 78 KB (both above the 48 KB static limit: cudaFuncSetAttribute before each launch).
#include <mma.h>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/flash_common.cuh"
#include "tinytorch/backend/cuda/flash_mma_bf16.cuh"
#include "tinytorch/backend/cuda/launch.cuh"

namespace tt::cuda {

namespace flash {
namespace {

constexpr int kThreads = 128;

// Tile sizes of the float32 kernels per head dim (shared memory in the Note above).
template <int D>
struct FwdTiles {
  static constexpr int BM = 64;
  static constexpr int BN = D >= 128 ? 32 : 64;
};

// Block index -> (query tile, head, batch), the last query tile first.
struct TileIndex {
  int tile, b, h;
};
__device__ __forceinline__ TileIndex tile_index(int q_tiles, int B, int Hq) {
  const int64_t nbh = int64_t(B) * Hq;
  const int64_t bid = blockIdx.x;
  const int bh = int(bid % nbh);
  return {q_tiles - 1 - int(bid / nbh), bh / Hq, bh % Hq};
}

// Copies rows [r0, r0 + R) of a [T, D] matrix (row stride ld) into smem [R][LD], zeros past T.
template <int R, int D, int LD>
__device__ __forceinline__ void load_rows(float* dst, const float* src, int64_t ld, int r0, int T) {
  for (int idx = threadIdx.x; idx < R * D; idx += kThreads) {
    const int r = idx / D, d = idx % D;
    dst[r * LD + d] = r0 + r < T ? src[int64_t(r0 + r) * ld + d] : 0.f;
  }
}

// Turns a tile-local row of scores into weights with the online softmax; returns alpha, the
// factor for the row's accumulator. s: this thread's N columns; width: lanes sharing the row.
template <int N, int W>
__device__ __forceinline__ float online_softmax(float (&s)[N], float& m, float& l) {
  float mx = m;
#pragma unroll
  for (int j = 0; j < N; ++j) mx = max_skip_nan(mx, s[j]);
  mx = warp_max(mx, W);
  if (mx == neg_inf<float>()) {  // nothing visible yet (a NaN score makes the row NaN)
    bool nan = false;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      nan = nan || s[j] != s[j];
      s[j] = 0.f;
    }
    if (nan) l = std::numeric_limits<float>::quiet_NaN();
    return 1.f;
  }
  const float alpha = functors::exp_any(m - mx);  // 0 when m was -inf
  float sum = 0.f;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    s[j] = functors::exp_any(s[j] - mx);
    sum += s[j];
  }
  l = l * alpha + sum;  // this thread's share of the row sum; the shares are added at the end
  m = mx;
  return alpha;
}

// The row's final out scale and lse from the running max m and the full sum l.
__device__ __forceinline__ void finish_row(float m, float l, float& inv, float& lse) {
  const bool nan = l != l;
  inv = l > 0.f ? 1.f / l : (nan ? l : 0.f);
  lse = l > 0.f ? m + logf(l) : (nan ? l : neg_inf<float>());
}

// q, k, v, out: [B, H*, T*, D] float32, last dim stride 1 -> out: [B, Hq, Tq, D], lse [B, Hq, Tq].
// Thread (ty, tx) owns query rows ty + 16 i, score columns tx + 8 j and output columns
// 4 tx + 32 u + e (e < 4); shared rows are padded to a multiple of 4 floats so that every inner
// product step reads float4s, without bank conflicts (rows 4 words apart per lane group).
template <int D>
__global__ void __launch_bounds__(kThreads) flash_fwd_ffma(FlashArgs<float> a) {
  constexpr int BM = FwdTiles<D>::BM, BN = FwdTiles<D>::BN;
  constexpr int RM = BM / 16, CN = BN / 8, CU = D / 32, LD = D + 4, LP = BN + 4;
  extern __shared__ __align__(128) float smem[];
  float* Qs = smem;           // [BM][LD]
  float* Ks = Qs + BM * LD;   // [BN][LD]
  float* Vs = Ks + BN * LD;   // [BN][LD]
  float* Ps = Vs + BN * LD;   // [BM][LP]
  const int tx = threadIdx.x & 7, ty = threadIdx.x >> 3;
  const int q_tiles = (a.Tq + BM - 1) / BM;
  const TileIndex t = tile_index(q_tiles, a.B, a.Hq);
  const int i0 = t.tile * BM, hk = t.h / a.G;
  const float* Q = a.q + t.b * a.sq.b + t.h * a.sq.h;
  const float* K = a.k + t.b * a.sk.b + hk * a.sk.h;
  const float* V = a.v + t.b * a.sv.b + hk * a.sv.h;
  load_rows<BM, D, LD>(Qs, Q, a.sq.t, i0, a.Tq);

  float m[RM], l[RM], o[RM][CU][4];
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    m[i] = neg_inf<float>();
    l[i] = 0.f;
#pragma unroll
    for (int u = 0; u < CU; ++u)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[i][u][e] = 0.f;
  }
  const int kend = int(visible_keys(a.causal, a.Tk, int64_t(i0) + BM));
  for (int j0 = 0; j0 < kend; j0 += BN) {
    __syncthreads();  // the previous tile's K, V, P are consumed (and Q is loaded)
    load_rows<BN, D, LD>(Ks, K, a.sk.t, j0, a.Tk);
    load_rows<BN, D, LD>(Vs, V, a.sv.t, j0, a.Tk);
    __syncthreads();
    float s[RM][CN];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < CN; ++j) s[i][j] = 0.f;
#pragma unroll 2
    for (int d = 0; d < D; d += 4) {
      float4 qv[RM], kv[CN];
#pragma unroll
      for (int i = 0; i < RM; ++i) qv[i] = *reinterpret_cast<const float4*>(Qs + (ty + 16 * i) * LD + d);
#pragma unroll
      for (int j = 0; j < CN; ++j) kv[j] = *reinterpret_cast<const float4*>(Ks + (tx + 8 * j) * LD + d);
#pragma unroll
      for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < CN; ++j) {
          s[i][j] = fmaf(qv[i].x, kv[j].x, s[i][j]);
          s[i][j] = fmaf(qv[i].y, kv[j].y, s[i][j]);
          s[i][j] = fmaf(qv[i].z, kv[j].z, s[i][j]);
          s[i][j] = fmaf(qv[i].w, kv[j].w, s[i][j]);
        }
    }
#pragma unroll
    for (int i = 0; i < RM; ++i) {
#pragma unroll
      for (int j = 0; j < CN; ++j) s[i][j] = masked_score(a, t.b, t.h, i0 + ty + 16 * i, j0 + tx + 8 * j, s[i][j]);
      const float alpha = online_softmax<CN, 8>(s[i], m[i], l[i]);
#pragma unroll
      for (int u = 0; u < CU; ++u)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[i][u][e] *= alpha;
#pragma unroll
      for (int j = 0; j < CN; ++j) Ps[(ty + 16 * i) * LP + tx + 8 * j] = s[i][j];
    }
    __syncthreads();
#pragma unroll 2
    for (int c = 0; c < BN; c += 4) {
      float4 pv[RM];
#pragma unroll
      for (int i = 0; i < RM; ++i) pv[i] = *reinterpret_cast<const float4*>(Ps + (ty + 16 * i) * LP + c);
#pragma unroll
      for (int cc = 0; cc < 4; ++cc) {
        float4 vv[CU];
#pragma unroll
        for (int u = 0; u < CU; ++u) vv[u] = *reinterpret_cast<const float4*>(Vs + (c + cc) * LD + 4 * tx + 32 * u);
#pragma unroll
        for (int i = 0; i < RM; ++i) {
          const float p = cc == 0 ? pv[i].x : cc == 1 ? pv[i].y : cc == 2 ? pv[i].z : pv[i].w;
#pragma unroll
          for (int u = 0; u < CU; ++u) {
            o[i][u][0] = fmaf(p, vv[u].x, o[i][u][0]);
            o[i][u][1] = fmaf(p, vv[u].y, o[i][u][1]);
            o[i][u][2] = fmaf(p, vv[u].z, o[i][u][2]);
            o[i][u][3] = fmaf(p, vv[u].w, o[i][u][3]);
          }
        }
      }
    }
  }
  float* O = a.out + t.b * a.so.b + t.h * a.so.h;
  float* L = a.lse + (int64_t(t.b) * a.Hq + t.h) * a.Tq;
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const float lsum = warp_sum(l[i], 8);
    float inv, lse;
    finish_row(m[i], lsum, inv, lse);
    const int row = i0 + ty + 16 * i;
    if (row < a.Tq) {
      float* orow = O + int64_t(row) * a.so.t + 4 * tx;
#pragma unroll
      for (int u = 0; u < CU; ++u)
#pragma unroll
        for (int e = 0; e < 4; ++e) orow[32 * u + e] = o[i][u][e] * inv;
      if (tx == 0) L[row] = lse;
    }
  }
}

// As flash_fwd_ffma with both products on TF32 tensor cores (wmma m16n16k8); 4 warps x 16 rows.
template <int D>
__global__ void __launch_bounds__(kThreads) flash_fwd_tf32(FlashArgs<float> a) {
  using namespace nvcuda;
  constexpr int BM = 64, BN = FwdTiles<D>::BN;
  constexpr int LD = D + 8, LS = BN + 8;  // multiples of 8 floats: 32-byte aligned wmma rows
  extern __shared__ __align__(128) float smem[];
  float* Os = smem;           // [BM][LD] Q until its fragments are loaded, then the unnormalized output
  float* Ks = Os + BM * LD;   // [BN][LD]
  float* Vs = Ks + BN * LD;   // [BN][LD]
  float* Ss = Vs + BN * LD;   // [BM][LS] scores, then weights
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int q_tiles = (a.Tq + BM - 1) / BM;
  const TileIndex t = tile_index(q_tiles, a.B, a.Hq);
  const int i0 = t.tile * BM, hk = t.h / a.G;
  const float* Q = a.q + t.b * a.sq.b + t.h * a.sq.h;
  const float* K = a.k + t.b * a.sk.b + hk * a.sk.h;
  const float* V = a.v + t.b * a.sv.b + hk * a.sv.h;
  load_rows<BM, D, LD>(Os, Q, a.sq.t, i0, a.Tq);
  __syncthreads();

  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
  using FragBc = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major>;
  using FragBr = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;
  FragA qf[D / 8];
#pragma unroll
  for (int kk = 0; kk < D / 8; ++kk) {
    wmma::load_matrix_sync(qf[kk], Os + warp * 16 * LD + kk * 8, LD);
#pragma unroll
    for (int e = 0; e < qf[kk].num_elements; ++e) qf[kk].x[e] = wmma::__float_to_tf32(qf[kk].x[e]);
  }
  __syncthreads();  // every warp holds its Q fragments: the buffer becomes the accumulator
  for (int idx = threadIdx.x; idx < BM * LD; idx += kThreads) Os[idx] = 0.f;
  // Each row is handled by a lane pair: lane 2r and 2r + 1 own columns of warp row r by halves.
  const int rloc = warp * 16 + lane / 2, half = lane & 1;
  const int row = i0 + rloc;
  float m = neg_inf<float>(), l = 0.f;
  const int kend = int(visible_keys(a.causal, a.Tk, int64_t(i0) + BM));
  for (int j0 = 0; j0 < kend; j0 += BN) {
    __syncthreads();  // every warp is done with the previous K and V
    load_rows<BN, D, LD>(Ks, K, a.sk.t, j0, a.Tk);
    load_rows<BN, D, LD>(Vs, V, a.sv.t, j0, a.Tk);
    __syncthreads();
#pragma unroll
    for (int nf = 0; nf < BN / 16; ++nf) {
      FragC acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int kk = 0; kk < D / 8; ++kk) {
        FragBc kf;  // K^T: element (d, n) at Ks[n * LD + d]
        wmma::load_matrix_sync(kf, Ks + nf * 16 * LD + kk * 8, LD);
#pragma unroll
        for (int e = 0; e < kf.num_elements; ++e) kf.x[e] = wmma::__float_to_tf32(kf.x[e]);
        wmma::mma_sync(acc, qf[kk], kf, acc);
      }
      wmma::store_matrix_sync(Ss + warp * 16 * LS + nf * 16, acc, LS, wmma::mem_row_major);
    }
    __syncwarp();
    {
      constexpr int N = BN / 2;
      float s[N];
      float* srow = Ss + rloc * LS + half * N;
#pragma unroll
      for (int j = 0; j < N; ++j) s[j] = masked_score(a, t.b, t.h, row, j0 + half * N + j, srow[j]);
      const float alpha = online_softmax<N, 2>(s, m, l);
#pragma unroll
      for (int j = 0; j < N; ++j) srow[j] = s[j];
      float* orow = Os + rloc * LD + half * (D / 2);
      if (alpha != 1.f)
#pragma unroll
        for (int d = 0; d < D / 2; ++d) orow[d] *= alpha;
    }
    __syncwarp();
#pragma unroll
    for (int df = 0; df < D / 16; ++df) {
      FragC acc;
      wmma::load_matrix_sync(acc, Os + warp * 16 * LD + df * 16, LD, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < BN / 8; ++kk) {
        FragA pf;
        FragBr vf;
        wmma::load_matrix_sync(pf, Ss + warp * 16 * LS + kk * 8, LS);
        wmma::load_matrix_sync(vf, Vs + kk * 8 * LD + df * 16, LD);
#pragma unroll
        for (int e = 0; e < pf.num_elements; ++e) pf.x[e] = wmma::__float_to_tf32(pf.x[e]);
#pragma unroll
        for (int e = 0; e < vf.num_elements; ++e) vf.x[e] = wmma::__float_to_tf32(vf.x[e]);
        wmma::mma_sync(acc, pf, vf, acc);
      }
      wmma::store_matrix_sync(Os + warp * 16 * LD + df * 16, acc, LD, wmma::mem_row_major);
    }
    __syncwarp();
  }
  const float lsum = l + __shfl_xor_sync(0xffffffffu, l, 1);
  float inv, lse;
  finish_row(m, lsum, inv, lse);
  if (row < a.Tq) {
    float* O = a.out + t.b * a.so.b + t.h * a.so.h + int64_t(row) * a.so.t;
    const float* orow = Os + rloc * LD;
    for (int d = half; d < D; d += 2) O[d] = orow[d] * inv;
    if (half == 0) a.lse[(int64_t(t.b) * a.Hq + t.h) * a.Tq + row] = lse;
  }
}

// Any dtype and head dims: one warp per query row, lanes over the head dims; the row's
// accumulator lives in its own out row (lane-owned elements). Slow, exact; the fallback.
// q, k, v, out as flash_fwd_ffma with any D, Dv -> out, lse.
template <typename T>
__global__ void flash_fwd_generic(FlashArgs<T> a) {
  const int lane = threadIdx.x & 31;
  const int64_t rows = int64_t(a.B) * a.Hq * a.Tq;
  const int64_t gr = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (gr >= rows) return;  // whole warps leave together
  const int i = int(gr % a.Tq), h = int(gr / a.Tq % a.Hq), b = int(gr / (int64_t(a.Tq) * a.Hq));
  const int hk = h / a.G;
  const T* q = a.q + b * a.sq.b + h * a.sq.h + int64_t(i) * a.sq.t;
  const T* K = a.k + b * a.sk.b + hk * a.sk.h;
  const T* V = a.v + b * a.sv.b + hk * a.sv.h;
  T* o = a.out + b * a.so.b + h * a.so.h + int64_t(i) * a.so.t;
  for (int d = lane; d < a.Dv; d += 32) o[d] = T(0);
  T m = neg_inf<T>(), l = T(0);
  bool nan = false;
  const int kend = int(visible_keys(a.causal, a.Tk, int64_t(i) + 1));
  for (int j = 0; j < kend; ++j) {
    const T* kr = K + int64_t(j) * a.sk.t;
    T dot = T(0);
    for (int d = lane; d < a.D; d += 32) dot += q[d] * kr[d];
    dot = warp_sum(dot);
    const T s = masked_score(a, b, h, i, j, dot);
    if (s != s) nan = true;
    if (!(s > neg_inf<T>())) continue;  // masked (or NaN, recorded)
    const T mx = s > m ? s : m;
    const T alpha = functors::exp_any(m - mx), p = functors::exp_any(s - mx);
    l = l * alpha + p;
    m = mx;
    const T* vr = V + int64_t(j) * a.sv.t;
    for (int d = lane; d < a.Dv; d += 32) o[d] = o[d] * alpha + p * vr[d];
  }
  const T qnan = std::numeric_limits<T>::quiet_NaN();
  const T inv = nan ? qnan : (l > T(0) ? T(1) / l : T(0));
  for (int d = lane; d < a.Dv; d += 32) o[d] = nan ? qnan : o[d] * inv;
  if (lane == 0) a.lse[gr] = nan ? qnan : (l > T(0) ? m + log(l) : neg_inf<T>());
}

int64_t fwd_smem_bytes(int D, bool tf32) {
  const int BN = D >= 128 ? 32 : 64, BM = 64;
  if (tf32) return int64_t(sizeof(float)) * (BM * (D + 8) + 2 * BN * (D + 8) + BM * (BN + 8));
  return int64_t(sizeof(float)) * ((BM + 2 * BN) * (D + 4) + BM * (BN + 4));
}

template <int D>
void launch_fwd_fast(const FlashArgs<float>& a, bool tf32) {
  const int64_t q_tiles = (a.Tq + 63) / 64;
  const int64_t blocks = q_tiles * a.B * a.Hq;
  TT_CHECK(blocks <= 0x7fffffff, "flash attention (cuda): too many query tiles (", blocks, ")");
  const int smem = int(fwd_smem_bytes(D, tf32));
  if (tf32) {
    TT_CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_tf32<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    launch(flash_fwd_tf32<D>, unsigned(blocks), kThreads, smem, a);
  } else {
    TT_CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_ffma<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    launch(flash_fwd_ffma<D>, unsigned(blocks), kThreads, smem, a);
  }
}

template <typename T>
void launch_fwd_generic(const FlashArgs<T>& a) {
  const int64_t rows = int64_t(a.B) * a.Hq * a.Tq;
  const int64_t blocks = (rows + 3) / 4;
  TT_CHECK(blocks <= 0x7fffffff, "flash attention (cuda): too many rows (", rows, ")");
  launch(flash_fwd_generic<T>, unsigned(blocks), 128, 0, a);
}

template <typename T>
void forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
             const Tensor& bias, const AttentionArgs& args) {
  FlashArgs<T> a = make_args<T>(q, k, v, bias, args);
  a.out = out.data_ptr<T>();
  a.so = strides_of(out);
  a.lse = lse.data_ptr<T>();
  if (try_flash_decode<T>(a, out.device().index)) return;
  if constexpr (std::is_same<T, float>::value) {
    // The tensor-core kernels first (3xTF32, 1xTF32 under allow_tf32), unless exact is asked for.
    if (!args.exact && mma_forward(a, out.device().index, /*split=*/!allow_tf32())) return;
    if (a.D == a.Dv && (a.D == 32 || a.D == 64 || a.D == 128)) {
      const bool tf32 = allow_tf32() && !args.exact;
      if (a.D == 32) launch_fwd_fast<32>(a, tf32);
      if (a.D == 64) launch_fwd_fast<64>(a, tf32);
      if (a.D == 128) launch_fwd_fast<128>(a, tf32);
      return;
    }
  }
  launch_fwd_generic<T>(a);
}

}  // namespace
}  // namespace flash

// out: [B, Hq, Tq, Dv] (last dim stride 1); lse: [B, Hq, Tq] contiguous; q, k, v, bias as
// attention_forward. Sizes > 0 (the op checks).
void CudaBackend::flash_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                          const Tensor& v, const Tensor& bias, const AttentionArgs& args) {
  DeviceGuard guard(out.device().index);
  TT_CHECK(q.size(0) <= 0x7fffffff && q.size(1) <= 0x7fffffff && q.size(2) <= 0x7fffffff &&
               k.size(2) <= 0x7fffffff && q.size(3) <= 0x7fffffff && v.size(3) <= 0x7fffffff,
           "flash attention (cuda): sizes must fit in int32, got q ", q.shape(), " k ", k.shape());
  if (q.dtype() == kBFloat16) return flash_bf16::forward(*this, out, lse, q, k, v, bias, args);
  if (q.dtype() == kFloat32)
    flash::forward<float>(out, lse, q, k, v, bias, args);
  else
    flash::forward<double>(out, lse, q, k, v, bias, args);
}

}  // namespace tt::cuda
