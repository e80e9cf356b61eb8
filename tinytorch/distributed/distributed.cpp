// The default process group and the free functions of tt::distributed (distributed.h): starting
// and ending the group, rank and world size, blocking collectives, abort.
#include "tinytorch/distributed/distributed.h"

#include <cstdio>
#include <array>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>

#include "tinytorch/core/error.h"
#include "tinytorch/ops/factory.h"
#ifdef TINYTORCH_HAS_MPI
#include "tinytorch/distributed/process_group_mpi.h"
#endif
#ifdef TINYTORCH_HAS_NCCL
#include "tinytorch/distributed/process_group_nccl.h"
#endif

namespace tt::distributed {

namespace {

// Recursive: an exception thrown while it is held may end the program through terminate_the_job,
// which reads the group again on the same thread.
std::recursive_mutex group_mutex;
std::shared_ptr<ProcessGroup> the_group;
int local_rank = 0;
bool mpi_running = false;  // init_process_group started MPI (either backend)

std::shared_ptr<ProcessGroup> current() {
  std::lock_guard<std::recursive_mutex> lock(group_mutex);
  return the_group;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// An exception that escapes main in a multi-rank job would leave the other ranks waiting.
std::terminate_handler previous_terminate = nullptr;
void terminate_the_job() {
  std::string why = "terminated";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      why = std::string("uncaught exception: ") + ex.what();
    } catch (...) {
      why = "uncaught exception of an unknown type";
    }
  }
  if (get_world_size() > 1) abort(why);
  if (previous_terminate) previous_terminate();
  std::abort();
}

void end_at_exit() { destroy_process_group(); }

#ifdef TINYTORCH_HAS_NCCL
// NCCL's communicator needs the same 128-byte unique id on every rank: rank 0 makes it and MPI
// carries it to the others (as llm.c does). A world of one, started without mpirun, needs no MPI.
std::shared_ptr<ProcessGroup> start_nccl() {
  NcclUniqueId id{};
  int rank = 0, size = 1;
  if (!launched_by_mpirun()) {
    id = detail::make_nccl_unique_id();
  } else {
#ifdef TINYTORCH_HAS_MPI
    std::shared_ptr<ProcessGroup> mpi = detail::make_mpi_group();
    mpi_running = true;
    local_rank = detail::mpi_local_rank();
    rank = mpi->rank();
    size = mpi->size();
    // Only rank 0 makes it: ncclGetUniqueId starts NCCL's bootstrap listener in the caller.
    if (rank == 0) id = detail::make_nccl_unique_id();
    Tensor bytes = empty({int64_t(id.size())}, TensorOptions().dtype(kBool));  // one byte each
    std::memcpy(bytes.raw_data_ptr(), id.data(), id.size());
    mpi->broadcast(bytes, 0)->wait();
    std::memcpy(id.data(), bytes.raw_data_ptr(), id.size());
#else
    TT_CHECK(false, "init_process_group(NCCL): started by mpirun, but this build has no MPI to send NCCL's id "
             "to the other ranks; install OpenMPI (tools/tt setup) and rebuild");
#endif
  }
  return detail::make_nccl_group(rank, size, local_rank, id);
}
#endif

}  // namespace

bool is_available(Backend backend) {
#ifdef TINYTORCH_HAS_MPI
  if (backend == Backend::MPI) return true;
#endif
#ifdef TINYTORCH_HAS_NCCL
  if (backend == Backend::NCCL) return true;
#endif
  (void)backend;
  return false;
}

bool launched_by_mpirun() {
  return env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE") || env("PMIX_RANK") || env("MPI_LOCALNRANKS");
}

void init_process_group(Backend backend) {
  std::lock_guard<std::recursive_mutex> lock(group_mutex);
  TT_CHECK(!the_group, "init_process_group: the default group is already initialized (backend ",
           to_string(the_group->backend()), "); call destroy_process_group() first");
  TT_CHECK(is_available(backend), "init_process_group: this build of tinytorch has no ", to_string(backend),
           " backend (", backend == Backend::MPI ? "OpenMPI was not found when it was built: tools/tt setup "
           "installs it, then rebuild" : "it needs the CUDA backend and NCCL at build time", ")");
  std::shared_ptr<ProcessGroup> group;
  if (backend == Backend::MPI) {
#ifdef TINYTORCH_HAS_MPI
    group = detail::make_mpi_group();
    local_rank = detail::mpi_local_rank();
    mpi_running = true;
#endif
  } else {
#ifdef TINYTORCH_HAS_NCCL
    group = start_nccl();
#endif
  }
  the_group = group;
  static bool hooks_installed = false;
  if (!hooks_installed) {
    hooks_installed = true;
    previous_terminate = std::set_terminate(terminate_the_job);
    std::atexit(end_at_exit);
  }
}

bool is_initialized() { return current() != nullptr; }

void check_initialized_under_mpirun(const char* who) {
  TT_CHECK(is_initialized() || !launched_by_mpirun(), who, ": this process was started by mpirun but "
           "tt::distributed::init_process_group() has not been called, so every rank would train alone on all "
           "the data; call init_process_group(Backend::MPI) (or NCCL) first, in every rank");
}

void destroy_process_group() {
  std::shared_ptr<ProcessGroup> group;
  {
    std::lock_guard<std::recursive_mutex> lock(group_mutex);
    group = std::move(the_group);
    the_group.reset();
  }
  // Ended now even if a DistributedDataParallel still holds it: MPI is finalized next.
  if (group) group->shutdown();
  group.reset();
#ifdef TINYTORCH_HAS_MPI
  if (mpi_running) detail::finalize_mpi();
#endif
  mpi_running = false;
  local_rank = 0;
}

std::shared_ptr<ProcessGroup> default_group() {
  std::shared_ptr<ProcessGroup> g = current();
  TT_CHECK(g != nullptr, "distributed: no process group; call tt::distributed::init_process_group() first "
           "(in every rank)");
  return g;
}

int get_rank() {
  std::shared_ptr<ProcessGroup> g = current();
  return g ? g->rank() : 0;
}

int get_world_size() {
  std::shared_ptr<ProcessGroup> g = current();
  return g ? g->size() : 1;
}

int get_local_rank() {
  std::lock_guard<std::recursive_mutex> lock(group_mutex);
  return the_group ? local_rank : 0;
}

// The default group, or this process alone.
static std::shared_ptr<ProcessGroup> group_or_self() {
  std::shared_ptr<ProcessGroup> g = current();
  return g ? g : world_of_one();
}

void allreduce(const Tensor& tensor, ReduceOp op) { group_or_self()->allreduce(tensor, op)->wait(); }
void broadcast(const Tensor& tensor, int root) { group_or_self()->broadcast(tensor, root)->wait(); }
void allgather(const Tensor& output, const Tensor& input) { group_or_self()->allgather(output, input)->wait(); }
void reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) {
  group_or_self()->reduce_scatter(output, input, op)->wait();
}
void barrier() { group_or_self()->barrier()->wait(); }

void abort(const std::string& why) {
  if (auto g = current()) g->abort(why);  // prints the line, ends every rank
#ifdef TINYTORCH_HAS_MPI
  if (mpi_running) {  // MPI started (an NCCL bootstrap, say) but no group yet
    detail::print_abort_line(get_rank(), why);
    detail::mpi_abort_world(1);
  }
#endif
  world_of_one()->abort(why);
  std::_Exit(1);  // not reached: the virtual abort is [[noreturn]], which the compiler cannot see through
}

}  // namespace tt::distributed
