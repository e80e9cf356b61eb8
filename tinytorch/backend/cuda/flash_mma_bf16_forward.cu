// CUDA flash attention in bfloat16, forward: the tensor-core kernel (mma.sync m16n8k16, D = Dv in
// {32, 64, 128}) and flash_bf16::forward, the bf16 entry of CudaBackend::flash_attention_forward,
// with its float32 fallback for every other call. Twin: the CPU's bf16 path (Bf16Compute over
// cpu/flash_attention.cpp: float32 inside, one rounding of out).
//
// Note [bf16 flash attention on the GPU]: FlashAttention-2's forward on bf16 tensor cores. One
// block of 8 warps per (tile of 128 queries, head, batch), the last query tile first (the longest
// causal rows start first); warp w owns query rows 16 w .. 16 w + 15 of the tile.
//   Q [128, D] is copied once into shared memory; K and V tiles [64, D] stream through two shared
//   stages with 16-byte cp.async, the next tile in flight while this one is used. Shared rows
//   (32, 64 or 128 bf16) are XOR-swizzled by 16-byte chunk (mma_bf16.cuh) so that ldmatrix reads
//   them without bank conflicts.
//   S = Q K^T: per warp [16, 64] in float32 registers (8 accumulator blocks of m16n8k16),
//   Q and K fragments by ldmatrix. Scores go to the log2 domain, s2 = S * scale * log2(e)
//   (+ bias * log2(e)), so the softmax is exp2 (one MUFU.EX2 per score, ex2.approx.ftz).
//   Masks (causal, key tail, bias) are applied only on tiles that need them: every tile when a
//   bias is given, else the diagonal tiles (causal) and the last key tile when Tk % 64 != 0.
//   Online softmax per row in float32: the 4 lanes of a quad share a row (row max by 2 shuffles),
//   m' = max(m, rowmax s2), alpha = exp2(m - m'), P = exp2(s2 - m'), l = alpha l + rowsum P.
//   O += P V: P is rounded to bf16 and repacked in registers as the A operand (Note
//   [m16n8k16 fragments]), V fragments by ldmatrix.trans; O [16, D] stays in float32 registers.
//   out = O / l rounded once to bf16; lse = (m + log2 l) ln 2 in float32 (the backward needs
//   it to float32 accuracy: a bf16 lse would be off by up to |lse| 2^-9, every P with it).
// Rows with nothing visible keep m = -inf: out 0, lse -inf; a NaN score makes its row NaN.
// Shared memory per block: Q 128 x D + 2 stages x (K, V) 64 x D bf16 = 24, 48, 96 KB
// (D 32, 64, 128).
// tools/flash_mma_bf16_model.py replays both kernels' fragment indexing in Python against a direct
// computation (no GPU needed). Accuracy: the products are exact in float32 (bf16 x bf16), summed
// in float32; P's rounding to bf16 (relative 2^-8 per weight, as FlashAttention-2 and PyTorch do)
// and out's rounding dominate (bounds: Note [bf16 kernel error bounds] in the [cuda] test).
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/flash_mma_bf16.cuh"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/mma_bf16.cuh"

namespace tt::cuda::flash_bf16 {

namespace {

using namespace mma_bf16;

constexpr int kFwdThreads = 256;  // 8 warps
constexpr int kFwdBM = 128;       // query rows per block
constexpr int kFwdBN = 64;        // keys per tile

// q, k, v: [B, H*, T*, D] bf16, chunk-aligned -> out [B, Hq, Tq, D] bf16, lse [B, Hq, Tq] float32.
// Lane l = 4 g + t of warp w holds rows 16 w + g and + 8 of the tile: S columns 8 n + 2 t, + 1
// of each 8-key block n, O columns 8 n + 2 t, + 1 of each 8-dim block n.
template <int D>
__global__ void __launch_bounds__(kFwdThreads) flash_fwd_bf16(Args a) {
  constexpr int BM = kFwdBM, BN = kFwdBN, NS = BN / 8, ND = D / 8;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  uint16_t* Qs = reinterpret_cast<uint16_t*>(smem_raw);  // [BM][D]
  uint16_t* Ks = Qs + BM * D;                            // [2][BN][D]
  uint16_t* Vs = Ks + 2 * BN * D;                        // [2][BN][D]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int mi = lane >> 3, mr = lane & 7;  // ldmatrix: which matrix this lane addresses, which row
  const int q_tiles = (a.Tq + BM - 1) / BM;
  const int64_t nbh = int64_t(a.B) * a.Hq;
  const int bh = int(blockIdx.x % nbh), b = bh / a.Hq, h = bh % a.Hq;
  const int i0 = (q_tiles - 1 - int(blockIdx.x / nbh)) * BM, hk = h / a.G;
  const uint16_t* Q = a.q + b * a.sq.b + h * a.sq.h;
  const uint16_t* K = a.k + b * a.sk.b + hk * a.sk.h;
  const uint16_t* V = a.v + b * a.sv.b + hk * a.sv.h;
  const int kend = int(flash::visible_keys(a.causal, a.Tk, int64_t(i0) + BM));
  const int n_tiles = (kend + BN - 1) / BN;
  load_tile<BM, D, kFwdThreads>(Qs, Q, a.sq.t, i0, a.Tq);
  load_tile<BN, D, kFwdThreads>(Ks, K, a.sk.t, 0, a.Tk);
  load_tile<BN, D, kFwdThreads>(Vs, V, a.sv.t, 0, a.Tk);
  cp_async_commit();

  const int wrow = warp * 16;
  const int row0 = i0 + wrow + g;  // this lane's rows: row0 and row0 + 8
  float o[ND][4], m[2], l[2];
#pragma unroll
  for (int n = 0; n < ND; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.f;
  m[0] = m[1] = flash::neg_inf<float>();
  l[0] = l[1] = 0.f;
  const uint16_t* bias = a.bias == nullptr ? nullptr : a.bias + b * a.bias_b + h * a.bias_h;

  for (int it = 0; it < n_tiles; ++it) {
    const int j0 = it * BN, st = it & 1;
    if (it + 1 < n_tiles) {  // the next K, V tile into the other stage, in flight meanwhile
      load_tile<BN, D, kFwdThreads>(Ks + (st ^ 1) * BN * D, K, a.sk.t, j0 + BN, a.Tk);
      load_tile<BN, D, kFwdThreads>(Vs + (st ^ 1) * BN * D, V, a.sv.t, j0 + BN, a.Tk);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // this tile (and Q) landed for every thread
    const uint16_t* Kt = Ks + st * BN * D;
    const uint16_t* Vt = Vs + st * BN * D;

    // S = Q K^T, [16, BN] per warp
    float s[NS][4];
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t qa[4];
      ldmatrix_x4(qa, Qs + swz<D>(wrow + (lane & 15), kk * 16 + (lane >> 4) * 8));
#pragma unroll
      for (int n2 = 0; n2 < BN / 16; ++n2) {
        uint32_t kb[4];  // b0, b1 of key blocks 2 n2 and 2 n2 + 1
        ldmatrix_x4(kb, Kt + swz<D>(n2 * 16 + (mi >> 1) * 8 + mr, kk * 16 + (mi & 1) * 8));
        mma_bf16_16816(s[2 * n2], qa, kb[0], kb[1]);
        mma_bf16_16816(s[2 * n2 + 1], qa, kb[2], kb[3]);
      }
    }

    // to the log2 domain; masks on the tiles that need them
    const bool masked = bias != nullptr || j0 + BN > a.Tk || (a.causal && j0 + BN - 1 > i0 + wrow);
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[n][e] * a.scale_log2;
        if (masked) {
          const int row = row0 + (e >> 1) * 8, col = j0 + n * 8 + 2 * t + (e & 1);
          if (row >= a.Tq || col >= a.Tk || (a.causal && col > row))
            x = flash::neg_inf<float>();
          else if (bias != nullptr)
            x += bf16_bits_to_float(bias[row * a.bias_i + col * a.bias_j]) * kLog2e;
        }
        s[n][e] = x;
      }

    // online softmax, rows row0 (e = 0, 1) and row0 + 8 (e = 2, 3)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = m[r];
#pragma unroll
      for (int n = 0; n < NS; ++n) mx = flash::max_skip_nan(flash::max_skip_nan(mx, s[n][2 * r]), s[n][2 * r + 1]);
      mx = flash::max_skip_nan(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = flash::max_skip_nan(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      if (mx == flash::neg_inf<float>()) {  // nothing visible yet: P = 0 (a NaN score makes l NaN)
        bool nan = false;
#pragma unroll
        for (int n = 0; n < NS; ++n) {
          nan = nan || s[n][2 * r] != s[n][2 * r] || s[n][2 * r + 1] != s[n][2 * r + 1];
          s[n][2 * r] = s[n][2 * r + 1] = 0.f;
        }
        if (nan) l[r] = __int_as_float(0x7fc00000);
        continue;
      }
      const float alpha = fast_exp2(m[r] - mx);  // 0 while m was -inf
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < NS; ++n) {
        s[n][2 * r] = fast_exp2(s[n][2 * r] - mx);
        s[n][2 * r + 1] = fast_exp2(s[n][2 * r + 1] - mx);
        sum += s[n][2 * r] + s[n][2 * r + 1];
      }
      l[r] = l[r] * alpha + sum;  // this lane's share; the quad's shares are added at the end
      m[r] = mx;
#pragma unroll
      for (int n = 0; n < ND; ++n) {
        o[n][2 * r] *= alpha;
        o[n][2 * r + 1] *= alpha;
      }
    }

    // O += P V, P from registers
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      const uint32_t pa[4] = {pack_bf16(s[2 * kk][0], s[2 * kk][1]), pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                              pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int d2 = 0; d2 < D / 16; ++d2) {
        uint32_t vb[4];  // b0, b1 of dim blocks 2 d2 and 2 d2 + 1
        ldmatrix_x4_trans(vb, Vt + swz<D>(kk * 16 + (mi & 1) * 8 + mr, d2 * 16 + (mi >> 1) * 8));
        mma_bf16_16816(o[2 * d2], pa, vb[0], vb[1]);
        mma_bf16_16816(o[2 * d2 + 1], pa, vb[2], vb[3]);
      }
    }
    __syncthreads();  // every warp is done with this stage before it is refilled
  }
  cp_async_wait<0>();  // nothing left in flight (n_tiles == 0 still loaded Q and a K/V tile)

  uint16_t* O = a.out + b * a.so.b + h * a.so.h;
  float* L = a.lse + (int64_t(b) * a.Hq + h) * a.Tq;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float lsum = l[r];
    lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
    lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
    const bool nan = lsum != lsum;
    const float inv = lsum > 0.f ? 1.f / lsum : (nan ? lsum : 0.f);
    const float lse = lsum > 0.f ? (m[r] + log2f(lsum)) * kLn2 : (nan ? lsum : flash::neg_inf<float>());
    const int row = row0 + r * 8;
    if (row < a.Tq) {
      uint16_t* orow = O + int64_t(row) * a.so.t + 2 * t;
#pragma unroll
      for (int n = 0; n < ND; ++n)
        *reinterpret_cast<uint32_t*>(orow + n * 8) = pack_bf16(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
      if (t == 0) L[row] = lse;
    }
  }
}

template <int D>
void launch_fwd(const Args& a) {
  const int64_t q_tiles = (a.Tq + kFwdBM - 1) / kFwdBM;
  const int64_t blocks = q_tiles * a.B * a.Hq;
  TT_CHECK(blocks <= 0x7fffffff, "flash attention bf16 (cuda): too many query tiles (", blocks, ")");
  const int smem = int(sizeof(uint16_t)) * (kFwdBM * D + 4 * kFwdBN * D);
  TT_CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_bf16<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  launch(flash_fwd_bf16<D>, unsigned(blocks), kFwdThreads, smem, a);
}

}  // namespace

void forward(Backend& be, const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
             const Tensor& bias, const AttentionArgs& args) {
  TT_CHECK_DTYPE(lse.dtype() == kFloat32, "flash attention (cuda): a bf16 call keeps lse in float32, got ",
                 lse.dtype());
  const int64_t D = q.size(3);
  const int smem = int(sizeof(uint16_t) * (kFwdBM * D + 4 * kFwdBN * D));
  if (head_dim_supported(D, v.size(3)) && chunk_aligned(q) && chunk_aligned(k) && chunk_aligned(v) &&
      chunk_aligned(out) && flash::tensor_core_kernel_fits(q.device().index, smem)) {
    Args a = make_args(q, k, v, bias, args);
    a.out = mutable_bits_of(out);
    a.so = flash::strides_of(out);
    a.lse = lse.data_ptr<float>();
    if (a.D == 32) launch_fwd<32>(a);
    if (a.D == 64) launch_fwd<64>(a);
    if (a.D == 128) launch_fwd<128>(a);
    return;
  }
  // The fallback: the float32 kernels on float32 copies, out rounded to bf16 once.
  const Tensor out32 = float32_like(out);
  be.flash_attention_forward(out32, lse, widened(be, q), widened(be, k), widened(be, v), widened(be, bias), args);
  be.copy(out, out32);
}

}  // namespace tt::cuda::flash_bf16
