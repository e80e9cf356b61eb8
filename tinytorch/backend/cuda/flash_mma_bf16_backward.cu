// CUDA flash attention in bfloat16, backward (FlashAttention-2 on mma.sync m16n8k16, D = Dv in
// {32, 64, 128}): the Dvec kernel, the main kernel, the dQ rounding kernel, and flash_bf16::backward,
// the bf16 entry of CudaBackend::flash_attention_backward, with its float32 fallback.
//
// Note [bf16 flash attention backward on the GPU]: one block of 4 warps per (tile of 64 keys,
// key/value head, batch), the first key tiles (the longest causal work) first; warp w owns keys
// 16 w .. 16 w + 15 of the tile. K_j and V_j sit in shared memory for the whole block; the block
// walks the G query heads of its group and the query tiles (64 rows for D 32 and 64, 32 for D 128) that
// can see the key tile, each step's Q_i and dO_i in flight (cp.async, two swizzled stages) while
// the previous step computes:
//   S^T = K_j Q_i^T, dP^T = V_j dO_i^T                 [16, BM] per warp, float32 registers
//   P^T = exp2(S^T scale log2 e (+ bias log2 e) - lse_i log2 e)   (0 where lse = -inf), masks only
//         on the tiles that need them (bias, causal diagonal, key tail; query tails have lse -inf)
//   dS^T = P^T * (dP^T - Dvec_i) * scale
//   dV_j += P^T dO_i, dK_j += dS^T Q_i                 A operands straight from the registers of
//                                                      P^T and dS^T (rounded to bf16), dO_i and Q_i
//                                                      by ldmatrix.trans; dK_j, dV_j in float32
//                                                      registers all along, stored once (bf16)
//   dQ_i += dS K_j                                     dS^T through shared memory (bf16, rows
//                                                      padded by 16 bytes), ldmatrix.trans, and
//                                                      float32 atomicAdd into a [B, Hq, Tq, D]
//                                                      float32 buffer, rounded into dq at the end
// Why atomics for dQ: dQ_i sums over every key tile, which different blocks own. The other choice,
// a second kernel over query tiles, must rebuild S and dP there (2 of the 5 products again: 40%
// more tensor-core work, and K, V read once more), while the atomics cost one float add per element
// of dQ per key tile, resolved in L2 (FlashAttention-2 does the same). Their order varies from run
// to run: dq may differ in its last float32 bits between runs, before its rounding to bf16.
// Dvec = rowsum(dO * O) (float32, from the bf16 out) comes from a first kernel that also zeroes
// the dQ buffer. Shared memory: K, V 64 x D, 2 stages of Q, dO BM x D, dS^T 64 x (BM + 8), bf16:
// 33, 56, 68 KB (D 32, 64, 128).
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/flash_mma_bf16.cuh"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/mma_bf16.cuh"
#include "tinytorch/backend/cuda/scratch.cuh"

namespace tt::cuda::flash_bf16 {

namespace {

using namespace mma_bf16;

constexpr int kBwdThreads = 128;  // 4 warps
constexpr int kBwdBN = 64;        // keys per block

template <int D>
struct BwdTile {
  static constexpr int BM = D >= 128 ? 32 : 64;  // queries per step
  static constexpr int LDS = BM + 8;              // dS^T row stride (elements): 16 bytes of padding
  static constexpr int smem_bytes = int(sizeof(uint16_t)) * (2 * kBwdBN * D + 4 * BM * D + kBwdBN * LDS);
};

// out, dout [B, Hq, Tq, D] bf16 -> dvec [B, Hq, Tq] = rowsum(dout * out) in float32, and the rows
// of dq_accum [B, Hq, Tq, D] zeroed. A warp per row.
__global__ void flash_bwd_bf16_prep(Args a, float* dvec) {
  const int lane = threadIdx.x & 31;
  const int64_t rows = int64_t(a.B) * a.Hq * a.Tq;
  const int64_t gr = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (gr >= rows) return;
  const int i = int(gr % a.Tq), h = int(gr / a.Tq % a.Hq), b = int(gr / (int64_t(a.Tq) * a.Hq));
  const uint16_t* o = a.out + b * a.so.b + h * a.so.h + int64_t(i) * a.so.t;
  const uint16_t* g = a.dout + b * a.sdo.b + h * a.sdo.h + int64_t(i) * a.sdo.t;
  float s = 0.f;
  for (int d = lane; d < a.D; d += 32) s += bf16_bits_to_float(o[d]) * bf16_bits_to_float(g[d]);
  s = flash::warp_sum(s);
  if (lane == 0) dvec[gr] = s;
  float* acc = a.dq_accum + gr * a.D;
  for (int d = lane; d < a.D; d += 32) acc[d] = 0.f;
}

// dq_accum [B, Hq, Tq, D] float32 contiguous -> dq [B, Hq, Tq, D] bf16 (any strides, last 1).
__global__ void flash_bwd_bf16_dq(const float* acc, uint16_t* dq, Strides3 sdq, int Hq, int Tq, int D,
                                  int64_t n) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  const int d = int(idx % D);
  const int64_t row = idx / D;
  const int i = int(row % Tq), h = int(row / Tq % Hq);
  const int64_t b = row / (int64_t(Tq) * Hq);
  const __nv_bfloat16 x = __float2bfloat16_rn(acc[idx]);
  dq[b * sdq.b + h * sdq.h + int64_t(i) * sdq.t + d] = *reinterpret_cast<const uint16_t*>(&x);
}

// q, k, v, dout: bf16 chunk-aligned; lse, dvec float32 -> dk, dv (stored, bf16), dq_accum (+=).
// Lane l = 4 g + t of warp w: key rows 16 w + g and + 8 of S^T, dP^T, dK, dV; S^T columns
// (queries) 8 n + 2 t, + 1; dK, dV columns (dims) 8 n + 2 t, + 1.
template <int D>
__global__ void __launch_bounds__(kBwdThreads) flash_bwd_bf16(Args a) {
  constexpr int BN = kBwdBN, BM = BwdTile<D>::BM, LDS = BwdTile<D>::LDS, NQ = BM / 8, ND = D / 8;
  constexpr int RG = BM / 16, DSPLIT = 4 / RG, DW = D / DSPLIT;  // dQ: row groups x dim splits of warps
  extern __shared__ __align__(128) unsigned char smem_raw[];
  uint16_t* Ks = reinterpret_cast<uint16_t*>(smem_raw);  // [BN][D]
  uint16_t* Vs = Ks + BN * D;                            // [BN][D]
  uint16_t* Qs = Vs + BN * D;                            // [2][BM][D]
  uint16_t* dOs = Qs + 2 * BM * D;                       // [2][BM][D]
  uint16_t* dSs = dOs + 2 * BM * D;                      // [BN][LDS]  dS^T
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int mi = lane >> 3, mr = lane & 7;
  const int Hkv = a.Hq / a.G;
  const int64_t nbk = int64_t(a.B) * Hkv;
  const int jt = int(blockIdx.x / nbk), bk = int(blockIdx.x % nbk);
  const int b = bk / Hkv, hk = bk % Hkv, j0 = jt * BN;
  const uint16_t* K = a.k + b * a.sk.b + hk * a.sk.h;
  const uint16_t* V = a.v + b * a.sv.b + hk * a.sv.h;
  load_tile<BN, D, kBwdThreads>(Ks, K, a.sk.t, j0, a.Tk);
  load_tile<BN, D, kBwdThreads>(Vs, V, a.sv.t, j0, a.Tk);
  // Steps: (query head g of the group, query tile from first_i); causal: the first tile that
  // holds a row >= j0.
  const int first_i = a.causal ? (j0 / BM) * BM : 0;
  const int per_head = first_i < a.Tq ? (a.Tq - first_i + BM - 1) / BM : 0;
  const int steps = per_head * a.G;
  auto load_step = [&](int step, int stage) {
    const int h = hk * a.G + step / per_head, i0 = first_i + (step % per_head) * BM;
    load_tile<BM, D, kBwdThreads>(Qs + stage * BM * D, a.q + b * a.sq.b + h * a.sq.h, a.sq.t, i0, a.Tq);
    load_tile<BM, D, kBwdThreads>(dOs + stage * BM * D, a.dout + b * a.sdo.b + h * a.sdo.h, a.sdo.t, i0, a.Tq);
  };
  if (steps > 0) load_step(0, 0);
  cp_async_commit();

  const int wrow = warp * 16;
  const int key0 = j0 + wrow + g;  // this lane's keys: key0 and key0 + 8
  float dk[ND][4], dv[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[n][e] = dv[n][e] = 0.f;

  for (int step = 0; step < steps; ++step) {
    const int st = step & 1;
    const int h = hk * a.G + step / per_head, i0 = first_i + (step % per_head) * BM;
    cp_async_wait<0>();
    __syncthreads();  // this step's Q, dO (and K, V) landed; every warp is done with the last step
    if (step + 1 < steps) {
      load_step(step + 1, st ^ 1);
      cp_async_commit();
    }
    const uint16_t* Qt = Qs + st * BM * D;
    const uint16_t* dOt = dOs + st * BM * D;
    const int64_t row0 = (int64_t(b) * a.Hq + h) * a.Tq;  // this head's rows in lse and dvec

    // S^T = K Q^T and dP^T = V dO^T, [16, BM] per warp
    float sp[NQ][4], dp[NQ][4];
#pragma unroll
    for (int n = 0; n < NQ; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) sp[n][e] = dp[n][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t ka[4], va[4];
      ldmatrix_x4(ka, Ks + swz<D>(wrow + (lane & 15), kk * 16 + (lane >> 4) * 8));
      ldmatrix_x4(va, Vs + swz<D>(wrow + (lane & 15), kk * 16 + (lane >> 4) * 8));
#pragma unroll
      for (int n2 = 0; n2 < BM / 16; ++n2) {
        uint32_t qb[4], ob[4];  // b0, b1 of query blocks 2 n2 and 2 n2 + 1
        const int off = swz<D>(n2 * 16 + (mi >> 1) * 8 + mr, kk * 16 + (mi & 1) * 8);
        ldmatrix_x4(qb, Qt + off);
        ldmatrix_x4(ob, dOt + off);
        mma_bf16_16816(sp[2 * n2], ka, qb[0], qb[1]);
        mma_bf16_16816(sp[2 * n2 + 1], ka, qb[2], qb[3]);
        mma_bf16_16816(dp[2 * n2], va, ob[0], ob[1]);
        mma_bf16_16816(dp[2 * n2 + 1], va, ob[2], ob[3]);
      }
    }

    // P^T and dS^T in place (sp, dp)
    const bool masked = a.bias != nullptr || j0 + BN > a.Tk || (a.causal && j0 + wrow + 15 > i0);
    const uint16_t* bias = a.bias == nullptr ? nullptr : a.bias + b * a.bias_b + h * a.bias_h;
#pragma unroll
    for (int n = 0; n < NQ; ++n)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int qi = i0 + n * 8 + 2 * t + c;
        const bool in = qi < a.Tq;
        const float lse = in ? a.lse[row0 + qi] : flash::neg_inf<float>();
        const float Di = in ? a.dvec[row0 + qi] : 0.f;
        const float L2 = lse * kLog2e;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int e = 2 * r + c, key = key0 + 8 * r;
          float x = sp[n][e] * a.scale_log2;
          if (masked) {
            if (!in || key >= a.Tk || (a.causal && key > qi))
              x = flash::neg_inf<float>();
            else if (bias != nullptr)
              x += bf16_bits_to_float(bias[qi * a.bias_i + key * a.bias_j]) * kLog2e;
          }
          const float p = lse == flash::neg_inf<float>() ? 0.f : fast_exp2(x - L2);
          sp[n][e] = p;
          dp[n][e] = p * (dp[n][e] - Di) * a.scale;
        }
      }

    // dV += P^T dO, dK += dS^T Q: A operands from registers, k steps over the step's queries
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      const uint32_t pa[4] = {pack_bf16(sp[2 * kk][0], sp[2 * kk][1]), pack_bf16(sp[2 * kk][2], sp[2 * kk][3]),
                              pack_bf16(sp[2 * kk + 1][0], sp[2 * kk + 1][1]),
                              pack_bf16(sp[2 * kk + 1][2], sp[2 * kk + 1][3])};
      const uint32_t da[4] = {pack_bf16(dp[2 * kk][0], dp[2 * kk][1]), pack_bf16(dp[2 * kk][2], dp[2 * kk][3]),
                              pack_bf16(dp[2 * kk + 1][0], dp[2 * kk + 1][1]),
                              pack_bf16(dp[2 * kk + 1][2], dp[2 * kk + 1][3])};
#pragma unroll
      for (int d2 = 0; d2 < D / 16; ++d2) {
        uint32_t ob[4], qb[4];  // b0, b1 of dim blocks 2 d2 and 2 d2 + 1
        const int off = swz<D>(kk * 16 + (mi & 1) * 8 + mr, d2 * 16 + (mi >> 1) * 8);
        ldmatrix_x4_trans(ob, dOt + off);
        ldmatrix_x4_trans(qb, Qt + off);
        mma_bf16_16816(dv[2 * d2], pa, ob[0], ob[1]);
        mma_bf16_16816(dv[2 * d2 + 1], pa, ob[2], ob[3]);
        mma_bf16_16816(dk[2 * d2], da, qb[0], qb[1]);
        mma_bf16_16816(dk[2 * d2 + 1], da, qb[2], qb[3]);
      }
    }

    // dS^T -> shared memory (bf16) for dQ
#pragma unroll
    for (int n = 0; n < NQ; ++n)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        *reinterpret_cast<uint32_t*>(dSs + (wrow + g + 8 * r) * LDS + n * 8 + 2 * t) =
            pack_bf16(dp[n][2 * r], dp[n][2 * r + 1]);
    __syncthreads();

    // dQ_i += dS K_j: warp (rg, ds) computes query rows 16 rg .. + 15, dims DW ds .. + DW - 1
    {
      const int rg = warp % RG, dsplit = warp / RG;
      float dq[DW / 8][4];
#pragma unroll
      for (int n = 0; n < DW / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) dq[n][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        uint32_t sa[4];  // A = dS [queries][keys], read transposed from dS^T
        ldmatrix_x4_trans(sa, dSs + (kk * 16 + (mi >> 1) * 8 + mr) * LDS + rg * 16 + (mi & 1) * 8);
#pragma unroll
        for (int d2 = 0; d2 < DW / 16; ++d2) {
          uint32_t kb[4];
          ldmatrix_x4_trans(kb, Ks + swz<D>(kk * 16 + (mi & 1) * 8 + mr, dsplit * DW + d2 * 16 + (mi >> 1) * 8));
          mma_bf16_16816(dq[2 * d2], sa, kb[0], kb[1]);
          mma_bf16_16816(dq[2 * d2 + 1], sa, kb[2], kb[3]);
        }
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int qi = i0 + rg * 16 + g + 8 * r;
        if (qi >= a.Tq) continue;
        float* acc = a.dq_accum + (row0 + qi) * D + dsplit * DW + 2 * t;
#pragma unroll
        for (int n = 0; n < DW / 8; ++n) {
          atomicAdd(acc + n * 8, dq[n][2 * r]);
          atomicAdd(acc + n * 8 + 1, dq[n][2 * r + 1]);
        }
      }
    }
  }
  cp_async_wait<0>();  // nothing left in flight (a block with no step still loaded K and V)

  uint16_t* dK = a.dk + b * a.sdk.b + hk * a.sdk.h;
  uint16_t* dV = a.dv + b * a.sdv.b + hk * a.sdv.h;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = key0 + 8 * r;
    if (key >= a.Tk) continue;
    uint16_t* krow = dK + int64_t(key) * a.sdk.t + 2 * t;
    uint16_t* vrow = dV + int64_t(key) * a.sdv.t + 2 * t;
#pragma unroll
    for (int n = 0; n < ND; ++n) {
      *reinterpret_cast<uint32_t*>(krow + n * 8) = pack_bf16(dk[n][2 * r], dk[n][2 * r + 1]);
      *reinterpret_cast<uint32_t*>(vrow + n * 8) = pack_bf16(dv[n][2 * r], dv[n][2 * r + 1]);
    }
  }
}

template <int D>
void launch_bwd(const Args& a) {
  const int64_t blocks = int64_t((a.Tk + kBwdBN - 1) / kBwdBN) * a.B * (a.Hq / a.G);
  TT_CHECK(blocks <= 0x7fffffff, "flash attention backward bf16 (cuda): too many key tiles (", blocks, ")");
  constexpr int smem = BwdTile<D>::smem_bytes;
  TT_CUDA_CHECK(cudaFuncSetAttribute(flash_bwd_bf16<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  launch(flash_bwd_bf16<D>, unsigned(blocks), kBwdThreads, smem, a);
}

}  // namespace

void backward(Backend& be, const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
              const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
              const Tensor& bias, const AttentionArgs& args) {
  TT_CHECK_DTYPE(lse.dtype() == kFloat32, "flash attention backward (cuda): a bf16 call keeps lse in float32, got ",
                 lse.dtype());
  const int64_t D = q.size(3);
  const int smem = D == 32 ? BwdTile<32>::smem_bytes : D == 64 ? BwdTile<64>::smem_bytes : BwdTile<128>::smem_bytes;
  if (head_dim_supported(D, v.size(3)) && chunk_aligned(q) && chunk_aligned(k) && chunk_aligned(v) &&
      chunk_aligned(dout) && chunk_aligned(dk) && chunk_aligned(dv) &&
      flash::tensor_core_kernel_fits(q.device().index, smem)) {
    Args a = make_args(q, k, v, bias, args);
    a.out = mutable_bits_of(out);
    a.so = flash::strides_of(out);
    a.lse = lse.data_ptr<float>();
    a.dout = bits_of(dout);
    a.sdo = flash::strides_of(dout);
    a.dk = mutable_bits_of(dk);
    a.sdk = flash::strides_of(dk);
    a.dv = mutable_bits_of(dv);
    a.sdv = flash::strides_of(dv);
    const int64_t rows = int64_t(a.B) * a.Hq * a.Tq, n = rows * a.D;
    const int device = q.device().index;
    const Scratch<float> dvec(rows, device), dq_accum(n, device);
    a.dvec = dvec.data();
    a.dq_accum = dq_accum.data();
    const int64_t row_blocks = (rows + 3) / 4;  // a warp per row, 4 per block
    TT_CHECK(row_blocks <= 0x7fffffff, "flash attention backward bf16 (cuda): too many rows (", rows, ")");
    launch(flash_bwd_bf16_prep, unsigned(row_blocks), 128, 0, a, dvec.data());
    if (a.D == 32) launch_bwd<32>(a);
    if (a.D == 64) launch_bwd<64>(a);
    if (a.D == 128) launch_bwd<128>(a);
    const int64_t dq_blocks = (n + 255) / 256;
    TT_CHECK(dq_blocks <= 0x7fffffff, "flash attention backward bf16 (cuda): dq too large (", n, ")");
    launch(flash_bwd_bf16_dq, unsigned(dq_blocks), 256, 0, dq_accum.data(), mutable_bits_of(dq),
           flash::strides_of(dq), a.Hq, a.Tq, a.D, n);
    return;
  }
  // The fallback: the float32 kernels on float32 copies (gradients zeroed, as the caller's), each
  // gradient rounded to bf16 once.
  Tensor g32[3] = {float32_like(dq), float32_like(dk), float32_like(dv)};
  for (const Tensor& g : g32) be.fill(g, 0);
  be.flash_attention_backward(g32[0], g32[1], g32[2], widened(be, dout), widened(be, q), widened(be, k),
                              widened(be, v), widened(be, out), lse, widened(be, bias), args);
  be.copy(dq, g32[0]);
  be.copy(dk, g32[1]);
  be.copy(dv, g32[2]);
}

}  // namespace tt::cuda::flash_bf16
