// tt_bench --device cuda: the GPU benchmarks (cuda_bench.cpp, with cuda_bench_sdpa.cpp), or, in
// a build without tinytorch's CUDA backend, a stand-in that says so (cuda_bench_off.cpp).
// tools/CMakeLists.txt picks one.
#pragma once

namespace ttbench::cuda_bench {

// Runs the GPU workloads with tt_bench's own argv (flags: `tt_bench --device cuda --help`).
// Returns the process's exit status: 0 when done, 2 on a bad argument, 3 when no CUDA device
// (or no CUDA build) is there to run on.
int run(int argc, char** argv);

}  // namespace ttbench::cuda_bench
