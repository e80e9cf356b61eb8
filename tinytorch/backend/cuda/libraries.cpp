// The cuBLAS and cuBLASLt tables of backend/cuda/libraries.h, loaded with dlopen on first use
// (Note [CUDA libraries on first use]).
#include "tinytorch/backend/cuda/libraries.h"

#include <mutex>
#include <string>
#include <vector>

#include "tinytorch/core/shared_library.h"

#define TT_LIB_STR2(x) #x
#define TT_LIB_STR(x) TT_LIB_STR2(x)

namespace tt::cuda::lib {

namespace {

// Where CMake found the CUDA libraries when tinytorch was built (-DTINYTORCH_CUDA_LIBRARY_DIR).
#ifndef TINYTORCH_CUDA_LIBRARY_DIR
#define TINYTORCH_CUDA_LIBRARY_DIR ""
#endif

// The versioned file name in the build's library folder, then the same name for the loader to find.
std::vector<std::string> candidates(const std::string& soname) {
  std::vector<std::string> names;
  const std::string dir = TINYTORCH_CUDA_LIBRARY_DIR;
  if (!dir.empty()) names.push_back(dir + "/" + soname);
  names.push_back(soname);
  return names;
}

std::mutex g_mutex;
std::string g_cublas_path, g_cublaslt_path;

#define TT_RESOLVE(f) table.f = reinterpret_cast<decltype(table.f)>(library.symbol(#f));

Cublas load_cublas() {
  const detail::SharedLibrary library =
      detail::SharedLibrary::open("cuBLAS", candidates("libcublas.so." TT_LIB_STR(CUBLAS_VER_MAJOR)));
  Cublas table;
  TT_CUBLAS_FUNCTIONS(TT_RESOLVE)
  std::lock_guard<std::mutex> lock(g_mutex);
  g_cublas_path = library.path();
  return table;
}

CublasLt load_cublaslt() {
  const detail::SharedLibrary library =
      detail::SharedLibrary::open("cuBLASLt", candidates("libcublasLt.so." TT_LIB_STR(CUBLAS_VER_MAJOR)));
  CublasLt table;
  TT_CUBLASLT_FUNCTIONS(TT_RESOLVE)
  std::lock_guard<std::mutex> lock(g_mutex);
  g_cublaslt_path = library.path();
  return table;
}

#undef TT_RESOLVE

}  // namespace

// A function-local static whose initializer throws is not initialized: the next call tries again.
const Cublas& cublas() {
  static const Cublas table = load_cublas();
  return table;
}

const CublasLt& cublaslt() {
  static const CublasLt table = load_cublaslt();
  return table;
}

std::string cublas_path() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_cublas_path;
}

std::string cublaslt_path() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_cublaslt_path;
}

}  // namespace tt::cuda::lib
