// The cuBLAS and cuBLASLt tables of backend/cuda/libraries.h, loaded with dlopen on first use
// (Note [CUDA libraries on first use]).
#include "tinytorch/backend/cuda/libraries.h"

#include <mutex>
#include <string>

#include "tinytorch/core/shared_library.h"

#define TT_LIB_STR2(x) #x
#define TT_LIB_STR(x) TT_LIB_STR2(x)

namespace tt::cuda::lib {

namespace {

// Where CMake found the CUDA libraries when tinytorch was built (-DTINYTORCH_CUDA_LIBRARY_DIR).
#ifndef TINYTORCH_CUDA_LIBRARY_DIR
#define TINYTORCH_CUDA_LIBRARY_DIR ""
#endif

std::mutex g_mutex;
std::string g_cublas_path, g_cublaslt_path;

// Opens `what` (its versioned file name `soname`), fills a Table with `resolve` and records the file.
template <typename Table, typename Resolve>
Table load(const std::string& what, const std::string& soname, std::string* path, Resolve resolve) {
  const tt::detail::SharedLibrary library =
      tt::detail::SharedLibrary::open_in(what, TINYTORCH_CUDA_LIBRARY_DIR, soname);
  Table table;
  resolve(library, table);
  std::lock_guard<std::mutex> lock(g_mutex);
  *path = library.path();
  return table;
}

#define TT_RESOLVE(f) table.f = reinterpret_cast<decltype(table.f)>(library.symbol(#f));

}  // namespace

// A function-local static whose initializer throws is not initialized: the next call tries again.
const Cublas& cublas() {
  static const Cublas table =
      load<Cublas>("cuBLAS", "libcublas.so." TT_LIB_STR(CUBLAS_VER_MAJOR), &g_cublas_path,
                   [](const tt::detail::SharedLibrary& library, Cublas& table) { TT_CUBLAS_FUNCTIONS(TT_RESOLVE) });
  return table;
}

const CublasLt& cublaslt() {
  static const CublasLt table = load<CublasLt>(
      "cuBLASLt", "libcublasLt.so." TT_LIB_STR(CUBLAS_VER_MAJOR), &g_cublaslt_path,
      [](const tt::detail::SharedLibrary& library, CublasLt& table) { TT_CUBLASLT_FUNCTIONS(TT_RESOLVE) });
  return table;
}

#undef TT_RESOLVE

std::string cublas_path() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_cublas_path;
}

std::string cublaslt_path() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_cublaslt_path;
}

}  // namespace tt::cuda::lib
