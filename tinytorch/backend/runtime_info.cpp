// config_report (tools/tt doctor) and relaunch_with_runtime_env (Note [threading policy] in
// backend/threads.cpp).
#include "tinytorch/backend/runtime_info.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "tinytorch/backend/cpu/blas_info.h"
#include "tinytorch/backend/cpu/cpu_features.h"
#include "tinytorch/backend/cpu/gemm_bf16.h"
#include "tinytorch/core/device.h"
#include "tinytorch/core/error.h"
#include "tinytorch/backend/threads.h"

namespace tt {

namespace {

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

// The SIMD the library itself was compiled for (-march=native with TINYTORCH_NATIVE).
const char* compiled_simd() {
#if defined(__AVX512BF16__)
  return "AVX-512 with BF16";
#elif defined(__AVX512F__)
  return "AVX-512";
#elif defined(__AVX2__)
  return "AVX2";
#elif defined(__AVX__)
  return "AVX";
#elif defined(__x86_64__)
  return "SSE2 (baseline x86-64)";
#else
  return "this architecture's baseline";
#endif
}

}  // namespace

std::string config_report() {
  std::ostringstream os;
  std::ostringstream warnings;
  os << "build\n";
  os << "  compiler        " << __VERSION__ << "\n";
#ifdef NDEBUG
  os << "  assertions      off (NDEBUG)\n";
#else
  os << "  assertions      on\n";
#endif
  os << "  compiled for    " << compiled_simd() << "\n";
#ifdef TINYTORCH_HAS_CUDA
  os << "  CUDA backend    yes\n";
#else
  os << "  CUDA backend    no\n";
#endif
#if defined(__SANITIZE_ADDRESS__)
  os << "  sanitizers      address\n";
#elif defined(__SANITIZE_THREAD__)
  os << "  sanitizers      thread\n";
#endif

  const cpu::CpuFeatures& f = cpu::cpu_features();
  const cpu::SimdLevel level = cpu::simd_level(f);
  os << "cpu\n";
  os << "  model           " << (f.model.empty() ? "(not reported)" : f.model) << "\n";
  os << "  cores           " << omp_get_num_procs() << " available to this process\n";
  os << "  features        " << cpu::feature_list(f) << "\n";
  os << "  SIMD level      " << cpu::simd_level_name(level) << "\n";

  const cpu::BlasInfo blas = cpu::blas_info();
  os << "blas\n";
  os << "  vendor          " << blas.vendor << "\n";
  if (!blas.config.empty()) os << "  config          " << blas.config << "\n";
  os << "  kernels         " << (blas.core.empty() ? "(not reported)" : blas.core);
  if (blas.vendor == "OpenBLAS") os << " (" << cpu::simd_level_name(cpu::openblas_core_level(blas.core)) << ")";
  os << "\n";
  os << "  threading       " << cpu::blas_threading_name(blas.threading) << "\n";
  os << "  bf16 GEMM       "
     << (cpu::gemm_bf16_native() ? "tinytorch's AVX512-BF16 kernel (vdpbf16ps)"
                                 : "bf16 widened to float32 for the BLAS's sgemm (no AVX512-BF16 here, or "
                                   "TT_BF16_GEMM=fallback)")
     << "\n";
  const cpu::BlasCoreAdvice advice = cpu::blas_core_advice_here();
  if (!advice.message.empty()) warnings << "  " << advice.message << "\n";
  const std::string problem = cpu::blas_threading_problem(blas);
  if (!problem.empty()) warnings << "  " << problem << "\n";
  const std::string busy = detail::busy_machine_advice_here(omp_get_max_threads());
  if (!busy.empty()) warnings << "  " << busy << "\n";

  const int threads = get_num_threads();  // also applies the count to the BLAS
  os << "threads\n";
  os << "  tinytorch       " << threads << " (tt::set_num_threads; Note [threading policy])\n";
  os << "  BLAS            " << cpu::blas_get_num_threads() << "\n";
  os << "  OpenMP          " << _OPENMP << " (version date), omp_get_max_threads() = " << omp_get_max_threads()
     << "\n";
  for (const char* name :
       {"OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE"}) {
    os << "  " << name;
    for (size_t pad = std::string(name).size(); pad < 22; ++pad) os << ' ';
    os << env_or(name, "(unset)") << "\n";
  }

  os << "cuda\n";
  const int devices = cuda::device_count();
#ifdef TINYTORCH_HAS_CUDA
  os << "  devices         " << devices << "\n";
  for (int d = 0; d < devices; ++d) {
    try {
      os << "  cuda:" << d << "          " << cuda::device_description(d) << "\n";
    } catch (const Error& e) {
      os << "  cuda:" << d << "          " << e.what() << "\n";
    }
  }
#else
  os << "  devices         " << devices << " (this build has no CUDA backend)\n";
#endif

  const std::string w = warnings.str();
  os << (w.empty() ? "no problems found\n" : "problems\n" + w);
  return os.str();
}

void relaunch_with_runtime_env(char** argv, RuntimePolicy policy) {
  if (argv == nullptr || argv[0] == nullptr || std::getenv("TT_NO_RELAUNCH") != nullptr) return;
  // Every variable is set before the exec, so the new process (which has them) never relaunches.
  bool changed = false;
  if (policy == RuntimePolicy::SharedMachine && !detail::wait_policy_chosen()) {
    changed = setenv("OMP_WAIT_POLICY", "passive", 1) == 0;
  }
  // Started by mpirun with several ranks on this machine: each rank's share of the cores, not all of
  // them (mpirun may leave the ranks unbound, or bind each to one core; either way no rank should
  // start more threads than it has cores of its own).
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks_here = local_size ? std::atoi(local_size) : 0;
  if (policy == RuntimePolicy::SharedMachine && std::getenv("OMP_NUM_THREADS") == nullptr && ranks_here > 1) {
    const int procs = omp_get_num_procs(), online = int(sysconf(_SC_NPROCESSORS_ONLN));
    const int threads = procs * ranks_here > online ? std::max(1, online / ranks_here) : procs;
    changed = setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1) == 0 || changed;
  } else if (policy == RuntimePolicy::SharedMachine && std::getenv("OMP_NUM_THREADS") == nullptr) {
    // What runs now, not the load average, which still counts a build that ended a minute ago.
    const int cores = omp_get_num_procs(), busy = detail::runnable_elsewhere();
    const int threads = detail::threads_for_busy(cores, busy);
    if (threads > 0 && threads < cores && setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1) == 0) {
      std::fprintf(stderr,
                   "tinytorch: this machine is busy (%d task%s of other programs running on %d cores): running on "
                   "%d thread%s (OMP_NUM_THREADS chooses)\n",
                   busy, busy == 1 ? "" : "s", cores, threads, threads == 1 ? "" : "s");
      changed = true;
    }
  }
  const cpu::BlasCoreAdvice advice = cpu::blas_core_advice_here();
  if (!advice.coretype.empty() && setenv("OPENBLAS_CORETYPE", advice.coretype.c_str(), 1) == 0) {
    std::fprintf(stderr, "tinytorch: OpenBLAS picked its '%s' kernels; restarting with OPENBLAS_CORETYPE=%s\n",
                 cpu::blas_info().core.c_str(), advice.coretype.c_str());
    changed = true;
  }
  if (!changed) return;
  std::fflush(nullptr);
  execv("/proc/self/exe", argv);
  // Only reached when the exec failed: go on as we are (the first op warns about what falls short).
}

}  // namespace tt
