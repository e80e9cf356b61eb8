// The NCCL table of distributed/nccl_library.h, loaded with dlopen on first use.
#include "tinytorch/distributed/nccl_library.h"

#include <mutex>

#include "tinytorch/core/shared_library.h"

#define TT_LIB_STR2(x) #x
#define TT_LIB_STR(x) TT_LIB_STR2(x)

// The folder CMake found libnccl in when tinytorch was built (-DTINYTORCH_NCCL_LIBRARY_DIR).
#ifndef TINYTORCH_NCCL_LIBRARY_DIR
#define TINYTORCH_NCCL_LIBRARY_DIR ""
#endif

namespace tt::distributed {

namespace {

std::mutex g_mutex;
std::string g_path;

Nccl load_nccl() {
  const tt::detail::SharedLibrary library =
      tt::detail::SharedLibrary::open_in("NCCL", TINYTORCH_NCCL_LIBRARY_DIR, "libnccl.so." TT_LIB_STR(NCCL_MAJOR));
  Nccl table;
#define TT_RESOLVE(f) table.f = reinterpret_cast<decltype(table.f)>(library.symbol(#f));
  TT_NCCL_FUNCTIONS(TT_RESOLVE)
#undef TT_RESOLVE
  std::lock_guard<std::mutex> lock(g_mutex);
  g_path = library.path();
  return table;
}

}  // namespace

const Nccl& nccl() {
  static const Nccl table = load_nccl();  // a throwing initializer leaves it for the next call
  return table;
}

std::string nccl_path() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_path;
}

}  // namespace tt::distributed
