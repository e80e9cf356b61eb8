// Note [CUDA libraries on first use] (backend/cuda/libraries.h): a process that never uses CUDA
// maps no CUDA library, in any build; in a CUDA-enabled build cuBLAS, cuBLASLt and NCCL load the
// first time they are needed, with every function of their tables found. None of this needs a GPU:
// the libraries load on a machine without one. Each test case runs in a process of its own (CTest),
// so "before" really is before.
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"
#ifdef TINYTORCH_HAS_CUDA
#include "tinytorch/backend/cuda/libraries.h"
#endif
#ifdef TINYTORCH_HAS_NCCL
#include "tinytorch/distributed/nccl_library.h"
#endif

using namespace tt;

namespace {

// The CUDA libraries this process has mapped, from /proc/self/maps (each name once).
std::vector<std::string> mapped_cuda_libraries() {
  std::ifstream maps("/proc/self/maps");
  REQUIRE(maps.good());
  std::vector<std::string> found;
  std::string line;
  while (std::getline(maps, line)) {
    for (const char* lib : {"libcublas.so", "libcublasLt.so", "libnccl.so", "libcudart.so", "libcuda.so"}) {
      const size_t slash = line.rfind('/');
      if (slash == std::string::npos || line.compare(slash + 1, std::string(lib).size(), lib) != 0) continue;
      if (std::find(found.begin(), found.end(), lib) == found.end()) found.push_back(lib);
    }
  }
  return found;
}

// (Only the cases built with CUDA call it.)
[[maybe_unused]] bool mapped(const std::string& lib) {
  const std::vector<std::string> libs = mapped_cuda_libraries();
  return std::find(libs.begin(), libs.end(), lib) != libs.end();
}

}  // namespace

TEST_CASE("a process that never uses CUDA maps no CUDA library", "[libraries]") {
  // A little of everything a CPU program does: factories, a GEMM, a layer, a loss, backward.
  manual_seed(0);
  nn::Linear layer(8, 4);
  Tensor x = randn({16, 8});
  Tensor loss = F::cross_entropy(layer(x), randint(0, 4, {16}));
  loss.backward();
  CHECK(layer.weight.grad().defined());
  CHECK(Device("cpu").is_cpu());
  CHECK(mapped_cuda_libraries().empty());
}

#ifdef TINYTORCH_HAS_CUDA
TEST_CASE("asking whether a GPU exists loads no CUDA math library", "[libraries]") {
  (void)cuda::device_count();
  (void)cuda::is_available();
  CHECK_FALSE(mapped("libcublas.so"));
  CHECK_FALSE(mapped("libcublasLt.so"));
  CHECK_FALSE(mapped("libnccl.so"));
  CHECK_FALSE(mapped("libcudart.so"));  // the runtime is linked in statically
}

TEST_CASE("cuBLAS and cuBLASLt load on first use with every function found", "[libraries]") {
  CHECK(cuda::lib::cublas_path().empty());
  CHECK(cuda::lib::cublaslt_path().empty());
  CHECK_FALSE(mapped("libcublas.so"));

  const cuda::lib::Cublas& blas = cuda::lib::cublas();
  int missing = 0;
#define TT_COUNT_MISSING(f) missing += blas.f == nullptr ? 1 : 0;
  TT_CUBLAS_FUNCTIONS(TT_COUNT_MISSING)
  CHECK(missing == 0);
  CHECK_THAT(cuda::lib::cublas_path(), Catch::EndsWith("libcublas.so." + std::to_string(CUBLAS_VER_MAJOR)));
  CHECK(mapped("libcublas.so"));
  CHECK(std::string(blas.cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED)) == "CUBLAS_STATUS_NOT_INITIALIZED");
  CHECK(&cuda::lib::cublas() == &blas);  // loaded once

  const cuda::lib::CublasLt& lt = cuda::lib::cublaslt();
  missing = 0;
#define TT_COUNT_MISSING_LT(f) missing += lt.f == nullptr ? 1 : 0;
  TT_CUBLASLT_FUNCTIONS(TT_COUNT_MISSING_LT)
  CHECK(missing == 0);
  CHECK_THAT(cuda::lib::cublaslt_path(), Catch::EndsWith("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR)));
  CHECK(mapped("libcublasLt.so"));
}
#endif

#ifdef TINYTORCH_HAS_NCCL
TEST_CASE("NCCL loads on first use with every function found", "[libraries]") {
  CHECK(distributed::nccl_path().empty());
  CHECK_FALSE(mapped("libnccl.so"));
  const distributed::Nccl& nccl = distributed::nccl();
  int missing = 0;
#define TT_COUNT_MISSING_NCCL(f) missing += nccl.f == nullptr ? 1 : 0;
  TT_NCCL_FUNCTIONS(TT_COUNT_MISSING_NCCL)
  CHECK(missing == 0);
  CHECK_THAT(distributed::nccl_path(), Catch::EndsWith("libnccl.so." + std::to_string(NCCL_MAJOR)));
  CHECK(mapped("libnccl.so"));
  CHECK(std::string(nccl.ncclGetErrorString(ncclInvalidArgument)).find("invalid") != std::string::npos);
}
#endif
