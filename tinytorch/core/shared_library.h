// tt::detail::SharedLibrary: a shared object opened while the program runs (dlopen), and the
// functions looked up in it. The CUDA backend opens cuBLAS and cuBLASLt this way, and the NCCL
// process group opens NCCL, so that a process that never uses CUDA never loads them (Note [CUDA
// libraries on first use] in backend/cuda/libraries.h). Not a plugin system: a library, once
// opened, stays for the life of the process, and nothing is ever closed.
#pragma once

#include <string>
#include <vector>

namespace tt::detail {

class SharedLibrary {
 public:
  // Opens the first of `candidates` (absolute paths or bare file names, which the dynamic loader
  // looks up in LD_LIBRARY_PATH, the cache and the default folders) that loads. Throws tt::Error
  // naming `what` (say "cuBLAS"), every candidate and the loader's reason for each, when none does.
  static SharedLibrary open(const std::string& what, const std::vector<std::string>& candidates);
  // open() with the candidates the CUDA libraries use: `soname` (say "libcublas.so.13") in `dir`, the
  // folder the build found it in (skipped when empty), then `soname` for the loader to find.
  static SharedLibrary open_in(const std::string& what, const std::string& dir, const std::string& soname);

  // The address of the function or variable `name`; throws tt::Error naming the library, the file
  // it came from and the symbol when the library has no such symbol (an older version, say).
  void* symbol(const char* name) const;

  const std::string& what() const { return what_; }
  const std::string& path() const { return path_; }  // the candidate that loaded

 private:
  void* handle_ = nullptr;
  std::string what_, path_;
};

}  // namespace tt::detail
