// Module 13 walkthrough: flash attention on the CPU, one idea at a time. The [N, N] wall of module
// 12 recalled in bytes; the online softmax derived and demonstrated (a long row streamed in blocks
// with a running max and a running sum gives the softmax of the whole row, and the same weighted
// sum of values); tiling, with the tiles a causal mask skips drawn in the terminal, and the flash
// kernel agreeing with the math kernel; recomputation in the backward (why one logsumexp per row
// is enough, and the Dvec trick); and why memory becomes linear: peak bytes and time of both
// kernels, forward + backward, for N = 512 to 16384, as a table and a log-log PNG.
// Run it with `tools/tt walkthrough 13 [--quick] [--max-n N] [DIR]` (or
// build-*/modules/walkthrough_13 ...): --quick ends the sweep at N = 4096, --max-n N at N; the
// figure goes to DIR, by default a folder walkthrough_13_figures beside the executable. Each step
// prints its code (after ">>>") and the result. Each numbered section is one function; `--step N`
// reruns section N alone, `--list` lists them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <tinytorch/backend/cpu/online_softmax.h>
#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, quietly, and SHOW / RUN / SHOW_ERROR

namespace {

using tt::Tensor;
namespace F = tt::F;

struct Options {
  int64_t max_n = 16384;  // the sweep of section 5 doubles N from 512 up to this
  std::string out_dir;    // where the PNG goes
};
Options g_opts;

// The forward's tiles in backend/cpu/flash_attention.cpp: kBlockQ query rows against kBlockK keys.
// (Its backward has its own, kBwdBlockK = 256 keys against panels of kBwdBlockQ = 512 query rows.)
constexpr int64_t kBlockQ = 128, kBlockK = 256;

// The sweep's shape [B, H, N, D] = [1, 8, N, 64], float32, causal.
constexpr int64_t kB = 1, kH = 8, kD = 64;

// The math kernel runs in section 5 only while the memory it needs (the formula below) fits here.
constexpr double kMathBudget = 1.0 * (int64_t(1) << 30);

double max_abs(const Tensor& t) { return t.abs().max().item<double>(); }

std::string bytes(double b) { return tt::viz::format_tick(b, tt::viz::TickFormat::kBytes); }

// A label right-aligned in `w` columns.
std::string rcol(const std::string& s, size_t w) { return std::string(w > s.size() ? w - s.size() : 0, ' ') + s; }

std::string figure(const std::string& name) { return (std::filesystem::path(g_opts.out_dir) / name).string(); }

// --- section 2: the online softmax, in plain C++ -------------------------------------------------

// What streaming one row leaves behind.
template <typename T>
struct Streamed {
  std::vector<T> out;  // [dv] the weighted sum of the values, sum_j softmax(s)_j v_j
  T m, l;              // the running max and sum after the last block
  // The row's logsumexp, log sum_j exp(s_j): all the backward needs to rebuild the weights.
  T lse() const { return l > 0 ? m + std::log(l) : -std::numeric_limits<T>::infinity(); }
};

// The online softmax of one row of scores s [n] against values v [n, dv] (row-major), read in
// blocks of `block` scores, each block seen once, the way the flash kernel reads tiles of keys:
//   m' = max(m, max of the block)                 the new running max
//   alpha = exp(m - m')                           rescales everything summed under the old max
//   l = alpha l + sum_j exp(s_j - m')             the running sum of exponentials
//   acc = alpha acc + sum_j exp(s_j - m') v_j     the running, unnormalized output
// and at the end out = acc / l. With `trace`, prints one line per block.
template <typename T>
Streamed<T> stream_row(const std::vector<T>& s, const std::vector<T>& v, int64_t dv, int64_t block,
                       bool trace = false) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const int64_t n = int64_t(s.size());
  Streamed<T> r{std::vector<T>(size_t(dv), T(0)), neg_inf, T(0)};
  for (int64_t j0 = 0; j0 < n; j0 += block) {
    const int64_t j1 = std::min(n, j0 + block);
    T m_new = r.m;
    for (int64_t j = j0; j < j1; ++j) m_new = std::max(m_new, s[size_t(j)]);
    if (m_new == neg_inf) continue;          // every score so far is -inf (masked): nothing to add
    const T alpha = std::exp(r.m - m_new);   // exp(-inf) = 0 on the first visible block
    T block_sum = 0;
    std::vector<T> block_acc(size_t(dv), T(0));
    for (int64_t j = j0; j < j1; ++j) {
      const T p = std::exp(s[size_t(j)] - m_new);
      block_sum += p;
      for (int64_t d = 0; d < dv; ++d) block_acc[size_t(d)] += p * v[size_t(j * dv + d)];
    }
    r.l = alpha * r.l + block_sum;
    for (int64_t d = 0; d < dv; ++d) r.out[size_t(d)] = alpha * r.out[size_t(d)] + block_acc[size_t(d)];
    if (trace) {
      std::string scores;
      for (int64_t j = j0; j < j1; ++j) scores += fmt("%5.1f", double(s[size_t(j)]));
      std::cout << "    [" << j0 << ", " << j1 << ")  " << scores << std::string(size_t(5 * (block - (j1 - j0))), ' ')
                << "  m " << fmt("%-5g", double(r.m)) << "-> " << fmt("%-4g", double(m_new)) << " alpha "
                << fmt("%-9.6f", double(alpha)) << " l " << fmt("%-9.5f", double(r.l)) << " acc "
                << fmt("%.5f", double(r.out[0])) << "\n";
    }
    r.m = m_new;
  }
  for (T& o : r.out) o = r.l > 0 ? o / r.l : T(0);
  return r;
}

// The weights rebuilt from the scores and the logsumexp alone: exp(s_j - lse).
template <typename T>
std::vector<T> weights_from_lse(const std::vector<T>& s, T lse) {
  std::vector<T> w(s.size());
  for (size_t j = 0; j < s.size(); ++j) w[j] = std::exp(s[j] - lse);
  return w;
}

// max |a - b| over two vectors.
template <typename T>
double max_diff(const std::vector<T>& a, const std::vector<T>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
  return worst;
}

// --- section 3: which tiles a causal kernel computes ---------------------------------------------

// The three kinds of tile of a causal [N, N] score matrix, by the rules of flash_attention.cpp's
// forward: query rows [i0, i0 + rows) read keys [0, min(N, i0 + rows)), so a key tile is computed
// when j0 < i0 + rows, and only up to key i0 + rows - 1 (computed_cols); inside it, mask_tile masks
// keys j > i only when j0 + computed_cols > i0.
enum class Tile { kSkipped, kDiagonal, kFull };
int64_t computed_cols(int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
  return std::max<int64_t>(0, std::min(cols, i0 + rows - j0));
}
Tile tile_kind(int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
  if (j0 >= i0 + rows) return Tile::kSkipped;
  return j0 + computed_cols(i0, rows, j0, cols) > i0 ? Tile::kDiagonal : Tile::kFull;
}

// --- sections 3 to 5: running the two kernels ----------------------------------------------------

struct Grads {
  Tensor out, dq, dk, dv;
};

// Forward and backward through F::scaled_dot_product_attention with `backend` forced.
Grads forward_backward(tt::SDPBackend backend, const Tensor& q0, const Tensor& k0, const Tensor& v0,
                       const Tensor& dO, const Tensor& mask, bool causal) {
  tt::SdpaKernelGuard guard(backend);
  Tensor q = q0.detach().requires_grad_(), k = k0.detach().requires_grad_(), v = v0.detach().requires_grad_();
  Tensor out = F::scaled_dot_product_attention(q, k, v, mask, 0.0, causal);
  out.backward(dO);
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

// One of q, k, v, out, dO, dq, dk, dv at [1, 8, N, 64] float32, in bytes.
double io_bytes(int64_t N) { return double(kB * kH * N * kD) * 4; }

// What forward + backward must hold beyond its inputs and dO, from the formulas:
//   flash: out, dq, dk, dv (4 io) + the logsumexp [B, H, N]            linear in N
//   math:  out, dq, dk, dv (4 io) + the weights [B, H, N, N]            quadratic in N
// (the flash kernel's tiles, 161 KiB per thread forward and 1 MiB backward, and the math backward's
// [N, N] scratch per thread come on top; the allocator sees both).
double flash_formula(int64_t N) { return 4 * io_bytes(N) + double(kB * kH * N) * 4; }
double math_formula(int64_t N) { return 4 * io_bytes(N) + double(kB * kH) * double(N) * double(N) * 4; }

struct Cost {
  int64_t peak = 0;  // peak bytes above what was live before (Note [measured peak], tools/attention_costs.cpp)
  double fwd_ms = 0, bwd_ms = 0;  // the best of `runs` runs
  int runs = 0;
};

// Runs per timing in section 5: the best of 3 while a run is short, one run beyond N = 4096.
int runs_for(int64_t N) { return N <= 4096 ? 3 : 1; }

// Forward + backward at [1, 8, N, 64], float32, causal (or with `mask`), with `backend` forced:
// the peak of live tensor bytes (tt::memory::stats) in the first run, and the best time of each
// half over `runs` runs (the gradients cleared between runs).
Cost measure(tt::SDPBackend backend, int64_t N, const Tensor& mask = {}, bool causal = true, int runs = 1) {
  tt::manual_seed(0);
  Tensor q = tt::randn({kB, kH, N, kD}).requires_grad_(), k = tt::randn({kB, kH, N, kD}).requires_grad_(),
         v = tt::randn({kB, kH, N, kD}).requires_grad_();
  const Tensor dO = tt::randn({kB, kH, N, kD});
  tt::SdpaKernelGuard guard(backend);
  Cost c;
  c.runs = runs;
  for (int r = 0; r < runs; ++r) {
    for (Tensor* t : {&q, &k, &v}) t->set_grad(Tensor());
    const int64_t before = tt::memory::stats().allocated_bytes;
    tt::memory::reset_peak_stats();
    const auto t0 = std::chrono::steady_clock::now();
    {
      Tensor out = F::scaled_dot_product_attention(q, k, v, mask, 0.0, causal);
      const auto t1 = std::chrono::steady_clock::now();
      out.backward(dO);
      const auto t2 = std::chrono::steady_clock::now();
      const double fwd = std::chrono::duration<double, std::milli>(t1 - t0).count();
      const double bwd = std::chrono::duration<double, std::milli>(t2 - t1).count();
      c.fwd_ms = r == 0 ? fwd : std::min(c.fwd_ms, fwd);
      c.bwd_ms = r == 0 ? bwd : std::min(c.bwd_ms, bwd);
    }
    if (r == 0) c.peak = tt::memory::stats().peak_allocated_bytes - before;
  }
  return c;
}

// The fraction of the N^2 causal scores the flash forward and backward compute (section 3's rules).
double forward_fraction(int64_t N) {
  double fwd = 0;
  for (int64_t i0 = 0; i0 < N; i0 += kBlockQ)
    for (int64_t j0 = 0; j0 < N; j0 += kBlockK) {
      const int64_t rows = std::min(kBlockQ, N - i0);
      fwd += double(rows) * double(computed_cols(i0, rows, j0, std::min(kBlockK, N - j0)));
    }
  return fwd / (double(N) * double(N));
}
double backward_fraction(int64_t N) {
  double bwd = 0;
  for (int64_t j0 = 0; j0 < N; j0 += 256) bwd += double(std::min<int64_t>(256, N - j0)) * double(N - j0);
  return bwd / (double(N) * double(N));
}

// -----------------------------------------------------------------------------------------------

// Step 1's q, k and v at [1, 8, 2048, 64], which step 4 reads again.
struct Qkv {
  Tensor q, k, v;
};

Qkv step_1_quadratic_wall() {
  say("Module 12's kernels compute P = softmax(scale Q K^T) as a whole [N, N] matrix per head and keep\n"
      "it for the backward. Q, K and V grow like N; P grows like N^2. In bytes, for this module's\n"
      "shape [B, H, N, D] = [1, 8, N, 64] float32 (4 bytes a number):\n"
      "    one of q, k, v:   B H N D x 4        the weights P:   B H N^2 x 4   (N / D times more)");
  std::cout << "\n" << rcol("N", 8) << rcol("q (or k, v)", 14) << rcol("P [1,8,N,N]", 14) << rcol("P / q", 9) << "\n";
  for (int64_t N : {512, 1024, 2048, 4096, 8192, 16384, 65536, 131072})
    std::cout << rcol(std::to_string(N), 8) << rcol(bytes(io_bytes(N)), 14)
              << rcol(bytes(double(kB * kH) * double(N) * double(N) * 4), 14) << rcol(std::to_string(N / kD), 9)
              << "\n";
  say("At N = 16384 the weights of one layer are 8 GiB while its inputs are 32 MiB; at a 128k-token\n"
      "context, 512 GiB. The math kernel, measured: after its forward at N = 2048 it holds the output\n"
      "and, saved for the backward, the whole of P:");
  RUN(tt::manual_seed(0));
  RUN(Tensor q = tt::randn({1, 8, 2048, 64}).requires_grad_(), k = tt::randn({1, 8, 2048, 64}).requires_grad_(),
      v = tt::randn({1, 8, 2048, 64}).requires_grad_());
  {
    RUN(int64_t before = tt::memory::stats().allocated_bytes);
    Tensor out;
    {
      RUN(tt::SdpaKernelGuard math(tt::SDPBackend::Math));
      RUN(out = F::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true));
    }
    SHOW(bytes(double(tt::memory::stats().allocated_bytes - before)));
    SHOW(bytes(io_bytes(2048)) + " (out) + " + bytes(8.0 * 2048 * 2048 * 4) + " (P)");
  }
  say("Causal attention only needs the lower triangle, but the math kernel still stores the full\n"
      "[N, N] rows (zeros above the diagonal). The fix is not a cleverer matrix: it is never to hold\n"
      "one. Every output row is a weighted average of value rows, sum_j P_ij v_j, and a row of P\n"
      "needs its whole row of scores only for the softmax's max and sum. Section 2 computes both on\n"
      "the fly.");
  return {q, k, v};
}

// -----------------------------------------------------------------------------------------------

void step_2_online_softmax() {
  say("softmax(s)_j = exp(s_j - m) / l with m = max_j s_j (so that no exp overflows, module 03) and\n"
      "l = sum_j exp(s_j - m). Read the row in blocks and keep a running max m and a running sum l.\n"
      "When a block raises the max from m to m', every term already in l was exp(s_j - m) and should\n"
      "be exp(s_j - m') = exp(s_j - m) exp(m - m'): multiply l by alpha = exp(m - m') and carry on:\n"
      "    m' = max(m, max of the block)     alpha = exp(m - m')\n"
      "    l  = alpha l + sum over the block of exp(s_j - m')\n"
      "The output sum_j softmax(s)_j v_j gets the same treatment: an unnormalized accumulator acc,\n"
      "rescaled by alpha whenever the max moves, divided by l once at the end:\n"
      "    acc = alpha acc + sum over the block of exp(s_j - m') v_j      out = acc / l\n"
      "Each score is read once, and nothing the size of the row is kept. stream_row (in this file,\n"
      "plain C++ over std::vector) does exactly this. Eight scores with one value each, in blocks of\n"
      "3; the second block raises the max from 3 to 6, so what was summed is scaled by exp(-3):");
  RUN(std::vector<float> s8 = {1, 3, -2, 0.5, 6, 2, 4, -1});
  RUN(std::vector<float> v8 = {10, 20, 30, 40, 50, 60, 70, 80});
  std::cout << ">>> Streamed<float> r8 = stream_row(s8, v8, /*dv=*/1, /*block=*/3, /*trace=*/true);\n";
  Streamed<float> r8 = stream_row(s8, v8, 1, 3, true);
  SHOW(r8.out[0]);
  SHOW(F::softmax(tt::tensor(s8), 0).matmul(tt::tensor(v8)).item<float>());
  SHOW(r8.lse());
  SHOW(6 + std::log((tt::tensor(s8) - 6.0).exp().sum().item<float>()));  // max + log sum exp(s - max)
  say("The last line is the logsumexp of the whole row computed the ordinary way, with its max, 6.\n"
      "With lse the weights come back from the scores alone: softmax(s)_j = exp(s_j - lse). That is\n"
      "what the backward will use (section 4):");
  SHOW(tt::tensor(weights_from_lse(s8, r8.lse())));
  SHOW(F::softmax(tt::tensor(s8), 0));
  say("The kernel's own row step is tt::cpu::online_softmax_update (backend/cpu/online_softmax.h; the\n"
      "first function you write in exercise mode). Given one block of a row's scores, it updates m, l\n"
      "and the rescaled acc, and turns the scores into exp(s_j - m'); the values are left to the caller,\n"
      "because the kernel adds P V for a whole tile of rows with one GEMM. The same eight scores:");
  {
    std::cout << ">>> float m = -INFINITY, l = 0, acc = 0;\n"
                 ">>> for each block of 3: p = the block's scores; online_softmax_update(p, n, m, l, &acc, 1);\n"
                 "                         acc += sum_j p[j] v[j];\n";
    float m = -INFINITY, l = 0, acc = 0;
    for (size_t j0 = 0; j0 < s8.size(); j0 += 3) {
      const size_t j1 = std::min(s8.size(), j0 + 3);
      std::vector<float> p(s8.begin() + long(j0), s8.begin() + long(j1));
      tt::cpu::online_softmax_update(p.data(), int64_t(p.size()), m, l, &acc, 1);
      float block = 0;
      for (size_t j = j0; j < j1; ++j) block += p[j - j0] * v8[j];
      acc += block;
    }
    SHOW(acc / l);
    SHOW(m + std::log(l));
  }
  say("Now a long row: 100,000 scores (randn x 3) against values with 4 numbers each, in float32,\n"
      "streamed with several block sizes and compared with tt::softmax over the whole row:\n"
      "  * weights: max |exp(s - lse) - softmax(s)|, every weight rebuilt from the streamed lse;\n"
      "  * output:  max |streamed out - softmax(s) @ V|.");
  RUN(tt::manual_seed(1));
  RUN(const int64_t n = 100000, dv = 4);
  RUN(Tensor S = tt::randn({n}) * 3.0f, V = tt::randn({n, dv}));
  RUN(std::vector<float> s = S.to_vector<float>(), vals = V.to_vector<float>());
  RUN(std::vector<float> want_w = F::softmax(S, 0).to_vector<float>());
  RUN(std::vector<float> want_out = F::softmax(S, 0).matmul(V).to_vector<float>());
  std::cout << "\n" << rcol("block", 10) << rcol("blocks", 9) << rcol("weights", 13) << rcol("output", 13)
            << rcol("max weight", 13) << "\n";
  for (int64_t block : {int64_t(1), int64_t(128), int64_t(4096), n}) {
    Streamed<float> r = stream_row(s, vals, dv, block);
    std::cout << rcol(block == n ? "whole row" : std::to_string(block), 10)
              << rcol(std::to_string((n + block - 1) / block), 9)
              << rcol(fmt("%.2e", max_diff(weights_from_lse(s, r.lse()), want_w)), 13)
              << rcol(fmt("%.2e", max_diff(r.out, want_out)), 13)
              << rcol(fmt("%.2e", double(*std::max_element(want_w.begin(), want_w.end()))), 13) << "\n";
  }
  say("The identity is exact; what differs is float32 rounding, and it depends on how long the\n"
      "running sums get. Block 1 (or the whole row as one block) adds 100,000 terms one at a time\n"
      "to one float32 sum, and drifts by about 1e-5. Blocks of 128 sum each block on its own, then\n"
      "add one term per block to l and acc: no sum is longer than a few hundred terms, and the\n"
      "result is within about 1e-7 of tt::softmax. That is the kernel's scheme too. In float64\n"
      "the same function agrees to about 1e-16:");
  RUN(std::vector<double> s64(s.begin(), s.end()), vals64(vals.begin(), vals.end()));
  RUN(Streamed<double> r64 = stream_row(s64, vals64, dv, 128));
  SHOW(max_diff(r64.out, F::softmax(S.to(tt::kFloat64), 0).matmul(V.to(tt::kFloat64)).to_vector<double>()));
  say("Two more properties the kernel leans on. A block whose scores are all -inf (masked) leaves\n"
      "m, l and acc alone, and a row that never sees a finite score keeps l = 0: its output is\n"
      "defined as 0 (stream_row, and the kernel, skip the division), never 0/0. And the update is\n"
      "a merge of two summaries (m1, l1, acc1) and (m2, l2, acc2) of disjoint parts of the row:\n"
      "m = max(m1, m2), l = l1 exp(m1 - m) + l2 exp(m2 - m), the same for acc. Merges can happen in\n"
      "any grouping, which is why any block size works (and why GPU kernels can even split one row\n"
      "over several workers and merge at the end).");
}

// -----------------------------------------------------------------------------------------------

void step_3_tiles() {
  say("The flash kernel (tinytorch/backend/cpu/flash_attention.cpp) applies section 2 to a tile of\n"
      "kBlockQ = 128 query rows at once. For each tile of kBlockK = 256 keys: S = scale Q_i K_j^T\n"
      "(one small GEMM, [128, 256]), the running max, sum and alpha per row, then acc += P V_j\n"
      "(a second GEMM). At the end: out = acc / l and lse = m + log l, written once. A thread\n"
      "holds one [128, 256] tile of scores, one [128, D] accumulator and m, l: 128 x (256 + D + 2)\n"
      "numbers, 161 KiB for D = 64 in float32, whatever N is.\n\n"
      "With a causal mask, query i sees keys j <= i. A key tile that starts after the last row of\n"
      "the query tile is all masked: the kernel never computes it. A tile on the diagonal is\n"
      "computed only up to the query tile's last row and masked inside (mask_tile writes -inf where\n"
      "j > i); the others are used whole. Here every number of a causal score matrix for N = 16,\n"
      "with query tiles of 4 rows and key tiles of 8 keys, the kernel's 1:2 shape (# used, x\n"
      "computed then masked, . never computed):");
  {
    const int64_t N = 16, tq = 4, tk = 8;
    std::cout << "\n    query   keys 0..15, in tiles of " << tk << "\n";
    for (int64_t i = 0; i < N; ++i) {
      std::string line = "    " + rcol(std::to_string(i), 5) + "   ";
      const int64_t i0 = i / tq * tq;
      for (int64_t j = 0; j < N; ++j) {
        const int64_t j0 = j / tk * tk;
        const bool computed = tile_kind(i0, tq, j0, tk) != Tile::kSkipped && j < j0 + computed_cols(i0, tq, j0, tk);
        line += !computed ? '.' : (j <= i ? '#' : 'x');
        if (j % tk == tk - 1 && j + 1 < N) line += ' ';
      }
      std::cout << line << (i % tq == tq - 1 && i + 1 < N ? "\n\n" : "\n");
    }
  }
  say("The same at the kernel's real tile sizes, one character per tile of 128 query rows x 256\n"
      "keys, for N = 1024 (# tile used whole, \\ diagonal tile: computed up to the query tile's\n"
      "last row, masked inside, . skipped):");
  {
    const int64_t N = 1024, q_tiles = N / kBlockQ, k_tiles = N / kBlockK;
    int64_t full = 0, diag = 0, skipped = 0;
    std::cout << "\n    query tile   key tiles 0.." << k_tiles - 1 << "\n";
    for (int64_t it = 0; it < q_tiles; ++it) {
      std::string line = "    " + rcol(std::to_string(it), 10) + "   ";
      for (int64_t jt = 0; jt < k_tiles; ++jt) {
        const Tile kind = tile_kind(it * kBlockQ, kBlockQ, jt * kBlockK, kBlockK);
        line += std::string(jt > 0 ? " " : "") + (kind == Tile::kSkipped ? "." : kind == Tile::kDiagonal ? "\\" : "#");
        (kind == Tile::kSkipped ? skipped : kind == Tile::kDiagonal ? diag : full) += 1;
      }
      std::cout << line << "\n";
    }
    std::cout << "\n    used whole " << full << ", diagonal " << diag << ", skipped " << skipped << " of "
              << q_tiles * k_tiles << " tiles\n";
  }
  say("On the even query tiles the diagonal key tile is cut at the tile's last row, after 128 of its\n"
      "256 keys. So whatever the key tiles' width, query tile i computes exactly the keys\n"
      "[0, i0 + 128): with n = N / 128, the scores of n(n+1)/2 of n^2 square blocks, tending to\n"
      "half of N^2 as N grows. The backward has tiles of its own, 256 keys against panels of 512\n"
      "query rows (section 4), and skips the same way: the panels for key tile j start at row j0,\n"
      "the first query that sees key j0, so it computes the lower triangle and half of each\n"
      "256 x 256 block on the diagonal. The fraction of the N^2 scores each computes:");
  std::cout << "\n" << rcol("N", 8) << rcol("query tiles", 13) << rcol("key tiles", 11) << rcol("computed", 12)
            << rcol("forward", 10) << rcol("backward", 10) << "\n";
  for (int64_t N : {512, 1024, 2048, 4096, 8192, 16384}) {
    const int64_t q_tiles = N / kBlockQ, k_tiles = N / kBlockK;
    int64_t computed = 0;
    double fwd = 0, bwd = 0;  // scores computed
    for (int64_t it = 0; it < q_tiles; ++it)
      for (int64_t jt = 0; jt < k_tiles; ++jt) {
        computed += tile_kind(it * kBlockQ, kBlockQ, jt * kBlockK, kBlockK) != Tile::kSkipped;
        fwd += double(kBlockQ) * double(computed_cols(it * kBlockQ, kBlockQ, jt * kBlockK, kBlockK));
      }
    for (int64_t j0 = 0; j0 < N; j0 += 256) bwd += 256.0 * double(N - j0);  // rows j0..N-1 of key tile j
    const double all = double(N) * double(N);
    std::cout << rcol(std::to_string(N), 8) << rcol(std::to_string(q_tiles), 13) << rcol(std::to_string(k_tiles), 11)
              << rcol(std::to_string(computed) + "/" + std::to_string(q_tiles * k_tiles), 12)
              << rcol(fmt("%.3f", fwd / all), 10) << rcol(fmt("%.3f", bwd / all), 10) << "\n";
  }
  say("Tiles change the order of the sums, not the result. tt::SdpaKernelGuard forces a kernel\n"
      "(PyTorch's sdpa_kernel): SDPBackend::Math for module 12's kernel, SDPBackend::Flash for this\n"
      "one; Auto, the default, takes the math kernel while the weights it would keep fit in 16 MiB\n"
      "(there it is as fast, and its backward need not rebuild the scores) and flash beyond. Forward\n"
      "and backward of both on lengths that are not multiples of the tile sizes (so tiles end\n"
      "early), causal:");
  RUN(tt::manual_seed(2));
  RUN(Tensor q3 = tt::randn({2, 4, 300, 32}), k3 = tt::randn({2, 4, 300, 32}), v3 = tt::randn({2, 4, 300, 32}));
  RUN(Tensor dO3 = tt::randn({2, 4, 300, 32}));
  RUN(Grads math = forward_backward(tt::SDPBackend::Math, q3, k3, v3, dO3, {}, true));
  RUN(Grads flash = forward_backward(tt::SDPBackend::Flash, q3, k3, v3, dO3, {}, true));
  SHOW(max_abs(flash.out - math.out));
  SHOW(max_abs(flash.dq - math.dq));
  SHOW(max_abs(flash.dk - math.dk));
  SHOW(max_abs(flash.dv - math.dv));
  say("A query whose keys are all masked has nothing to average. Its running max stays -inf, so l\n"
      "stays 0 and the kernel writes zeros (and lse = -inf, which the backward reads as P = 0):");
  RUN(Tensor allowed = tt::ones({5, 7}, tt::kBool));  // true = may attend (SDPA's meaning)
  RUN(allowed.select(0, 2).fill_(false));              // query 2 may attend to nothing
  RUN(Grads masked = forward_backward(tt::SDPBackend::Flash, tt::randn({5, 3}), tt::randn({7, 3}),
                                      tt::randn({7, 2}), tt::ones({5, 2}), allowed, false));
  SHOW(masked.out);
  SHOW(masked.dq.select(0, 2));
  say("Which kernel ran is visible on the output's grad_fn. Here the weights would take\n"
      "2 x 4 x 300 x 300 x 4 bytes = 2.9 MB, so Auto picks the math kernel; at [1, 8, 1024, 64] they\n"
      "would take 32 MiB, so it picks flash:");
  RUN(Tensor o_auto = F::scaled_dot_product_attention(q3.requires_grad_(), k3, v3, {}, 0.0, true));
  SHOW(o_auto.grad_fn()->name());
  RUN(Tensor q_big = tt::randn({1, 8, 1024, 64}).requires_grad_());
  RUN(Tensor o_big = F::scaled_dot_product_attention(q_big, q_big, q_big, {}, 0.0, true));
  SHOW(o_big.grad_fn()->name());
  say("Dropout needs the weights themselves, so a call with dropout_p > 0 takes the composed math\n"
      "path under Auto; forcing flash there is an error, not a silent fallback:");
  show_error("{ tt::SdpaKernelGuard force(tt::SDPBackend::Flash);\n"
             "    F::scaled_dot_product_attention(q3, k3, v3, {}, /*dropout_p=*/0.1); }",
             [&] {
               tt::SdpaKernelGuard force(tt::SDPBackend::Flash);
               F::scaled_dot_product_attention(q3, k3, v3, {}, /*dropout_p=*/0.1);
             });
}

// -----------------------------------------------------------------------------------------------

void step_4_backward() {
  const Qkv qkv = quietly(step_1_quadratic_wall);
  const Tensor q = qkv.q, k = qkv.k, v = qkv.v;
  say("Module 12's backward, per head, with S = scale Q K^T, P = softmax(S), O = P V:\n"
      "    dV = P^T dO     dP = dO V^T     dS = P * (dP - rowsum(dP * P)) * scale\n"
      "    dQ = dS K       dK = dS^T Q\n"
      "Every line needs P, which flash never stored. It stored the output O and one number per row,\n"
      "lse_i = m_i + log l_i, and that is enough to rebuild any tile of P exactly:\n"
      "    P_ij = exp(S_ij - lse_i),  S_ij = scale q_i . k_j  (one GEMM per tile, as in the forward)\n"
      "No running max this time: lse is final, so each tile of P is correct on its own.\n"
      "What each kernel keeps from the forward, at N = 2048 with [1, 8, N, 64] (q, k, v from\n"
      "section 1):");
  for (tt::SDPBackend be : {tt::SDPBackend::Math, tt::SDPBackend::Flash}) {
    tt::SdpaKernelGuard guard(be);
    const int64_t before = tt::memory::stats().allocated_bytes;
    Tensor out = F::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
    std::cout << "    " << (be == tt::SDPBackend::Math ? "Math " : "Flash") << "  grad_fn " << out.grad_fn()->name()
              << std::string(be == tt::SDPBackend::Math ? 6 : 1, ' ') << "holds "
              << rcol(bytes(double(tt::memory::stats().allocated_bytes - before)), 10) << " after the forward\n";
  }
  say("Math: the output (4 MiB) and P (128 MiB). Flash: the output and lse [1, 8, 2048] (64 KiB).\n"
      "The rebuild, checked on one small head with tensor ops:");
  RUN(tt::manual_seed(3));
  RUN(Tensor q4 = tt::randn({6, 4}), k4 = tt::randn({6, 4}), v4 = tt::randn({6, 4}), dO4 = tt::randn({6, 4}));
  RUN(Tensor S4 = q4.matmul(k4.t()) / 2.0);  // scale = 1 / sqrt(D) = 1/2
  RUN(Tensor m4 = std::get<0>(S4.max(-1, /*keepdim=*/true)));
  RUN(Tensor lse4 = m4 + (S4 - m4).exp().sum({-1}, /*keepdim=*/true).log());
  SHOW(lse4.t());
  SHOW(max_abs((S4 - lse4).exp() - F::attention_weights(q4, k4)));
  say("One term is still row-wide: rowsum(dP * P) = sum_j P_ij dP_ij needs the whole row of P. But\n"
      "dP_ij = dO_i . v_j, so\n"
      "    sum_j P_ij dP_ij = dO_i . (sum_j P_ij v_j) = dO_i . O_i\n"
      "FlashAttention-2 computes this Dvec_i = rowsum(dO * O) once per row, before the tile loop,\n"
      "from two [N, D] tensors it has anyway: N numbers instead of an [N, N] pass. Checked:");
  RUN(Tensor P4 = F::attention_weights(q4, k4), O4 = P4.matmul(v4));
  RUN(Tensor dP4 = dO4.matmul(v4.t()));
  SHOW((dP4 * P4).sum({-1}));
  SHOW((dO4 * O4).sum({-1}));
  say("So the flash backward, per tile j of 256 keys and each panel i of 512 query rows that sees\n"
      "it (taller than the forward's tiles: each key tile walks all of them, and the products into\n"
      "dV_j and dK_j get an inner dimension of 512), is\n"
      "    P = exp(S - lse) with S rebuilt    dV_j += P^T dO_i    dP = dO_i V_j^T\n"
      "    dS = P * (dP - Dvec_i) * scale     dQ_i += dS K_j      dK_j += dS^T Q_i\n"
      "five GEMMs a tile where the math backward does four (it reads P instead of rebuilding S),\n"
      "and the forward's two: 7 against 6, about 17% more arithmetic, bought with N^2 memory.\n"
      "On a GPU, reading P back from memory is slower than recomputing it, so the trade costs no\n"
      "time there either. On a CPU, section 5 measures it.");
}

// -----------------------------------------------------------------------------------------------

void step_5_linear_memory() {
  say("Forward + backward at [1, 8, N, 64] float32, causal, each kernel forced by SdpaKernelGuard, on\n"
      + std::to_string(tt::get_num_threads()) +
      " thread(s) (tt::get_num_threads()); times are the best of 3 runs up to N = 4096\n"
      "and of 1 run beyond. \"peak\" is the allocator's high-water mark of live tensor bytes\n"
      "(tt::memory::stats, reset_peak_stats) above what was live before: the output, what the\n"
      "forward saved, the gradients dq, dk, dv and every temporary. \"formula\" is the least each\n"
      "kernel must hold: 4 x B H N D x 4 bytes (out, dq, dk, dv) plus B H N x 4 (flash: lse) or plus\n"
      "B H N^2 x 4 (math: P). The math kernel runs while its formula fits in " +
      bytes(kMathBudget) + "; beyond that, the\n"
      "formula alone says what it would need.");
  std::vector<double> xs, flash_peak, flash_theory, math_xs, math_peak, math_theory;
  std::vector<Cost> flash_costs, math_costs;
  {
    {  // warm up: thread pools, the allocator's cache
      measure(tt::SDPBackend::Flash, 256);
      measure(tt::SDPBackend::Math, 256);
    }
    std::cout << "\n"
              << rcol("N", 6) << " |" << rcol("math peak", 11) << rcol("formula", 11) << rcol("fwd ms", 9)
              << rcol("bwd ms", 9) << " |" << rcol("flash peak", 11) << rcol("formula", 11) << rcol("fwd ms", 9)
              << rcol("bwd ms", 9) << " |" << rcol("peak ratio", 11) << "\n";
    for (int64_t N = 512; N <= g_opts.max_n; N *= 2) {
      const Cost f = measure(tt::SDPBackend::Flash, N, {}, true, runs_for(N));
      std::string math_cells;
      const bool run_math = math_formula(N) <= kMathBudget;
      Cost m;
      if (run_math) {
        m = measure(tt::SDPBackend::Math, N, {}, true, runs_for(N));
        tt::memory::empty_cache();  // hand P's bytes back to the system
        math_cells = rcol(bytes(double(m.peak)), 11) + rcol(bytes(math_formula(N)), 11) +
                     rcol(fmt("%.0f", m.fwd_ms), 9) + rcol(fmt("%.0f", m.bwd_ms), 9);
        math_xs.push_back(double(N));
        math_peak.push_back(double(m.peak));
        math_costs.push_back(m);
      } else {
        math_cells = rcol("would need " + bytes(math_formula(N)), 31) + rcol("-", 9);
      }
      std::cout << rcol(std::to_string(N), 6) << " |" << math_cells << " |" << rcol(bytes(double(f.peak)), 11)
                << rcol(bytes(flash_formula(N)), 11) << rcol(fmt("%.0f", f.fwd_ms), 9) << rcol(fmt("%.0f", f.bwd_ms), 9)
                << " |" << rcol(run_math ? fmt("%.1fx", double(m.peak) / double(f.peak)) : "-", 11) << std::endl;
      xs.push_back(double(N));
      flash_peak.push_back(double(f.peak));
      flash_theory.push_back(flash_formula(N));
      math_theory.push_back(math_formula(N));
      flash_costs.push_back(f);
    }
  }
  auto growth = [](const std::vector<double>& y) { return y.size() < 2 ? 0.0 : y.back() / y[y.size() - 2]; };
  std::cout << "\n    last doubling of N: flash peak x" << fmt("%.2f", growth(flash_peak));
  if (math_peak.size() >= 2) std::cout << ", math peak x" << fmt("%.2f", growth(math_peak));
  std::cout << "  (x2 is linear, x4 quadratic)\n";
  if (!math_costs.empty()) {
    const size_t i = math_costs.size() - 1;
    const Cost& m = math_costs[i];
    const Cost& f = flash_costs[i];
    std::cout << "    at N = " << int64_t(math_xs[i]) << ": flash takes " << fmt("%.2f", (f.fwd_ms + f.bwd_ms) / (m.fwd_ms + m.bwd_ms))
              << "x the math kernel's time (forward " << fmt("%.2f", f.fwd_ms / m.fwd_ms) << "x, backward "
              << fmt("%.2f", f.bwd_ms / m.bwd_ms) << "x)\n";
  }
  say("The FLOPs of those runs (GEMMs only: 4 N^2 D per head forward, 10 N^2 D backward, times the\n"
      "fraction of the scores a causal kernel computes, section 3), the rate flash reached, and the\n"
      "arithmetic intensity of the forward at the least traffic each kernel allows: flash reads q,\n"
      "k, v and writes out (4 B H N D x 4 bytes); the math kernel also writes P and reads it back\n"
      "(2 B H N^2 x 4 bytes; it stores whole rows even when causal):");
  {
    std::cout << "\n" << rcol("N", 6) << rcol("fwd GFLOP", 11) << rcol("bwd GFLOP", 11) << rcol("flash fwd GFLOP/s", 19)
              << rcol("bwd GFLOP/s", 13) << rcol("flash FLOPs/B", 15) << rcol("math FLOPs/B", 14) << "\n";
    for (size_t i = 0; i < xs.size(); ++i) {
      const int64_t N = int64_t(xs[i]);
      const double all = double(kB * kH) * double(N) * double(N) * double(kD);
      const double fwd = 4.0 * all * forward_fraction(N), bwd = 10.0 * all * backward_fraction(N);
      const double io = 4.0 * io_bytes(N), p = 2.0 * double(kB * kH) * double(N) * double(N) * 4.0;
      std::cout << rcol(std::to_string(N), 6) << fmt("%11.2f", fwd / 1e9) << fmt("%11.2f", bwd / 1e9)
                << fmt("%19.1f", fwd / (flash_costs[i].fwd_ms * 1e6))
                << fmt("%13.1f", bwd / (flash_costs[i].bwd_ms * 1e6))
                << fmt("%15.0f", fwd / io) << fmt("%14.1f", fwd / (io + p)) << "\n";
    }
  }
  say("The flash column doubles with N, like the inputs: it is the four [N, D] tensors and lse,\n"
      "plus its tiles (1 MiB per thread in the backward, two [512, 256] tiles, also drawn from the\n"
      "allocator, which is why it sits a little above its formula). The math column quadruples: P\n"
      "is most of it, and the rest mostly its backward's [N, N] scratch, one per thread (64 MiB\n"
      "each at N = 4096), also from the allocator.\n\n"
      "Time is a closer contest. Both kernels skip the same causal half of the work. Flash does\n"
      "more arithmetic in the backward (S rebuilt for every tile) and runs many small GEMMs; the\n"
      "math kernel writes P to main memory in the forward and reads it back in the backward, 512\n"
      "MiB at N = 4096, while flash's tiles stay in cache. Which side wins depends on the machine\n"
      "(the line above says how it went here; times are best-of-3 (N <= 4096), on whatever else the\n"
      "machine was doing). What does not depend on the machine is the memory: at N = 16384 flash\n"
      "needs about 130 MiB where the math kernel would need 8 GiB, and at 128k tokens 1 GiB\n"
      "against 512 GiB.");
  {
    tt::viz::LinePlotOptions popt;
    popt.title = "attention memory, forward + backward, [1, 8, N, 64] causal";
    popt.x_label = "sequence length N";
    popt.y_label = "peak bytes above the inputs";
    popt.log_x = popt.log_y = true;
    popt.y_format = tt::viz::TickFormat::kBytes;
    std::vector<tt::viz::LineSeries> series = {{"math: 4 B H N D x 4 + B H N^2 x 4 (formula)", xs, math_theory, true},
                                               {"flash: 4 B H N D x 4 + B H N x 4 (formula)", xs, flash_theory, true},
                                               {"flash kernel, measured peak", xs, flash_peak}};
    if (!math_xs.empty()) series.push_back({"math kernel, measured peak", math_xs, math_peak});
    tt::viz::save_line_plot(figure("memory_math_vs_flash.png"), series, popt);
    std::cout << ">>> tt::viz::save_line_plot(figure(\"memory_math_vs_flash.png\"), series, popt);\n"
              << "    wrote " << std::filesystem::absolute(figure("memory_math_vs_flash.png")).string() << "\n";
  }

  say("One way to lose all of it: pass the causal mask as a tensor. An [N, N] mask is itself\n"
      "quadratic, and scaled_dot_product_attention turns a bool mask into an additive float bias\n"
      "of the mask's shape (0 or -inf, 4 bytes an entry), which the flash op also keeps for its\n"
      "backward. The flag is_causal describes the same mask in one bit, and lets the kernel skip\n"
      "tiles. Flash, forward + backward, at N = 4096, the mask built before the measurement:");
  {
    RUN(const int64_t N = 4096);
    RUN(Tensor pos = tt::arange(N, tt::kInt64));
    RUN(Tensor causal_mask = pos.reshape({N, 1}) >= pos.reshape({1, N}));  // [N, N] bool, true: key j <= query i
    RUN(Cost with_flag = measure(tt::SDPBackend::Flash, N, {}, true, /*runs=*/3));
    RUN(Cost with_tensor = measure(tt::SDPBackend::Flash, N, causal_mask, /*causal=*/false, /*runs=*/3));
    SHOW(bytes(double(with_flag.peak)) + ", " + fmt("%.0f", with_flag.fwd_ms + with_flag.bwd_ms) + " ms");
    SHOW(bytes(double(with_tensor.peak)) + ", " + fmt("%.0f", with_tensor.fwd_ms + with_tensor.bwd_ms) + " ms");
  }
  say("The second peak carries the 64 MiB bias, N^2 again; and every tile is computed, then\n"
      "masked, so the skipped half comes back too. A key-padding mask [B, 1, 1, N] stays linear:\n"
      "it broadcasts, and nothing of size N^2 is made.");
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_13";
  std::filesystem::path exe(argv[0]);
  g_opts.out_dir = ((exe.has_parent_path() ? exe.parent_path() : std::filesystem::path(".")) / "walkthrough_13_figures").string();
  w.usage = "[--quick] [--max-n N] [DIR]";
  w.usage_help =
      "  --quick     end the memory sweep of section 5 at N = 4096 (instead of 16384)\n"
      "  --max-n N   end it at N (at least 512; it doubles from 512)\n"
      "  DIR         where the PNG goes (default: walkthrough_13_figures beside the executable)\n";
  w.parse = [](int argc, char** argv, int i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      g_opts.max_n = 4096;
      return 1;
    }
    if (a == "--max-n") {
      char* end = nullptr;
      const long long v = i + 1 < argc ? std::strtoll(argv[i + 1], &end, 10) : 0;
      if (i + 1 >= argc || *argv[i + 1] == '\0' || *end != '\0' || v < 512) {
        std::cerr << "walkthrough_13: --max-n wants an integer >= 512\n";
        return -1;
      }
      g_opts.max_n = v;
      return 2;
    }
    if (a.empty() || a[0] == '-') return 0;
    g_opts.out_dir = a;
    return 1;
  };
  w.begin = [] {
    std::cout << "Module 13 - flash attention: the online softmax, tiles of queries against tiles of keys,\n"
                 "recomputation in the backward, and attention whose memory grows like N, not N^2.\n";
    std::cout.precision(5);
    std::filesystem::create_directories(g_opts.out_dir);
    std::cout << "Figures go to " << std::filesystem::absolute(g_opts.out_dir).string() << "\n";
  };
  w.steps = {
      {"1", "The quadratic wall, recalled", step_1_quadratic_wall},
      {"2", "The online softmax", step_2_online_softmax},
      {"3", "Tiles: queries against keys, and what a causal mask skips", step_3_tiles},
      {"4", "The backward: recompute P instead of storing it", step_4_backward},
      {"5", "Why memory becomes linear, measured", step_5_linear_memory},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.1f", secs) << " s. Next: modules/14_transformer, where the blocks built on\n"
                 "this attention become a small GPT.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}
