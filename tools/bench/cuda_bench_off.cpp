// tt_bench --device cuda in a build without tinytorch's CUDA backend (TINYTORCH_HAS_CUDA off):
// says so and fails. The benchmarks themselves are in cuda_bench.cpp.
#include <cstdio>

#include "cuda_bench.h"

namespace ttbench::cuda_bench {

int run(int /*argc*/, char** /*argv*/) {
  std::fprintf(stderr,
               "tt_bench: this build has no CUDA backend (rebuild with -DTINYTORCH_CUDA=ON on a machine with "
               "nvcc)\n");
  return 3;
}

}  // namespace ttbench::cuda_bench
