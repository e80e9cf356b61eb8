// The timing loop, statistics and report of tt_bench. Knows nothing about any framework: it
// only calls the Prepared closures the impl_*.cpp files hand it.
//
// Note [interleaving]
// ~~~~~~~~~~~~~~~~~~~
// The machine is shared and noisy: its load drifts over seconds. Timing all of A, then all of
// B would charge that drift to whichever impl ran in the bad second. So each workload runs in
// rounds, and every round times one sample of every impl (A B C, then B C A, C A B, ...: the
// start rotates so no impl always runs right after the same other one). A sample repeats the op
// `iters` times, chosen once per workload so that the slowest impl's sample lasts about
// spec.sample_seconds; every impl uses the same `iters`.
//
// Note [ratios]
// ~~~~~~~~~~~~~
// A ratio is a SPEED ratio of tinytorch over another impl X: time_X / time_tinytorch, so > 1
// means tinytorch is faster, and for GEMM it equals gflops_tinytorch / gflops_X.
//  * med_ratio: for every round r, time_X[r] / time_tinytorch[r] (two samples taken moments
//    apart, so load drift mostly cancels), then the median over rounds. Targets are judged on
//    this number.
//  * min_ratio: min over rounds of time_X / min over rounds of time_tinytorch: best case
//    against best case, printed as a cross-check.
// A per-op-time target (dispatch) is judged on tinytorch's median per-op time over rounds.
//
// Note [separate process]
// ~~~~~~~~~~~~~~~~~~~~~~~
// An external impl (ExternalImpl: PyTorch 2 through tools/bench_pytorch_cpu.py) runs as one
// child process after every in-process round is over, timing each workload with the same method
// on its own. Nothing pairs its samples with tinytorch's, so its ratios are of whole runs:
// med_ratio = its median per-op time / tinytorch's median, min_ratio = min / min. A drift in
// load between the two runs goes straight into them: they are less robust to noise than the
// interleaved ratios, and the table says so under its rows.
#include "harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <regex>

#include <sys/resource.h>

namespace ttbench {

void fill_uniform(float* data, int64_t n, uint64_t seed) {
  // splitmix64 of (seed, index): any element can be computed alone, so the fill is the same
  // however it is split up.
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + uint64_t(i) * 0xBF58476D1CE4E5B9ull + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    data[i] = float(z >> 40) * (1.0f / 16777216.0f);  // 24 random bits -> [0, 1)
  }
}

void fill_uniform(float* data, int64_t n, uint64_t seed, float lo, float hi) {
  fill_uniform(data, n, seed);
  for (int64_t i = 0; i < n; ++i) data[i] = lo + (hi - lo) * data[i];
}

double abs_checksum(const float* data, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::fabs(double(data[i]));
  return s;
}

double checksum(const float* data, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += data[i];
  return s;
}

void do_not_optimize(const void* p) { asm volatile("" : : "g"(p) : "memory"); }

namespace {

using Clock = std::chrono::steady_clock;

// One sample: wall time, plus two diagnostics that explain most surprises: CPU time of the
// whole process (cpu / wall = cores kept busy: ~threads when the op is parallel and the machine
// is quiet) and minor page faults (fresh pages the kernel had to map and zero).
struct Sample {
  double wall_s = 0, cpu_s = 0;
  long faults = 0;
};

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

long minor_faults() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

// Never inlined: profilers anchor on it (callgrind --toggle-collect='*time_sample*' counts the
// timed ops only, not LibTorch's start-up).
__attribute__((noinline)) Sample time_sample(const std::function<void()>& run, int64_t iters) {
  const long f0 = minor_faults();
  const double c0 = process_cpu_seconds();
  auto t0 = Clock::now();
  for (int64_t i = 0; i < iters; ++i) run();
  auto t1 = Clock::now();
  Sample s;
  s.cpu_s = process_cpu_seconds() - c0;
  s.faults = minor_faults() - f0;
  s.wall_s = std::chrono::duration<double>(t1 - t0).count();
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// Milliseconds with a sensible number of digits, never in exponent form for our range.
std::string fmt_ms(double ms) {
  char buf[64];
  if (ms >= 100)
    std::snprintf(buf, sizeof buf, "%.1f", ms);
  else if (ms >= 1)
    std::snprintf(buf, sizeof buf, "%.3f", ms);
  else
    std::snprintf(buf, sizeof buf, "%.6f", ms);
  return buf;
}

// The start of a result line: `workload=... impl=... ms_min=... ms_med=...`, then GFLOP/s and
// per-op µs where the workload has them. Times in seconds per op; the caller ends the line.
void print_times(const WorkloadSpec& spec, const std::string& impl, double t_min, double t_med) {
  std::printf("workload=%s impl=%s ms_min=%s ms_med=%s", spec.name.c_str(), impl.c_str(),
              fmt_ms(t_min * 1e3).c_str(), fmt_ms(t_med * 1e3).c_str());
  if (spec.flops > 0) std::printf(" gflops=%.1f", spec.flops / t_med * 1e-9);
  if (spec.per_op_micros) std::printf(" us_min=%.3f us_med=%.3f", t_min * 1e6, t_med * 1e6);
}

struct ImplRun {
  std::string impl;
  std::vector<double> per_op_s;  // one per round
  std::vector<double> cores;     // cpu / wall, one per round
  std::vector<double> faults;    // minor page faults per op, one per round
  double check = NAN;
  bool check_ok = true;
  double peak_bytes = NAN;  // Prepared::peak_bytes, when the impl measures it
};

// A row of an external impl (Note [separate process]), once checked against tinytorch's checksum.
struct ExternalRun {
  std::string impl;
  ExternalRow row;
  bool check_ok = true;
};

struct WorkloadRun {
  const WorkloadSpec* spec = nullptr;
  std::vector<ImplRun> runs;  // tinytorch first when it takes part; empty when only external impls do
  std::vector<ExternalRun> external;
  int64_t iters = 1;
};

const ImplRun* find_run(const WorkloadRun& w, const std::string& impl) {
  for (const ImplRun& r : w.runs)
    if (r.impl == impl) return &r;
  return nullptr;
}

// Did `impl` report anything for this workload, in process or out (a skipped row counts)?
bool took_part(const WorkloadRun& w, const std::string& impl) {
  if (find_run(w, impl)) return true;
  for (const ExternalRun& e : w.external)
    if (e.impl == impl) return true;
  return false;
}

// Prepares every impl of one workload, checks they agree, warms up, calibrates and times the
// interleaved rounds (Note [interleaving]). Prints one line per impl.
WorkloadRun run_workload(const WorkloadSpec& spec, const std::vector<const Impl*>& impls,
                         const Options& opts) {
  WorkloadRun out;
  out.spec = &spec;
  std::vector<Prepared> prepared;
  for (const Impl* impl : impls) {
    prepared.push_back(impl->factories.at(spec.name)());
    ImplRun r;
    r.impl = impl->name;
    out.runs.push_back(r);
  }
  const size_t n = prepared.size();

  // Same inputs, same answer: compare every checksum with the first impl's (tinytorch's).
  for (size_t i = 0; i < n; ++i) out.runs[i].check = prepared[i].check();
  for (size_t i = 0; i < n; ++i)
    if (prepared[i].peak_bytes) out.runs[i].peak_bytes = prepared[i].peak_bytes();
  for (size_t i = 1; i < n; ++i) {
    double a = out.runs[i].check, ref = out.runs[0].check;
    if (!(std::fabs(a - ref) <= spec.check_rtol * std::fabs(ref))) {
      out.runs[i].check_ok = false;
      std::printf("# CHECK MISMATCH workload=%s impl=%s checksum=%.9g %s=%.9g\n", spec.name.c_str(),
                  out.runs[i].impl.c_str(), a, out.runs[0].impl.c_str(), ref);
    }
  }

  // Warm-up (untimed, interleaved across impls), then calibration: per impl, time a doubling
  // batch until it lasts long enough to estimate one op; the slowest impl sets `iters`.
  for (int w = 0; w < opts.warmup; ++w)
    for (size_t i = 0; i < n; ++i) prepared[i].run();
  double slowest_op_s = 0;
  for (size_t i = 0; i < n; ++i) {
    const double enough = std::min(0.02, spec.sample_seconds);
    int64_t batch = 1;
    double t = time_sample(prepared[i].run, batch).wall_s;
    while (t < enough && batch < (int64_t(1) << 30)) {
      batch *= 2;
      t = time_sample(prepared[i].run, batch).wall_s;
    }
    slowest_op_s = std::max(slowest_op_s, t / double(batch));
  }
  out.iters = std::max<int64_t>(1, int64_t(std::ceil(spec.sample_seconds / slowest_op_s)));

  const int rounds = opts.rounds > 0 ? opts.rounds : spec.rounds;
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < n; ++k) {
      size_t i = (size_t(r) + k) % n;
      Sample s = time_sample(prepared[i].run, out.iters);
      out.runs[i].per_op_s.push_back(s.wall_s / double(out.iters));
      out.runs[i].cores.push_back(s.cpu_s / s.wall_s);
      out.runs[i].faults.push_back(double(s.faults) / double(out.iters));
    }

  for (const ImplRun& r : out.runs) {
    double t_min = min_of(r.per_op_s), t_med = median(r.per_op_s);
    print_times(spec, r.impl, t_min, t_med);
    if (!std::isnan(r.peak_bytes)) std::printf(" peak_mb=%.1f", r.peak_bytes / (1024.0 * 1024.0));
    std::printf(" rounds=%d iters=%lld cores_busy=%.2f faults_per_op=%.0f%s\n", rounds,
                (long long)out.iters, median(r.cores), median(r.faults),
                r.check_ok ? "" : " check=MISMATCH");
  }
  std::fflush(stdout);
  return out;
}

// The ratio target `w` has against `impl`, if any.
const Target* ratio_target(const WorkloadRun& w, const std::string& impl) {
  for (const Target& t : w.spec->targets)
    if (t.kind == Target::kRatioAtLeast && t.against == impl) return &t;
  return nullptr;
}

// One row of the ratio table from its two ratios; returns its verdict ("PASS", "MISS", "WRONG"
// or "-").
std::string print_ratio(const WorkloadRun& w, const std::string& impl, double med, double best, bool check_ok,
                        const Target* target) {
  std::string target_text = "-", verdict = "-";
  if (target) {
    char buf[32];
    std::snprintf(buf, sizeof buf, ">= %.2f", target->value);
    target_text = buf;
    verdict = !check_ok ? "WRONG" : (med >= target->value ? "PASS" : "MISS");
  }
  // A miss whose best-case ratio passes is as likely load noise as a real gap: say so.
  const char* hint = verdict == "MISS" && best >= target->value ? "  (min_ratio passes: noise?)" : "";
  std::printf("%-18s %-12s %10.3f %10.3f  %-12s %s%s\n", w.spec->name.c_str(), impl.c_str(), med, best,
              target_text.c_str(), verdict.c_str(), hint);
  return verdict;
}

// An in-process impl against tinytorch: per-round ratios (Note [ratios]).
std::string print_ratio_row(const WorkloadRun& w, const ImplRun& tt, const ImplRun& other) {
  std::vector<double> per_round;
  for (size_t r = 0; r < tt.per_op_s.size() && r < other.per_op_s.size(); ++r)
    per_round.push_back(other.per_op_s[r] / tt.per_op_s[r]);
  const double best = min_of(other.per_op_s) / min_of(tt.per_op_s);
  return print_ratio(w, other.impl, median(per_round), best, other.check_ok, ratio_target(w, other.impl));
}

// An external impl against tinytorch: whole-run ratios (Note [separate process]). A skipped row
// has no ratio; its target, if any, is n/a.
std::string print_external_row(const WorkloadRun& w, const ImplRun& tt, const ExternalRun& e) {
  const Target* target = ratio_target(w, e.impl);
  if (!e.row.skipped.empty()) {
    char target_text[32] = "-";
    if (target) std::snprintf(target_text, sizeof target_text, ">= %.2f", target->value);
    std::printf("%-18s %-12s %10s %10s  %-12s %s\n", w.spec->name.c_str(), e.impl.c_str(), "-", "-", target_text,
                target ? "n/a (skipped)" : "- (skipped)");
    return target ? "n/a" : "-";
  }
  const double med = e.row.ms_med / (median(tt.per_op_s) * 1e3);
  const double best = e.row.ms_min / (min_of(tt.per_op_s) * 1e3);
  return print_ratio(w, e.impl, med, best, e.check_ok, target);
}

// Runs one external impl on every workload of `results` (Note [separate process]) and prints its
// lines as they arrive, each checked against tinytorch's checksum when both have one.
void run_external(const ExternalImpl& ext, std::vector<WorkloadRun>& results) {
  std::vector<std::string> names;
  for (const WorkloadRun& w : results) names.push_back(w.spec->name);
  const std::string note = ext.run(names, [&](const ExternalRow& row) {
    WorkloadRun* w = nullptr;
    for (WorkloadRun& candidate : results)
      if (candidate.spec->name == row.workload) w = &candidate;
    if (w == nullptr) return;
    ExternalRun e{ext.name, row, true};
    if (!row.skipped.empty()) {
      std::printf("workload=%s impl=%s skipped=%s\n", row.workload.c_str(), ext.name.c_str(), row.skipped.c_str());
    } else {
      const ImplRun* tt = find_run(*w, "tinytorch");
      if (tt && row.has_check && !std::isnan(tt->check) &&
          !(std::fabs(row.check - tt->check) <= w->spec->check_rtol * std::fabs(tt->check))) {
        e.check_ok = false;
        std::printf("# CHECK MISMATCH workload=%s impl=%s checksum=%.9g tinytorch=%.9g\n", row.workload.c_str(),
                    ext.name.c_str(), row.check, tt->check);
      }
      print_times(*w->spec, ext.name, row.ms_min * 1e-3, row.ms_med * 1e-3);
      std::printf("%s%s\n", row.fields.c_str(), e.check_ok ? "" : " check=MISMATCH");
    }
    std::fflush(stdout);
    w->external.push_back(e);
  });
  std::printf("# %s: %s\n", ext.name.c_str(), note.c_str());
  std::fflush(stdout);
}

// Profiling mode (Options::profile_ops): a fixed number of ops per impl and nothing else, so
// that a profiler's totals divide cleanly into per-op costs.
void profile_workload(const WorkloadSpec& spec, const std::vector<const Impl*>& impls, int64_t ops) {
  for (const Impl* impl : impls) {
    Prepared prepared = impl->factories.at(spec.name)();
    Sample s = time_sample(prepared.run, ops);
    std::printf("workload=%s impl=%s ops=%lld us_per_op=%.3f cores_busy=%.2f faults_per_op=%.0f\n",
                spec.name.c_str(), impl->name.c_str(), (long long)ops, s.wall_s / double(ops) * 1e6,
                s.cpu_s / s.wall_s, double(s.faults) / double(ops));
    std::fflush(stdout);
  }
}

}  // namespace

int run_benchmarks(const std::vector<WorkloadSpec>& workloads, const std::vector<Impl>& impls,
                   const std::vector<ExternalImpl>& external, const Options& opts) {
  std::regex filter(opts.filter.empty() ? std::string(".*") : opts.filter);
  std::vector<WorkloadRun> results;
  int matched = 0;
  for (const WorkloadSpec& spec : workloads) {
    if (!std::regex_search(spec.name, filter)) continue;
    std::vector<const Impl*> taking_part;
    for (const Impl& impl : impls)
      if (impl.factories.count(spec.name)) taking_part.push_back(&impl);
    // External impls take part in every workload (marking those they cannot run), but not in
    // profiling mode: a profiler attached to this process would not see them.
    const bool external_part = !external.empty() && opts.profile_ops == 0;
    if (taking_part.empty() && !external_part) continue;
    ++matched;
    if (opts.profile_ops > 0) {
      profile_workload(spec, taking_part, opts.profile_ops);
    } else if (taking_part.empty()) {
      WorkloadRun only_external;
      only_external.spec = &spec;
      results.push_back(only_external);
    } else {
      results.push_back(run_workload(spec, taking_part, opts));
    }
  }
  if (matched == 0) {
    std::printf("no workload matches --filter '%s' (see --list)\n", opts.filter.c_str());
    return 2;
  }
  if (opts.profile_ops > 0) return 0;
  for (const ExternalImpl& ext : external) run_external(ext, results);

  std::printf("\n== ratios: tinytorch vs each impl (speed ratio, > 1 = tinytorch faster; "
              "med_ratio = median of per-round ratios) ==\n");
  std::printf("%-18s %-12s %10s %10s  %-12s %s\n", "workload", "vs", "med_ratio", "min_ratio", "target",
              "result");
  int pass = 0, miss = 0, na = 0;
  bool external_ratios = false;
  auto tally = [&](const std::string& v) {
    if (v == "PASS") ++pass;
    else if (v == "MISS" || v == "WRONG") ++miss;
    else if (v == "n/a") ++na;
  };
  for (const WorkloadRun& w : results) {
    const ImplRun* tt = find_run(w, "tinytorch");
    for (const ImplRun& other : w.runs) {
      if (!tt || &other == tt) continue;
      tally(print_ratio_row(w, *tt, other));
    }
    for (const ExternalRun& e : w.external) {
      if (!tt) continue;
      external_ratios = external_ratios || e.row.skipped.empty();
      tally(print_external_row(w, *tt, e));
    }
    for (const Target& t : w.spec->targets) {
      if (t.kind == Target::kMicrosAtMost) {
        if (!tt) continue;
        double med_us = median(tt->per_op_s) * 1e6, min_us = min_of(tt->per_op_s) * 1e6;
        char target_text[32];
        std::snprintf(target_text, sizeof target_text, "<= %.2f us", t.value);
        std::string v = med_us <= t.value ? "PASS" : "MISS";
        // As for ratios: a miss whose best round passes is as likely load noise as a real gap.
        const char* hint = v == "MISS" && min_us <= t.value ? "  (min passes: noise?)" : "";
        std::printf("%-18s %-12s %10.3f %10.3f  %-12s %s%s\n", w.spec->name.c_str(), "per-op us", med_us,
                    min_us, target_text, v.c_str(), hint);
        tally(v);
      } else if (t.kind == Target::kGemmShareAtLeast) {
        // Note [GEMM share]: an efficiency target, judged against the sgemm speed of this very
        // run (OpenBLAS's matmul_4096), so machine speed and load cancel out.
        const WorkloadRun* gemm = nullptr;
        for (const WorkloadRun& g : results)
          if (g.spec->name == "matmul_4096") gemm = &g;
        const ImplRun* blas = gemm ? find_run(*gemm, "openblas") : nullptr;
        if (!tt || !blas || w.spec->flops <= 0) {
          std::printf("%-18s %-12s %10s %10s  >= %-9.2f n/a (include matmul_4096 in --filter)\n",
                      w.spec->name.c_str(), "sgemm share", "-", "-", t.value);
          tally("n/a");
          continue;
        }
        const double share_med = median(blas->per_op_s) / gemm->spec->flops * w.spec->flops / median(tt->per_op_s);
        const double share_best = min_of(blas->per_op_s) / gemm->spec->flops * w.spec->flops / min_of(tt->per_op_s);
        char target_text[32];
        std::snprintf(target_text, sizeof target_text, ">= %.2f", t.value);
        std::string v = share_med >= t.value ? "PASS" : "MISS";
        const char* hint = v == "MISS" && share_best >= t.value ? "  (min passes: noise?)" : "";
        std::printf("%-18s %-12s %10.3f %10.3f  %-12s %s%s\n", w.spec->name.c_str(), "sgemm share", share_med,
                    share_best, target_text, v.c_str(), hint);
        tally(v);
      } else if (!tt || !took_part(w, t.against)) {
        std::printf("%-18s %-12s %10s %10s  >= %-9.2f n/a (%s not run)\n", w.spec->name.c_str(),
                    t.against.c_str(), "-", "-", t.value, tt ? t.against.c_str() : "tinytorch");
        tally("n/a");
      }
    }
  }
  if (external_ratios) {
    std::printf("(rows vs");
    for (const ExternalImpl& ext : external) std::printf(" %s", ext.name.c_str());
    std::printf(": timed in a separate process after the rows above, not interleaved; med_ratio = "
                "their ms_med / tinytorch's, min_ratio = ms_min / ms_min: less robust to load changes)\n");
  }
  std::printf("targets: %d PASS, %d MISS, %d n/a\n", pass, miss, na);
  return opts.fail_on_miss && miss > 0 ? 1 : 0;
}

}  // namespace ttbench
