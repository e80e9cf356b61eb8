// The BLAS seam beyond CBLAS: which BLAS is linked, the kernel set it picked, its threads, and
// whether that kernel set falls short of the CPU (backend/cpu/blas_info.cpp, one file per fact:
// no other file calls a vendor's own functions).
#pragma once

#include <string>

#include "tinytorch/backend/cpu/cpu_features.h"

namespace tt::cpu {

// How the BLAS runs its own threads. kOpenMP shares our libgomp pool and runs single-threaded
// inside an OpenMP parallel region; kPthreads keeps a pool of its own (Note [threading policy]).
enum class BlasThreading { kSerial, kPthreads, kOpenMP, kUnknown };
const char* blas_threading_name(BlasThreading t);

struct BlasInfo {
  std::string vendor;   // "OpenBLAS", "BLIS" or "BLAS" (any other CBLAS)
  std::string config;   // the vendor's own description (version, build options), or ""
  std::string core;     // the kernel set picked at load ("Cooperlake", "haswell"), or "" if unknown
  BlasThreading threading = BlasThreading::kUnknown;
  int threads = 1;      // the BLAS's thread count now
};
BlasInfo blas_info();

int blas_get_num_threads();
void blas_set_num_threads(int n);  // process-wide for every vendor we know; a no-op otherwise

// True when the BLAS may be called from inside our OpenMP parallel regions as it is: an OpenMP
// build sees omp_in_parallel() and stays on the calling thread. A pthreads pool does not.
bool blas_nests_in_openmp();

// "" for an OpenMP or serial BLAS; for a BLAS with a pthreads pool of its own, what that costs
// beside OpenMP's threads and how to link the OpenMP build instead (Note [threading policy]).
std::string blas_threading_problem(const BlasInfo& info);

// The SIMD level an OpenBLAS kernel set is built for ("Prescott" -> kSse, "SkylakeX" ->
// kAvx512); kUnknown for a name not in the table. The OpenBLAS core to ask for at a level.
SimdLevel openblas_core_level(const std::string& core);
const char* openblas_core_for(SimdLevel level);

// Did the BLAS fall back to kernels below what the CPU can run? Pure, so it can be tested with
// any CPU and core. coretype_env: the OPENBLAS_CORETYPE the process started with (nullptr: unset).
struct BlasCoreAdvice {
  bool generic = false;     // the kernel set's level is below the CPU's
  std::string coretype;     // OPENBLAS_CORETYPE that fixes it ("" when nothing to set)
  std::string message;      // one paragraph saying what happened and what to do ("" when fine)
};
BlasCoreAdvice blas_core_advice(const std::string& vendor, const std::string& core, SimdLevel cpu,
                                const char* coretype_env);
// The same for this process: the linked BLAS, this CPU, the environment it started with.
BlasCoreAdvice blas_core_advice_here();

}  // namespace tt::cpu
