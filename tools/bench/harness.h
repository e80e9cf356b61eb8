// The benchmark harness shared by every implementation file: what a workload is, what an
// implementation hands the harness for it, and the registry that ties the two together.
//
// This header includes no framework headers on purpose: tinytorch, LibTorch and OpenBLAS each
// live in their own translation unit (impl_*.cpp) and meet only here. Timing, statistics and
// printing live in harness.cpp; the workload table lives in workloads.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ttbench {

// --- workloads -------------------------------------------------------------------------------

// What a workload's target compares. See Note [ratios] in harness.cpp for how ratios are formed.
struct Target {
  enum Kind {
    kRatioAtLeast,  // tinytorch's speed / `against`'s speed >= value
    kMicrosAtMost,  // tinytorch's per-op time (median over rounds) <= value microseconds
    kGemmShareAtLeast,  // tinytorch's GFLOP/s >= value x OpenBLAS's matmul_4096 GFLOP/s of this run
  };
  Kind kind = kRatioAtLeast;
  std::string against;  // the other impl, for kRatioAtLeast
  double value = 1.0;
};

struct WorkloadSpec {
  std::string name;         // e.g. "matmul_1024"; what --filter matches
  std::string description;  // one line for --list and the README
  double flops = 0;         // floating-point operations per op; 0: no gflops column
  bool per_op_micros = false;  // dispatch-style workloads: also print per-op time in µs
  int rounds = 15;          // interleaved rounds (A B C A B C ...), overridable by --rounds
  double sample_seconds = 0.1;  // a sample repeats the op until it lasts about this long
  double check_rtol = 1e-4;     // checksums of two impls must agree to this relative tolerance
  std::vector<Target> targets;
};

// The workload table (workloads.cpp). Adding a workload: add a spec there, then a factory for
// it in each impl_*.cpp that can run it. An impl without a factory simply does not take part.
std::vector<WorkloadSpec> all_workloads();

// --- implementations -------------------------------------------------------------------------

// One prepared instance of a workload in one implementation: inputs allocated and filled,
// ready to run. Destroyed (freeing its inputs) when the workload's rounds are over.
struct Prepared {
  std::function<void()> run;       // one op, the thing timed; drops its result as user code would
  std::function<double()> check;   // runs the op once more and returns a checksum of the result
  // Optional: runs the op once more and returns the peak bytes its library's allocator held
  // beyond what was allocated before it (printed as peak_mb, not judged).
  std::function<double()> peak_bytes;
};
using Factory = std::function<Prepared()>;

// One implementation: tinytorch, libtorch or openblas.
struct Impl {
  std::string name;
  // Pins this library's worker threads to n; called once, before anything runs.
  std::function<void(int n)> set_threads;
  // One line saying what thread counts (and BLAS) this library sees right now.
  std::function<std::string()> describe;
  std::map<std::string, Factory> factories;  // by workload name
};

// Each impl_*.cpp provides one of these; main.cpp calls those that were compiled in.
Impl make_tinytorch_impl();
Impl make_tinytorch_fp32_impl();  // the bf16 workloads in float32 (impl_tinytorch.cpp)
Impl make_openblas_impl();
#ifdef TT_BENCH_HAVE_LIBTORCH
Impl make_libtorch_impl();
#endif
// The training-step workloads (training_*.cpp), added to an impl by its make_*_impl.
void add_training_workloads_tinytorch(Impl& impl);
void add_training_workloads_libtorch(Impl& impl);
// The attention workloads (attention_*.cpp), likewise.
void add_attention_workloads_tinytorch(Impl& impl);
void add_attention_workloads_libtorch(Impl& impl);
// gpt_step_bf16 in float32, for make_tinytorch_fp32_impl (attention_tinytorch.cpp).
void add_bf16_baselines_tinytorch(Impl& impl);
// The flash-attention workloads sdpa_N (sdpa_*.cpp), likewise.
void add_sdpa_workloads_tinytorch(Impl& impl);
void add_sdpa_workloads_libtorch(Impl& impl);

// --- implementations run in another process ---------------------------------------------------

// One workload's result from an impl timed in a child process: its per-op times, or why it did
// not run.
struct ExternalRow {
  std::string workload;
  double ms_min = 0, ms_med = 0;  // one op, min and median over its rounds
  bool has_check = false;         // it gave the checksum of its first op, comparable with tinytorch's
  double check = 0;
  std::string skipped;            // non-empty: not timed, and why
  std::string fields;             // more ` key=value` text for its line (rounds, iters, torch=...)
};

// An implementation run as one child process per tt_bench run, after the in-process rounds, so
// its times are not interleaved with theirs (Note [separate process] in harness.cpp). The pytorch
// impl (impl_pytorch.cpp: tools/bench_pytorch_cpu.py) is the one there is.
struct ExternalImpl {
  std::string name;
  // The workloads it knows (for --list); empty when it cannot say.
  std::function<std::vector<std::string>()> list;
  // Times the named workloads, handing `row` each result as it arrives, and returns one line for
  // the report: what ran them, or why nothing did. It reports a row (timed or skipped) for every
  // workload named, or none at all when it was not asked for by name and is unavailable.
  std::function<std::string(const std::vector<std::string>& workloads,
                            const std::function<void(const ExternalRow&)>& row)>
      run;
};

// The pytorch impl (impl_pytorch.cpp).
struct PytorchOptions {
  std::string python = "python3";  // the interpreter (TT_BENCH_PYTHON)
  std::string script;              // tools/bench_pytorch_cpu.py
  int threads = 0;                 // its --threads (0: torch's defaults)
  int warmup = 2;
  int rounds = 0;                  // 0: each workload's own
  bool required = false;           // named in --impls: rows print as skipped when it cannot run
};
ExternalImpl make_pytorch_impl(const PytorchOptions& options);

// --- helpers for implementation files ----------------------------------------------------------

// Deterministic inputs in [0, 1): every impl fills its own buffers from the same seed, so all
// impls compute on identical data and their checksums can be compared. Values are positive so
// sums of outputs are well conditioned.
void fill_uniform(float* data, int64_t n, uint64_t seed);
// The same numbers mapped to [lo, hi): for workloads whose math needs signed or scaled inputs
// (an MLP whose activations must stay O(1) through its layers).
void fill_uniform(float* data, int64_t n, uint64_t seed, float lo, float hi);

// Sum of n floats in double: the checksum most workloads return.
double checksum(const float* data, int64_t n);
// Sum of |x| in double: the checksum of a gradient, whose plain sum may cancel to about zero
// (the gradient of a softmax input sums to zero along the softmax dim).
double abs_checksum(const float* data, int64_t n);

// Keeps the compiler from proving a result unused.
void do_not_optimize(const void* p);

// --- running --------------------------------------------------------------------------------

struct Options {
  std::string filter;              // regex on workload names; empty: all
  std::vector<std::string> impls;  // impls to run; empty: all compiled in
  int rounds = 0;                  // 0: each workload's own default
  int warmup = 2;                  // untimed ops per impl before the first round
  bool fail_on_miss = false;       // exit status 1 when a target is missed
  // > 0: profiling mode. Each selected impl runs exactly this many ops of each workload, one
  // impl after the other, untimed but for one total; no check, warm-up, calibration or table.
  // A profiler's counts divided by this number are per-op counts.
  int64_t profile_ops = 0;
};

// Runs the selected workloads interleaved across impls, prints one line per (workload, impl)
// as it finishes, then runs each external impl on the same workloads and prints its lines, then
// the ratio table. Returns the process exit status.
int run_benchmarks(const std::vector<WorkloadSpec>& workloads, const std::vector<Impl>& impls,
                   const std::vector<ExternalImpl>& external, const Options& opts);

}  // namespace ttbench
