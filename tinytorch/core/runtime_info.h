// What this build and this machine give tinytorch (the text `tools/tt doctor` prints), and the
// relaunch that gives OpenBLAS its proper kernels when it did not recognise the CPU.
#pragma once

#include <string>

namespace tt {

// Several lines: the build (version, compiler, CUDA backend, the SIMD it was compiled for,
// sanitizers), the CPU and its features, the BLAS with its kernel set, threading and thread
// count, OpenMP, tinytorch's thread count, the environment variables that steer them, CUDA
// devices, and a warning line for each problem found. Like torch.__config__.show().
std::string config_report();

// When OpenBLAS picked kernels below what the CPU runs (Note [threading policy]) and
// OPENBLAS_CORETYPE is unset: sets it and re-executes this program (/proc/self/exe with argv),
// so the new process loads OpenBLAS with the right kernels. Call it first thing in main, before
// any thread starts. Returns (does nothing) when nothing needs fixing, when TT_NO_RELAUNCH is set,
// or when the exec fails (then the first op warns as usual).
void relaunch_with_blas_core(char** argv);

}  // namespace tt
