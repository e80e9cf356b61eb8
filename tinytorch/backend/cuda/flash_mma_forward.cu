// CUDA flash attention forward on tensor cores (mma.sync m16n8k8 TF32): the float32 default for
// D = Dv in {32, 64, 128} (3xTF32, float32 accuracy), its 1xTF32 variant under set_allow_tf32(true),
// and mma_forward, which flash_attention_forward.cu calls first. Twin of cpu/flash_attention.cpp;
// the arithmetic's CPU twin is tinytorch/backend/tf32.h.
//
// Note [tensor-core flash forward]: one block of 4 warps per (query tile of 64 rows, head, batch),
// the last query tile first (the longest causal rows start first). Warp w owns query rows
// 16w..16w+15 for the whole block:
//   - its Q rows sit in registers as float A fragments (D / 2 floats a thread; in shared memory for
//     3xTF32 at D 128, see MmaFwdTiles), split into TF32 parts at each use;
//   - K and V tiles [BN, D] arrive by 16-byte cp.async into XOR-swizzled shared memory, two stages:
//     tile j + 1 loads while tile j is multiplied;
//   - S = Q K^T lands in registers (C fragments: rows g, g + 8, columns 2t, 2t + 1 of each 8 keys);
//     the online softmax works in base 2: s2 = dot * scale * log2(e) + bias * log2(e), weights
//     exp2(s2 - m2), lse = (m2 + log2 l) * ln 2; row max and sum need two shuffles (the 4 lanes
//     of a row);
//   - P never leaves the registers: the C tile is reused as the A tile of O += P V with the key
//     order permuted (Note [m16n8k8 TF32 fragments] in mma.cuh); O stays in registers, [16, D] per
//     warp, and is scaled by 1 / l and stored once.
// Masks (causal, key and query tails) are evaluated only on tiles that straddle the diagonal or a
// tail; the others add the bias (if any) and nothing else. Semantics as the FFMA kernel: rows with
// nothing visible give out 0 and lse -inf, a NaN score makes its row NaN.
// 3xTF32 (Split = true): every product a * b as big(a) big(b) + big(a) small(b) + small(a) big(b),
// error analysis in modules/13_flash_attention/README.md ("Tensor cores and their error").
// Tiles BM x BN and shared memory (2 stages of K and V): D 32: 64 x 64, 32 KB; D 64: 64 x 64,
// 64 KB; D 128: 64 x 32, 64 KB, 96 KB for 3xTF32 with Q (cudaFuncSetAttribute before the launch).
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/flash_common.cuh"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/mma.cuh"

namespace tt::cuda::flash {

namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps, kBM = 16 * kWarps;
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

// Q stays in registers except for 3xTF32 at D 128, where its 64 floats a thread next to O's 64 and
// the split operands made ptxas spill: there Q waits in shared memory, read per k-step.
template <int D, bool Split>
struct MmaFwdTiles {
  static constexpr int BN = D >= 128 ? 32 : 64;
  static constexpr bool kQInSmem = Split && D >= 128;
  static constexpr int kSmemBytes = int(sizeof(float)) * (2 * 2 * BN * D + (kQInSmem ? kBM * D : 0));
};

// One score in base 2 (see the Note): dot * c + bias * log2(e); with check, -inf where the
// position is hidden (past a tail, or causal j > i). bias: this (batch, head)'s bias or null.
__device__ __forceinline__ float score2(const FlashArgs<float>& a, const float* bias, int i, int j, float dot,
                                        float c, bool check) {
  if (check && (i >= a.Tq || j >= a.Tk || (a.causal && j > i))) return neg_inf<float>();
  float s = dot * c;
  if (bias != nullptr) s += bias[int64_t(i) * a.bias_i + int64_t(j) * a.bias_j] * kLog2e;
  return s;
}

// q, k, v: [B, H*, T*, D] float32, rows 16-byte aligned -> out [B, Hq, Tq, D], lse [B, Hq, Tq].
template <int D, bool Split>
__global__ void __launch_bounds__(kThreads) flash_fwd_mma(FlashArgs<float> a) {
  using Tiles = MmaFwdTiles<D, Split>;
  constexpr int BN = Tiles::BN, KD = D / 8, NS = BN / 8, NO = D / 8;
  constexpr bool kQInSmem = Tiles::kQInSmem;
  extern __shared__ __align__(128) float smem[];  // [2 stages][K [BN][D], V [BN][D]], (Q [BM][D]), swizzled
  float* Qs = smem + 2 * 2 * BN * D;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int64_t nbh = int64_t(a.B) * a.Hq;
  const int q_tiles = (a.Tq + kBM - 1) / kBM;
  const int tile = q_tiles - 1 - int(blockIdx.x / nbh), bh = int(blockIdx.x % nbh);
  const int b = bh / a.Hq, h = bh % a.Hq, hk = h / a.G, i0 = tile * kBM;
  const float* Q = a.q + b * a.sq.b + h * a.sq.h;
  const float* K = a.k + b * a.sk.b + hk * a.sk.h;
  const float* V = a.v + b * a.sv.b + hk * a.sv.h;
  const float* bias = a.bias == nullptr ? nullptr : a.bias + b * a.bias_b + h * a.bias_h;
  const int kend = int(visible_keys(a.causal, a.Tk, int64_t(i0) + kBM));
  const int ntiles = (kend + BN - 1) / BN;

  auto issue = [&](int jt) {  // K and V of key tile jt into stage jt % 2
    float* Ks = smem + (jt & 1) * 2 * BN * D;
    mma::load_tile_async<BN, D, kThreads>(Ks, K, a.sk.t, jt * BN, a.Tk);
    mma::load_tile_async<BN, D, kThreads>(Ks + BN * D, V, a.sv.t, jt * BN, a.Tk);
    mma::cp_async_commit();
  };
  if constexpr (kQInSmem) mma::load_tile_async<kBM, D, kThreads>(Qs, Q, a.sq.t, i0, a.Tq);  // joins group 0
  if (ntiles > 0) issue(0);

  // This warp's rows r0 = i0 + 16 warp + g and r0 + 8; Q as A fragments, 0 past Tq.
  const int r0 = i0 + 16 * warp + g, r1 = r0 + 8;
  float qf[kQInSmem ? 1 : KD][4];
  if constexpr (!kQInSmem) {
#pragma unroll
    for (int kk = 0; kk < KD; ++kk) {
      const int c = 8 * kk + t;
      qf[kk][0] = r0 < a.Tq ? Q[int64_t(r0) * a.sq.t + c] : 0.f;
      qf[kk][1] = r1 < a.Tq ? Q[int64_t(r1) * a.sq.t + c] : 0.f;
      qf[kk][2] = r0 < a.Tq ? Q[int64_t(r0) * a.sq.t + c + 4] : 0.f;
      qf[kk][3] = r1 < a.Tq ? Q[int64_t(r1) * a.sq.t + c + 4] : 0.f;
    }
  }
  float o[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m[2] = {neg_inf<float>(), neg_inf<float>()}, l[2] = {0.f, 0.f};
  bool nan_row[2] = {false, false};
  const float c2 = a.scale * kLog2e;

  for (int jt = 0; jt < ntiles; ++jt) {
    const int j0 = jt * BN;
    if (jt + 1 < ntiles) {
      issue(jt + 1);  // its stage was released by the barrier that ended step jt - 1
      mma::cp_async_wait<1>();
    } else {
      mma::cp_async_wait<0>();
    }
    __syncthreads();
    const float* Ks = smem + (jt & 1) * 2 * BN * D;
    const float* Vs = Ks + BN * D;

    // S = Q K^T: s[n] holds keys j0 + 8n + 2t (+1) of rows r0 (s[n][0..1]) and r1 (s[n][2..3]).
    float s[NS][4];
#pragma unroll
    for (int n = 0; n < NS; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KD; ++kk) {
      mma::Operand<4, Split> qa;
      if constexpr (kQInSmem) {
        const int rl = 16 * warp + g, c = 8 * kk + t;
        qa.set(0, Qs[mma::swz<D>(rl, c)]);
        qa.set(1, Qs[mma::swz<D>(rl + 8, c)]);
        qa.set(2, Qs[mma::swz<D>(rl, c + 4)]);
        qa.set(3, Qs[mma::swz<D>(rl + 8, c + 4)]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) qa.set(e, qf[kk][e]);
      }
#pragma unroll
      for (int n = 0; n < NS; ++n) {
        mma::Operand<2, Split> kb;  // B[d][j] = K[j][d]: b0 = K[8n + g][8kk + t], b1 = ...[+ 4]
        kb.set(0, Ks[mma::swz<D>(8 * n + g, 8 * kk + t)]);
        kb.set(1, Ks[mma::swz<D>(8 * n + g, 8 * kk + t + 4)]);
        mma::mma<Split>(s[n], qa, kb);
      }
    }
    // Scores in base 2; masks only where the tile straddles the diagonal or a tail.
    const bool edge = (a.causal && j0 + BN - 1 > i0) || j0 + BN > a.Tk || i0 + kBM > a.Tq;
    if (edge || bias != nullptr) {
#pragma unroll
      for (int n = 0; n < NS; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          s[n][e] = score2(a, bias, e < 2 ? r0 : r1, j0 + 8 * n + 2 * t + (e & 1), s[n][e], c2, edge);
    } else {
#pragma unroll
      for (int n = 0; n < NS; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[n][e] *= c2;
    }
    // Online softmax per row (rows 0: r0, 1: r1); the 4 lanes of a row are lanes 4g..4g+3.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = m[r];
#pragma unroll
      for (int n = 0; n < NS; ++n) mx = max_skip_nan(mx, max_skip_nan(s[n][2 * r], s[n][2 * r + 1]));
      mx = max_skip_nan(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = max_skip_nan(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      if (mx == neg_inf<float>()) {  // nothing visible yet: weights 0 (a NaN score is remembered)
#pragma unroll
        for (int n = 0; n < NS; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            nan_row[r] = nan_row[r] || s[n][2 * r + e] != s[n][2 * r + e];
            s[n][2 * r + e] = 0.f;
          }
        continue;
      }
      const float alpha = exp2f(m[r] - mx);  // 0 while m was -inf
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < NS; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          s[n][2 * r + e] = exp2f(s[n][2 * r + e] - mx);
          sum += s[n][2 * r + e];
        }
      l[r] = l[r] * alpha + sum;  // this lane's share; the 4 shares are added at the end
      m[r] = mx;
#pragma unroll
      for (int n = 0; n < NO; ++n) {
        o[n][2 * r] *= alpha;
        o[n][2 * r + 1] *= alpha;
      }
    }
    // O += P V: the C tile of keys 8kk.. is the A tile {c0, c2, c1, c3}; V read at rows 2t, 2t + 1.
#pragma unroll
    for (int kk = 0; kk < NS; ++kk) {
      mma::Operand<4, Split> pa;
      pa.set(0, s[kk][0]);
      pa.set(1, s[kk][2]);
      pa.set(2, s[kk][1]);
      pa.set(3, s[kk][3]);
#pragma unroll
      for (int n = 0; n < NO; ++n) {
        mma::Operand<2, Split> vb;  // B[j][d] = V[j][d]: b0 = V[8kk + 2t][8n + g], b1 = V[8kk + 2t + 1][...]
        vb.set(0, Vs[mma::swz<D>(8 * kk + 2 * t, 8 * n + g)]);
        vb.set(1, Vs[mma::swz<D>(8 * kk + 2 * t + 1, 8 * n + g)]);
        mma::mma<Split>(o[n], pa, vb);
      }
    }
    __syncthreads();  // every warp is done with this stage before tile jt + 2 overwrites it
  }

  float* O = a.out + b * a.so.b + h * a.so.h;
  float* L = a.lse + (int64_t(b) * a.Hq + h) * a.Tq;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float lsum = l[r];
    lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
    lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
    // A NaN seen while the row had nothing visible poisons it as one seen later does (l = NaN).
    int seen = int(nan_row[r]);
    seen |= __shfl_xor_sync(0xffffffffu, seen, 1);
    seen |= __shfl_xor_sync(0xffffffffu, seen, 2);
    const bool poisoned = lsum != lsum || seen != 0;
    const int row = r == 0 ? r0 : r1;
    const float qnan = __int_as_float(0x7fffffff);
    const float inv = poisoned ? qnan : (lsum > 0.f ? 1.f / lsum : 0.f);
    const float lse = poisoned ? qnan : (lsum > 0.f ? (m[r] + log2f(lsum)) * kLn2 : neg_inf<float>());
    if (row < a.Tq) {
      float* orow = O + int64_t(row) * a.so.t + 2 * t;
#pragma unroll
      for (int n = 0; n < NO; ++n)
        *reinterpret_cast<float2*>(orow + 8 * n) = make_float2(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
      if (t == 0) L[row] = lse;
    }
  }
}

template <int D, bool Split>
void launch_fwd_mma(const FlashArgs<float>& a) {
  const int64_t blocks = int64_t((a.Tq + kBM - 1) / kBM) * a.B * a.Hq;
  TT_CHECK(blocks <= 0x7fffffff, "flash attention (cuda): too many query tiles (", blocks, ")");
  constexpr int smem = MmaFwdTiles<D, Split>::kSmemBytes;
  TT_CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_mma<D, Split>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  launch(flash_fwd_mma<D, Split>, unsigned(blocks), kThreads, smem, a);
}

template <bool Split>
void dispatch_fwd(const FlashArgs<float>& a) {
  if (a.D == 32) launch_fwd_mma<32, Split>(a);
  if (a.D == 64) launch_fwd_mma<64, Split>(a);
  if (a.D == 128) launch_fwd_mma<128, Split>(a);
}

}  // namespace

bool tensor_core_kernel_fits(int device, int smem_bytes) {
  int major = 0, optin = 0;
  TT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return major >= 8 && smem_bytes <= optin;
}

bool mma_supported(const FlashArgs<float>& a, int device) {
  if (a.D != a.Dv || (a.D != 32 && a.D != 64 && a.D != 128)) return false;
  if (!aligned16(a.q, a.sq) || !aligned16(a.k, a.sk) || !aligned16(a.v, a.sv)) return false;
  return tensor_core_kernel_fits(device, 0);
}

namespace {
template <bool Split>
int fwd_smem_bytes(int D) {
  return D == 32 ? MmaFwdTiles<32, Split>::kSmemBytes
                 : D == 64 ? MmaFwdTiles<64, Split>::kSmemBytes : MmaFwdTiles<128, Split>::kSmemBytes;
}
}  // namespace

bool mma_forward(const FlashArgs<float>& a, int device, bool split) {
  if (!mma_supported(a, device)) return false;
  if (!aligned16(a.out, a.so)) return false;
  if (!tensor_core_kernel_fits(device, split ? fwd_smem_bytes<true>(a.D) : fwd_smem_bytes<false>(a.D))) return false;
  if (split)
    dispatch_fwd<true>(a);
  else
    dispatch_fwd<false>(a);
  return true;
}

}  // namespace tt::cuda::flash
