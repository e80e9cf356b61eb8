// ProcessGroupMPI: ProcessGroup on MPI, for CPU tensors.
//
// Note [MPI communication thread]: every collective is a task on one communication thread per
// group, which runs them in the order they were started, each as MPI's blocking call. The thread
// that started one goes on computing (backward, say) and meets the result through Work::wait().
// Blocking calls on their own thread rather than MPI's non-blocking ones (MPI_Iallreduce) because
// MPI makes progress on a non-blocking collective only while some thread is inside MPI: with
// backward busy, an MPI_Iallreduce would mostly run when wait() is called, and nothing would
// overlap. Only this thread calls MPI while the group lives, except MPI_Abort, which abort() may
// call from any thread at any time: hence MPI_THREAD_MULTIPLE, which OpenMPI 4.1 provides. On a
// machine with no spare core the thread's busy-polling competes with compute; module 16 measures
// what that costs.
//
// Note [collective checks]: MPI cannot tell when ranks pass tensors of different sizes to one
// collective: with mismatched counts one rank gets MPI_ERR_TRUNCATE while the other's MPI_Allreduce
// reports success. So each collective first all-reduces a small fingerprint of what it was given
// (which collective, reduction, dtype, root, shape), as the max of (f, -f): the ranks agree iff the
// max and the min are equal everywhere. On a mismatch every rank gathers every fingerprint and
// throws the same error naming each rank's shape, so the failure is seen by all of them instead of
// corrupting one. It costs one tiny all-reduce per collective (a few microseconds on one machine,
// about one network latency across machines); DDP's buckets are megabytes, so it is noise there.
#include "tinytorch/distributed/process_group_mpi.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/core/error.h"

namespace tt::distributed::detail {

namespace {

bool we_started_mpi = false;

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  TT_CHECK(false, what, " failed: ", std::string(msg, size_t(len)));
}

class WorkMPI final : public Work {
 public:
  bool is_completed() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  void wait() override {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  void finish(std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      error_ = error;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

enum class Kind : int64_t { AllReduce = 1, Broadcast, AllGather, ReduceScatter, Barrier };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::AllReduce: return "allreduce";
    case Kind::Broadcast: return "broadcast";
    case Kind::AllGather: return "allgather";
    case Kind::ReduceScatter: return "reduce_scatter";
    case Kind::Barrier: return "barrier";
  }
  return "?";
}

constexpr int kFingerprint = 14;  // kind, op, dtype, root, numel, ndim, 8 dims (the rest hashed in the last)

std::vector<int64_t> fingerprint(Kind kind, int64_t op, const Tensor* t, int64_t root) {
  std::vector<int64_t> f(kFingerprint, 0);
  f[0] = int64_t(kind);
  f[1] = op;
  f[3] = root;
  if (t) {
    f[2] = int64_t(t->dtype());
    f[4] = t->numel();
    f[5] = t->dim();
    for (int d = 0; d < t->dim(); ++d) {
      if (d < 7) f[size_t(6 + d)] = t->size(d);
      else f[13] = f[13] * 1000003 + t->size(d);
    }
  }
  return f;
}

std::string describe(const std::vector<int64_t>& f) {
  std::ostringstream os;
  os << kind_name(Kind(f[0]));
  if (Kind(f[0]) == Kind::Barrier) return os.str();
  os << " of " << dtype_name(ScalarType(f[2])) << " [";
  for (int64_t d = 0; d < f[5]; ++d) os << (d ? ", " : "") << (d < 7 ? std::to_string(f[size_t(6 + d)]) : "...");
  os << "]";
  if (Kind(f[0]) == Kind::Broadcast) os << " from root " << f[3];
  if (Kind(f[0]) == Kind::AllReduce || Kind(f[0]) == Kind::ReduceScatter)
    os << " with " << to_string(ReduceOp(f[1]));
  return os.str();
}

MPI_Datatype mpi_type(ScalarType t, bool reducing) {
  switch (t) {
    case kFloat32: return MPI_FLOAT;
    case kFloat64: return MPI_DOUBLE;
    case kInt64: return MPI_INT64_T;
    case kBool: return reducing ? MPI_C_BOOL : MPI_BYTE;
    case kBFloat16: return MPI_UINT16_T;  // copied as bits; reductions go through float32
    case ScalarType::NumTypes: break;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op, ScalarType t) {
  if (t == kBool) {
    TT_CHECK(op == ReduceOp::Max || op == ReduceOp::Min, "a bool tensor can be reduced with max (any) or "
             "min (all), not ", to_string(op));
    return op == ReduceOp::Max ? MPI_LOR : MPI_LAND;
  }
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return MPI_SUM;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
  }
  return MPI_SUM;
}

class ProcessGroupMPI final : public ProcessGroup {
 public:
  ProcessGroupMPI(MPI_Comm comm, int rank, int size) : ProcessGroup(rank, size), comm_(comm) {
    worker_ = std::thread([this] { loop(); });
  }
  ~ProcessGroupMPI() override { shutdown(); }

  // Lets the collectives already started finish (for up to kShutdownWait: with several ranks one
  // still waiting then is waiting for ranks that will never call it, and the job is ended rather
  // than left hanging at exit), stops the thread and frees the communicator.
  void shutdown() override {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (stop_) return;
      stop_ = true;
      cv_.notify_all();
      const bool drained = idle_cv_.wait_for(lock, kShutdownWait, [this] { return queue_.empty() && !busy_; });
      if (!drained && size() > 1) {
        const size_t waiting = queue_.size() + (busy_ ? 1 : 0);
        lock.unlock();
        abort(::tt::detail::concat("the process group is being destroyed (destroy_process_group, or the program "
                                   "is ending) while ", waiting, " collective(s) still wait for the other ranks: "
                                   "they were started but the other ranks never called them; ending the job"));
      }
    }
    worker_.join();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  Backend backend() const override { return Backend::MPI; }

  // tensor [*] -> op over the ranks, in place.
  std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op) override {
    check_tensor(tensor, "allreduce");
    check_reduction(tensor, op, "allreduce");
    return enqueue(fingerprint(Kind::AllReduce, int64_t(op), &tensor, 0), {tensor}, [this, tensor, op] {
      Tensor buf = reduction_buffer(tensor);
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, buf.raw_data_ptr(), int(buf.numel()), mpi_type(buf.dtype(), true),
                              mpi_op(op, buf.dtype()), comm_), "MPI_Allreduce");
      finish_reduction(tensor, buf, op);
    });
  }

  // tensor [*] -> root's values on every rank.
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root) override {
    check_tensor(tensor, "broadcast");
    check_root(root, "broadcast");
    return enqueue(fingerprint(Kind::Broadcast, 0, &tensor, root), {tensor}, [this, tensor, root] {
      Tensor buf = tensor.is_contiguous() ? tensor : tensor.contiguous();
      check_mpi(MPI_Bcast(buf.raw_data_ptr(), count(buf), mpi_type(buf.dtype(), false), root, comm_), "MPI_Bcast");
      write_back(tensor, buf);
    });
  }

  // input [*] -> output [W, *].
  std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) override {
    check_tensor(input, "allgather");
    check_tensor(output, "allgather");
    check_stacked(output, input, "allgather", "output", "input");
    return enqueue(fingerprint(Kind::AllGather, 0, &input, 0), {output, input}, [this, output, input] {
      Tensor in = input.contiguous();
      Tensor out = output.is_contiguous() ? output : output.contiguous();
      check_mpi(MPI_Allgather(in.raw_data_ptr(), count(in), mpi_type(in.dtype(), false), out.raw_data_ptr(),
                              count(in), mpi_type(in.dtype(), false), comm_), "MPI_Allgather");
      write_back(output, out);
    });
  }

  // input [W, *] -> output [*] = op over the ranks of input[rank].
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) override {
    check_tensor(input, "reduce_scatter");
    check_tensor(output, "reduce_scatter");
    check_stacked(input, output, "reduce_scatter", "input", "output");
    check_reduction(input, op, "reduce_scatter");
    auto f = fingerprint(Kind::ReduceScatter, int64_t(op), &input, 0);
    return enqueue(std::move(f), {output, input}, [this, output, input, op] {
      Tensor in = reduction_buffer(input.contiguous());  // only read by MPI
      Tensor out = reduction_buffer(output.is_contiguous() ? output : output.contiguous());
      check_mpi(MPI_Reduce_scatter_block(in.raw_data_ptr(), out.raw_data_ptr(), int(out.numel()),
                                         mpi_type(in.dtype(), true), mpi_op(op, in.dtype()), comm_),
                "MPI_Reduce_scatter_block");
      finish_reduction(output, out, op);
    });
  }

  std::shared_ptr<Work> barrier() override {
    return enqueue(fingerprint(Kind::Barrier, 0, nullptr, 0), {},
                   [this] { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); });
  }

  [[noreturn]] void abort(const std::string& why) override {
    print_abort_line(rank(), why);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // MPI_Abort does not return; this keeps [[noreturn]] honest if it ever does
  }

 private:
  struct Task {
    std::vector<int64_t> fingerprint;
    std::vector<Tensor> keep;  // alive until the collective is done
    std::function<void()> run;
    std::shared_ptr<WorkMPI> work;
  };

  static int count(const Tensor& t) {
    TT_CHECK(t.numel() <= int64_t(0x7fffffff), "MPI collectives take at most 2^31 - 1 elements; this tensor "
             "has ", t.numel(), ": split it");
    return int(t.numel());
  }

  static void check_tensor(const Tensor& t, const char* op) {
    check_defined(t, op);
    TT_CHECK_DEVICE(t.device().is_cpu(), op, ": the MPI backend works on CPU tensors, this one is on ", t.device(),
                    "; use Backend::NCCL for CUDA tensors, or move it to the CPU");
    count(t);
  }

  // What MPI reduces: the tensor itself when it is contiguous, else a copy; bf16 as float32.
  static Tensor reduction_buffer(const Tensor& t) {
    if (t.dtype() == kBFloat16) return t.to(kFloat32);
    return t.is_contiguous() ? t : t.contiguous();
  }

  void finish_reduction(const Tensor& t, Tensor& buf, ReduceOp op) const {
    if (op == ReduceOp::Avg) {
      NoGradGuard no_grad;
      buf.detach().div_(Scalar(double(size())));
    }
    write_back(t, buf);
  }

  static void write_back(const Tensor& t, const Tensor& buf) {
    if (buf.is_same(t)) {
      t.bump_version();
      return;
    }
    NoGradGuard no_grad;
    t.detach().copy_(buf);
  }

  std::shared_ptr<Work> enqueue(std::vector<int64_t> f, std::vector<Tensor> keep, std::function<void()> run) {
    auto work = std::make_shared<WorkMPI>();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      TT_CHECK(!stop_, "ProcessGroup: the group has been destroyed (destroy_process_group); no collective can "
               "run on it any more");
      queue_.push_back(Task{std::move(f), std::move(keep), std::move(run), work});
    }
    cv_.notify_one();
    return work;
  }

  // Note [collective checks].
  void check_fingerprints(const std::vector<int64_t>& f) {
    std::vector<int64_t> both(2 * kFingerprint), reduced(2 * kFingerprint);
    for (int i = 0; i < kFingerprint; ++i) {
      both[size_t(i)] = f[size_t(i)];
      both[size_t(kFingerprint + i)] = -f[size_t(i)];
    }
    check_mpi(MPI_Allreduce(both.data(), reduced.data(), 2 * kFingerprint, MPI_INT64_T, MPI_MAX, comm_),
              "MPI_Allreduce (the ranks' tensor check)");
    bool agree = true;
    for (int i = 0; i < kFingerprint; ++i) agree = agree && reduced[size_t(i)] == -reduced[size_t(kFingerprint + i)];
    if (agree) return;
    std::vector<int64_t> all(size_t(kFingerprint) * size_t(size()));
    check_mpi(MPI_Allgather(f.data(), kFingerprint, MPI_INT64_T, all.data(), kFingerprint, MPI_INT64_T, comm_),
              "MPI_Allgather (the ranks' tensor check)");
    std::ostringstream os;
    for (int r = 0; r < size(); ++r) {
      std::vector<int64_t> fr(all.begin() + r * kFingerprint, all.begin() + (r + 1) * kFingerprint);
      os << (r ? "; " : "") << "rank " << r << ": " << describe(fr);
    }
    TT_CHECK_SHAPE(false, "collective mismatch: the ranks called different collectives or passed different tensors (",
             os.str(), "); every rank must call the same collectives in the same order with tensors of the same "
             "shape and dtype");
  }

  void loop() {
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and every started collective has run
        task = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
      }
      std::exception_ptr error;
      try {
        check_fingerprints(task.fingerprint);
        task.run();
      } catch (...) {
        error = std::current_exception();
      }
      task.keep.clear();
      task.work->finish(error);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        busy_ = false;
      }
      idle_cv_.notify_all();
    }
  }

  MPI_Comm comm_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  bool busy_ = false;                   // the thread is running a task
  std::condition_variable idle_cv_;     // queue empty and not busy
  static constexpr std::chrono::seconds kShutdownWait{10};
};

void start_mpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  TT_CHECK(!finalized, "init_process_group: MPI was finalized by destroy_process_group() and cannot be started "
           "again in this process (MPI allows one MPI_Init per process)");
  int provided = 0;
  if (!initialized) {
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    we_started_mpi = true;
  } else {
    MPI_Query_thread(&provided);
  }
  TT_CHECK(provided >= MPI_THREAD_MULTIPLE, "init_process_group: this MPI provides thread level ", provided,
           "; tinytorch's MPI group needs MPI_THREAD_MULTIPLE (its collectives run on their own thread, and "
           "abort may call MPI_Abort from any thread meanwhile)");
}

}  // namespace

std::shared_ptr<ProcessGroup> make_mpi_group() {
  start_mpi();
  MPI_Comm comm;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);  // errors come back as codes, thrown as tt::Error
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return std::make_shared<ProcessGroupMPI>(comm, rank, size);
}

int mpi_local_rank() {
  MPI_Comm local;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  int rank = 0;
  MPI_Comm_rank(local, &rank);
  MPI_Comm_free(&local);
  return rank;
}

void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (we_started_mpi && !finalized) MPI_Finalize();
  we_started_mpi = false;
}

void mpi_abort_world(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace tt::distributed::detail
