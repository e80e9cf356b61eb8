// tt_doctor (tools/tt doctor): prints what this build and this machine give tinytorch
// (tt::config_report). `--blas-coretype` prints only the OPENBLAS_CORETYPE this machine needs,
// or nothing when OpenBLAS picked the right kernels: tools/tt exports it before running programs.
#include <cstdio>
#include <cstring>

#include "tinytorch/backend/cpu/blas_info.h"
#include "tinytorch/tinytorch.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--blas-coretype") == 0) {
    std::printf("%s\n", tt::cpu::blas_core_advice_here().coretype.c_str());
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "usage: tt_doctor [--blas-coretype]\n");
    return 2;
  }
  std::fputs(tt::config_report().c_str(), stdout);
  return 0;
}
