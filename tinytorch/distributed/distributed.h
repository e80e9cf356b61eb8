// tt::distributed: processes that train one model together. Start them with mpirun (one process
// per core or per GPU, on one machine or several through a host file); each calls
// init_process_group(), then trains through nn::DistributedDataParallel (data_parallel.h) with a
// data::DistributedSampler. A program run without mpirun is a world of one: get_world_size() is 1
// and get_rank() 0 whether or not init_process_group() was called, so the same program runs alone
// unchanged. Module 16 teaches it.
//
//   if (tt::distributed::launched_by_mpirun()) tt::distributed::init_process_group(Backend::MPI);
//   int rank = tt::distributed::get_rank(), world = tt::distributed::get_world_size();
//
// Backends: MPI (OpenMPI) for CPU tensors; NCCL for CUDA tensors, one GPU per rank (the local rank
// picks it), its unique id sent from rank 0 over MPI. Which were built: is_available().
#pragma once

#include <memory>
#include <string>

#include "tinytorch/distributed/process_group.h"

namespace tt::distributed {

// Whether this build of tinytorch has the backend (MPI: OpenMPI found at build time; NCCL: the CUDA
// backend and NCCL). A backend may be built and still fail to start (NCCL on a machine without a
// GPU): init_process_group says why.
bool is_available(Backend backend);
// True when this process was started by mpirun/mpiexec (OpenMPI's or a PMI launcher's variables).
bool launched_by_mpirun();

// Starts the default group: every rank of the job must call it, with the same backend. MPI: starts
// MPI (on a thread-safe level) if nobody has, and works on a duplicate of MPI_COMM_WORLD. NCCL:
// also needs MPI when the world has more than one rank (to send NCCL's id); sets the CUDA device to
// the local rank. A second call throws; destroy_process_group() ends it (also done at exit).
void init_process_group(Backend backend);
bool is_initialized();
// Throws when this process was started by mpirun but init_process_group() has not run: a
// DistributedDataParallel or DistributedSampler built then would quietly train every rank alone on
// all the data. `who` names the caller in the message. Their constructors call it.
void check_initialized_under_mpirun(const char* who);
// Ends the default group (waiting for its collectives; ProcessGroup::shutdown) and, if
// init_process_group started MPI, finalizes it. Optional: a group still alive at exit is ended the
// same way. An MPI job cannot start a group again afterwards (MPI allows one MPI_Init per process).
void destroy_process_group();
// The default group; throws when init_process_group() has not been called.
std::shared_ptr<ProcessGroup> default_group();

// The group of this process alone: rank 0 of 1. Its collectives check their arguments as every
// backend does and leave the data as one rank has it (a copy for allgather and reduce_scatter).
// The free functions below use it when no group was initialized; pass it to
// DistributedDataParallelOptions::process_group to run the Reducer (buckets, hooks) in one process.
std::shared_ptr<ProcessGroup> world_of_one();

// This process's number in 0 .. world size - 1; 0 without a group.
int get_rank();
// Processes in the job; 1 without a group.
int get_world_size();
// This process's number among those on its machine (the GPU it should use); 0 without a group.
int get_local_rank();

// Blocking collectives on the default group, or on world_of_one() without one. The group's own
// methods return a Work to overlap them with computation.
void allreduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum);  // tensor [*] -> op over ranks, in place
void broadcast(const Tensor& tensor, int root = 0);                  // tensor [*] -> root's values
void allgather(const Tensor& output, const Tensor& input);           // input [*] -> output [W, *]
// input [W, *] -> output [*] on rank r = op over the ranks of their input[r]
void reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum);
void barrier();

// Ends the whole job now: "rank R: why" on stderr, then the default group's abort (every process
// of the job stops). Without a multi-rank group it prints the same line and exits with status 1.
// Programs call it for an error only this rank has seen, rather than returning while the other
// ranks wait in a collective; an exception that escapes main does the same once
// init_process_group has run (it installs a std::terminate handler that calls abort).
[[noreturn]] void abort(const std::string& why);

}  // namespace tt::distributed
