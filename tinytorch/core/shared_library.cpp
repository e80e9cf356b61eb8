// SharedLibrary (core/shared_library.h): dlopen with every reason kept for the error message.
#include "tinytorch/core/shared_library.h"

#include <dlfcn.h>

#include "tinytorch/core/error.h"

namespace tt::detail {

SharedLibrary SharedLibrary::open(const std::string& what, const std::vector<std::string>& candidates) {
  TT_CHECK(!candidates.empty(), "SharedLibrary::open: no file names given for ", what);
  std::string reasons;
  for (const std::string& name : candidates) {
    // RTLD_LOCAL: the library's symbols serve only the lookups below, never another library's.
    void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      SharedLibrary lib;
      lib.handle_ = handle;
      lib.what_ = what;
      lib.path_ = name;
      return lib;
    }
    const char* why = ::dlerror();
    reasons += concat("\n  ", name, ": ", why != nullptr ? why : "the loader gave no reason");
  }
  throw Error(concat(what, ": cannot load the library; tried", reasons,
                     "\n(install it, or put its folder in LD_LIBRARY_PATH; the CPU works without it)"));
}

SharedLibrary SharedLibrary::open_in(const std::string& what, const std::string& dir, const std::string& soname) {
  std::vector<std::string> candidates;
  if (!dir.empty()) candidates.push_back(dir + "/" + soname);
  candidates.push_back(soname);
  return open(what, candidates);
}

void* SharedLibrary::symbol(const char* name) const {
  TT_CHECK(handle_ != nullptr, "SharedLibrary::symbol: ", name, " looked up in a library that is not open");
  (void)::dlerror();  // clear an earlier error, so a null below is told apart from a null symbol
  void* p = ::dlsym(handle_, name);
  const char* why = ::dlerror();
  TT_CHECK(why == nullptr && p != nullptr, what_, ": ", path_, " has no function ", name,
           " (a different version of the library?): ", why != nullptr ? why : "null address");
  return p;
}

}  // namespace tt::detail
