// tt_bench_gemm_bf16: OpenBLAS cblas_sgemm against tt::cpu::gemm_bf16 (native AVX512_BF16 kernel
// and the sgemm fallback), interleaved in one process, on square and small-transformer shapes in
// the NN, TN (A^T B) and NT (A B^T) layouts. Prints best-of-rounds GFLOP/s and per-round ratios.
//
//   tt_bench_gemm_bf16 [--threads N] [--rounds R] [--min-ms T] [--quick] [--cpu-time]
//
// --cpu-time times with the process's CPU time divided by the thread count instead of the wall
// clock: on a machine shared with other work it leaves out the time the process was not running
// (with one thread a fair stand-in for the wall time of a quiet machine; with more, waits in
// spinning barriers still count).
#include <cblas.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tinytorch/backend/cpu/blas_info.h"
#include "tinytorch/backend/cpu/cpu_features.h"
#include "tinytorch/backend/cpu/gemm_bf16.h"
#include "tinytorch/backend/runtime_info.h"
#include "tinytorch/backend/threads.h"

namespace {

using Clock = std::chrono::steady_clock;
using tt::BFloat16;
using tt::cpu::detail::Bf16GemmPath;

struct Shape {
  int64_t M, K, N;
  char layout[3];  // "NN", "TN" (a stored [K, M]), "NT" (b stored [N, K])
};

// One problem: float and bf16 copies of the same operands (the float ones hold the bf16 values).
struct Problem {
  Shape s;
  std::vector<float> af, bf, cf;
  std::vector<BFloat16> ab, bb;
  bool ta, tb;
  int64_t lda, ldb;

  explicit Problem(const Shape& shape) : s(shape) {
    ta = s.layout[0] == 'T';
    tb = s.layout[1] == 'T';
    lda = ta ? s.M : s.K;  // a stored [K, M] when transposed
    ldb = tb ? s.K : s.N;  // b stored [N, K] when transposed
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    ab.resize(size_t(s.M * s.K));
    bb.resize(size_t(s.K * s.N));
    for (auto& v : ab) v = BFloat16(u(rng));
    for (auto& v : bb) v = BFloat16(u(rng));
    af.assign(ab.begin(), ab.end());
    bf.assign(bb.begin(), bb.end());
    cf.assign(size_t(s.M * s.N), 0.0f);
  }
  // c [M, N] = a b with element strides of the stored layouts.
  void sgemm() {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(s.M), int(s.N),
                int(s.K), 1.0f, af.data(), int(lda), bf.data(), int(ldb), 0.0f, cf.data(), int(s.N));
  }
  void bf16(Bf16GemmPath path) {
    const int64_t sa0 = ta ? 1 : lda, sa1 = ta ? lda : 1;
    const int64_t sb0 = tb ? 1 : ldb, sb1 = tb ? ldb : 1;
    tt::cpu::detail::gemm_bf16_path(path, ab.data(), bb.data(), cf.data(), s.M, s.N, s.K, sa0, sa1, sb0, sb1, s.N,
                                    0.0);
  }
  double flops() const { return 2.0 * double(s.M) * double(s.N) * double(s.K); }
};

bool g_cpu_time = false;
int g_threads = 2;

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Seconds per call of f, over reps calls (wall clock, or CPU time / threads with --cpu-time).
template <typename F>
double time_calls(F&& f, int reps) {
  if (g_cpu_time) {
    const double c0 = process_cpu_seconds();
    for (int i = 0; i < reps; ++i) f();
    return (process_cpu_seconds() - c0) / g_threads / reps;
  }
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double>(Clock::now() - t0).count() / reps;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS's proper kernels; OpenMP's own wait policy, as PyTorch runs (Note [threading policy])
  tt::relaunch_with_runtime_env(argv, tt::RuntimePolicy::OpenMPDefault);
  int threads = 2, rounds = 7;
  double min_ms = 30.0;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (arg == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (arg == "--min-ms" && i + 1 < argc) min_ms = std::atof(argv[++i]);
    else if (arg == "--quick") quick = true;
    else if (arg == "--cpu-time") g_cpu_time = true;
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--rounds R] [--min-ms T] [--quick] [--cpu-time]\n", argv[0]);
      return 2;
    }
  }
  g_threads = threads;
  tt::set_num_threads(threads);
  tt::detail::apply_num_threads();
  const auto info = tt::cpu::blas_info();
  std::printf("# cpu: %s; avx512_bf16 %s; native kernel %s\n", tt::cpu::cpu_features().model.c_str(),
              tt::cpu::cpu_features().avx512_bf16 ? "yes" : "no", tt::cpu::gemm_bf16_native() ? "yes" : "no");
  std::printf("# blas: %s, core %s, %d threads; tinytorch threads %d; %d rounds, >= %.0f ms per timing\n",
              info.vendor.c_str(), info.core.c_str(), info.threads, tt::get_num_threads(), rounds, min_ms);
  std::printf("# clock: %s\n", g_cpu_time ? "process CPU time / threads" : "wall");
  std::printf("# each round times sgemm, native, fallback in turn (interleaved); GFLOP/s best of rounds;\n");
  std::printf("# ratio = native / sgemm GFLOP/s, best-of-rounds and per-round median [min, max]\n");

  std::vector<Shape> shapes;
  for (int64_t n : {256, 512, 1024, 2048}) shapes.push_back({n, n, n, "NN"});
  // A small transformer (d_model 128, d_ff 512, 2048 tokens, head dim 64): forward x W, and the
  // backward's A^T B (weight gradients: K is the token count) and A B^T (input gradients).
  const Shape transformer[] = {{2048, 128, 512, ""}, {2048, 512, 128, ""}, {2048, 64, 512, ""},
                               {512, 2048, 128, ""}, {128, 2048, 512, ""}};
  for (const Shape& t : transformer)
    for (const char* l : {"NN", "TN", "NT"}) {
      Shape s = t;
      std::memcpy(s.layout, l, 3);
      shapes.push_back(s);
    }
  if (quick) shapes.resize(4);

  std::printf("%-22s %9s %9s %9s %8s %22s %9s\n", "shape MxKxN layout", "sgemm", "native", "fallback", "ratio",
              "per-round med [min,max]", "fb/sgemm");
  for (const Shape& s : shapes) {
    Problem p(s);
    // Warm up each and size the repetitions so one timing lasts at least min_ms.
    const double t_est = std::max(time_calls([&] { p.sgemm(); }, 1), 1e-7);
    time_calls([&] { p.bf16(Bf16GemmPath::kNative); }, 1);
    time_calls([&] { p.bf16(Bf16GemmPath::kFallback); }, 1);
    const int reps = std::max(1, int(min_ms * 1e-3 / t_est));
    double best[3] = {1e30, 1e30, 1e30};
    std::vector<double> ratio;
    for (int r = 0; r < rounds; ++r) {
      const double ts = time_calls([&] { p.sgemm(); }, reps);
      const double tn = time_calls([&] { p.bf16(Bf16GemmPath::kNative); }, reps);
      const double tf = time_calls([&] { p.bf16(Bf16GemmPath::kFallback); }, reps);
      best[0] = std::min(best[0], ts);
      best[1] = std::min(best[1], tn);
      best[2] = std::min(best[2], tf);
      ratio.push_back(ts / tn);
    }
    char name[64];
    std::snprintf(name, sizeof name, "%lldx%lldx%lld %s", (long long)s.M, (long long)s.K, (long long)s.N, s.layout);
    const double g = p.flops() * 1e-9;
    char rr[64];
    std::snprintf(rr, sizeof rr, "%.2f [%.2f,%.2f]", median(ratio), *std::min_element(ratio.begin(), ratio.end()),
                  *std::max_element(ratio.begin(), ratio.end()));
    std::printf("%-22s %9.1f %9.1f %9.1f %8.2f %22s %9.2f\n", name, g / best[0], g / best[1], g / best[2],
                best[0] / best[1], rr, best[0] / best[2]);
    std::fflush(stdout);
  }
  return 0;
}
