// The NCCL backend of ProcessGroup (process_group_nccl.cpp), for CUDA tensors, one GPU per rank.
// Compiled only with the CUDA backend and NCCL (TINYTORCH_HAS_NCCL); distributed.cpp is its only
// user. No NCCL or CUDA header here.
#pragma once

#include <array>
#include <memory>

#include "tinytorch/distributed/process_group.h"

namespace tt::distributed::detail {

// A fresh ncclUniqueId, as bytes (rank 0 makes it; every rank passes the same bytes below).
std::array<char, 128> make_nccl_unique_id();
// The group of `size` ranks in which this process is `rank`, on CUDA device `device`.
std::shared_ptr<ProcessGroup> make_nccl_group(int rank, int size, int device, const std::array<char, 128>& id);

}  // namespace tt::distributed::detail
