// CUDA flash attention backward on tensor cores (mma.sync m16n8k8 TF32), FlashAttention-2 style:
// the float32 default for D = Dv in {32, 64, 128} (3xTF32), its 1xTF32 variant under
// set_allow_tf32(true), and mma_backward, which flash_attention_backward.cu calls after the Dvec
// kernel. Twin of cpu/flash_attention.cpp; the arithmetic's CPU twin is tinytorch/backend/tf32.h.
//
// Note [tensor-core flash backward]: one block of 4 warps per (key tile of 64 keys, key/value
// head, batch), the first key tiles (the longest causal work) first. K_j and V_j sit in swizzled
// shared memory for the whole block; warp w owns keys 16w..16w+15 and keeps their dK and dV rows
// [16, D] in registers until the single store at the end. The block walks the G query heads of
// its group and the query tiles [BM, D] that can see the key tile; Q_i, dO_i (16-byte cp.async,
// swizzled), lse_i and Dvec_i come in two stages, step s + 1 loading while step s computes:
//   S^T = K_j Q_i^T and dP^T = V_j dO_i^T                  (mma, registers)
//   P^T = exp2(S^T * scale * log2 e + bias^T * log2 e - lse_i * log2 e)   (0 where lse = -inf)
//   dS^T = P^T * (dP^T - Dvec_i) * scale
//   dV_j += P^T dO_i, dK_j += dS^T Q_i   (P^T, dS^T reused as A tiles, Note [m16n8k8 TF32 fragments])
//   dQ_i += dS K_j                        (dS^T through shared memory, float atomics into dq)
// Masks only on tiles that straddle the diagonal or a tail, as the forward.
// Why atomics for dQ: dQ_i sums over every key tile, and the blocks own key tiles. The other choice,
// a separate dQ pass over query tiles, must rebuild S and dP there (two more of the five products
// per tile: 40% more tensor-core work) and read K and V once more; the atomics cost one float
// read-modify-write per dQ element per key tile, done as float2 reductions in L2 (sm_90) that the
// warp does not wait for. The price is the order of the sum: dq's last bits vary run to run.
// Tiles (keys BN x queries BM) and shared memory (K, V; 2 stages of Q, dO, lse, Dvec; dS^T):
// D 32: 64 x 64, 66 KB; D 64: 64 x 64, 114 KB; D 128: 64 x 32, 138 KB, 64 x 16 for 3xTF32, 100 KB
// (cudaFuncSetAttribute before the launch).
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/flash_common.cuh"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/mma.cuh"

namespace tt::cuda::flash {

namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps, kBN = 16 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;

// Queries per step: 64, or 32 at D 128 (16 for 3xTF32, where 32 made ptxas spill a little).
template <int D, bool Split>
struct MmaBwdTiles {
  static constexpr int BM = D >= 128 ? (Split ? 16 : 32) : 64;
  static constexpr int LS = BM + 4;  // dS^T row stride: 4 or 20 mod 32 floats, no bank conflicts
  static constexpr int kStage = 2 * BM * D + 2 * BM;  // Q, dO, lse, Dvec
  static constexpr int kFloats = 2 * kBN * D + 2 * kStage + kBN * LS;
  static constexpr int kSmemBytes = int(sizeof(float)) * kFloats;
};

// dq[i] += x, dq[i + 1] += y (8-byte aligned): one vector reduction on sm_90, two before.
__device__ __forceinline__ void atomic_add2(float* p, float x, float y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(p), make_float2(x, y));
#else
  atomicAdd(p, x);
  atomicAdd(p + 1, y);
#endif
}

// q, k, v, dout: float32 [B, H*, T*, D], rows 16-byte aligned; lse, dvec as the forward left them
// -> dq (+=, atomics), dk, dv (stored).
template <int D, bool Split>
__global__ void __launch_bounds__(kThreads) flash_bwd_mma(FlashArgs<float> a) {
  using Tiles = MmaBwdTiles<D, Split>;
  constexpr int BM = Tiles::BM, LS = Tiles::LS, KD = D / 8, NQ = BM / 8, ND = D / 8;
  constexpr int RG = BM / 16, WPR = kWarps / RG, DQ = D / WPR, NDQ = DQ / 8;  // the dQ tile's split
  extern __shared__ __align__(128) float smem[];
  float* Ks = smem;                         // [BN][D] swizzled
  float* Vs = Ks + kBN * D;                 // [BN][D] swizzled
  float* stages = Vs + kBN * D;             // 2 x {Q [BM][D], dO [BM][D], lse2 [BM], Dvec [BM]}
  float* dSs = stages + 2 * Tiles::kStage;  // [BN][LS] dS^T
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int Hkv = a.Hq / a.G;
  const int64_t nbk = int64_t(a.B) * Hkv;
  const int jt = int(blockIdx.x / nbk), bk = int(blockIdx.x % nbk);
  const int b = bk / Hkv, hk = bk % Hkv, j0 = jt * kBN;
  const float* K = a.k + b * a.sk.b + hk * a.sk.h;
  const float* V = a.v + b * a.sv.b + hk * a.sv.h;
  mma::load_tile_async<kBN, D, kThreads>(Ks, K, a.sk.t, j0, a.Tk);
  mma::load_tile_async<kBN, D, kThreads>(Vs, V, a.sv.t, j0, a.Tk);
  mma::cp_async_commit();

  const int first_i = a.causal ? (j0 / BM) * BM : 0;
  const int nq = a.Tq > first_i ? (a.Tq - first_i + BM - 1) / BM : 0;
  const int steps = a.G * nq;
  auto issue = [&](int st) {  // step st = (query head g, query tile) into stage st % 2
    const int h = hk * a.G + st / nq, i0 = first_i + (st % nq) * BM;
    float* Qs = stages + (st & 1) * Tiles::kStage;
    float* dOs = Qs + BM * D;
    float* Ls = dOs + BM * D;
    float* Dvs = Ls + BM;
    mma::load_tile_async<BM, D, kThreads>(Qs, a.q + b * a.sq.b + h * a.sq.h, a.sq.t, i0, a.Tq);
    mma::load_tile_async<BM, D, kThreads>(dOs, a.dout + b * a.sdo.b + h * a.sdo.h, a.sdo.t, i0, a.Tq);
    mma::cp_async_commit();
    const int64_t row0 = (int64_t(b) * a.Hq + h) * a.Tq + i0;
    for (int r = threadIdx.x; r < BM; r += kThreads) {
      const bool ok = i0 + r < a.Tq;
      Ls[r] = ok ? a.lse[row0 + r] * kLog2e : neg_inf<float>();
      Dvs[r] = ok ? a.dvec[row0 + r] : 0.f;
    }
  };
  if (steps > 0) issue(0);

  float dk[ND][4], dv[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[n][e] = dv[n][e] = 0.f;
  const float scale = a.scale, c2 = a.scale * kLog2e;
  const int kr0 = j0 + 16 * warp + g, kr1 = kr0 + 8;  // this lane's keys
  const int kl = 16 * warp + g;                       // and their rows in Ks, Vs, dSs

  for (int st = 0; st < steps; ++st) {
    if (st + 1 < steps) {
      issue(st + 1);  // its stage was released by the barrier that ended step st - 1
      mma::cp_async_wait<1>();
    } else {
      mma::cp_async_wait<0>();
    }
    __syncthreads();
    const int h = hk * a.G + st / nq, i0 = first_i + (st % nq) * BM;
    const float* Qs = stages + (st & 1) * Tiles::kStage;
    const float* dOs = Qs + BM * D;
    const float* Ls = dOs + BM * D;
    const float* Dvs = Ls + BM;
    const float* bias = a.bias == nullptr ? nullptr : a.bias + b * a.bias_b + h * a.bias_h;

    // S^T = K Q^T, dP^T = V dO^T: [n] holds queries i0 + 8n + 2t (+1) of keys kr0 ([0..1]), kr1 ([2..3]).
    float sp[NQ][4], dp[NQ][4];
#pragma unroll
    for (int n = 0; n < NQ; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) sp[n][e] = dp[n][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KD; ++kk) {
      mma::Operand<4, Split> ka, va;
      const int c = 8 * kk + t;
      ka.set(0, Ks[mma::swz<D>(kl, c)]);
      ka.set(1, Ks[mma::swz<D>(kl + 8, c)]);
      ka.set(2, Ks[mma::swz<D>(kl, c + 4)]);
      ka.set(3, Ks[mma::swz<D>(kl + 8, c + 4)]);
      va.set(0, Vs[mma::swz<D>(kl, c)]);
      va.set(1, Vs[mma::swz<D>(kl + 8, c)]);
      va.set(2, Vs[mma::swz<D>(kl, c + 4)]);
      va.set(3, Vs[mma::swz<D>(kl + 8, c + 4)]);
#pragma unroll
      for (int n = 0; n < NQ; ++n) {
        mma::Operand<2, Split> qb, gb;
        qb.set(0, Qs[mma::swz<D>(8 * n + g, c)]);
        qb.set(1, Qs[mma::swz<D>(8 * n + g, c + 4)]);
        gb.set(0, dOs[mma::swz<D>(8 * n + g, c)]);
        gb.set(1, dOs[mma::swz<D>(8 * n + g, c + 4)]);
        mma::mma<Split>(sp[n], ka, qb);
        mma::mma<Split>(dp[n], va, gb);
      }
    }
    // P^T (into sp) and dS^T (into dp); dS^T also to shared memory for dQ.
    const bool edge = (a.causal && i0 < j0 + kBN - 1) || j0 + kBN > a.Tk || i0 + BM > a.Tq;
#pragma unroll
    for (int n = 0; n < NQ; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int ql = 8 * n + 2 * t + (e & 1);
        const float L = Ls[ql];
        float p = 0.f;
        if (L != neg_inf<float>()) {  // rows with nothing visible (and rows past Tq): P = 0
          const int i = i0 + ql, j = e < 2 ? kr0 : kr1;
          float s2;
          if (edge && (i >= a.Tq || j >= a.Tk || (a.causal && j > i))) {
            s2 = neg_inf<float>();
          } else {
            s2 = sp[n][e] * c2;
            if (bias != nullptr) s2 += bias[int64_t(i) * a.bias_i + int64_t(j) * a.bias_j] * kLog2e;
          }
          p = exp2f(s2 - L);
        }
        sp[n][e] = p;
        dp[n][e] = p * (dp[n][e] - Dvs[ql]) * scale;
      }
      *reinterpret_cast<float2*>(dSs + kl * LS + 8 * n + 2 * t) = make_float2(dp[n][0], dp[n][1]);
      *reinterpret_cast<float2*>(dSs + (kl + 8) * LS + 8 * n + 2 * t) = make_float2(dp[n][2], dp[n][3]);
    }
    // dV += P^T dO, dK += dS^T Q: C tiles as A tiles {c0, c2, c1, c3}, B rows 2t, 2t + 1.
#pragma unroll
    for (int kk = 0; kk < NQ; ++kk) {
      mma::Operand<4, Split> pa, sa;
      pa.set(0, sp[kk][0]);
      pa.set(1, sp[kk][2]);
      pa.set(2, sp[kk][1]);
      pa.set(3, sp[kk][3]);
      sa.set(0, dp[kk][0]);
      sa.set(1, dp[kk][2]);
      sa.set(2, dp[kk][1]);
      sa.set(3, dp[kk][3]);
#pragma unroll
      for (int n = 0; n < ND; ++n) {
        mma::Operand<2, Split> gb, qb;
        gb.set(0, dOs[mma::swz<D>(8 * kk + 2 * t, 8 * n + g)]);
        gb.set(1, dOs[mma::swz<D>(8 * kk + 2 * t + 1, 8 * n + g)]);
        qb.set(0, Qs[mma::swz<D>(8 * kk + 2 * t, 8 * n + g)]);
        qb.set(1, Qs[mma::swz<D>(8 * kk + 2 * t + 1, 8 * n + g)]);
        mma::mma<Split>(dv[n], pa, gb);
        mma::mma<Split>(dk[n], sa, qb);
      }
    }
    __syncthreads();  // dS^T complete
    // dQ_i += dS K_j: warp w takes query rows 16 (w % RG).. and head dims [DQ (w / RG), + DQ).
    {
      const int qr = 16 * (warp % RG), d0 = DQ * (warp / RG);
      float dq[NDQ][4];
#pragma unroll
      for (int n = 0; n < NDQ; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < kBN / 8; ++kk) {
        mma::Operand<4, Split> sa;  // A[q][key] = dS^T[key][q], keys read as 2t, 2t + 1
        const float* row0 = dSs + (8 * kk + 2 * t) * LS + qr + g;
        sa.set(0, row0[0]);
        sa.set(1, row0[8]);
        sa.set(2, row0[LS]);
        sa.set(3, row0[LS + 8]);
#pragma unroll
        for (int n = 0; n < NDQ; ++n) {
          mma::Operand<2, Split> kb;
          kb.set(0, Ks[mma::swz<D>(8 * kk + 2 * t, d0 + 8 * n + g)]);
          kb.set(1, Ks[mma::swz<D>(8 * kk + 2 * t + 1, d0 + 8 * n + g)]);
          mma::mma<Split>(dq[n], sa, kb);
        }
      }
      float* dQ = a.dq + b * a.sdq.b + h * a.sdq.h;
      const int q0 = i0 + qr + g, q1 = q0 + 8;
#pragma unroll
      for (int n = 0; n < NDQ; ++n) {
        const int col = d0 + 8 * n + 2 * t;
        if (q0 < a.Tq) atomic_add2(dQ + int64_t(q0) * a.sdq.t + col, dq[n][0], dq[n][1]);
        if (q1 < a.Tq) atomic_add2(dQ + int64_t(q1) * a.sdq.t + col, dq[n][2], dq[n][3]);
      }
    }
    __syncthreads();  // this stage and dS^T are consumed before step st + 2 and the next dS^T
  }
  if (steps == 0) mma::cp_async_wait<0>();  // K and V were loaded for nothing; drain before exit

  float* dK = a.dk + b * a.sdk.b + hk * a.sdk.h;
  float* dV = a.dv + b * a.sdv.b + hk * a.sdv.h;
#pragma unroll
  for (int n = 0; n < ND; ++n) {
    const int col = 8 * n + 2 * t;
    if (kr0 < a.Tk) {
      *reinterpret_cast<float2*>(dK + int64_t(kr0) * a.sdk.t + col) = make_float2(dk[n][0], dk[n][1]);
      *reinterpret_cast<float2*>(dV + int64_t(kr0) * a.sdv.t + col) = make_float2(dv[n][0], dv[n][1]);
    }
    if (kr1 < a.Tk) {
      *reinterpret_cast<float2*>(dK + int64_t(kr1) * a.sdk.t + col) = make_float2(dk[n][2], dk[n][3]);
      *reinterpret_cast<float2*>(dV + int64_t(kr1) * a.sdv.t + col) = make_float2(dv[n][2], dv[n][3]);
    }
  }
}

template <int D, bool Split>
void launch_bwd_mma(const FlashArgs<float>& a) {
  const int64_t blocks = int64_t((a.Tk + kBN - 1) / kBN) * a.B * (a.Hq / a.G);
  TT_CHECK(blocks <= 0x7fffffff, "flash attention backward (cuda): too many key tiles (", blocks, ")");
  constexpr int smem = MmaBwdTiles<D, Split>::kSmemBytes;
  TT_CUDA_CHECK(cudaFuncSetAttribute(flash_bwd_mma<D, Split>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  launch(flash_bwd_mma<D, Split>, unsigned(blocks), kThreads, smem, a);
}

template <bool Split>
void dispatch_bwd(const FlashArgs<float>& a) {
  if (a.D == 32) launch_bwd_mma<32, Split>(a);
  if (a.D == 64) launch_bwd_mma<64, Split>(a);
  if (a.D == 128) launch_bwd_mma<128, Split>(a);
}

}  // namespace

namespace {
template <bool Split>
int bwd_smem_bytes(int D) {
  return D == 32 ? MmaBwdTiles<32, Split>::kSmemBytes
                 : D == 64 ? MmaBwdTiles<64, Split>::kSmemBytes : MmaBwdTiles<128, Split>::kSmemBytes;
}
}  // namespace

bool mma_backward(const FlashArgs<float>& a, int device, bool split) {
  if (!mma_supported(a, device)) return false;
  // 101-138 KiB at D 64 and 128: more than sm_86/89 allow a block, where the FFMA kernels run.
  if (!tensor_core_kernel_fits(device, split ? bwd_smem_bytes<true>(a.D) : bwd_smem_bytes<false>(a.D))) return false;
  if (!aligned16(a.dout, a.sdo) || !aligned16(a.dq, a.sdq) || !aligned16(a.dk, a.sdk) || !aligned16(a.dv, a.sdv))
    return false;
  if (split)
    dispatch_bwd<true>(a);
  else
    dispatch_bwd<false>(a);
  return true;
}

}  // namespace tt::cuda::flash
