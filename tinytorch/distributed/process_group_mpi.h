// The MPI backend of ProcessGroup (process_group_mpi.cpp), for CPU tensors. Compiled only when
// tinytorch is built with MPI (TINYTORCH_HAS_MPI); distributed.cpp is its only user. No MPI
// header here: nothing outside process_group_mpi.cpp sees MPI's types.
#pragma once

#include <memory>

#include "tinytorch/distributed/process_group.h"

namespace tt::distributed::detail {

// Starts MPI if nobody has (asking for MPI_THREAD_MULTIPLE; at least MPI_THREAD_SERIALIZED is
// required), and makes a group on a duplicate of MPI_COMM_WORLD with its communication thread.
std::shared_ptr<ProcessGroup> make_mpi_group();
// This process's rank among those on its machine (MPI_Comm_split_type, shared memory).
int mpi_local_rank();
// Finalizes MPI if make_mpi_group started it. Every MPI group must be gone first.
void finalize_mpi();
// MPI_Abort on MPI_COMM_WORLD when MPI is running; returns when it is not.
void mpi_abort_world(int code);

}  // namespace tt::distributed::detail
