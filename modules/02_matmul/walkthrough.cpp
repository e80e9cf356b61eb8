// Module 02 walkthrough: matrix multiplication, what it costs, and how fast this machine does it.
// Run it with `tools/tt walkthrough 02` (or build-*/modules/walkthrough_02). Part A shows the
// forms of matmul and that transposed views reach BLAS without copies; part B measures GFLOP/s
// against the machine's peak, the gap to naive and blocked loops, and the arithmetic intensity of the
// products the attention lessons are built from. It calls cblas_sgemm itself only to time raw
// OpenBLAS beside tinytorch, and times tt::cpu::gemm_blocked, the cache-blocked loop of the exercise.
// Every time is the best of N runs, N and the thread count printed beside it. Takes ~15-40 s on 2
// cores. Each section (A1 ... B6) is one function; `--step B4` reruns one alone (measuring again
// what it reads from B2 and B3), `--list` lists them.
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <tinytorch/backend/cpu/blas_info.h>
#include <tinytorch/backend/cpu/gemm_blocked.h>
#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, quietly, and SHOW / RUN / SHOW_ERROR

namespace {

std::string layout(const tt::Tensor& t) {
  std::ostringstream os;
  os << "shape " << t.shape() << "  strides " << t.strides() << "  contiguous "
     << (t.is_contiguous() ? "yes" : "no");
  return os.str();
}
#define LAYOUT(t) std::cout << "    " << #t << ": " << layout(t) << "\n"

// Allocations made by `f`, from the allocator's counter.
template <typename F>
int64_t allocations_during(F f) {
  int64_t before = tt::memory::stats().num_allocs;
  f();
  return tt::memory::stats().num_allocs - before;
}

// --- timing ------------------------------------------------------------------------------------

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best-of-N wall time of f() in seconds: one warm-up call, then at least `min_reps` timed calls
// and at least `min_total` seconds of them. The minimum is the run least disturbed by other work
// on the machine, which is what we want when asking "how fast can this go".
// g_runs is set to the number of timed calls, which every table prints beside its times.
int g_runs = 0;
template <typename F>
double best_seconds(F f, int min_reps = 3, double min_total = 0.25, int max_reps = 200) {
  f();
  double best = 1e30, total = 0;
  int r = 0;
  for (; r < max_reps && (r < min_reps || total < min_total); ++r) {
    double t0 = now();
    f();
    double dt = now() - t0;
    best = std::min(best, dt);
    total += dt;
  }
  g_runs = r;
  return best;
}

// Best-of-N of two functions timed in turn (f, g, f, g, ...), so that a burst of other work on
// the machine slows both alike rather than one of them.
template <typename F, typename G>
std::pair<double, double> best_seconds_paired(F f, G g, int min_reps = 5, double min_total = 1.0) {
  f();
  g();
  double best_f = 1e30, best_g = 1e30, total = 0;
  int r = 0;
  for (; r < 200 && (r < min_reps || total < min_total); ++r) {
    double t0 = now();
    f();
    double t1 = now();
    g();
    double t2 = now();
    best_f = std::min(best_f, t1 - t0);
    best_g = std::min(best_g, t2 - t1);
    total += t2 - t0;
  }
  g_runs = r;
  return {best_f, best_g};
}

double gemm_flops(double M, double N, double K) { return 2.0 * M * N * K; }
// The least traffic of a float32 GEMM: read A and B once, write C once.
double gemm_bytes(double M, double N, double K) { return 4.0 * (M * K + K * N + M * N); }

// "best of N runs, T threads": how a time below was measured (N from the last best_seconds call).
std::string how_timed(int threads) {
  return "best of " + std::to_string(g_runs) + " runs, " + std::to_string(threads) + " thread" +
         (threads == 1 ? "" : "s");
}

// --- the machine -------------------------------------------------------------------------------

struct Machine {
  int cores = 1;
  double mhz = 0;     // "cpu MHz" from /proc/cpuinfo, 0 when unknown
  int f32_lanes = 4;  // float32 lanes of the widest FMA-capable vector unit
  std::string simd = "sse";
  bool fma = false;
  std::string model;
};

Machine read_machine() {
  Machine m;
  m.cores = int(sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::string flags;
  while (std::getline(in, line)) {
    auto value = [&] { return line.substr(line.find(':') + 2); };
    if (m.mhz == 0 && line.rfind("cpu MHz", 0) == 0) m.mhz = std::stod(value());
    if (m.model.empty() && line.rfind("model name", 0) == 0) m.model = value();
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = " " + value() + " ";
  }
  auto has = [&](const char* f) { return flags.find(std::string(" ") + f + " ") != std::string::npos; };
  m.fma = has("fma");
  if (has("avx512f")) {
    m.f32_lanes = 16;
    m.simd = "avx512f";
  } else if (has("avx2") || has("avx")) {
    m.f32_lanes = 8;
    m.simd = has("avx2") ? "avx2" : "avx";
  }
  return m;
}

// cores x clock x float32 lanes x 2 (an FMA is 2 FLOPs) x 2 FMA units per core, in FLOP/s; 0 when
// the clock is unknown.
double theoretical_peak(const Machine& m) {
  const double flops_per_cycle = double(m.f32_lanes) * 2.0 /*FMA = 2 FLOPs*/ * 2.0 /*FMA units*/;
  return m.cores * m.mhz * 1e6 * flops_per_cycle;
}

// --- the naive loops ---------------------------------------------------------------------------

// c[i][j] = sum over k of a[i][k] * b[k][j], in the textbook (i, j, k) order. The inner loop
// walks down a column of b: n floats apart, a new cache line every step.
void naive_ijk(const float* a, const float* b, float* c, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
}

// The same sums in (i, k, j) order: the inner loop now walks rows of b and c with stride 1,
// so it reads whole cache lines and the compiler can vectorize it.
void naive_ikj(const float* a, const float* b, float* c, int n) {
  std::fill(c, c + int64_t(n) * n, 0.0f);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      const float aik = a[i * n + k];
      for (int j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
    }
}

double max_abs_diff(const tt::Tensor& x, const tt::Tensor& y) { return (x - y).abs().max().item<double>(); }

// One row of the arithmetic-intensity table: a (batched) GEMM of `batch` products
// [M, K] @ [K, N], float32, counting each operand read once and the output written once.
struct Workload {
  std::string name, shapes;
  double batch, M, N, K;
  double flops() const { return batch * gemm_flops(M, N, K); }
  double bytes() const { return 4.0 * batch * (M * K + K * N + M * N); }
};

// -----------------------------------------------------------------------------------------------

void step_a1_forms() {
  say("matmul follows PyTorch's rules. Two matrices: [M, K] @ [K, N] -> [M, N].");
  RUN(tt::Tensor a = tt::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}));
  RUN(tt::Tensor b = tt::tensor({{1.0, 0.0}, {0.0, 1.0}, {1.0, 1.0}}));
  SHOW(a.matmul(b));
  say("Two vectors give their dot product, a 0-d tensor:");
  SHOW(tt::matmul(tt::tensor({1.0, 2.0, 3.0}), tt::tensor({4.0, 5.0, 6.0})));
  say("A 1-D operand is treated as a row (on the left) or a column (on the right), and that dim\n"
      "is removed from the result:");
  SHOW(a.matmul(tt::tensor({1.0, 1.0, 1.0})));
  SHOW(tt::tensor({1.0, 1.0}).matmul(a));
  say("More dims are batch dims; they broadcast like elementwise shapes.");
  RUN(tt::Tensor batch_a = tt::randn({2, 1, 4, 3}));
  RUN(tt::Tensor batch_b = tt::randn({5, 3, 6}));
  SHOW(batch_a.matmul(batch_b).shape());
  say("A Linear layer is x @ W^T with W stored [out, in]; x may carry any batch dims:");
  RUN(tt::Tensor x = tt::randn({8, 16, 32}));
  RUN(tt::Tensor w = tt::randn({64, 32}));
  SHOW(x.matmul(w.t()).shape());
  say("bmm insists on 3-d operands with equal batch sizes; mm on 2-d; errors name the rule:");
  SHOW(tt::bmm(tt::randn({4, 2, 3}), tt::randn({4, 3, 5})).shape());
  SHOW_ERROR(tt::matmul(tt::randn({2, 3}), tt::randn({4, 5})));
  SHOW_ERROR(tt::mm(tt::randn({2, 2, 3}), tt::randn({3, 4})));
  say("float32 and float64 go to OpenBLAS (sgemm, dgemm). BLAS has no integer GEMM, so int64 runs\n"
      "a plain triple loop (the function you write in exercise mode):");
  SHOW(tt::tensor({{1, 2}, {3, 4}}).matmul(tt::tensor({{5, 6}, {7, 8}})));
}

// -----------------------------------------------------------------------------------------------

void step_a2_transposes() {
  say("BLAS reads a row-major matrix through a pointer, a transpose flag and a leading dimension\n"
      "(the distance between rows). A transposed view of a contiguous [N, K] matrix is exactly a\n"
      "'transposed' matrix with leading dimension K, so it goes in as it is.");
  RUN(tt::Tensor p = tt::randn({256, 128}));
  RUN(tt::Tensor q = tt::randn({256, 128}));
  RUN(tt::Tensor qt = q.t());
  LAYOUT(qt);
  SHOW(allocations_during([&] { tt::Tensor r = p.matmul(qt); }));
  say("One allocation: the output. The same holds for a block of columns: strides [128, 1] with\n"
      "only 64 columns used is a plain matrix whose leading dimension (128) exceeds its width.");
  RUN(tt::Tensor left = p.slice(1, 0, 64));
  LAYOUT(left);
  RUN(tt::Tensor right = tt::randn({64, 32}));
  SHOW(allocations_during([&] { tt::Tensor r = left.matmul(right); }));
  say("A view whose last dim has stride 2 is not a BLAS matrix at all; matmul makes it contiguous\n"
      "first, one extra allocation and copy:");
  RUN(tt::Tensor every_other = p.slice(1, 0, 128, 2));
  LAYOUT(every_other);
  SHOW(allocations_during([&] { tt::Tensor r = every_other.matmul(q.slice(1, 0, 64).t()); }));
  say("Both give the values of their contiguous copies:");
  SHOW(max_abs_diff(p.matmul(qt), p.matmul(qt.contiguous())));
  SHOW(max_abs_diff(every_other.matmul(q.slice(1, 0, 64).t()),
                    every_other.contiguous().matmul(q.slice(1, 0, 64).t().contiguous())));

  say("Attention splits C = H * D into heads with a view and a permute, then multiplies Q by K^T.\n"
      "Every one of those is a view, and the GEMM reads them in place:");
  RUN(const int64_t B = 2, T = 16, H = 4, D = 8, C = H * D);
  RUN(tt::Tensor qh = tt::randn({B, T, C}).view({B, T, H, D}).permute({0, 2, 1, 3}));
  RUN(tt::Tensor kh = tt::randn({B, T, C}).view({B, T, H, D}).permute({0, 2, 1, 3}));
  LAYOUT(qh);
  RUN(tt::Tensor kT = kh.transpose(-2, -1));
  LAYOUT(kT);
  SHOW(allocations_during([&] { tt::Tensor scores = qh.matmul(kT); }));
  say("Broadcast batch dims have stride 0: one [K, N] matrix serves every batch entry without\n"
      "being repeated in memory.");
  RUN(tt::Tensor xs = tt::randn({B, T, C}), shared_w = tt::randn({C, C}));
  SHOW(allocations_during([&] { tt::Tensor y = xs.matmul(shared_w); }));
}

// -----------------------------------------------------------------------------------------------

void step_a3_flops_bytes() {
  say("Each of the M*N outputs is a K-long dot product: K multiplies and K adds. So\n"
      "    FLOPs = 2 * M * N * K\n"
      "and the least traffic to memory is reading A and B once and writing C once:\n"
      "    bytes = elem_size * (M*K + K*N + M*N)\n"
      "Their ratio, FLOPs per byte, is the arithmetic intensity. For square n x n float32 it is\n"
      "2n^3 / 12n^2 = n/6: bigger matrices do more work per byte fetched.");
  for (double n : {64.0, 512.0, 4096.0})
    std::cout << "    n = " << fmt("%5.0f", n) << ": " << fmt("%10.3g", gemm_flops(n, n, n)) << " FLOPs, "
              << fmt("%10.3g", 12 * n * n) << " bytes, " << fmt("%7.1f", n / 6) << " FLOPs/byte\n";
}

// -----------------------------------------------------------------------------------------------

void step_b1_machine() {
  const Machine mc = read_machine();
  const tt::cpu::BlasInfo blas = tt::cpu::blas_info();
  std::cout << "    CPU: " << mc.model << "\n    online cores: " << mc.cores
            << ", BLAS: " << blas.vendor << " (kernels: " << blas.core << ", threads: " << blas.threads
            << ", tinytorch threads: " << tt::get_num_threads() << ")\n";
  {
    std::ifstream la("/proc/loadavg");
    std::string l1;
    la >> l1;
    std::cout << "    load average (1 min): " << l1
              << "   (other programs on these cores make every number below smaller)\n";
  }
  const double theoretical = theoretical_peak(mc);
  say("THEORETICAL peak, from /proc/cpuinfo:\n"
      "    cores x clock x float32 lanes x 2 (an FMA is 2 FLOPs) x FMA units per core");
  if (mc.mhz > 0) {
    std::cout
        << "    = " << mc.cores << " x " << fmt("%.0f", mc.mhz) << " MHz x " << mc.f32_lanes << " ("
        << mc.simd << ") x 2 x 2 = " << fmt("%.1f", theoretical / 1e9) << " GFLOP/s float32\n"
        << "    Assumptions: 2 FMA units per core (cpuinfo does not say; some cores have 1), and\n"
        << "    the listed clock (a hypervisor reports its nominal clock; turbo and sharing move it).\n";
  } else {
    std::cout << "    (no 'cpu MHz' in /proc/cpuinfo: theoretical peak unknown)\n";
  }
}

// -----------------------------------------------------------------------------------------------

// What B2 and B3 measure and later sections read: set by the step that measures it.
double g_measured_peak = 0;  // FLOP/s, the best raw sgemm rate of B2
double g_bandwidth = 0;      // bytes/s of a + b, B3

void step_b2_gflops() {
  const double theoretical = theoretical_peak(read_machine());
  say("Square float32 products n x n x n on " + std::to_string(tt::get_num_threads()) +
      " threads (tt::get_num_threads(), which OpenBLAS shares); the best of N\n"
      "runs, N in the last column (at least 5 and 1 s of them). 'OpenBLAS' calls cblas_sgemm directly\n"
      "on the same kind of buffers; the two are timed in turn, so load from other programs falls on\n"
      "both. Any gap between the columns is tinytorch's own overhead (shape checks, allocating\n"
      "the output). FLOPs/B is the arithmetic intensity 2n^3 / (4 x 3n^2) = n/6. MEASURED peak =\n"
      "the best raw sgemm rate seen in this table.");
  struct Row {
    int n;
    double tt_s, blas_s;
    int runs;
  };
  std::vector<Row> rows;
  double measured_peak = 0;
  for (int n : {128, 256, 512, 1024, 2048}) {
    tt::Tensor ma = tt::randn({n, n}), mb = tt::randn({n, n});
    tt::Tensor mc_out = tt::empty({n, n});
    const float* pa = ma.data_ptr<float>();
    const float* pb = mb.data_ptr<float>();
    float* pc = mc_out.data_ptr<float>();
    auto [tt_s, blas_s] = best_seconds_paired([&] { tt::Tensor r = ma.matmul(mb); },
                                              [&] {
                                                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n,
                                                            n, 1.0f, pa, n, pb, n, 0.0f, pc, n);
                                              });
    rows.push_back({n, tt_s, blas_s, g_runs});
    measured_peak = std::max(measured_peak, gemm_flops(n, n, n) / blas_s);
  }
  g_measured_peak = measured_peak;
  std::cout << "\n       n  FLOPs/B   tinytorch ms   tinytorch GFLOP/s   OpenBLAS GFLOP/s   tt/OpenBLAS   "
               "% measured peak  runs\n";
  for (const Row& r : rows) {
    double f = gemm_flops(r.n, r.n, r.n);
    std::cout << fmt("%8.0f", r.n) << fmt("%9.1f", f / gemm_bytes(r.n, r.n, r.n)) << fmt("%15.3f", r.tt_s * 1e3)
              << fmt("%20.1f", f / r.tt_s / 1e9) << fmt("%19.1f", f / r.blas_s / 1e9)
              << fmt("%14.2f", r.blas_s / r.tt_s) << fmt("%17.0f", 100.0 * f / r.tt_s / measured_peak)
              << fmt("%6.0f", r.runs) << "\n";
  }
  std::cout << "\n    MEASURED peak (best raw sgemm above): " << fmt("%.1f", measured_peak / 1e9)
            << " GFLOP/s";
  if (theoretical > 0)
    std::cout << " = " << fmt("%.0f", 100 * measured_peak / theoretical) << "% of the THEORETICAL "
              << fmt("%.1f", theoretical / 1e9) << " GFLOP/s";
  std::cout << "\n";
  say("Small products cannot reach the peak: 128^3 is only 4 MFLOPs, and the fixed costs (a call,\n"
      "packing panels of A and B, starting threads) are paid either way. If a large size comes out\n"
      "slower than a middle one, other work on the machine took time from the long runs (the two\n"
      "columns still agree): run it again, or on a quiet machine.");
}

// -----------------------------------------------------------------------------------------------

// B2's measured peak, measured again (quietly) when B2 did not run.
double measured_peak_of_b2() {
  if (g_measured_peak == 0) quietly(step_b2_gflops);
  return g_measured_peak;
}

void step_b3_bandwidth() {
  const double measured_peak = measured_peak_of_b2();
  say("The other roof is memory. a + b on 16M float32 reads 2 x 64 MiB and writes 64 MiB:");
  double bandwidth = 0;
  {
    tt::Tensor va = tt::randn({1 << 24}), vb = tt::randn({1 << 24});
    double s = best_seconds([&] { tt::Tensor r = va + vb; }, 3, 0.3);
    bandwidth = 3.0 * 4.0 * double(1 << 24) / s;
    std::cout << "    a + b: " << fmt("%.2f", s * 1e3) << " ms (" << how_timed(tt::get_num_threads()) << ") -> "
              << fmt("%.1f", bandwidth / 1e9) << " GB/s (bytes read + written / time)\n"
              << "    its arithmetic intensity: 1 FLOP per 12 bytes = 0.083 FLOPs/byte\n";
  }
  g_bandwidth = bandwidth;
  const double balance = measured_peak / bandwidth;
  std::cout << "    machine balance = measured peak / bandwidth = " << fmt("%.1f", measured_peak / 1e9)
            << " / " << fmt("%.1f", bandwidth / 1e9) << " = " << fmt("%.1f", balance) << " FLOPs/byte\n";
  say("Roofline: a kernel of intensity I FLOPs/byte can run at most min(peak, I x bandwidth).\n"
      "Below the balance point it waits on memory; above it, on arithmetic.");
}

// -----------------------------------------------------------------------------------------------

// B3's bandwidth, measured again (quietly) when B3 did not run.
double bandwidth_of_b3() {
  if (g_bandwidth == 0) quietly(step_b3_bandwidth);
  return g_bandwidth;
}

void step_b4_naive_loops() {
  // The random stream as A1 to B3 leave it (seed 0, from begin; 78,072 numbers drawn in A1 and A2,
  // two n x n matrices per n in B2, two vectors of 2^24 in B3), so that the error printed below
  // is the same when this step runs alone.
  resume_random_stream(0, 78072 + 2 * (128 * 128 + 256 * 256 + 512 * 512 + 1024 * 1024 + 2048 * 2048) +
                              2 * (1 << 24));
  say("Same FLOPs, very different speed. n = 256: 33.6 MFLOPs on 0.79 MB at the least, an arithmetic\n"
      "intensity of 256/6 = 42.7 FLOPs/byte for a loop that reads each number once (these loops do\n"
      "not: see below). The loops run on one thread; sgemm on " + std::to_string(tt::get_num_threads()) + ":");
  {
    const int n = 256;
    tt::Tensor na = tt::randn({n, n}), nb = tt::randn({n, n});
    tt::Tensor c1 = tt::empty({n, n}), c2 = tt::empty({n, n});
    const double f = gemm_flops(n, n, n);
    auto line = [&](const char* what, double s, int threads, double s_blas) {
      std::cout << "    " << what << fmt("%9.2f ms", s * 1e3) << fmt("%9.2f GFLOP/s", f / s / 1e9)
                << (s == s_blas ? std::string("   (the reference)")
                                : fmt("   %6.0fx slower than sgemm", s / s_blas))
                << "   (" << how_timed(threads) << ")\n";
    };
    double s_ijk = best_seconds(
        [&] { naive_ijk(na.data_ptr<float>(), nb.data_ptr<float>(), c1.data_ptr<float>(), n); }, 2, 0.0);
    const int runs_ijk = g_runs;
    double s_ikj = best_seconds(
        [&] { naive_ikj(na.data_ptr<float>(), nb.data_ptr<float>(), c2.data_ptr<float>(), n); }, 2, 0.0);
    const int runs_ikj = g_runs;
    tt::Tensor ia = tt::randint(-8, 8, {n, n}), ib = tt::randint(-8, 8, {n, n});
    double s_int = best_seconds([&] { tt::Tensor r = ia.matmul(ib); }, 2, 0.0);
    const int runs_int = g_runs;
    double s_blas = best_seconds([&] { tt::Tensor r = na.matmul(nb); });
    const int runs_blas = g_runs;
    tt::Tensor ref = na.matmul(nb);
    g_runs = runs_ijk;
    line("float32 loop, i-j-k order          ", s_ijk, 1, s_blas);
    g_runs = runs_ikj;
    line("float32 loop, i-k-j order          ", s_ikj, 1, s_blas);
    g_runs = runs_int;
    line("tinytorch int64 matmul (i-j-k loop)", s_int, 1, s_blas);
    g_runs = runs_blas;
    line("tinytorch float32 matmul (sgemm)   ", s_blas, tt::get_num_threads(), s_blas);
    std::cout << "    max |loop - sgemm| = "
              << fmt("%.2e", std::max(max_abs_diff(c1, ref), max_abs_diff(c2, ref)))
              << " (different summation orders round differently)\n";
  }
  say("Where the gap comes from:\n"
      "  * cache: the i-j-k loop reads b down a column, one float per 64-byte line, so each line\n"
      "    is fetched for 4 bytes of use. i-k-j reads b and c along rows instead.\n"
      "  * vectorization: a row-walking inner loop becomes SIMD code (several multiply-adds per\n"
      "    instruction); a strided scalar reduction cannot (reassociating float sums would\n"
      "    change the result, so the compiler won't).\n"
      "  * reuse: a BLAS kernel keeps a block of C in registers and packs panels of A and B into\n"
      "    L1/L2-sized buffers, so each loaded number is used dozens of times; it also uses FMA\n"
      "    and every core. The loops above use one core and no FMA (this file is built without\n"
      "    -march=native).");
}

// -----------------------------------------------------------------------------------------------

void step_b5_blocked() {
  const int threads = tt::get_num_threads();
  say("The i-k-j loop walks rows, but for every row of C it reads all of B: 4 K N bytes for 2 K N\n"
      "FLOPs, an arithmetic intensity near 1/2, far below the 42.7 the product allows. A cache-blocked\n"
      "loop cuts the columns of C and the steps of K into tiles of b: a [b, b] tile of B is read once\n"
      "and then used by every row while it sits in cache, and each row reads b numbers of A and reads\n"
      "and writes b of C per tile. That is 2 M b^2 FLOPs for about 4 (b^2 + 3 M b) bytes, an intensity\n"
      "near b/6, as long as the tile fits in cache (Note [blocked loop] in backend/cpu/gemm.cpp).\n"
      "tt::cpu::gemm_blocked is that loop (the second function you write in exercise mode); its rows\n"
      "are split across tinytorch's threads like any op. n = 1024, float32, " +
      std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") +
      ", against OpenBLAS on the same\nthreads:");
  RUN(const int64_t n = 1024);
  RUN(tt::Tensor A = tt::randn({n, n}), B = tt::randn({n, n}), C = tt::empty({n, n}));
  std::cout << ">>> tt::cpu::gemm_blocked(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), n, n, n, "
               "block);\n";
  const double f = gemm_flops(double(n), double(n), double(n));
  const float* pa = A.data_ptr<float>();
  const float* pb = B.data_ptr<float>();
  float* pc = C.data_ptr<float>();
  tt::Tensor ref = tt::empty({n, n});
  float* pr = ref.data_ptr<float>();
  const double s_blas = best_seconds(
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f, pa, int(n), pb, int(n),
                    0.0f, pr, int(n));
      },
      3, 0.0);
  const int runs_blas = g_runs;
  std::cout << "\n    block   tile of B   model FLOPs/B        ms   GFLOP/s   x OpenBLAS's time   runs\n";
  for (int64_t block : {16, 64, 256, 1024}) {
    const double s = best_seconds([&] { tt::cpu::gemm_blocked(pa, pb, pc, n, n, n, block); }, 3, 0.0);
    const double tile = 4.0 * double(block) * double(block);
    // b/6 while the [b, b] tile stays in cache; with b = n it is the i-k-j loop, B read once per row.
    const std::string model = block == n ? "~0.5 (i-k-j)" : fmt("%.1f", 1.0 / (2.0 / double(n) + 6.0 / double(block)));
    std::cout << fmt("%9.0f", double(block)) << fmt("%8.0f KiB", tile / 1024) << std::string(16 - model.size(), ' ')
              << model << fmt("%10.1f", s * 1e3) << fmt("%10.2f", f / s / 1e9) << fmt("%20.1f", s / s_blas)
              << fmt("%7.0f", g_runs) << "\n";
  }
  g_runs = runs_blas;
  std::cout << "    OpenBLAS sgemm" << fmt("%32.1f", s_blas * 1e3) << fmt("%10.2f", f / s_blas / 1e9)
            << fmt("%20.1f", 1.0) << fmt("%7.0f", runs_blas) << "\n    (best of N runs each, " << threads
            << " thread" << (threads == 1 ? "" : "s") << "; the product's own intensity is n/6 = "
            << fmt("%.1f", double(n) / 6) << " FLOPs/byte)\n";
  SHOW(max_abs_diff(C, ref));  // C holds the last run, b = n
  {
    // L1 and L2 per core as the OS reports them; the shared L3 (tens of MiB on a server; lscpu shows
    // it) is left out because virtual machines often misreport it.
    const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    auto kib = [](long bytes) { return bytes > 0 ? std::to_string(bytes / 1024) + " KiB" : std::string("?"); };
    std::cout << "    this CPU's data caches per core (sysconf): L1 " << kib(l1) << ", L2 " << kib(l2) << "; B is "
              << 4 * n * n / 1024 << " KiB, a [64, 64] tile 16 KiB\n";
  }
  say("Read the table against the caches. The model intensity grows with b only while a [b, b] tile\n"
      "of B stays in a cache close to the core; b = n is the i-k-j loop, which re-reads all of B per\n"
      "row. Whether that matters depends on where B lives: when B fits in the last-level cache (4 MiB\n"
      "against a 32 MiB L3 on the course machine; `lscpu` shows yours), the i-k-j loop is fed from\n"
      "that cache, not from memory, and blocking gains little or nothing; small tiles (16) even lose,\n"
      "paying loop overhead on inner loops too short to vectorize well (the README's section 5 has the\n"
      "course machine's numbers). What limits the loops then is the inner statement\n"
      "c[i][j] += a[i][k] * b[k][j] itself: two loads and a store for every multiply-add. OpenBLAS\n"
      "keeps a small block of C in registers for a whole run of k (no C traffic per k), packs its\n"
      "tiles into contiguous buffers and uses the widest FMA instructions of the CPU, where this\n"
      "loop is compiled for plain x86-64. Blocking is the first step of that ladder, and the one that\n"
      "matters once B outgrows the caches (try n = 4096 with `--step B5` after editing n, if you have\n"
      "a minute per run).");
}

// -----------------------------------------------------------------------------------------------

void step_b6_intensity() {
  const double measured_peak = measured_peak_of_b2(), bandwidth = bandwidth_of_b3(), balance = measured_peak / bandwidth;
  say("B batch, T sequence, C embedding, H heads, D = C / H head dim; float32.\n"
      "  projection (each of Q, K, V, out): [B*T, C] @ [C, C]\n"
      "  scores Q K^T                     : [B, H, T, D] @ [B, H, D, T] -> [B, H, T, T]\n"
      "  weighted values P V              : [B, H, T, T] @ [B, H, T, D] -> [B, H, T, D]\n"
      "'bound' compares the intensity with this machine's balance (" +
      fmt("%.1f", balance) +
      " FLOPs/byte); 'roofline ms' is\n"
      "max(FLOPs / measured peak, bytes / bandwidth); 'measured ms' is our matmul on " +
      std::to_string(tt::get_num_threads()) + " threads, the best of\n'runs' runs.");
  std::cout << "\n  " << std::string(114, '-') << "\n"
            << "     T  product        shapes                                  GFLOPs      MB  FLOPs/B  bound"
               "    roofline ms  measured ms  runs\n"
            << "  " << std::string(114, '-') << "\n";
  bool beat_roofline = false;
  for (int64_t Tn : {256, 1024}) {
    const int64_t Bn = 8, Cn = 512, Hn = 8, Dn = Cn / Hn;
    auto dims = [](std::initializer_list<int64_t> d) {
      std::ostringstream os;
      os << tt::Shape(d);
      return os.str();
    };
    std::vector<Workload> work = {
        {"projection", dims({Bn * Tn, Cn}) + " @ " + dims({Cn, Cn}), 1, double(Bn * Tn), double(Cn),
         double(Cn)},
        {"Q K^T", dims({Bn, Hn, Tn, Dn}) + " @ " + dims({Bn, Hn, Dn, Tn}), double(Bn * Hn), double(Tn),
         double(Tn), double(Dn)},
        {"P V", dims({Bn, Hn, Tn, Tn}) + " @ " + dims({Bn, Hn, Tn, Dn}), double(Bn * Hn), double(Tn),
         double(Dn), double(Tn)},
    };
    // The operands, laid out as the attention lesson will have them.
    tt::Tensor xp = tt::randn({Bn * Tn, Cn}), wp = tt::randn({Cn, Cn});
    tt::Tensor qa = tt::randn({Bn, Hn, Tn, Dn}), ka = tt::randn({Bn, Hn, Tn, Dn}),
               va = tt::randn({Bn, Hn, Tn, Dn});
    tt::Tensor pa = tt::rand({Bn, Hn, Tn, Tn});
    std::vector<double> measured;
    std::vector<int> runs;
    for (int which = 0; which < 3; ++which) {
      measured.push_back(best_seconds(
          [&] {
            tt::Tensor r = which == 0   ? xp.matmul(wp.t())
                           : which == 1 ? qa.matmul(ka.transpose(-2, -1))
                                        : pa.matmul(va);
          },
          2, 0.2));
      runs.push_back(g_runs);
    }
    for (size_t i = 0; i < work.size(); ++i) {
      const Workload& wl = work[i];
      double ai = wl.flops() / wl.bytes();
      double roof = std::max(wl.flops() / measured_peak, wl.bytes() / bandwidth);
      std::printf("  %4lld  %-13s  %-38s %7.2f %7.1f %8.1f  %-7s %11.2f %12.2f %5d\n", (long long)Tn,
                  wl.name.c_str(), wl.shapes.c_str(), wl.flops() / 1e9, wl.bytes() / 1e6, ai,
                  ai >= balance ? "compute" : "memory", roof * 1e3, measured[i] * 1e3, runs[i]);
      beat_roofline = beat_roofline || measured[i] < roof;
    }
    std::fflush(stdout);
  }
  std::cout << "  " << std::string(114, '-') << "\n";
  if (beat_roofline)
    say("A measured time below its roofline means the machine was busier while the peak and the\n"
        "bandwidth were measured (B2, B3) than it is now: on a shared machine every rate here is a\n"
        "lower bound on what the hardware can do.");
  say("Read it this way:\n"
      "  * A projection approaches C/4 FLOPs per byte once B*T >> C: compute bound, near peak.\n"
      "  * Q K^T and P V have K = D = 64 or N = D = 64: thin products that BLAS runs below its\n"
      "    square-matrix rate, so 'measured' trails 'roofline' more than for the projection.\n"
      "  * Q K^T and P V have intensity under D/2 whatever T is (each output of [T, T] costs only\n"
      "    2D FLOPs), and the [B, H, T, T] matrix they write and read grows as T^2: at T = 1024\n"
      "    it is 256 MiB per product. On a GPU, whose balance is hundreds of FLOPs per byte,\n"
      "    these products are memory bound. Module 12 measures that T^2 memory; module 13 (flash\n"
      "    attention) never writes the T x T matrix at all.");
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_02";
  w.begin = [] {
    std::cout << "Module 02 - matmul: GEMM through OpenBLAS, batched and broadcast matmul,\n"
                 "FLOPs, bytes and arithmetic intensity, measured on this machine.\n";
    tt::manual_seed(0);
  };
  w.steps = {
      {"A1", "The forms of matmul", step_a1_forms},
      {"A2", "Transposes are flags, not copies", step_a2_transposes},
      {"A3", "Counting FLOPs and bytes", step_a3_flops_bytes},
      {"B1", "This machine", step_b1_machine},
      {"B2", "GFLOP/s of our matmul, next to raw OpenBLAS", step_b2_gflops},
      {"B3", "Memory bandwidth, and the roofline", step_b3_bandwidth},
      {"B4", "Why the textbook triple loop is slow", step_b4_naive_loops},
      {"B5", "A cache-blocked loop, timed against OpenBLAS", step_b5_blocked},
      {"B6", "Arithmetic intensity of the transformer's products", step_b6_intensity},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.1f", secs) << " s. Next: modules/03_activations.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}

