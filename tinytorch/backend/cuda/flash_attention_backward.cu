// CUDA flash attention, backward (FlashAttention-2): the Dvec = rowsum(dO * O) kernel, the tiled
// FFMA kernel (float32, D = Dv in {32, 64, 128}), a generic warp-per-row kernel (float64 and other
// head dims), and the CudaBackend::flash_attention_backward dispatch: the tensor-core kernel of
// flash_mma_backward.cu first (the float32 default), the FFMA kernel under AttentionArgs::exact
// (SDPBackend::FlashExact) or when it cannot run. Twin of cpu/flash_attention.cpp.
//
// Note [flash attention backward on the GPU]: one block per (key tile, key/value head, batch),
// the first key tiles (the longest causal work) first. K_j and V_j sit in shared memory for the
// whole block; the block loops over the G query heads of its group and over the query tiles that
// can see the key tile (causal: from the tile holding row j0), and for each:
//   S^T = scale * K_j Q_i^T + bias^T, P^T = exp(S^T - lse_i)  (0 where lse = -inf)
//   dP^T = V_j dO_i^T, dS^T = P^T * (dP^T - Dvec_i) * scale   (both in registers, one loop over d)
//   dV_j += P^T dO_i, dK_j += dS^T Q_i                         (registers, P^T and dS^T via smem)
//   dQ_i += dS K_j                                             (atomicAdd float into the zeroed dq)
// dK_j and dV_j have a single writer (the block owns the group) and are stored once at the end.
// dQ receives one atomic add per element per key tile: the sum order varies run to run (last-bit
// nondeterminism in dq only). 128 threads as 16 x 8: a thread holds BN/16 key rows x D/8 columns
// of dK and dV, BN/16 x BM/8 of S^T, and BM/16 x D/8 of the dQ tile.
// Tiles (keys BN x queries BM) and dynamic shared memory (K, V, Q, dO, P^T, dS^T, lse, Dvec) per
// D = 32 / 64 / 128: 64x64, 64x32, 32x32: 72, 71, 77 KB (cudaFuncSetAttribute before launch).
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/flash_common.cuh"
#include "tinytorch/backend/cuda/flash_mma_bf16.cuh"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/scratch.cuh"

namespace tt::cuda {

namespace flash {
namespace {

constexpr int kThreads = 128;

template <int D>
struct BwdTiles {
  static constexpr int BN = D >= 128 ? 32 : 64;  // keys per block
  static constexpr int BM = D >= 64 ? 32 : 64;   // queries per step
};

int64_t bwd_smem_bytes(int D) {
  const int BN = D >= 128 ? 32 : 64, BM = D >= 64 ? 32 : 64;
  return int64_t(sizeof(float)) * (2 * BN * (D + 4) + 2 * BM * (D + 4) + 2 * BN * (BM + 4) + 2 * BM);
}

// out, dout: [B, Hq, Tq, Dv] -> dvec [B, Hq, Tq] contiguous = rowsum(dout * out); a warp per row.
template <typename T>
__global__ void flash_bwd_dvec(FlashArgs<T> a, T* dvec) {
  const int lane = threadIdx.x & 31;
  const int64_t rows = int64_t(a.B) * a.Hq * a.Tq;
  const int64_t gr = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (gr >= rows) return;
  const int i = int(gr % a.Tq), h = int(gr / a.Tq % a.Hq), b = int(gr / (int64_t(a.Tq) * a.Hq));
  const T* o = a.out + b * a.so.b + h * a.so.h + int64_t(i) * a.so.t;
  const T* g = a.dout + b * a.sdo.b + h * a.sdo.h + int64_t(i) * a.sdo.t;
  T s = T(0);
  for (int d = lane; d < a.Dv; d += 32) s += o[d] * g[d];
  s = warp_sum(s);
  if (lane == 0) dvec[gr] = s;
}

// Rows [r0, r0 + R) of a [T, D] matrix (row stride ld) into smem [R][D + 4], zeros past T.
template <int R, int D>
__device__ __forceinline__ void load_rows_bwd(float* dst, const float* src, int64_t ld, int r0, int T) {
  for (int idx = threadIdx.x; idx < R * D; idx += kThreads) {
    const int r = idx / D, d = idx % D;
    dst[r * (D + 4) + d] = r0 + r < T ? src[int64_t(r0 + r) * ld + d] : 0.f;
  }
}

__device__ __forceinline__ float4 ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }

// q, k, v, dout, out (via dvec), lse: float32, D = Dv -> dq (+=, atomics), dk, dv (stored).
// Thread (ty, tx): key rows ty + 16 i, query columns tx + 8 j of S^T, query rows ty + 16 i of
// the dQ tile, head-dim columns 4 tx + 32 u + e (e < 4); rows padded to multiples of 4 floats
// so the inner products read float4s without bank conflicts.
template <int D>
__global__ void __launch_bounds__(kThreads) flash_bwd_ffma(FlashArgs<float> a) {
  constexpr int BN = BwdTiles<D>::BN, BM = BwdTiles<D>::BM;
  constexpr int RK = BN / 16, CQ = BM / 8, CU = D / 32, RQ = BM / 16, LD = D + 4, LP = BM + 4;
  extern __shared__ __align__(16) float smem[];
  float* Ks = smem;             // [BN][LD]
  float* Vs = Ks + BN * LD;     // [BN][LD]
  float* Qs = Vs + BN * LD;     // [BM][LD]
  float* dOs = Qs + BM * LD;    // [BM][LD]
  float* Ps = dOs + BM * LD;    // [BN][LP]  P^T
  float* dSs = Ps + BN * LP;    // [BN][LP]  dS^T
  float* Ls = dSs + BN * LP;    // [BM] lse
  float* Dvs = Ls + BM;         // [BM] Dvec
  const int tx = threadIdx.x & 7, ty = threadIdx.x >> 3;
  const int Hkv = a.Hq / a.G;
  const int64_t nbk = int64_t(a.B) * Hkv;
  const int jt = int(blockIdx.x / nbk), bk = int(blockIdx.x % nbk);
  const int b = bk / Hkv, hk = bk % Hkv, j0 = jt * BN;
  const float* K = a.k + b * a.sk.b + hk * a.sk.h;
  const float* V = a.v + b * a.sv.b + hk * a.sv.h;
  load_rows_bwd<BN, D>(Ks, K, a.sk.t, j0, a.Tk);
  load_rows_bwd<BN, D>(Vs, V, a.sv.t, j0, a.Tk);
  float dk[RK][CU][4], dv[RK][CU][4];
#pragma unroll
  for (int i = 0; i < RK; ++i)
#pragma unroll
    for (int u = 0; u < CU; ++u)
#pragma unroll
      for (int e = 0; e < 4; ++e) dk[i][u][e] = dv[i][u][e] = 0.f;
  const float scale = a.scale;
  const int first_i = a.causal ? (j0 / BM) * BM : 0;
  for (int g = 0; g < a.G; ++g) {
    const int h = hk * a.G + g;
    const float* Q = a.q + b * a.sq.b + h * a.sq.h;
    const float* dO = a.dout + b * a.sdo.b + h * a.sdo.h;
    float* dQ = a.dq + b * a.sdq.b + h * a.sdq.h;
    const int64_t row0 = (int64_t(b) * a.Hq + h) * a.Tq;  // this head's rows in lse and dvec
    for (int i0 = first_i; i0 < a.Tq; i0 += BM) {
      __syncthreads();  // the previous step's Q, dO, P, dS are consumed (and K, V are loaded)
      load_rows_bwd<BM, D>(Qs, Q, a.sq.t, i0, a.Tq);
      load_rows_bwd<BM, D>(dOs, dO, a.sdo.t, i0, a.Tq);
      for (int r = threadIdx.x; r < BM; r += kThreads) {
        Ls[r] = i0 + r < a.Tq ? a.lse[row0 + i0 + r] : neg_inf<float>();
        Dvs[r] = i0 + r < a.Tq ? a.dvec[row0 + i0 + r] : 0.f;
      }
      __syncthreads();
      // S^T = K Q^T and dP^T = V dO^T (raw), this thread's [RK][CQ]
      float st[RK][CQ], dpt[RK][CQ];
#pragma unroll
      for (int i = 0; i < RK; ++i)
#pragma unroll
        for (int j = 0; j < CQ; ++j) st[i][j] = dpt[i][j] = 0.f;
#pragma unroll 2
      for (int d = 0; d < D; d += 4) {
        float4 kv[RK], vv[RK], qv[CQ], gv[CQ];
#pragma unroll
        for (int i = 0; i < RK; ++i) {
          kv[i] = ld4(Ks + (ty + 16 * i) * LD + d);
          vv[i] = ld4(Vs + (ty + 16 * i) * LD + d);
        }
#pragma unroll
        for (int j = 0; j < CQ; ++j) {
          qv[j] = ld4(Qs + (tx + 8 * j) * LD + d);
          gv[j] = ld4(dOs + (tx + 8 * j) * LD + d);
        }
#pragma unroll
        for (int i = 0; i < RK; ++i)
#pragma unroll
          for (int j = 0; j < CQ; ++j) {
            st[i][j] = fmaf(kv[i].x, qv[j].x, st[i][j]);
            st[i][j] = fmaf(kv[i].y, qv[j].y, st[i][j]);
            st[i][j] = fmaf(kv[i].z, qv[j].z, st[i][j]);
            st[i][j] = fmaf(kv[i].w, qv[j].w, st[i][j]);
            dpt[i][j] = fmaf(vv[i].x, gv[j].x, dpt[i][j]);
            dpt[i][j] = fmaf(vv[i].y, gv[j].y, dpt[i][j]);
            dpt[i][j] = fmaf(vv[i].z, gv[j].z, dpt[i][j]);
            dpt[i][j] = fmaf(vv[i].w, gv[j].w, dpt[i][j]);
          }
      }
#pragma unroll
      for (int i = 0; i < RK; ++i)
#pragma unroll
        for (int j = 0; j < CQ; ++j) {
          const int c = ty + 16 * i, r = tx + 8 * j;
          const float L = Ls[r];
          const float sc = masked_score(a, b, h, i0 + r, j0 + c, st[i][j]);
          const float p = L == neg_inf<float>() ? 0.f : functors::exp_any(sc - L);
          Ps[c * LP + r] = p;
          dSs[c * LP + r] = p * (dpt[i][j] - Dvs[r]) * scale;
        }
      __syncthreads();
      // dV_j += P^T dO_i, dK_j += dS^T Q_i
#pragma unroll 1
      for (int r = 0; r < BM; r += 4) {
        float4 pv[RK], sv[RK];
#pragma unroll
        for (int i = 0; i < RK; ++i) {
          pv[i] = ld4(Ps + (ty + 16 * i) * LP + r);
          sv[i] = ld4(dSs + (ty + 16 * i) * LP + r);
        }
#pragma unroll
        for (int rr = 0; rr < 4; ++rr) {
          float4 gv[CU], qv[CU];
#pragma unroll
          for (int u = 0; u < CU; ++u) {
            gv[u] = ld4(dOs + (r + rr) * LD + 4 * tx + 32 * u);
            qv[u] = ld4(Qs + (r + rr) * LD + 4 * tx + 32 * u);
          }
#pragma unroll
          for (int i = 0; i < RK; ++i) {
            const float p = rr == 0 ? pv[i].x : rr == 1 ? pv[i].y : rr == 2 ? pv[i].z : pv[i].w;
            const float ds = rr == 0 ? sv[i].x : rr == 1 ? sv[i].y : rr == 2 ? sv[i].z : sv[i].w;
#pragma unroll
            for (int u = 0; u < CU; ++u) {
              dv[i][u][0] = fmaf(p, gv[u].x, dv[i][u][0]);
              dv[i][u][1] = fmaf(p, gv[u].y, dv[i][u][1]);
              dv[i][u][2] = fmaf(p, gv[u].z, dv[i][u][2]);
              dv[i][u][3] = fmaf(p, gv[u].w, dv[i][u][3]);
              dk[i][u][0] = fmaf(ds, qv[u].x, dk[i][u][0]);
              dk[i][u][1] = fmaf(ds, qv[u].y, dk[i][u][1]);
              dk[i][u][2] = fmaf(ds, qv[u].z, dk[i][u][2]);
              dk[i][u][3] = fmaf(ds, qv[u].w, dk[i][u][3]);
            }
          }
        }
      }
      // dQ_i += dS K_j: this thread's query rows ty + 16 i
      float dq[RQ][CU][4];
#pragma unroll
      for (int i = 0; i < RQ; ++i)
#pragma unroll
        for (int u = 0; u < CU; ++u)
#pragma unroll
          for (int e = 0; e < 4; ++e) dq[i][u][e] = 0.f;
#pragma unroll 2
      for (int c = 0; c < BN; ++c) {
        float sv[RQ];
        float4 kv[CU];
#pragma unroll
        for (int i = 0; i < RQ; ++i) sv[i] = dSs[c * LP + ty + 16 * i];
#pragma unroll
        for (int u = 0; u < CU; ++u) kv[u] = ld4(Ks + c * LD + 4 * tx + 32 * u);
#pragma unroll
        for (int i = 0; i < RQ; ++i)
#pragma unroll
          for (int u = 0; u < CU; ++u) {
            dq[i][u][0] = fmaf(sv[i], kv[u].x, dq[i][u][0]);
            dq[i][u][1] = fmaf(sv[i], kv[u].y, dq[i][u][1]);
            dq[i][u][2] = fmaf(sv[i], kv[u].z, dq[i][u][2]);
            dq[i][u][3] = fmaf(sv[i], kv[u].w, dq[i][u][3]);
          }
      }
#pragma unroll
      for (int i = 0; i < RQ; ++i) {
        const int row = i0 + ty + 16 * i;
        if (row < a.Tq) {
          float* qrow = dQ + int64_t(row) * a.sdq.t + 4 * tx;
#pragma unroll
          for (int u = 0; u < CU; ++u)
#pragma unroll
            for (int e = 0; e < 4; ++e) atomicAdd(qrow + 32 * u + e, dq[i][u][e]);
        }
      }
    }
  }
  float* dK = a.dk + b * a.sdk.b + hk * a.sdk.h;
  float* dV = a.dv + b * a.sdv.b + hk * a.sdv.h;
#pragma unroll
  for (int i = 0; i < RK; ++i) {
    const int key = j0 + ty + 16 * i;
    if (key < a.Tk) {
      float* krow = dK + int64_t(key) * a.sdk.t + 4 * tx;
      float* vrow = dV + int64_t(key) * a.sdv.t + 4 * tx;
#pragma unroll
      for (int u = 0; u < CU; ++u)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          krow[32 * u + e] = dk[i][u][e];
          vrow[32 * u + e] = dv[i][u][e];
        }
    }
  }
}

// Any dtype and head dims: one warp per query row, walking its visible keys; dq accumulates in
// the row (lane-owned), dk and dv through atomicAdd. Slow, exact; the fallback.
template <typename T>
__global__ void flash_bwd_generic(FlashArgs<T> a) {
  const int lane = threadIdx.x & 31;
  const int64_t rows = int64_t(a.B) * a.Hq * a.Tq;
  const int64_t gr = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (gr >= rows) return;  // whole warps leave together
  const int i = int(gr % a.Tq), h = int(gr / a.Tq % a.Hq), b = int(gr / (int64_t(a.Tq) * a.Hq));
  const int hk = h / a.G;
  const T L = a.lse[gr];
  if (L == neg_inf<T>()) return;  // nothing visible: P = 0, no gradient
  const T Di = a.dvec[gr];
  const T* q = a.q + b * a.sq.b + h * a.sq.h + int64_t(i) * a.sq.t;
  const T* g = a.dout + b * a.sdo.b + h * a.sdo.h + int64_t(i) * a.sdo.t;
  T* dq = a.dq + b * a.sdq.b + h * a.sdq.h + int64_t(i) * a.sdq.t;
  const int kend = int(visible_keys(a.causal, a.Tk, int64_t(i) + 1));
  for (int j = 0; j < kend; ++j) {
    const T* kr = a.k + b * a.sk.b + hk * a.sk.h + int64_t(j) * a.sk.t;
    const T* vr = a.v + b * a.sv.b + hk * a.sv.h + int64_t(j) * a.sv.t;
    T dot = T(0), dp = T(0);
    for (int d = lane; d < a.D; d += 32) dot += q[d] * kr[d];
    for (int d = lane; d < a.Dv; d += 32) dp += g[d] * vr[d];
    dot = warp_sum(dot);
    dp = warp_sum(dp);
    const T p = functors::exp_any(masked_score(a, b, h, i, j, dot) - L);
    if (p == T(0)) continue;  // masked or negligible: adds exactly 0 (NaN goes on)
    const T ds = p * (dp - Di) * a.scale;
    T* dkr = a.dk + b * a.sdk.b + hk * a.sdk.h + int64_t(j) * a.sdk.t;
    T* dvr = a.dv + b * a.sdv.b + hk * a.sdv.h + int64_t(j) * a.sdv.t;
    for (int d = lane; d < a.D; d += 32) {
      dq[d] += ds * kr[d];
      atomicAdd(dkr + d, ds * q[d]);
    }
    for (int d = lane; d < a.Dv; d += 32) atomicAdd(dvr + d, p * g[d]);
  }
}

template <int D>
void launch_bwd_fast(const FlashArgs<float>& a) {
  constexpr int BN = BwdTiles<D>::BN;
  const int64_t blocks = int64_t((a.Tk + BN - 1) / BN) * a.B * (a.Hq / a.G);
  TT_CHECK(blocks <= 0x7fffffff, "flash attention backward (cuda): too many key tiles (", blocks, ")");
  const int smem = int(bwd_smem_bytes(D));
  TT_CUDA_CHECK(cudaFuncSetAttribute(flash_bwd_ffma<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  launch(flash_bwd_ffma<D>, unsigned(blocks), kThreads, smem, a);
}

template <typename T>
void backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
              const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& bias,
              const AttentionArgs& args) {
  FlashArgs<T> a = make_args<T>(q, k, v, bias, args);
  a.out = out.data_ptr<T>();
  a.so = strides_of(out);
  a.lse = lse.data_ptr<T>();
  a.dout = dout.data_ptr<T>();
  a.sdo = strides_of(dout);
  a.dq = dq.data_ptr<T>();
  a.sdq = strides_of(dq);
  a.dk = dk.data_ptr<T>();
  a.sdk = strides_of(dk);
  a.dv = dv.data_ptr<T>();
  a.sdv = strides_of(dv);
  const int64_t rows = int64_t(a.B) * a.Hq * a.Tq;
  const int64_t row_blocks = (rows + 3) / 4;  // 4 warps of 128 threads, a warp per row
  TT_CHECK(row_blocks <= 0x7fffffff, "flash attention backward (cuda): too many rows (", rows, ")");
  const Scratch<T> dvec(rows, q.device().index);
  launch(flash_bwd_dvec<T>, unsigned(row_blocks), 128, 0, a, dvec.data());
  a.dvec = dvec.data();
  if constexpr (std::is_same<T, float>::value) {
    // The tensor-core kernel first (flash_mma_backward.cu), unless exact arithmetic is asked for.
    if (!args.exact && mma_backward(a, q.device().index, /*split=*/!allow_tf32())) return;
    if (a.D == a.Dv && (a.D == 32 || a.D == 64 || a.D == 128)) {
      if (a.D == 32) launch_bwd_fast<32>(a);
      if (a.D == 64) launch_bwd_fast<64>(a);
      if (a.D == 128) launch_bwd_fast<128>(a);
      return;
    }
  }
  launch(flash_bwd_generic<T>, unsigned(row_blocks), 128, 0, a);
}

}  // namespace
}  // namespace flash

// dq, dk, dv: zero-filled by the caller (dq accumulates through atomics, dk/dv too on the generic
// path); the rest as the forward left them.
void CudaBackend::flash_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                           const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                           const Tensor& lse, const Tensor& bias, const AttentionArgs& args) {
  DeviceGuard guard(dq.device().index);
  TT_CHECK(q.size(0) <= 0x7fffffff && q.size(1) <= 0x7fffffff && q.size(2) <= 0x7fffffff &&
               k.size(2) <= 0x7fffffff && q.size(3) <= 0x7fffffff && v.size(3) <= 0x7fffffff,
           "flash attention backward (cuda): sizes must fit in int32, got q ", q.shape(), " k ", k.shape());
  if (q.dtype() == kBFloat16) return flash_bf16::backward(*this, dq, dk, dv, dout, q, k, v, out, lse, bias, args);
  if (q.dtype() == kFloat32)
    flash::backward<float>(dq, dk, dv, dout, q, k, v, out, lse, bias, args);
  else
    flash::backward<double>(dq, dk, dv, dout, q, k, v, out, lse, bias, args);
}

}  // namespace tt::cuda
