// gemm_bf16.cpp: the bfloat16 GEMM (Note [bf16 GEMM] in gemm_bf16.h): AVX512_BF16 packing, the
// micro-kernel and its cache-blocked OpenMP driver; the float32 fallback through cblas_sgemm.
#include "tinytorch/backend/cpu/gemm_bf16.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#define TT_BF16_X86 1
#endif

#include "tinytorch/backend/cpu/cpu_features.h"
#include "tinytorch/backend/cpu/loop.h"
#include "tinytorch/backend/cpu/scratch.h"
#include "tinytorch/backend/threads.h"

namespace tt::cpu {

namespace {

// Below this many multiply-adds a GEMM runs on the calling thread: waking a second one costs more.
constexpr int64_t kSerialWork = int64_t(1) << 20;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// c [M, N], row stride ldc: c = beta * c; beta == 0 writes zeros without reading c.
template <typename OutT>
void scale_c(OutT* c, int64_t M, int64_t N, int64_t ldc, double beta) {
  if (beta == 1.0) return;
  const float fb = float(beta);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) c[i * ldc + j] = beta == 0.0 ? OutT(0.0f) : OutT(fb * float(c[i * ldc + j]));
}

// ---------------------------------------------------------------------------------------------
// The AVX512_BF16 path.
//
// Note [bf16 GEMM blocking]: a is packed into panels of kMR rows and b into panels of kNR
// columns, each over all of K as k-pairs: lane r of pair p holds (x[r, 2p], x[r, 2p+1]) as two
// bf16 in one 32-bit word (low half the even k), the odd K's last pair padded with a zero, rows
// and columns past M and N padded with zeros. B is packed once per call, all of it (in
// parallel, about the size of b), as every block of rows reads all of it; A one k-slice of one
// block's rows at a time, by the thread that then reads it from L2:
//   for each block of c (up to kMCPanels x kNCPanels panels, one OpenMP task):
//     for each kKC slice of K:                     c += that slice's product
//       pack the block's rows of a, this slice     (at most 60 KiB: stays in L2)
//       for each B panel of the block:             its kKC x kNR slice (16 KiB) stays in L1
//         for each A panel of the block:
//           micro_kernel: kMR x kNR tile, 2 * kMR zmm accumulators
// The 12 x 32 kernel issues 24 vdpbf16ps per k-pair against 2 loads of b and 12 broadcasts of
// a; Zen 4 retires about one 512-bit vdpbf16ps a cycle with a latency of about 6, so 24
// independent accumulators keep it busy. On the 2-core Zen 4 it was tuned on, 14 x 32 (28
// accumulators), 8 x 48 and kKC = 384 or 512 measured no better than 12 x 32 with kKC = 256 (within
// that shared machine's noise; one thread reached ~190 GFLOP/s, sgemm ~95-100).
// Every element's sum runs over the kKC slices in order and within each slice in k order,
// whatever the thread count and the block grid: the bits do not depend on threads.
#ifdef TT_BF16_X86

#define TT_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// GCC 12's AVX-512 headers initialise _mm512_undefined_epi32() from itself, which
// -Wmaybe-uninitialized (at -O2 and above) and -Wuninitialized (at -O1, as in the sanitizer
// builds) report at every inlined use (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

constexpr int kMR = 12;            // rows of a micro-tile
constexpr int kNV = 2;             // zmm vectors (of 16 floats) across a micro-tile
constexpr int kNR = 16 * kNV;      // columns of a micro-tile
constexpr int64_t kKC = 256;       // k per slice (even: a slice starts on a pair)
constexpr int64_t kMCPanels = 10;  // A panels per block (120 rows)
constexpr int64_t kNCPanels = 64;  // B panels per block (2048 columns)
constexpr int64_t kMinSplitPanels = 4;  // the grid splits rows down to blocks of this many A panels

enum StoreMode : int { kOverwrite = 0, kAdd = 1, kBeta = 2 };

// r[16] rows of 16 words -> r[j] holds word j of every row (a 16 x 16 transpose of 32-bit words:
// pairs within 128-bit lanes, then the 4 x 4 grid of lanes).
TT_BF16_TARGET inline void transpose16x16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {  // t[2i], t[2i+1], lane L: rows 2i, 2i+1 interleaved, words 4L..4L+1 / 4L+2..4L+3
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int g = 0; g < 4; ++g) {  // u[4g + m], lane L: word 4L + m of rows 4g..4g+3
    u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int m = 0; m < 4; ++m) {  // r[4L + m], lane g = lane L of u[4g + m]
    const __m512i v0 = _mm512_shuffle_i32x4(u[m], u[4 + m], 0x44);
    const __m512i v1 = _mm512_shuffle_i32x4(u[m], u[4 + m], 0xee);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0x44);
    const __m512i v3 = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0xee);
    r[m] = _mm512_shuffle_i32x4(v0, v2, 0x88);
    r[4 + m] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
    r[8 + m] = _mm512_shuffle_i32x4(v1, v3, 0x88);
    r[12 + m] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
  }
}

// The first (full / 16) * 16 k-pairs of a full panel whose lanes' k-pairs are adjacent words
// (s_k == 1, the row-major a or the transposed b): 16 x 16 word transposes. Returns the pairs done.
template <int W>
TT_BF16_TARGET int64_t pack_pairs_transposed(const uint16_t* src, int64_t s_w, int64_t full, uint32_t* dst) {
  int64_t p = 0;
  for (; p + 16 <= full; p += 16) {
    for (int g = 0; g < W; g += 16) {
      const int lanes = W - g < 16 ? W - g : 16;
      __m512i r[16];
      for (int i = 0; i < 16; ++i)
        r[i] = i < lanes ? _mm512_loadu_si512(src + (g + i) * s_w + 2 * p) : _mm512_setzero_si512();
      transpose16x16(r);
      const __mmask16 m = lanes == 16 ? __mmask16(0xffff) : __mmask16((1u << lanes) - 1);
      for (int j = 0; j < 16; ++j) _mm512_mask_storeu_epi32(dst + (p + j) * W + g, m, r[j]);
    }
  }
  return p;
}

// The first `full` k-pairs of a full panel whose lanes are adjacent (s_w == 1: the transposed a
// or the row-major b): lane r of pair p = k-row 2p's element r | k-row 2p+1's element r << 16.
template <int W>
TT_BF16_TARGET void pack_pairs_interleaved(const uint16_t* src, int64_t s_k, int64_t full, uint32_t* dst) {
  for (int64_t p = 0; p < full; ++p) {
    const uint16_t* r0 = src + 2 * p * s_k;
    const uint16_t* r1 = r0 + s_k;
    for (int g = 0; g < W; g += 16) {
      const int lanes = W - g < 16 ? W - g : 16;
      const __mmask16 m = lanes == 16 ? __mmask16(0xffff) : __mmask16((1u << lanes) - 1);
      const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r0 + g));
      const __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r1 + g));
      _mm512_mask_storeu_epi32(dst + p * W + g, m, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }
}

// dst [ceil(K/2), W] words <- a panel of w <= W lanes: lane r, k-pair p holds src[r*s_w + 2p*s_k]
// (low half) and src[r*s_w + (2p+1)*s_k] (high half); lanes >= w and the odd K's last half are 0.
template <int W>
TT_BF16_TARGET void pack_panel(const uint16_t* src, int64_t s_w, int64_t s_k, int w, int64_t K, uint32_t* dst) {
  const int64_t full = K / 2;
  if (s_k == 1) {  // each lane's k-pairs are adjacent 32-bit words
    const int64_t done = w == W ? pack_pairs_transposed<W>(src, s_w, full, dst) : 0;
    for (int r = 0; r < w; ++r) {
      const uint16_t* row = src + r * s_w;
      uint32_t* d = dst + r;
      for (int64_t p = done; p < full; ++p) {
        uint32_t v;
        std::memcpy(&v, row + 2 * p, sizeof v);
        d[p * W] = v;
      }
    }
  } else if (s_w == 1 && w == W) {  // lanes contiguous: interleave two k-rows
    pack_pairs_interleaved<W>(src, s_k, full, dst);
  } else {
    for (int64_t p = 0; p < full; ++p) {
      const uint16_t* r0 = src + 2 * p * s_k;
      const uint16_t* r1 = r0 + s_k;
      uint32_t* d = dst + p * W;
      for (int r = 0; r < w; ++r) d[r] = uint32_t(r0[r * s_w]) | (uint32_t(r1[r * s_w]) << 16);
    }
  }
  if (w < W)
    for (int64_t p = 0; p < full; ++p)
      for (int r = w; r < W; ++r) dst[p * W + r] = 0;
  if (K % 2) {
    uint32_t* d = dst + full * W;
    const uint16_t* last = src + (K - 1) * s_k;
    for (int r = 0; r < W; ++r) d[r] = r < w ? uint32_t(last[r * s_w]) : 0u;
  }
}

// 16 floats -> 16 bf16, round to nearest even, NaN kept quiet: BFloat16::round_to_bits in SIMD.
TT_BF16_TARGET inline __m256i round_to_bf16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(r);
}

// Stores 16 (masked) results x at p: kOverwrite p = x, kAdd p += x, kBeta p = beta * p + x.
// Masked-off lanes, and p itself under kOverwrite, are never read.
TT_BF16_TARGET inline void store16(float* p, __m512 x, __mmask16 m, int mode, __m512 vbeta) {
  if (mode == kAdd) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, p));
  else if (mode == kBeta) x = _mm512_fmadd_ps(vbeta, _mm512_maskz_loadu_ps(m, p), x);
  _mm512_mask_storeu_ps(p, m, x);
}
TT_BF16_TARGET inline void store16(BFloat16* p, __m512 x, __mmask16 m, int mode, __m512 vbeta) {
  if (mode != kOverwrite) {
    const __m256i old16 = _mm256_maskz_loadu_epi16(m, p);
    const __m512 old = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(old16), 16));
    x = mode == kAdd ? _mm512_add_ps(x, old) : _mm512_fmadd_ps(vbeta, old, x);
  }
  _mm256_mask_storeu_epi16(p, m, round_to_bf16(x));
}

// c [mr, nr] (row stride ldc, mr <= MR, nr <= 16*NV) <- ap [kpairs, MR] x bp [kpairs, 16*NV]
// (packed k-pairs), stored per mode.
template <int MR, int NV, typename OutT>
TT_BF16_TARGET void micro_kernel(const uint32_t* __restrict ap, const uint32_t* __restrict bp, int64_t kpairs,
                                 OutT* c, int64_t ldc, int mr, int nr, int mode, float beta) {
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kpairs; ++p) {
    __m512i bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_si512(bp + 16 * v);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512i av = _mm512_set1_epi32(int(ap[r]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], (__m512bh)av, (__m512bh)bv[v]);
    }
    ap += MR;
    bp += 16 * NV;
  }
  __mmask16 mask[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int n = nr - 16 * v;
    mask[v] = n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
  }
  const __m512 vbeta = _mm512_set1_ps(beta);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    if (r < mr) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) store16(c + r * ldc + 16 * v, acc[r][v], mask[v], mode, vbeta);
    }
  }
}

// c [rows, cols] (bf16, row stride ldc) = round(s + beta * c) from the float32 stage s (row
// stride lds); beta == 0 never reads c.
TT_BF16_TARGET void stage_to_bf16(const float* s, int64_t lds, BFloat16* c, int64_t ldc, int64_t rows, int64_t cols,
                                  double beta) {
  const int mode = beta == 0.0 ? kOverwrite : beta == 1.0 ? kAdd : kBeta;
  const __m512 vbeta = _mm512_set1_ps(float(beta));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; j += 16) {
      const int64_t n = std::min<int64_t>(16, cols - j);
      const __mmask16 m = n == 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
      store16(c + i * ldc + j, _mm512_maskz_loadu_ps(m, s + i * lds + j), m, mode, vbeta);
    }
}

// Everything one call of the native path shares between its threads.
template <typename OutT>
struct NativeGemm {
  const BFloat16* a;
  const BFloat16* b;
  OutT* c;
  int64_t M, N, K, sa0, sa1, sb0, sb1, ldc;
  double beta;
  int64_t kp_total = 0;       // ceil(K / 2): k-pairs in a packed B panel
  int64_t pa = 0, pb = 0;     // A panels (of kMR rows), B panels (of kNR columns)
  int64_t nbm = 0, nbn = 0;   // blocks of panels along M and N: the OpenMP tasks
  int64_t block_pa = 0;       // most A panels in a block
  uint32_t* apack = nullptr;  // per thread: [block_pa][kKC / 2][kMR], one k-slice of a block's rows
  uint32_t* bpack = nullptr;  // [pb][kp_total][kNR]
  float* stage = nullptr;     // bf16 output with K > kKC: per thread, [rows of a block][columns of a block]
  int64_t stage_rows = 0, stage_cols = 0;

  // Packs B panel p (all of K).
  TT_BF16_TARGET void pack_b(int64_t p) const {
    const uint16_t* b16 = reinterpret_cast<const uint16_t*>(b);
    const int w = int(std::min<int64_t>(kNR, N - p * kNR));
    pack_panel<kNR>(b16 + p * kNR * sb1, sb1, sb0, w, K, bpack + p * kNR * kp_total);
  }

  // Computes block t of c (panel rows [ip0, ip1), panel columns [jp0, jp1)) on thread tid (its
  // A slice buffer and stage). A is packed here, one k-slice of the block's rows at a time, just
  // before the kernels read it (so it is still in L2): a block of all the columns packs each
  // element of a once; B, which every row block reads, was packed up front.
  TT_BF16_TARGET void block(int64_t t, int tid) const {
    const int64_t bi = t / nbn, bj = t % nbn;
    const int64_t ip0 = bi * pa / nbm, ip1 = (bi + 1) * pa / nbm;
    const int64_t jp0 = bj * pb / nbn, jp1 = (bj + 1) * pb / nbn;
    const bool staged = std::is_same<OutT, BFloat16>::value && K > kKC;
    float* st = stage ? stage + int64_t(tid) * stage_rows * stage_cols : nullptr;
    uint32_t* abuf = apack + int64_t(tid) * block_pa * kMR * (kKC / 2);
    const uint16_t* a16 = reinterpret_cast<const uint16_t*>(a);
    const int first_mode = beta == 0.0 ? kOverwrite : beta == 1.0 ? kAdd : kBeta;
    for (int64_t k0 = 0; k0 < K; k0 += kKC) {
      const int64_t kc = std::min(kKC, K - k0), kpairs = ceil_div(kc, 2), kp0 = k0 / 2;
      for (int64_t ip = ip0; ip < ip1; ++ip) {
        const int w = int(std::min<int64_t>(kMR, M - ip * kMR));
        pack_panel<kMR>(a16 + ip * kMR * sa0 + k0 * sa1, sa0, sa1, w, kc, abuf + (ip - ip0) * kMR * kpairs);
      }
      for (int64_t jp = jp0; jp < jp1; ++jp) {
        const uint32_t* bptr = bpack + jp * kNR * kp_total + kp0 * kNR;
        const int nr = int(std::min<int64_t>(kNR, N - jp * kNR));
        for (int64_t ip = ip0; ip < ip1; ++ip) {
          const uint32_t* aptr = abuf + (ip - ip0) * kMR * kpairs;
          const int mr = int(std::min<int64_t>(kMR, M - ip * kMR));
          if (staged) {
            micro_kernel<kMR, kNV>(aptr, bptr, kpairs, st + (ip - ip0) * kMR * stage_cols + (jp - jp0) * kNR,
                                   stage_cols, mr, nr, k0 == 0 ? kOverwrite : kAdd, 0.0f);
          } else {
            micro_kernel<kMR, kNV>(aptr, bptr, kpairs, c + ip * kMR * ldc + jp * kNR, ldc, mr, nr,
                                   k0 == 0 ? first_mode : kAdd, float(beta));
          }
        }
      }
    }
    if constexpr (std::is_same<OutT, BFloat16>::value) {
      if (staged) {
        const int64_t rows = std::min(M, ip1 * kMR) - ip0 * kMR, cols = std::min(N, jp1 * kNR) - jp0 * kNR;
        stage_to_bf16(st, stage_cols, c + ip0 * kMR * ldc + jp0 * kNR, ldc, rows, cols, beta);
      }
    }
  }
};

// The native path; M, N, K > 0.
template <typename OutT>
void gemm_native(const BFloat16* a, const BFloat16* b, OutT* c, int64_t M, int64_t N, int64_t K, int64_t sa0,
                 int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta) {
  NativeGemm<OutT> g{a, b, c, M, N, K, sa0, sa1, sb0, sb1, ldc, beta};
  g.kp_total = ceil_div(K, 2);
  g.pa = ceil_div(M, kMR);
  g.pb = ceil_div(N, kNR);
  int nt = parallel_threads();
  if (double(M) * double(N) * double(K) < double(kSerialWork)) nt = 1;
  // The block grid: blocks of at most kMCPanels x kNCPanels panels, then split further until
  // every thread has at least two blocks and the count divides evenly among threads (where the
  // panels allow): blocks of nearly equal size, so the threads finish together. Rows split
  // first (down to blocks of kMinSplitPanels): a split of the columns packs a's rows once more.
  g.nbm = ceil_div(g.pa, kMCPanels);
  g.nbn = ceil_div(g.pb, kNCPanels);
  auto split_once = [&g]() {
    if (g.pa / (g.nbm + 1) >= kMinSplitPanels) ++g.nbm;
    else if (g.nbn < g.pb) ++g.nbn;
    else if (g.nbm < g.pa) ++g.nbm;
    else return false;
    return true;
  };
  if (nt > 1) {
    while (g.nbm * g.nbn < 2 * nt && split_once()) {
    }
    for (int tries = 0; tries < 4 && (g.nbm * g.nbn) % nt != 0; ++tries)
      if (!split_once()) break;
  }
  g.block_pa = ceil_div(g.pa, g.nbm);
  Scratch<uint32_t> apack(int64_t(nt) * g.block_pa * kMR * (kKC / 2)), bpack(g.pb * kNR * g.kp_total);
  g.apack = apack.data();
  g.bpack = bpack.data();
  const bool staged = std::is_same<OutT, BFloat16>::value && K > kKC;
  g.stage_rows = g.block_pa * kMR;
  g.stage_cols = ceil_div(g.pb, g.nbn) * kNR;
  Scratch<float> stage(staged ? int64_t(nt) * g.stage_rows * g.stage_cols : 1);
  g.stage = staged ? stage.data() : nullptr;
  const int64_t blocks = g.nbm * g.nbn;
  // Nothing below throws: the scratch is allocated, the kernels only read and write memory.
#pragma omp parallel num_threads(nt)
  {
#pragma omp for schedule(static)
    for (int64_t p = 0; p < g.pb; ++p) g.pack_b(p);
    const int tid = omp_thread_num_now();
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < blocks; ++t) g.block(t, tid);
  }
}

bool native_supported() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512_bf16;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#else  // not x86-64: no native kernel

template <typename OutT>
void gemm_native(const BFloat16*, const BFloat16*, OutT*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                 int64_t, int64_t, double) {}
bool native_supported() { return false; }

#endif

// ---------------------------------------------------------------------------------------------
// The fallback: widen slices of K to float32, cblas_sgemm them into c (or a float32 copy of it).

constexpr int64_t kKCFallback = 512;  // k per widened slice: bounds the scratch to (M + N) * 512 floats

// dst <- src [rows, cols] (element strides sr, sc) as float32, laid out as BLAS reads it best:
// row-major (trans = false, ld = cols) unless src is column-major, then its transpose (trans = true).
void widen(const BFloat16* src, int64_t rows, int64_t cols, int64_t sr, int64_t sc, float* dst, bool& trans,
           int64_t& ld, int nt) {
  trans = !(sc == 1 || cols == 1) && (sr == 1 || rows == 1);
  const int64_t outer = trans ? cols : rows, inner = trans ? rows : cols;
  const int64_t so = trans ? sc : sr, si = trans ? sr : sc;
  ld = inner;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    const BFloat16* s = src + o * so;
    float* d = dst + o * inner;
    if (si == 1)
      for (int64_t i = 0; i < inner; ++i) d[i] = BFloat16::to_float(s[i].bits);
    else
      for (int64_t i = 0; i < inner; ++i) d[i] = BFloat16::to_float(s[i * si].bits);
  }
}

// The fallback path; M, N, K > 0.
template <typename OutT>
void gemm_fallback(const BFloat16* a, const BFloat16* b, OutT* c, int64_t M, int64_t N, int64_t K, int64_t sa0,
                   int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta) {
  constexpr bool kBf16Out = std::is_same<OutT, BFloat16>::value;
  tt::detail::apply_num_threads();  // the BLAS gets tinytorch's thread count
  int nt = parallel_threads();
  if (double(M) * double(N) * double(K) < double(kSerialWork)) nt = 1;
  const int64_t kc_max = std::min(K, kKCFallback);
  Scratch<float> abuf(M * kc_max), bbuf(kc_max * N), cbuf(kBf16Out ? M * N : 1);
  float* cf;
  int64_t ldcf;
  if constexpr (kBf16Out) {
    cf = cbuf.data();
    ldcf = N;
  } else {
    cf = c;
    ldcf = ldc;
  }
  for (int64_t k0 = 0; k0 < K; k0 += kKCFallback) {
    const int64_t kc = std::min(kKCFallback, K - k0);
    bool ta, tb;
    int64_t lda, ldb;
    widen(a + k0 * sa1, M, kc, sa0, sa1, abuf.data(), ta, lda, nt);
    widen(b + k0 * sb0, kc, N, sb0, sb1, bbuf.data(), tb, ldb, nt);
    const float bk = k0 > 0 ? 1.0f : kBf16Out ? 0.0f : float(beta);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(N),
                int(kc), 1.0f, abuf.data(), int(std::max<int64_t>(1, lda)), bbuf.data(),
                int(std::max<int64_t>(1, ldb)), bk, cf, int(ldcf));
  }
  if constexpr (kBf16Out) {
    const float fb = float(beta);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float v = cf[i * N + j];
        if (beta != 0.0) v = beta == 1.0 ? v + float(c[i * ldc + j]) : fb * float(c[i * ldc + j]) + v;
        c[i * ldc + j] = BFloat16(v);
      }
  }
}

bool forced_fallback() {
  const char* e = std::getenv("TT_BF16_GEMM");
  return e != nullptr && std::strcmp(e, "fallback") == 0;
}

template <typename OutT>
void gemm_dispatch(detail::Bf16GemmPath path, const BFloat16* a, const BFloat16* b, OutT* c, int64_t M, int64_t N,
                   int64_t K, int64_t sa0, int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    scale_c(c, M, N, ldc, beta);
    return;
  }
  bool native = false;
  switch (path) {
    case detail::Bf16GemmPath::kAuto: native = native_supported() && !forced_fallback(); break;
    case detail::Bf16GemmPath::kNative: native = native_supported(); break;
    case detail::Bf16GemmPath::kFallback: native = false; break;
  }
  if (native)
    gemm_native(a, b, c, M, N, K, sa0, sa1, sb0, sb1, ldc, beta);
  else
    gemm_fallback(a, b, c, M, N, K, sa0, sa1, sb0, sb1, ldc, beta);
}

}  // namespace

void gemm_bf16(const BFloat16* a, const BFloat16* b, float* c, int64_t M, int64_t N, int64_t K, int64_t sa0,
               int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta) {
  gemm_dispatch(detail::Bf16GemmPath::kAuto, a, b, c, M, N, K, sa0, sa1, sb0, sb1, ldc, beta);
}

void gemm_bf16(const BFloat16* a, const BFloat16* b, BFloat16* c, int64_t M, int64_t N, int64_t K, int64_t sa0,
               int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta) {
  gemm_dispatch(detail::Bf16GemmPath::kAuto, a, b, c, M, N, K, sa0, sa1, sb0, sb1, ldc, beta);
}

bool gemm_bf16_native() { return native_supported() && !forced_fallback(); }

namespace detail {

void gemm_bf16_path(Bf16GemmPath path, const BFloat16* a, const BFloat16* b, float* c, int64_t M, int64_t N,
                    int64_t K, int64_t sa0, int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta) {
  gemm_dispatch(path, a, b, c, M, N, K, sa0, sa1, sb0, sb1, ldc, beta);
}

void gemm_bf16_path(Bf16GemmPath path, const BFloat16* a, const BFloat16* b, BFloat16* c, int64_t M, int64_t N,
                    int64_t K, int64_t sa0, int64_t sa1, int64_t sb0, int64_t sb1, int64_t ldc, double beta) {
  gemm_dispatch(path, a, b, c, M, N, K, sa0, sa1, sb0, sb1, ldc, beta);
}

}  // namespace detail

}  // namespace tt::cpu
