// Milestone 2022, flash attention (Dao et al.): exact attention in memory linear in N. The library's
// scaled_dot_product_attention with the flash kernel forced (SdpaKernelGuard) runs one head of
// N = 16,384 queries against as many keys (D = 64, float32, no causal mask: every score is
// computed). It passes when
//   * the output is exact: 64 query rows spread over N, each recomputed in float64 against all N
//     keys, differ from flash's rows by at most 1e-5 (measured: 2.8e-8, float32 rounding, on
//     outputs up to 0.05; 1.9e-7 with --causal, whose first rows reach 3.5);
//   * the allocator's peak during the forward, beyond q, k and v, stays at most the threshold (the
//     verdict's number; default 64 MiB, a sixteenth of the 1 GiB of [N, N] float32 scores the naive
//     kernel materializes at N = 16,384; flash measures 4.4 MiB on 2 threads: the 4 MiB output,
//     the logsumexp and each thread's tiles);
//   * that peak grows like N: peak(N) / peak(N/4) <= 5 (linear gives 4, quadratic 16; measured
//     3.3, the tiles being a constant part).
// The naive (math) kernel is measured too, up to N = 4096, for the figure: peak bytes against N,
// log-log, with its N^2 formula extended to N (flash_memory.png in --out).
//
//   milestone_flash [--n N] [--d D] [--causal] [--rows R] [--threshold BYTES] [--out DIR] [--seed S]
#include <cmath>
#include <cstdio>

#include <tinytorch/viz/plot.h>

#include "milestone.h"

namespace {

namespace F = tt::F;

struct Args {
  int64_t n = 16384;
  int64_t d = 64;
  bool causal = false;
  int64_t rows = 64;  // query rows checked against float64
  int64_t math_max_n = 4096;
  milestones::Common common{"runs/milestones/flash"};
};

// The default threshold: a sixteenth of the naive kernel's [N, N] float32 scores at N = 16,384.
constexpr double kDefaultThreshold = 16384.0 * 16384.0 * 4.0 / 16.0;
// The exactness tolerance against float64 (measured: 2.8e-8 at N = 16,384, 1.9e-7 with --causal).
constexpr double kTolerance = 1e-5;

struct Inputs {
  tt::Tensor q, k, v;  // [1, 1, N, D] float32
};

Inputs make_inputs(int64_t n, int64_t d, uint64_t seed) {
  tt::Generator gen;
  gen.manual_seed(seed);
  Inputs in;
  in.q = tt::randn({1, 1, n, d}, {}, &gen);
  in.k = tt::randn({1, 1, n, d}, {}, &gen);
  in.v = tt::randn({1, 1, n, d}, {}, &gen);
  return in;
}

// The allocator's peak of live tensor bytes during one forward with `backend` forced, beyond what
// was live before it (the inputs): the output, and every temporary the kernel allocated.
struct Run {
  tt::Tensor out;
  int64_t peak = 0;
};
Run forward(const Inputs& in, tt::SDPBackend backend, bool causal) {
  tt::NoGradGuard no_grad;
  tt::SdpaKernelGuard guard(backend);
  tt::memory::empty_cache();
  const int64_t before = tt::memory::stats().allocated_bytes;
  tt::memory::reset_peak_stats();
  Run r;
  r.out = F::scaled_dot_product_attention(in.q, in.k, in.v, {}, 0.0, causal);
  r.peak = tt::memory::stats().peak_allocated_bytes - before;
  return r;
}

// The largest |flash - exact| over `rows` query rows spread over N (the first and the last among
// them), each row's attention recomputed in float64 against all its keys.
struct Exactness {
  double max_error = NAN;  // max |flash - exact|
  double max_value = NAN;  // max |exact|, for scale
};
Exactness check_vs_float64(const Inputs& in, const tt::Tensor& out, int64_t rows, bool causal) {
  const int64_t n = in.q.size(2), d = in.q.size(3);
  std::vector<int64_t> index;
  for (int64_t i = 0; i < rows; ++i) index.push_back(rows == 1 ? n - 1 : i * (n - 1) / (rows - 1));
  const tt::Tensor idx = tt::tensor(index, {rows});
  const tt::Tensor q = in.q.reshape({n, d}).index_select(0, idx).to(tt::kFloat64);  // [R, D]
  const tt::Tensor k = in.k.reshape({n, d}).to(tt::kFloat64), v = in.v.reshape({n, d}).to(tt::kFloat64);
  tt::Tensor scores = q.matmul(k.t()) * (1.0 / std::sqrt(double(d)));  // [R, N]
  if (causal) {  // query i sees keys j <= i
    const tt::Tensor keys = tt::arange(n).reshape({1, n});
    const tt::Tensor rows_at = idx.reshape({rows, 1});
    scores = scores.masked_fill(keys > rows_at, -INFINITY);
  }
  const tt::Tensor exact = scores.softmax(1).matmul(v);  // [R, D]
  const tt::Tensor got = out.reshape({n, d}).index_select(0, idx).to(tt::kFloat64);
  return {(got - exact).abs().max().item<double>(), exact.abs().max().item<double>()};
}

}  // namespace

int main(int argc, char** argv) {
  tt::relaunch_with_runtime_env(argv);  // OpenBLAS's kernels; a busy machine shared (Note [threading policy])
  Args args;
  // Holds --threshold while the flags are read; the verdict below names N.
  milestones::Verdict flags("flash forward's peak memory beyond q, k, v, in bytes", kDefaultThreshold,
                            milestones::kAtMost, milestones::kBytes);
  examples::Cli cli("milestone_flash",
                    "2022, flash attention: the flash kernel computes exact attention at N = 16,384 (checked\n"
                    "against float64) while its peak memory stays far below the naive kernel's N x N scores\n"
                    "(1 GiB) and grows like N. Also measures the naive kernel up to N = 4096 for the figure.\n");
  cli.option("--n", args.n, "N", "sequence length (queries = keys), a multiple of 4");
  cli.option("--d", args.d, "D", "head dim");
  cli.flag("--causal", args.causal, "a causal mask (default: none, every score computed)");
  cli.option("--rows", args.rows, "R", "query rows checked against float64");
  flags.add_option(cli);
  args.common.add_options(cli);
  cli.parse(argc, argv);
  if (args.n < 4 || args.n % 4 != 0) cli.fail("--n must be a positive multiple of 4");
  if (args.d < 1 || args.rows < 1 || args.rows > args.n) cli.fail("--d must be positive and --rows in [1, N]");
  return examples::run_main("milestone_flash", [&] {
    const int64_t N = args.n, D = args.d;
    milestones::Verdict verdict(examples::format("flash forward's peak memory beyond q, k, v at N = %lld",
                                                 (long long)N),
                                flags.threshold(), milestones::kAtMost, milestones::kBytes);
    const double scores_bytes = double(N) * double(N) * 4;
    std::printf("attention of [1, 1, N, %lld] float32 q, k, v, %s, N = %lld; on %d thread(s)\n", (long long)D,
                args.causal ? "causal" : "no mask", (long long)N, tt::get_num_threads());
    std::printf("the naive kernel's scores alone at N = %lld: N x N x 4 bytes = %s\n", (long long)N,
                milestones::format_value(scores_bytes, milestones::kBytes).c_str());

    // The sizes, doubling from 512 (or N / 4 when smaller): the naive kernel up to min(4096, N),
    // flash up to N, N / 4 included.
    const int64_t first = std::min<int64_t>(512, N / 4);
    std::vector<int64_t> math_ns, flash_ns;
    for (int64_t n = first; n <= std::min(args.math_max_n, N); n *= 2) math_ns.push_back(n);
    for (int64_t n = first; n < N / 4; n *= 2) flash_ns.push_back(n);
    flash_ns.push_back(N / 4);
    if (N / 2 > N / 4) flash_ns.push_back(N / 2);
    flash_ns.push_back(N);

    // Warm up (thread pools, BLAS), outside the measurements.
    {
      const Inputs small = make_inputs(256, D, args.common.seed);
      forward(small, tt::SDPBackend::Flash, args.causal);
      forward(small, tt::SDPBackend::Math, args.causal);
    }

    std::vector<double> math_x, math_peak, flash_x, flash_peak;
    double peak_n = 0, peak_quarter = 0;
    Exactness exact;
    {
      examples::ProgressBar bar("measure", int64_t(math_ns.size() + flash_ns.size()), "tokens");
      for (int64_t n : math_ns) {
        const Inputs in = make_inputs(n, D, args.common.seed);
        const Run r = forward(in, tt::SDPBackend::Math, args.causal);
        math_x.push_back(double(n));
        math_peak.push_back(double(r.peak));
        bar.step(n, {{"N", double(n)}, {"naive MiB", double(r.peak) / (1 << 20)}});
      }
      for (int64_t n : flash_ns) {
        const Inputs in = make_inputs(n, D, args.common.seed);
        const Run r = forward(in, tt::SDPBackend::Flash, args.causal);
        flash_x.push_back(double(n));
        flash_peak.push_back(double(r.peak));
        if (n == N / 4) peak_quarter = double(r.peak);
        if (n == N) {
          peak_n = double(r.peak);
          exact = check_vs_float64(in, r.out, args.rows, args.causal);
        }
        bar.step(n, {{"N", double(n)}, {"flash MiB", double(r.peak) / (1 << 20)}});
      }
      bar.finish();
    }

    std::printf("\n%8s %16s %16s %16s\n", "N", "naive peak", "N^2 x 4 (scores)", "flash peak");
    for (size_t i = 0; i < flash_x.size(); ++i) {
      const double n = flash_x[i];
      std::string naive = "-";
      for (size_t j = 0; j < math_x.size(); ++j)
        if (math_x[j] == n) naive = milestones::format_value(math_peak[j], milestones::kBytes);
      std::printf("%8.0f %16s %16s %16s\n", n, naive.c_str(),
                  milestones::format_value(n * n * 4, milestones::kBytes).c_str(),
                  milestones::format_value(flash_peak[i], milestones::kBytes).c_str());
    }
    const double growth = peak_quarter > 0 ? peak_n / peak_quarter : INFINITY;
    std::printf("\nflash at N = %lld: %s, %.1fx less than the naive kernel's scores alone\n", (long long)N,
                milestones::format_value(peak_n, milestones::kBytes).c_str(), scores_bytes / peak_n);
    std::printf("flash peak(N) / peak(N/4) = %.2f (linear: 4, quadratic: 16)\n", growth);
    std::printf("exact: %lld query rows recomputed in float64 against all their keys: max |flash - exact| = %.3g"
                " (tolerance %g; the outputs reach %.3g)\n",
                (long long)args.rows, exact.max_error, kTolerance, exact.max_value);

    const std::string png = args.common.path("flash_memory.png");
    {
      std::vector<double> theory_x, theory_y;
      for (int64_t n = first; n <= N; n *= 2) theory_x.push_back(double(n)), theory_y.push_back(double(n) * n * 4);
      if (theory_x.empty() || theory_x.back() != double(N))
        theory_x.push_back(double(N)), theory_y.push_back(scores_bytes);
      tt::viz::LinePlotOptions opt;
      opt.title = examples::format("2022 flash attention: forward peak memory, D = %lld", (long long)D);
      opt.x_label = "sequence length N";
      opt.y_label = "peak bytes beyond q, k, v";
      opt.log_x = opt.log_y = true;
      opt.y_format = tt::viz::TickFormat::kBytes;
      std::vector<tt::viz::LineSeries> series = {{"naive: N x N x 4 bytes of scores (formula)", theory_x, theory_y, true},
                                                 {"flash kernel, measured", flash_x, flash_peak}};
      if (!math_x.empty()) series.insert(series.begin() + 1, {"naive (math) kernel, measured", math_x, math_peak});
      series.push_back({"threshold for flash at N (" + milestones::format_value(verdict.threshold(), milestones::kBytes) + ")",
                        {flash_x.front(), double(N)}, {verdict.threshold(), verdict.threshold()}, true});
      tt::viz::save_line_plot(png, series, opt);
    }
    std::printf("figure: %s\n", png.c_str());

    verdict.require(exact.max_error <= kTolerance,
                    examples::format("max |flash - float64| %.3g > %g", exact.max_error, kTolerance));
    verdict.require(growth <= 5.0, examples::format("peak(N) / peak(N/4) = %.2f > 5: not linear", growth));
    return verdict.finish(peak_n);
  });
}
