// NCCL, opened on first use: tt::distributed::nccl() holds the functions ProcessGroupNCCL calls,
// looked up once in libnccl (Note [CUDA libraries on first use] in backend/cuda/libraries.h). A
// program that never makes an NCCL process group never loads it. Compiled only when
// TINYTORCH_HAS_NCCL.
#pragma once

#include <nccl.h>

#include <string>

#define TT_NCCL_FUNCTIONS(X) \
  X(ncclGetErrorString)      \
  X(ncclGetLastError)        \
  X(ncclGetUniqueId)         \
  X(ncclCommInitRank)        \
  X(ncclCommDestroy)         \
  X(ncclCommAbort)           \
  X(ncclCommGetAsyncError)   \
  X(ncclAllReduce)           \
  X(ncclBroadcast)           \
  X(ncclAllGather)           \
  X(ncclReduceScatter)

namespace tt::distributed {

#define TT_LIB_MEMBER(f) decltype(&::f) f = nullptr;
struct Nccl {
  TT_NCCL_FUNCTIONS(TT_LIB_MEMBER)
};
#undef TT_LIB_MEMBER

// The table, loaded on the first call (thread-safe); throws tt::Error naming libnccl, the files
// tried and the loader's reasons when it cannot be loaded, and tries again on the next call.
const Nccl& nccl();

// The file NCCL was loaded from, or "" while it is not loaded.
std::string nccl_path();

}  // namespace tt::distributed
