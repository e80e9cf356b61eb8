// tt_bench: tinytorch side by side with raw OpenBLAS and (when built with it) LibTorch, in one
// process, interleaved, with every library pinned to the same thread count; and, out of process
// after those rounds, PyTorch 2 (impl `pytorch`: tools/bench_pytorch_cpu.py, impl_pytorch.cpp; on
// by default when python3 has torch >= 2). Usage in tools/bench/README.md; `tt_bench --help`
// prints the flags.
//
// Note [threads]
// ~~~~~~~~~~~~~~
// Three libraries, but only two thread pools, both shared by everyone in the process:
//  * libgomp's. tinytorch's elementwise/reduction loops are OpenMP regions, and so are ATen's
//    (Debian's LibTorch 1.13 uses the OpenMP parallel backend and links the same libgomp.so.1).
//    One nthreads setting serves both, so the two frameworks cannot differ here.
//    at::set_num_threads(n) calls omp_set_num_threads(n) and also records n, which ATen
//    re-applies (omp_set_num_threads) on each thread's first parallel op, lazily.
//    Left alone, LibTorch's default is hardware_concurrency / 2 on x86 (it assumes
//    hyper-threads): on this 2-core machine, 1. Its first parallel op (or at::get_num_threads)
//    then sets libgomp to 1 thread FOR TINYTORCH TOO, silently: `--threads 0` shows it
//    (omp_get_max_threads() goes 2 -> 1 once LibTorch has been touched).
//  * OpenBLAS's threads: since issue 16 tinytorch links OpenBLAS's OpenMP build, so they are
//    libgomp's too (Note [threading policy] in tinytorch/backend/threads.cpp); with the pthreads
//    build (libopenblas0-pthread) they are a pool of their own. The raw openblas impl,
//    tinytorch's matmul and LibTorch's float matmul all run on this one library: LibTorch's
//    libtorch_cpu.so needs libblas.so.3, which on Debian resolves (alternatives) to
//    openblas-pthread/libblas.so.3, a thin BLAS interface over libopenblas.so.0, which the
//    loader resolves to the one tinytorch already loaded (same soname) (ldd;
//    the startup lines print which object serves sgemm_ and cblas_sgemm). LibTorch 1.13's
//    float32 mm goes to BLAS sgemm_ (oneDNN only for bf16), and at::set_num_threads does NOT
//    reach OpenBLAS: counting the threads that burn CPU during a LibTorch 1024^3 matmul gives
//    OpenBLAS's count whatever at::set_num_threads says, while a LibTorch add follows
//    at::set_num_threads (table in tools/bench/README.md).
// So pinning = at::set_num_threads(n) (keeps ATen's lazy re-apply at n), then
// openblas_set_num_threads(n), then omp_set_num_threads(n), in that order because each later
// call may overwrite a setting the earlier ones share. The startup lines print what each
// library then reports, and the same lines are printed again after the run to show nothing
// drifted.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cuda_bench.h"
#include "harness.h"
#include "tinytorch/backend/runtime_info.h"

namespace {

void usage() {
  std::printf(
      "usage: tt_bench [--device cpu|cuda] [--list] [--filter REGEX] [--rounds N] [--warmup N]\n"
      "                [--threads N] [--impls a,b,...] [--pin IMPL=N] [--fail-on-miss] [--ops N]\n"
      "                [--pytorch-script PATH]\n"
      "  --device D      cpu (default): these workloads; cuda: the GPU workloads (cuda_bench.cpp,\n"
      "                  `tt_bench --device cuda --help` for their flags)\n"
      "  --list          print the workloads and which impls run each, then exit\n"
      "  --filter REGEX  run only workloads whose name matches (std::regex, search)\n"
      "  --rounds N      interleaved rounds per workload (default: per workload)\n"
      "  --warmup N      untimed ops per impl before calibration (default 2)\n"
      "  --threads N     threads for every library (default: hardware threads);\n"
      "                  0 leaves every library at its own default\n"
      "  --impls LIST    comma-separated subset of: tinytorch,tinytorch_fp32,openblas,libtorch,\n"
      "                  pytorch\n"
      "                  (default: all compiled in, and pytorch when python3 has torch >= 2;\n"
      "                  named here, pytorch prints every row, skipped with the reason if it\n"
      "                  cannot run them)\n"
      "  --pin IMPL=N    after --threads, set IMPL's thread count alone to N (experiments;\n"
      "                  see Note [threads] in main.cpp for what is shared)\n"
      "  --fail-on-miss  exit 1 when a target is missed\n"
      "  --ops N         profiling: run exactly N ops per impl and workload, one impl after\n"
      "                  the other, with no check, calibration, rounds or table (not pytorch)\n"
      "  --pytorch-script PATH  the pytorch impl's script (default: bench_pytorch_cpu.py next to\n"
      "                  this binary, else tools/bench_pytorch_cpu.py of the source tree);\n"
      "                  its python: $TT_BENCH_PYTHON, else python3\n");
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

int parse_int(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < 0) {
    std::fprintf(stderr, "tt_bench: %s wants a non-negative integer, got '%s'\n", flag.c_str(),
                 value.c_str());
    std::exit(2);
  }
  return int(v);
}

void print_list(const std::vector<ttbench::WorkloadSpec>& workloads, const std::vector<ttbench::Impl>& impls,
                const std::vector<ttbench::ExternalImpl>& external) {
  std::vector<std::vector<std::string>> external_lists;
  for (const ttbench::ExternalImpl& ext : external) external_lists.push_back(ext.list());
  for (const ttbench::WorkloadSpec& w : workloads) {
    std::string who;
    for (const ttbench::Impl& impl : impls)
      if (impl.factories.count(w.name)) who += (who.empty() ? "" : ",") + impl.name;
    for (size_t i = 0; i < external.size(); ++i)
      for (const std::string& name : external_lists[i])
        if (name == w.name) who += (who.empty() ? "" : ",") + external[i].name;
    std::printf("%-16s [%s] %s\n", w.name.c_str(), who.c_str(), w.description.c_str());
  }
  for (size_t i = 0; i < external.size(); ++i)
    std::printf("# %s: %s, in a separate process after the others%s\n", external[i].name.c_str(),
                external_lists[i].empty() ? "its script did not answer --list" : "its script's workloads",
                external[i].name == "pytorch" ? "; on by default only when its python has torch >= 2" : "");
}

// tinytorch first: asking LibTorch anything may re-apply its thread count (Note [threads]).
void describe_all(const std::vector<ttbench::Impl>& compiled, const char* when) {
  for (auto it = compiled.rbegin(); it != compiled.rend(); ++it)
    std::printf("# %s %s\n", when, it->describe().c_str());
}

}  // namespace

int main(int argc, char** argv) try {
  // Where OpenBLAS did not recognise the CPU (the 16-core GPU host: 'Prescott' on an AVX-512
  // Xeon), restart with its proper kernels; every impl here shares that one OpenBLAS. Idle OpenMP
  // threads keep OpenMP's default wait policy, as PyTorch runs (Note [threading policy]).
  tt::relaunch_with_runtime_env(argv, tt::RuntimePolicy::OpenMPDefault);
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) != "--device") continue;
    const std::string device = argv[i + 1];
    if (device == "cuda") return ttbench::cuda_bench::run(argc, argv);
    if (device != "cpu") {
      std::fprintf(stderr, "tt_bench: --device wants cpu or cuda, got '%s'\n", device.c_str());
      return 2;
    }
  }
  ttbench::Options opts;
  int threads = int(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 2;
  bool list = false;
  std::vector<std::string> only;
  std::map<std::string, int> pins;
  ttbench::PytorchOptions pytorch;
  if (const char* python = std::getenv("TT_BENCH_PYTHON"); python != nullptr && *python != '\0')
    pytorch.python = python;

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tt_bench: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else if (arg == "--device") {
      value();  // cpu: handled before this loop
    } else if (arg == "--list") {
      list = true;
    } else if (arg == "--filter") {
      opts.filter = value();
    } else if (arg == "--rounds") {
      opts.rounds = parse_int(arg, value());
    } else if (arg == "--warmup") {
      opts.warmup = parse_int(arg, value());
    } else if (arg == "--threads") {
      threads = parse_int(arg, value());
    } else if (arg == "--impls") {
      only = split_commas(value());
    } else if (arg == "--pin") {
      std::string v = value();
      size_t eq = v.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "tt_bench: --pin wants IMPL=N, got '%s'\n", v.c_str());
        return 2;
      }
      pins[v.substr(0, eq)] = parse_int(arg, v.substr(eq + 1));
    } else if (arg == "--ops") {
      opts.profile_ops = parse_int(arg, value());
    } else if (arg == "--pytorch-script") {
      pytorch.script = value();
    } else if (arg == "--fail-on-miss") {
      opts.fail_on_miss = true;
    } else {
      std::fprintf(stderr, "tt_bench: unknown argument '%s'\n", arg.c_str());
      usage();
      return 2;
    }
  }

  // Pinning order matters: see Note [threads]. LibTorch first, tinytorch's OpenMP last.
  std::vector<ttbench::Impl> compiled;
#ifdef TT_BENCH_HAVE_LIBTORCH
  compiled.push_back(ttbench::make_libtorch_impl());
#endif
  compiled.push_back(ttbench::make_openblas_impl());
  compiled.push_back(ttbench::make_tinytorch_fp32_impl());
  compiled.push_back(ttbench::make_tinytorch_impl());

  // pytorch is not compiled in but run (impl_pytorch.cpp): always known.
  for (const std::string& name : only) {
    bool known = name == "pytorch";
    for (const ttbench::Impl& impl : compiled) known = known || impl.name == name;
    if (!known) {
      std::fprintf(stderr, "tt_bench: --impls: '%s' is not compiled in\n", name.c_str());
      return 2;
    }
  }
  for (const auto& [name, n] : pins) {
    bool known = name == "pytorch";
    for (const ttbench::Impl& impl : compiled) known = known || impl.name == name;
    if (!known || n == 0) {
      std::fprintf(stderr, "tt_bench: --pin %s=%d: unknown impl or zero threads\n", name.c_str(), n);
      return 2;
    }
  }

  for (ttbench::Impl& impl : compiled) {
    if (threads > 0) impl.set_threads(threads);
  }
  for (ttbench::Impl& impl : compiled) {
    auto pin = pins.find(impl.name);
    if (pin != pins.end()) impl.set_threads(pin->second);
  }

  // Run order: tinytorch first (the ratio table's reference), then the others; --impls filters.
  std::vector<ttbench::Impl> impls;
  for (auto it = compiled.rbegin(); it != compiled.rend(); ++it) {
    bool wanted = only.empty();
    for (const std::string& name : only) wanted = wanted || name == it->name;
    if (wanted) impls.push_back(*it);
  }

  // pytorch: a child process after the in-process rounds, at the same thread count (or its
  // --pin), with the same warm-up and rounds. Named in --impls it must report every row;
  // by default it is on only when its python has torch >= 2.
  pytorch.threads = pins.count("pytorch") ? pins["pytorch"] : threads;
  pytorch.warmup = opts.warmup;
  pytorch.rounds = opts.rounds;
  for (const std::string& name : only) pytorch.required = pytorch.required || name == "pytorch";
  std::vector<ttbench::ExternalImpl> external;
  if (only.empty() || pytorch.required) external.push_back(ttbench::make_pytorch_impl(pytorch));

  const std::vector<ttbench::WorkloadSpec> workloads = ttbench::all_workloads();
  if (list) {
    print_list(workloads, impls, external);
    return 0;
  }

  std::printf("# tt_bench: threads=%d%s\n", threads, threads > 0 ? " (every library pinned)" : " (library defaults)");
  for (const auto& [name, n] : pins) std::printf("# --pin %s=%d\n", name.c_str(), n);
  describe_all(compiled, "start:");
  std::fflush(stdout);
  int status = ttbench::run_benchmarks(workloads, impls, external, opts);
  describe_all(compiled, "end:  ");
  return status;
} catch (const std::exception& e) {
  std::fprintf(stderr, "tt_bench: %s\n", e.what());
  return 1;
}
