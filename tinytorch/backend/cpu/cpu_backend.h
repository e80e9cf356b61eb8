// The CPU backend: the Backend interface implemented with plain loops, OpenMP and OpenBLAS.
// Each kernel family lives in its own file (elementwise.cpp, binary.cpp, reduce.cpp, gemm.cpp,
// linear.cpp, index.cpp, random.cpp, softmax.cpp, activation.cpp, normalization.cpp, optimizer.cpp);
// their CUDA twins carry the same names under backend/cuda.
#pragma once

#include "tinytorch/backend/backend.h"

namespace tt::cpu {

class CpuBackend final : public Backend {
 public:
  // Every kernel of the registry (backend/kernels.h); a missing body fails the link.
  TT_KERNELS(TT_KERNEL_OVERRIDE)
};

CpuBackend& cpu_backend();

}  // namespace tt::cpu
