// ProcessGroup: the collectives of data-parallel training (all-reduce, broadcast, all-gather,
// reduce-scatter, barrier) over a group of processes, each called by every rank in the same order;
// Work, the handle of one collective in flight. Two backends implement it: MPI for CPU tensors
// (process_group_mpi.cpp) and NCCL for CUDA tensors (process_group_nccl.cpp); a third,
// world_of_one() (distributed.h), is this process alone. Everything is in
// place on the caller's tensors; shapes and dtypes are checked across ranks first (Note [collective
// checks]). Reach the group made by init_process_group() through default_group() (distributed.h).
#pragma once

#include <memory>
#include <string>

#include "tinytorch/core/tensor.h"

namespace tt::distributed {

// Which communication library a group runs on.
enum class Backend { MPI, NCCL };
// How all-reduce and reduce-scatter combine the ranks' values. Avg is the sum divided by the world
// size (floating-point dtypes only).
enum class ReduceOp { Sum, Avg, Max, Min };

std::string to_string(Backend b);    // "mpi", "nccl"
std::string to_string(ReduceOp op);  // "sum", "avg", "max", "min"

// One collective in flight. Collectives on a group run one after another, in the order they were
// started, on every rank (MPI: a communication thread; NCCL: a communication stream), so
// computation can go on meanwhile.
class Work {
 public:
  virtual ~Work() = default;
  // True once the result is in the tensor (MPI), or once the GPU has finished it (NCCL).
  virtual bool is_completed() = 0;
  // MPI: blocks until the collective is done. NCCL: makes our compute stream wait for it, so every
  // later op sees the result (the host does not block). A shape mismatch between ranks is thrown on
  // every rank: by wait() with MPI (the check runs on the communication thread), by the call itself
  // with NCCL (the host waits for the check). wait() also rethrows MPI's and NCCL's own errors.
  virtual void wait() = 0;
};

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  virtual Backend backend() const = 0;

  // tensor [*] on every rank -> tensor [*] = op over the ranks, elementwise.
  virtual std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum) = 0;
  // tensor [*] -> every rank's tensor holds root's values.
  virtual std::shared_ptr<Work> broadcast(const Tensor& tensor, int root = 0) = 0;
  // input [*] on every rank -> output [W, *], output[r] = rank r's input.
  virtual std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) = 0;
  // input [W, *] on every rank -> output [*] on rank r = op over the ranks of their input[r].
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input,
                                               ReduceOp op = ReduceOp::Sum) = 0;
  // Completes once every rank has started it.
  virtual std::shared_ptr<Work> barrier() = 0;
  // allreduce without the cross-rank check of Note [collective checks], for callers that have
  // already established that every rank passes the same shapes in the same order
  // (DistributedDataParallel's buckets, compared at construction). NCCL's check makes the host
  // wait for the GPU, which would stop backward at every bucket; MPI's runs on its communication
  // thread and is kept.
  virtual std::shared_ptr<Work> allreduce_unchecked(const Tensor& tensor, ReduceOp op) { return allreduce(tensor, op); }
  // Ends the group for good (destroy_process_group calls it): waits for the collectives already
  // started and releases the communicator; later collectives throw. Handles to the group stay valid.
  // A collective that is still waiting for other ranks at that point would wait forever: with
  // several ranks that aborts the job, naming this rank.
  virtual void shutdown() {}
  // Ends every process of the job at once: prints "rank R: why" on stderr and stops the job
  // (MPI_Abort; NCCL aborts its communicator first). For an error that the other ranks cannot
  // see, which would otherwise leave them waiting forever in their next collective.
  [[noreturn]] virtual void abort(const std::string& why) = 0;

 protected:
  // Argument checks made before communicating, by the MPI group and world_of_one() with the same
  // messages (process_group.cpp; NCCL has its own, which also agree across ranks). `op` names the
  // collective in the message.
  static void check_defined(const Tensor& t, const char* op);
  static void check_reduction(const Tensor& t, ReduceOp reduce, const char* op);
  // big [W, *small] on every rank, of small's dtype.
  void check_stacked(const Tensor& big, const Tensor& small, const char* op, const char* big_name,
                     const char* small_name) const;
  void check_root(int root, const char* op) const;

 private:
  int rank_;
  int size_;
};

namespace detail {
// Flushes stdout, then writes "rank R: why" on stderr: the line every abort prints before it ends
// the job.
void print_abort_line(int rank, const std::string& why);
}  // namespace detail

}  // namespace tt::distributed
