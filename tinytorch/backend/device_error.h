// Deferred index errors (Note [device error flag]): the codes a GPU kernel records when it meets a
// bad index, their names and their one message, and the scope through which ops/ tells the
// backend whose index a kernel is reading. Plain C++ (no CUDA): ops/ and every backend include it.
// The flag itself (device memory, the atomic record, the check at synchronization points) is in
// backend/cuda/error_flag.{h,cu}. Not here: the CPU's checks, which ops/ makes before any kernel
// runs and which keep their own, more detailed messages.
//
// Note [device error flag]
// Checking indices on the host means reading them on the host: on a GPU, a blocking copy per
// check (an embedding, a cross-entropy's targets), which drains the queue of queued kernels every
// training step. Instead, the CUDA kernel that reads an index checks it itself: a bad one is never
// used to address memory (a gathered element reads as 0, a scattered one is dropped), and the first
// bad one is recorded (op, value, valid range) in a small per-device record with an atomic
// compare-and-swap, later ones are ignored. The record is read at the next point where the host
// waits for the device anyway (a copy to the host such as item() or cpu(), a copy from the host,
// tt::cuda::synchronize()) and raises tt::IndexError, as the CPU's check does, with this message:
//   embedding: index 50304 out of range [0, 50304) (found on cuda:0 at a later synchronization)
// The record is then cleared. The error surfaces late (after the kernels queued behind the bad
// one have run on garbage-free but meaningless values), never as a crash or a poisoned context.
#pragma once

#include <cstdint>
#include <string>

namespace tt {

// What a kernel was doing when it met a bad index. Add a name to kDeviceErrorOpNames too.
enum class DeviceErrorOp : int32_t {
  kNone = 0,         // no error recorded
  kIndexSelect,      // index_select: an index along the selected dim
  kGather,           // gather: an index along dim
  kScatterAdd,       // scatter_add_: an index along dim
  kEmbedding,        // embedding: a token id (a row of the table)
  kCrossEntropy,     // cross_entropy: a class-index target (ignore_index excluded)
  kNllLoss,          // nll_loss: a class-index target (ignore_index excluded)
  kCount
};

// Op name and the word for the bad value, per code.
struct DeviceErrorOpName {
  const char* op;
  const char* what;
};
extern const DeviceErrorOpName kDeviceErrorOpNames[];

// What a kernel records: op (a DeviceErrorOp), the bad value and the valid range [lo, hi).
struct DeviceErrorRecord {
  int32_t op = 0;
  int32_t pad = 0;
  int64_t value = 0, lo = 0, hi = 0;
};

// "embedding: index 50304 out of range [0, 50304) (found on cuda:0 at a later synchronization)".
std::string device_error_message(const DeviceErrorRecord& r, const std::string& device);

namespace detail {

// The op a backend kernel reports a bad index as: the innermost DeviceErrorScope's, else `fallback`
// (the indexing op itself). Thread-local, as ops run on the calling thread.
DeviceErrorOp device_error_op(DeviceErrorOp fallback);

// How many times the host has waited for a GPU at a synchronization point that reads the flag (a
// copy to or from the host, tt::cuda::synchronize()), over the process: a test's way to see that
// a training step never waits. 0 in a build without CUDA.
uint64_t host_waits();
void count_host_wait();

// While alive, indexing kernels launched by this thread report bad indices as `op` (embedding,
// cross_entropy, ...) rather than as the index_select or gather they are made of. Nested scopes:
// the outermost wins, since it names what the user called.
class DeviceErrorScope {
 public:
  explicit DeviceErrorScope(DeviceErrorOp op);
  ~DeviceErrorScope();
  DeviceErrorScope(const DeviceErrorScope&) = delete;
  DeviceErrorScope& operator=(const DeviceErrorScope&) = delete;

 private:
  DeviceErrorOp previous_;
};

}  // namespace detail

}  // namespace tt
