// What this build and this machine give tinytorch (the text `tools/tt doctor` prints), and the
// relaunch that sets what OpenMP and OpenBLAS read only when they load: OpenBLAS's kernel set when
// it did not recognise the CPU, and how idle OpenMP threads wait.
#pragma once

#include <string>

#include "tinytorch/core/runtime_policy.h"

namespace tt {

// Several lines: the build (version, compiler, CUDA backend, the SIMD it was compiled for,
// sanitizers), the CPU and its features, the BLAS with its kernel set, threading and thread
// count, OpenMP, tinytorch's thread count, the environment variables that steer them, CUDA
// devices, and a warning line for each problem found. Like torch.__config__.show().
std::string config_report();

// Call it first thing in main, before any thread starts. Sets, where the environment says nothing,
// what OpenMP and OpenBLAS read only when they load (Note [threading policy] in backend/threads.cpp):
//   - OPENBLAS_CORETYPE, when OpenBLAS picked kernels below what the CPU runs (says so on stderr);
//   - with RuntimePolicy::SharedMachine: OMP_WAIT_POLICY=passive, unless OMP_WAIT_POLICY or
//     GOMP_SPINCOUNT is set, so that idle threads sleep instead of spinning on cores a busy machine
//     needs elsewhere (silently; tt doctor shows it); and, when the machine is busy (other
//     programs' tasks running now, detail::runnable_elsewhere) and OMP_NUM_THREADS is unset,
//     OMP_NUM_THREADS = the cores they leave idle, at least 1 (says so on stderr); started by
//     mpirun with several ranks on this machine (OMPI_COMM_WORLD_LOCAL_SIZE), OMP_NUM_THREADS =
//     this rank's share of the cores instead (its own cores when mpirun bound it, else the cores
//     divided by the ranks here);
// and then re-executes this program (/proc/self/exe with argv) once, so that the new process
// loads them with these settings. Returns (does nothing) when there is nothing to set, when
// TT_NO_RELAUNCH is set, or when the exec fails (the program then goes on as it was).
void relaunch_with_runtime_env(char** argv, RuntimePolicy policy = RuntimePolicy::SharedMachine);

}  // namespace tt
