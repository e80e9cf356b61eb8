// ProcessGroupNCCL: the collectives of ProcessGroup (process_group.h) on CUDA tensors through NCCL,
// one GPU per rank. Built only with the CUDA backend and NCCL (TINYTORCH_HAS_NCCL); this header
// includes neither nccl.h nor cuda_runtime.h, so it can be read and included anywhere, but its
// functions exist only in such builds. init_process_group(Backend::NCCL) (distributed.cpp) makes it
// through the two functions at the end:
//
//   NcclUniqueId id{};
//   if (rank == 0) id = detail::make_nccl_unique_id();
//   ... rank 0's bytes to every rank over MPI (a world of one started without mpirun: no MPI) ...
//   std::shared_ptr<ProcessGroup> group = detail::make_nccl_group(rank, size, /*device=*/local_rank, id);
//
// How it runs (Note [NCCL streams] in process_group_nccl.cpp): one communicator and one CUDA stream
// of its own; each collective waits for the work already queued on our compute stream (the legacy
// default stream, backend/cuda/cuda_backend.h) through an event, runs on the communication stream,
// and records a "done" event that Work::wait() makes the compute stream wait for (the host does not
// block). Shapes and dtypes are compared across ranks before anything is reduced (Note [NCCL
// collective checks]). Tensors must be contiguous CUDA tensors on the group's device, of dtype
// float32, float64, int64 or bfloat16; a CPU tensor (bookkeeping such as the Reducer's checks) is
// copied to the GPU and back, and its call returns when done (Note [CPU tensors on an NCCL group]).
// What it leaves out: several GPUs per process, NCCL's non-blocking communicators, process subgroups.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "tinytorch/distributed/process_group.h"

namespace tt::distributed {

// NCCL's ncclUniqueId as bytes (NCCL_UNIQUE_ID_BYTES = 128): rank 0 makes it, every rank passes
// the same bytes to the constructor. Plain bytes, so that MPI (or a file) can carry it.
constexpr size_t kNcclUniqueIdBytes = 128;
using NcclUniqueId = std::array<char, kNcclUniqueIdBytes>;

class ProcessGroupNCCL final : public ProcessGroup {
 public:
  // A new id for a new communicator (ncclGetUniqueId). Call it on one rank only.
  static NcclUniqueId new_unique_id();

  // Joins the communicator `id` as `rank` of `size` on GPU `device` (every rank calls it; it blocks
  // until all have), and makes `device` this process's current CUDA device. Tensors still name
  // their GPU: put them on tt::Device(tt::kCUDA, device). Throws a tt::Error naming NCCL's or
  // CUDA's reason when that fails.
  ProcessGroupNCCL(int rank, int size, int device, const NcclUniqueId& id);
  // Waits for the collectives still queued, then ends the communicator.
  ~ProcessGroupNCCL() override;

  Backend backend() const override { return Backend::NCCL; }
  int device() const { return device_; }

  // See ProcessGroup. Each first compares its arguments across ranks, waiting on the host for that
  // small all-reduce (Note [NCCL collective checks]), then queues the collective and returns;
  // allreduce_unchecked skips the comparison and never waits. Work::wait() orders the compute stream
  // after the collective; the Work keeps the tensors alive until the GPU is done with them.
  std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum) override;
  std::shared_ptr<Work> allreduce_unchecked(const Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root = 0) override;
  std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input,
                                       ReduceOp op = ReduceOp::Sum) override;
  // The cross-rank check alone (an all-reduce of the call's fingerprint), waited for on the host:
  // returns once every rank has reached it
  // (and every collective queued before it has finished). The Work it returns is complete.
  std::shared_ptr<Work> barrier() override;
  // ncclCommAbort, "rank R: why" on stderr, then MPI_Abort when MPI runs, else exit status 1.
  [[noreturn]] void abort(const std::string& why) override;

  struct State;  // the communicator, the stream, the check buffers (process_group_nccl.cpp)

 private:
  std::shared_ptr<Work> allreduce_on_device(const Tensor& tensor, ReduceOp op, bool across_ranks);

  int device_;
  std::shared_ptr<State> state_;
};

namespace detail {
// What distributed.cpp calls: ProcessGroupNCCL::new_unique_id(), and a new ProcessGroupNCCL.
NcclUniqueId make_nccl_unique_id();
std::shared_ptr<ProcessGroup> make_nccl_group(int rank, int size, int device, const NcclUniqueId& id);
}  // namespace detail

}  // namespace tt::distributed
