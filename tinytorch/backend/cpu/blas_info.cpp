// The BLAS's own functions (thread count, kernel set, configuration) behind one seam, compiled
// for the vendor CMake linked (TINYTORCH_BLAS_VENDOR_OpenBLAS / _BLIS / _Other), and the check
// that the kernel set OpenBLAS picked matches the CPU (Note [threading policy] in backend/threads.cpp).
#include "tinytorch/backend/cpu/blas_info.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>

// The vendors' own functions are declared here, not through their headers: this file then needs
// no BLAS header (blis.h does not compile cleanly under -Wextra -Werror).
#if defined(TINYTORCH_BLAS_VENDOR_BLIS)
extern "C" {
// BLIS's dim_t and gint_t are 64-bit integers in Debian's build (BLIS_INT_TYPE_SIZE 64); arch_t
// is an enum.
int64_t bli_thread_get_num_threads(void);
void bli_thread_set_num_threads(int64_t value);
int64_t bli_info_get_enable_openmp(void);
int64_t bli_info_get_enable_pthreads(void);
char* bli_info_get_version_str(void);
int bli_arch_query_id(void);
char* bli_arch_string(int id);
}
#elif defined(TINYTORCH_BLAS_VENDOR_OpenBLAS)
extern "C" {
int openblas_get_num_threads(void);
void openblas_set_num_threads(int num_threads);
char* openblas_get_corename(void);
char* openblas_get_config(void);
int openblas_get_parallel(void);  // 0 sequential, 1 pthreads, 2 OpenMP
}
#endif

namespace tt::cpu {

const char* blas_threading_name(BlasThreading t) {
  switch (t) {
    case BlasThreading::kSerial: return "serial";
    case BlasThreading::kPthreads: return "pthreads";
    case BlasThreading::kOpenMP: return "openmp";
    case BlasThreading::kUnknown: return "unknown";
  }
  return "unknown";
}

#if defined(TINYTORCH_BLAS_VENDOR_OpenBLAS)

BlasInfo blas_info() {
  BlasInfo info;
  info.vendor = "OpenBLAS";
  info.config = openblas_get_config();
  info.core = openblas_get_corename();
  switch (openblas_get_parallel()) {
    case 0: info.threading = BlasThreading::kSerial; break;
    case 1: info.threading = BlasThreading::kPthreads; break;
    case 2: info.threading = BlasThreading::kOpenMP; break;
    default: info.threading = BlasThreading::kUnknown; break;
  }
  info.threads = openblas_get_num_threads();
  return info;
}
int blas_get_num_threads() { return openblas_get_num_threads(); }
void blas_set_num_threads(int n) { openblas_set_num_threads(n); }
bool blas_nests_in_openmp() {
  const int parallel = openblas_get_parallel();
  return parallel == 0 || parallel == 2;
}

#elif defined(TINYTORCH_BLAS_VENDOR_BLIS)

BlasInfo blas_info() {
  BlasInfo info;
  info.vendor = "BLIS";
  info.config = std::string("BLIS ") + bli_info_get_version_str();
  info.core = bli_arch_string(bli_arch_query_id());
  info.threading = bli_info_get_enable_openmp()    ? BlasThreading::kOpenMP
                   : bli_info_get_enable_pthreads() ? BlasThreading::kPthreads
                                                    : BlasThreading::kSerial;
  info.threads = int(bli_thread_get_num_threads());
  return info;
}
int blas_get_num_threads() { return int(bli_thread_get_num_threads()); }
void blas_set_num_threads(int n) { bli_thread_set_num_threads(int64_t(n)); }
// BLIS's OpenMP build opens a nested region, which OpenMP runs on one thread (nesting is off).
bool blas_nests_in_openmp() { return !bli_info_get_enable_pthreads(); }

#else

BlasInfo blas_info() {
  BlasInfo info;
  info.vendor = "BLAS";
  info.threading = BlasThreading::kUnknown;
  info.threads = 1;
  return info;
}
int blas_get_num_threads() { return 1; }
void blas_set_num_threads(int) {}
bool blas_nests_in_openmp() { return true; }

#endif

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

}  // namespace

// OpenBLAS 0.3.21's DYNAMIC_ARCH kernel sets on x86-64, by the widest SIMD their GEMM uses.
SimdLevel openblas_core_level(const std::string& core) {
  static const std::pair<const char*, SimdLevel> table[] = {
      {"katmai", SimdLevel::kSse},         {"coppermine", SimdLevel::kSse},   {"northwood", SimdLevel::kSse},
      {"prescott", SimdLevel::kSse},       {"banias", SimdLevel::kSse},       {"atom", SimdLevel::kSse},
      {"core2", SimdLevel::kSse},          {"penryn", SimdLevel::kSse},       {"dunnington", SimdLevel::kSse},
      {"nehalem", SimdLevel::kSse},        {"athlon", SimdLevel::kSse},       {"opteron", SimdLevel::kSse},
      {"opteron_sse3", SimdLevel::kSse},   {"barcelona", SimdLevel::kSse},    {"nano", SimdLevel::kSse},
      {"bobcat", SimdLevel::kSse},         {"sandybridge", SimdLevel::kAvx},  {"bulldozer", SimdLevel::kAvx},
      {"piledriver", SimdLevel::kAvx},     {"steamroller", SimdLevel::kAvx},  {"excavator", SimdLevel::kAvx2},
      {"haswell", SimdLevel::kAvx2},       {"zen", SimdLevel::kAvx2},         {"skylakex", SimdLevel::kAvx512},
      {"cooperlake", SimdLevel::kAvx512Bf16}, {"sapphirerapids", SimdLevel::kAvx512Bf16},
  };
  const std::string name = lower(core);
  for (const auto& [n, level] : table) {
    if (name == n) return level;
  }
  return SimdLevel::kUnknown;
}

const char* openblas_core_for(SimdLevel level) {
  switch (level) {
    case SimdLevel::kUnknown: return "";
    case SimdLevel::kSse: return "Prescott";
    case SimdLevel::kAvx: return "Sandybridge";
    case SimdLevel::kAvx2: return "Haswell";
    case SimdLevel::kAvx512: return "SkylakeX";
    case SimdLevel::kAvx512Bf16: return "Cooperlake";
  }
  return "";
}

BlasCoreAdvice blas_core_advice(const std::string& vendor, const std::string& core, SimdLevel cpu,
                                const char* coretype_env) {
  BlasCoreAdvice advice;
  if (vendor != "OpenBLAS") return advice;  // BLIS picks by cpuid features, not by model
  const SimdLevel have = openblas_core_level(core);
  if (have == SimdLevel::kUnknown || cpu == SimdLevel::kUnknown || have >= cpu) return advice;
  advice.generic = true;
  const std::string want = openblas_core_for(cpu);
  const bool user_chose = coretype_env != nullptr && *coretype_env != '\0';
  advice.coretype = user_chose ? "" : want;
  advice.message = "OpenBLAS runs its '" + core + "' kernels (" + simd_level_name(have) + ") on a CPU with " +
                   simd_level_name(cpu) + ": matrix products run several times slower than they can. ";
  if (user_chose) {
    advice.message += "OPENBLAS_CORETYPE=" + std::string(coretype_env) + " was set; OPENBLAS_CORETYPE=" + want +
                      " uses the CPU fully.";
  } else {
    advice.message += "OpenBLAS did not recognise this CPU model (common in virtual machines). Set "
                      "OPENBLAS_CORETYPE=" + want + " in the environment before the program starts "
                      "(tools/tt and the examples do it themselves).";
  }
  return advice;
}

std::string blas_threading_problem(const BlasInfo& info) {
  if (info.threading != BlasThreading::kPthreads) return "";
  return info.vendor + " runs its own pthreads pool beside tinytorch's OpenMP threads; they compete for the cores "
         "and parallel training steps can run slower than on one thread. Link OpenBLAS's OpenMP build (Debian: "
         "libopenblas-openmp-dev) and configure again (Note [threading policy]).";
}

BlasCoreAdvice blas_core_advice_here() {
  const BlasInfo info = blas_info();
  return blas_core_advice(info.vendor, info.core, simd_level(cpu_features()), std::getenv("OPENBLAS_CORETYPE"));
}

}  // namespace tt::cpu
