// ProcessGroupNCCL (process_group_nccl.h): NCCL's collectives on a communication stream of their own,
// ordered against our compute stream by events, each preceded by a comparison of the ranks'
// arguments. Compiled only when TINYTORCH_HAS_NCCL (cmake/TinytorchDistributed.cmake).
#include "tinytorch/distributed/process_group_nccl.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#ifdef TINYTORCH_HAS_MPI
#include <mpi.h>
#endif

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/stream.h"
#include "tinytorch/core/error.h"
#include "tinytorch/distributed/nccl_library.h"

// Note [NCCL streams]
// Our CUDA backend queues every kernel, cuBLAS call and copy of a device on that device's compute
// stream (tt::cuda::stream, backend/cuda/stream.h), so its work is ordered without events. NCCL's
// kernels run on a stream of our own, created non-blocking
// (cudaStreamNonBlocking), so that they neither wait for nor hold up the compute that follows them:
// that is how DDP overlaps a bucket's all-reduce with the rest of backward. Each collective
//   1. records `ready` on the compute stream and makes the communication stream wait for it (the
//      tensor's values are written by then),
//   2. queues the NCCL call on the communication stream, and records `done` after it;
// Work::wait() makes the compute stream wait for `done`, so every op queued later reads the result;
// the host never blocks. The Work holds the tensors; when it goes, it first makes the compute stream
// wait for `done`, so the caching allocator, which hands a freed block to work on the compute
// stream, cannot give the memory away while NCCL still uses it. Collectives of one group run in the
// order they were called (one stream, one lock), which is the order NCCL needs on every rank.

// Note [NCCL collective checks]
// NCCL trusts its caller: two ranks that all-reduce different element counts read past a buffer or
// wait forever. So before each collective, every rank describes its call as a few integers (which
// collective, reduce op, root, dtype, element counts, rank count and a hash of the shape, and whether
// its own arguments were rejected) and the group all-reduces them with max, next to their negations
// (max of -x = -min of x): one small NCCL call gives each field's largest and smallest value over the
// ranks. The host waits for it, then every rank sees the same answer: if any field differs, or any
// rank rejected its arguments, every rank throws (naming what differs) instead of one rank failing
// alone while the others hang in the real collective. The price is one host synchronization per
// collective, after the collectives queued before it; a bucket's all-reduce still overlaps with the
// compute that follows it.

// Note [CPU tensors on an NCCL group]
// NCCL reads and writes GPU memory only. But a few collectives carry bookkeeping rather than data:
// the Reducer compares the ranks' parameter lists and flags unused parameters with small CPU
// tensors, on whichever backend. So a CPU tensor given to this group is copied to the group's GPU,
// the collective runs on the copy, and the result is copied back before the call returns (its Work
// is already complete): synchronous, and meant for small tensors; training data belongs on the GPU.

namespace tt::distributed {

using ::tt::detail::concat;

namespace {

// NCCL's result as a tt::Error naming the call and NCCL's reason.
void nccl_check(ncclResult_t r, const char* call, ncclComm_t comm) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  std::ostringstream os;
  os << "ProcessGroupNCCL: " << call << " failed: " << nccl().ncclGetErrorString(r);
  const char* detail = comm != nullptr ? nccl().ncclGetLastError(comm) : nullptr;
  if (detail != nullptr && detail[0] != '\0') os << " (" << detail << ")";
  TT_CHECK(false, os.str());
}
#define TT_NCCL_CHECK(expr, comm) nccl_check((expr), #expr, (comm))

// A CUDA event that is destroyed with its owner (CUDA releases it once the GPU has passed it).
class Event {
 public:
  Event() { TT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~Event() {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

ncclDataType_t nccl_dtype(ScalarType t) {
  switch (t) {
    case kFloat32: return ncclFloat32;
    case kFloat64: return ncclFloat64;
    case kInt64: return ncclInt64;
    case kBFloat16: return ncclBfloat16;
    default: break;
  }
  TT_CHECK_DTYPE(false, "ProcessGroupNCCL: dtype ", t, " is not supported (float32, float64, int64, bfloat16)");
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Avg: return ncclAvg;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
  }
  TT_CHECK(false, "ProcessGroupNCCL: unknown reduce op");
  return ncclSum;
}

// The collectives, as the first field of a call's fingerprint.
enum class Kind : int64_t { AllReduce, Broadcast, AllGather, ReduceScatter, Barrier };
const char* kind_name(int64_t k) {
  static const char* names[] = {"allreduce", "broadcast", "allgather", "reduce_scatter", "barrier"};
  return k >= 0 && k < 5 ? names[k] : "?";
}

// The fields of a call's fingerprint (Note [NCCL collective checks]); all are >= 0.
enum Field { kRejected, kKind, kOp, kRoot, kDtype, kNumelIn, kNumelOut, kRanks, kShapeHash, kFields };
static_assert(kFields == 9, "field_name lists every field");
const char* field_name(int f) {
  static const char* names[] = {"rejected",      "collective",           "reduce op",  "root", "dtype",
                                "element count", "output element count", "rank count", "shape"};
  return names[f];
}

int64_t shape_hash(const Shape& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the sizes
  for (int64_t d : s) h = (h ^ uint64_t(d)) * 1099511628211ull;
  h ^= uint64_t(s.size()) << 56;
  return int64_t(h >> 2);  // non-negative, and its negation fits
}

}  // namespace

struct ProcessGroupNCCL::State {
  int rank = 0, size = 1, device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int64_t* check_host = nullptr;    // pinned: the fingerprint, then its negation
  int64_t* check_device = nullptr;  // the same on the GPU, all-reduced in place
  std::mutex mutex;                 // one collective queued at a time, in call order

  ~State() {  // never throws: a failing call here has nobody to tell
    if (stream != nullptr) (void)cudaStreamSynchronize(stream);
    if (comm != nullptr) (void)nccl().ncclCommDestroy(comm);
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
    if (check_host != nullptr) (void)cudaFreeHost(check_host);
    if (check_device != nullptr) (void)cudaFree(check_device);
  }

  // Throws if NCCL reported an error on the communicator since the last look.
  void check_async_error() const {
    TT_CHECK(comm != nullptr, "ProcessGroupNCCL: the communicator was aborted");
    ncclResult_t r = ncclSuccess;
    TT_NCCL_CHECK(nccl().ncclCommGetAsyncError(comm, &r), comm);
    TT_NCCL_CHECK(r, comm);
  }
};

namespace {

// One NCCL collective in flight (Note [NCCL streams]). A null `done` is a finished one (a barrier, a
// collective on CPU tensors).
class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<ProcessGroupNCCL::State> state, std::unique_ptr<Event> done, std::vector<Tensor> tensors)
      : state_(std::move(state)), done_(std::move(done)), tensors_(std::move(tensors)) {}
  ~NcclWork() override {
    if (done_ != nullptr) {  // later compute (and the allocator's reuse of our tensors) after NCCL
      int previous = -1;
      if (cudaGetDevice(&previous) == cudaSuccess && previous != state_->device) (void)cudaSetDevice(state_->device);
      (void)cudaStreamWaitEvent(cuda::stream(state_->device), done_->get(), 0);
      if (previous >= 0 && previous != state_->device) (void)cudaSetDevice(previous);
    }
  }

  bool is_completed() override {
    if (done_ == nullptr) return true;
    const cudaError_t e = cudaEventQuery(done_->get());
    if (e == cudaErrorNotReady) return false;
    TT_CUDA_CHECK(e);
    state_->check_async_error();
    return true;
  }

  void wait() override {
    if (done_ == nullptr) return;
    cuda::DeviceGuard guard(state_->device);
    TT_CUDA_CHECK(cudaStreamWaitEvent(cuda::stream(state_->device), done_->get(), 0));
    state_->check_async_error();
  }

 private:
  std::shared_ptr<ProcessGroupNCCL::State> state_;
  std::unique_ptr<Event> done_;
  std::vector<Tensor> tensors_;  // alive until the GPU is done with them
};

bool on_host(const Tensor& t) { return t.defined() && t.device().is_cpu(); }

// A CPU tensor's copy on GPU `device`; any other tensor as it is (Note [CPU tensors on an NCCL group]).
Tensor to_gpu(const Tensor& t, int device) {
  return on_host(t) ? t.detach().contiguous().to(Device(kCUDA, device), /*copy=*/true) : t;
}

// Writes the collective's result `gpu` back into the CPU tensor `host` (nothing for a GPU tensor).
void write_back(const Tensor& host, const Tensor& gpu) {
  if (!on_host(host)) return;
  NoGradGuard no_grad;
  Tensor dst = host.detach();  // same storage
  dst.copy_(gpu);               // waits for the GPU
}

// Why `t` cannot take part in a collective on `device`, or "" when it can.
std::string reject(const char* what, const char* role, const Tensor& t, int device) {
  std::ostringstream os;
  os << "ProcessGroupNCCL " << what << ": ";
  if (!t.defined()) return os.str() + role + " is undefined";
  if (!t.is_cuda() || t.device().index != device) {
    os << role << " must be a CUDA tensor on this rank's GPU cuda:" << device << ", got one on " << t.device();
    return os.str();
  }
  if (!t.is_contiguous()) {
    os << role << " must be contiguous, got shape " << t.shape() << " with strides " << t.strides();
    return os.str();
  }
  if (t.dtype() != kFloat32 && t.dtype() != kFloat64 && t.dtype() != kInt64 && t.dtype() != kBFloat16) {
    os << role << " has dtype " << t.dtype() << "; NCCL collectives take float32, float64, int64 or bfloat16";
    return os.str();
  }
  return "";
}

}  // namespace

NcclUniqueId ProcessGroupNCCL::new_unique_id() {
  static_assert(sizeof(ncclUniqueId) == kNcclUniqueIdBytes, "NCCL_UNIQUE_ID_BYTES changed");
  ncclUniqueId id;
  TT_NCCL_CHECK(nccl().ncclGetUniqueId(&id), nullptr);
  NcclUniqueId bytes{};
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

ProcessGroupNCCL::ProcessGroupNCCL(int rank, int size, int device, const NcclUniqueId& id)
    : ProcessGroup(rank, size), device_(device), state_(std::make_shared<State>()) {
  TT_CHECK(size >= 1 && rank >= 0 && rank < size, "ProcessGroupNCCL: rank must be in [0, size), got rank ", rank,
           " of size ", size);
  int devices = 0;
  TT_CUDA_CHECK(cudaGetDeviceCount(&devices));
  TT_CHECK(device >= 0 && device < devices, "ProcessGroupNCCL: rank ", rank, " wants GPU ", device,
           " but this machine has ", devices,
           " (NCCL needs one GPU per rank: start at most that many ranks on each machine)");
  State& s = *state_;
  s.rank = rank;
  s.size = size;
  s.device = device;
  TT_CUDA_CHECK(cudaSetDevice(device));  // this rank's GPU from now on (distributed.h promises it)
  TT_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  TT_CUDA_CHECK(cudaMallocHost(&s.check_host, 2 * kFields * sizeof(int64_t)));
  TT_CUDA_CHECK(cudaMalloc(&s.check_device, 2 * kFields * sizeof(int64_t)));
  ncclUniqueId nid;
  std::memcpy(&nid, id.data(), sizeof nid);
  TT_NCCL_CHECK(nccl().ncclCommInitRank(&s.comm, size, nid, rank), nullptr);
}

ProcessGroupNCCL::~ProcessGroupNCCL() = default;  // State's destructor ends the communicator

namespace {

// The comparison of Note [NCCL collective checks]. `own_error` is this rank's rejection of its
// arguments ("" when none). Returns normally only when every rank made the same, valid call.
void check_across_ranks(ProcessGroupNCCL::State& s, const char* what, const std::string& own_error,
                        std::array<int64_t, kFields> f, const std::string& own_shape) {
  f[kRejected] = own_error.empty() ? 0 : 1;
  f[kRanks] = s.size;
  for (int i = 0; i < kFields; ++i) {
    s.check_host[i] = f[size_t(i)];
    s.check_host[kFields + i] = -f[size_t(i)];
  }
  const size_t bytes = 2 * kFields * sizeof(int64_t);
  TT_CUDA_CHECK(cudaMemcpyAsync(s.check_device, s.check_host, bytes, cudaMemcpyHostToDevice, s.stream));
  TT_NCCL_CHECK(nccl().ncclAllReduce(s.check_device, s.check_device, 2 * kFields, ncclInt64, ncclMax, s.comm, s.stream),
                s.comm);
  TT_CUDA_CHECK(cudaMemcpyAsync(s.check_host, s.check_device, bytes, cudaMemcpyDeviceToHost, s.stream));
  TT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  s.check_async_error();

  TT_CHECK(own_error.empty(), own_error);
  if (s.check_host[kRejected] != 0) {
    TT_CHECK(false, "ProcessGroupNCCL ", what, ": another rank rejected its arguments (its own error says why)");
  }
  std::ostringstream diff;
  for (int i = kKind; i < kFields; ++i) {
    const int64_t hi = s.check_host[i], lo = -s.check_host[kFields + i];
    if (hi == lo) continue;
    diff << (diff.tellp() > 0 ? "; " : "") << field_name(i);
    if (i == kKind) {
      diff << " differs (" << kind_name(lo) << " and " << kind_name(hi) << ")";
    } else if (i == kDtype) {
      diff << " differs (" << ScalarType(lo) << " and " << ScalarType(hi) << ")";
    } else if (i != kShapeHash) {
      diff << " differs (from " << lo << " to " << hi << ")";
    } else {
      diff << "s differ";
    }
  }
  if (diff.tellp() > 0) {
    TT_CHECK_SHAPE(false, "ProcessGroupNCCL ", what, ": the ranks' calls do not match: ", diff.str(),
                   "; this rank (", s.rank, ") called it with ", own_shape);
  }
}

std::array<int64_t, kFields> fingerprint(Kind kind, int64_t op, int64_t root, const Tensor& in, const Tensor& out) {
  std::array<int64_t, kFields> f{};
  f[kKind] = int64_t(kind);
  f[kOp] = op;
  f[kRoot] = root;
  if (in.defined()) {
    f[kDtype] = int64_t(in.dtype());
    f[kNumelIn] = in.numel();
    f[kShapeHash] = shape_hash(in.shape());
  }
  if (out.defined()) f[kNumelOut] = out.numel();
  return f;
}

// [W, *shape]: the shape of allgather's output and reduce_scatter's input; [W] alone when `shape`
// already has the most dims a tensor may have (the shapes then differ, and the caller says so).
Shape world_first(int world, const Shape& shape) {
  if (shape.size() >= kMaxDims) return Shape{int64_t(world)};
  Shape s = shape;
  s.insert(0, world);
  return s;
}

std::string describe(const Tensor& t) {
  return t.defined() ? concat(t.dtype(), " ", t.shape()) : std::string("no tensor");
}

// Steps 1 and 2 of Note [NCCL streams] around `launch` (the NCCL call on s.stream).
template <class Launch>
std::shared_ptr<Work> enqueue(const std::shared_ptr<ProcessGroupNCCL::State>& state, std::vector<Tensor> tensors,
                              Launch launch) {
  ProcessGroupNCCL::State& s = *state;
  Event ready;
  auto done = std::make_unique<Event>();
  TT_CUDA_CHECK(cudaEventRecord(ready.get(), cuda::stream(s.device)));
  TT_CUDA_CHECK(cudaStreamWaitEvent(s.stream, ready.get(), 0));
  launch();
  TT_CUDA_CHECK(cudaEventRecord(done->get(), s.stream));
  return std::make_shared<NcclWork>(state, std::move(done), std::move(tensors));
}

}  // namespace

std::shared_ptr<Work> ProcessGroupNCCL::allreduce(const Tensor& tensor, ReduceOp op) {
  return allreduce_on_device(tensor, op, /*across_ranks=*/true);
}

// ProcessGroup::allreduce_unchecked: no host synchronization, so DistributedDataParallel's buckets
// queue behind backward's kernels without stopping the host.
std::shared_ptr<Work> ProcessGroupNCCL::allreduce_unchecked(const Tensor& tensor, ReduceOp op) {
  return allreduce_on_device(tensor, op, /*across_ranks=*/false);
}

// tensor [*] -> the op over the ranks, in place. This rank's own argument checks always run;
// `across_ranks` also compares the ranks' calls first (Note [NCCL collective checks]), which waits
// on the host. A CPU tensor is bookkeeping: staged through the GPU, checked, and waited for.
std::shared_ptr<Work> ProcessGroupNCCL::allreduce_on_device(const Tensor& tensor, ReduceOp op, bool across_ranks) {
  if (on_host(tensor)) {  // Note [CPU tensors on an NCCL group]
    const Tensor gpu = to_gpu(tensor, device_);
    allreduce_on_device(gpu, op, /*across_ranks=*/true)->wait();
    write_back(tensor, gpu);
    return std::make_shared<NcclWork>(state_, nullptr, std::vector<Tensor>{});
  }
  std::lock_guard<std::mutex> lock(state_->mutex);
  cuda::DeviceGuard guard(device_);
  std::string error = reject("allreduce", "the tensor", tensor, device_);
  if (error.empty() && op == ReduceOp::Avg && !tensor.is_floating_point())
    error = concat("ProcessGroupNCCL allreduce: avg needs a floating-point tensor, got ", tensor.dtype());
  if (across_ranks) {
    check_across_ranks(*state_, "allreduce", error, fingerprint(Kind::AllReduce, int64_t(op), 0, tensor, tensor),
                       describe(tensor));
  } else {
    TT_CHECK(error.empty(), error);
  }
  State& s = *state_;
  return enqueue(state_, {tensor}, [&] {
    void* p = tensor.raw_data_ptr();
    TT_NCCL_CHECK(
        nccl().ncclAllReduce(p, p, size_t(tensor.numel()), nccl_dtype(tensor.dtype()), nccl_op(op), s.comm, s.stream),
        s.comm);
  });
}

std::shared_ptr<Work> ProcessGroupNCCL::broadcast(const Tensor& tensor, int root) {
  if (on_host(tensor)) {
    const Tensor gpu = to_gpu(tensor, device_);
    broadcast(gpu, root)->wait();
    write_back(tensor, gpu);
    return std::make_shared<NcclWork>(state_, nullptr, std::vector<Tensor>{});
  }
  std::lock_guard<std::mutex> lock(state_->mutex);
  cuda::DeviceGuard guard(device_);
  std::string error = reject("broadcast", "the tensor", tensor, device_);
  if (error.empty() && (root < 0 || root >= size()))
    error = concat("ProcessGroupNCCL broadcast: root must be in [0, ", size(), "), got ", root);
  check_across_ranks(*state_, "broadcast", error, fingerprint(Kind::Broadcast, 0, root, tensor, tensor),
                     describe(tensor));
  State& s = *state_;
  return enqueue(state_, {tensor}, [&] {
    void* p = tensor.raw_data_ptr();
    TT_NCCL_CHECK(
        nccl().ncclBroadcast(p, p, size_t(tensor.numel()), nccl_dtype(tensor.dtype()), root, s.comm, s.stream), s.comm);
  });
}

std::shared_ptr<Work> ProcessGroupNCCL::allgather(const Tensor& output, const Tensor& input) {
  if (on_host(output) || on_host(input)) {
    const Tensor gpu_output = to_gpu(output, device_);
    allgather(gpu_output, to_gpu(input, device_))->wait();
    write_back(output, gpu_output);
    return std::make_shared<NcclWork>(state_, nullptr, std::vector<Tensor>{});
  }
  std::lock_guard<std::mutex> lock(state_->mutex);
  cuda::DeviceGuard guard(device_);
  std::string error = reject("allgather", "the input", input, device_);
  if (error.empty()) error = reject("allgather", "the output", output, device_);
  if (error.empty()) {
    const Shape want = world_first(size(), input.shape());
    if (output.shape() != want || output.dtype() != input.dtype())
      error = concat("ProcessGroupNCCL allgather: input ", describe(input), " needs an output ", input.dtype(), " ",
                     want, " (world size first), got ", describe(output));
  }
  check_across_ranks(*state_, "allgather", error, fingerprint(Kind::AllGather, 0, 0, input, output),
                     describe(input) + " -> " + describe(output));
  State& s = *state_;
  return enqueue(state_, {output, input}, [&] {
    TT_NCCL_CHECK(nccl().ncclAllGather(input.raw_data_ptr(), output.raw_data_ptr(), size_t(input.numel()),
                                       nccl_dtype(input.dtype()), s.comm, s.stream),
                  s.comm);
  });
}

std::shared_ptr<Work> ProcessGroupNCCL::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) {
  if (on_host(output) || on_host(input)) {
    const Tensor gpu_output = to_gpu(output, device_);
    reduce_scatter(gpu_output, to_gpu(input, device_), op)->wait();
    write_back(output, gpu_output);
    return std::make_shared<NcclWork>(state_, nullptr, std::vector<Tensor>{});
  }
  std::lock_guard<std::mutex> lock(state_->mutex);
  cuda::DeviceGuard guard(device_);
  std::string error = reject("reduce_scatter", "the input", input, device_);
  if (error.empty()) error = reject("reduce_scatter", "the output", output, device_);
  if (error.empty()) {
    const Shape want = world_first(size(), output.shape());
    if (input.shape() != want || output.dtype() != input.dtype())
      error = concat("ProcessGroupNCCL reduce_scatter: output ", describe(output), " needs an input ",
                     output.dtype(), " ", want, " (world size first), got ", describe(input));
  }
  if (error.empty() && op == ReduceOp::Avg && !input.is_floating_point())
    error = concat("ProcessGroupNCCL reduce_scatter: avg needs a floating-point tensor, got ", input.dtype());
  check_across_ranks(*state_, "reduce_scatter", error,
                     fingerprint(Kind::ReduceScatter, int64_t(op), 0, input, output),
                     describe(input) + " -> " + describe(output));
  State& s = *state_;
  return enqueue(state_, {output, input}, [&] {
    TT_NCCL_CHECK(nccl().ncclReduceScatter(input.raw_data_ptr(), output.raw_data_ptr(), size_t(output.numel()),
                                           nccl_dtype(input.dtype()), nccl_op(op), s.comm, s.stream),
                  s.comm);
  });
}

std::shared_ptr<Work> ProcessGroupNCCL::barrier() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  cuda::DeviceGuard guard(device_);
  // The check is itself an all-reduce that the host waits for: once it returns, every rank got here.
  check_across_ranks(*state_, "barrier", "", fingerprint(Kind::Barrier, 0, 0, Tensor(), Tensor()), "no tensor");
  return std::make_shared<NcclWork>(state_, nullptr, std::vector<Tensor>{});
}

namespace detail {
NcclUniqueId make_nccl_unique_id() { return ProcessGroupNCCL::new_unique_id(); }
std::shared_ptr<ProcessGroup> make_nccl_group(int rank, int size, int device, const NcclUniqueId& id) {
  return std::make_shared<ProcessGroupNCCL>(rank, size, device, id);
}
}  // namespace detail

void ProcessGroupNCCL::abort(const std::string& why) {
  detail::print_abort_line(rank(), why);
  if (state_ != nullptr && state_->comm != nullptr) {
    (void)nccl().ncclCommAbort(state_->comm);  // unblocks our kernels; the other ranks' fail or are killed below
    state_->comm = nullptr;
  }
#ifdef TINYTORCH_HAS_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized != 0 && finalized == 0) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::_Exit(1);
}

}  // namespace tt::distributed
