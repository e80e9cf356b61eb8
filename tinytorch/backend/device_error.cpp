// The deferred index errors' names, message and scope (Note [device error flag] in device_error.h).
#include "tinytorch/backend/device_error.h"

#include <atomic>

#include "tinytorch/core/error.h"

namespace tt {

const DeviceErrorOpName kDeviceErrorOpNames[] = {
    {"(none)", "value"},       {"index_select", "index"}, {"gather", "index"}, {"scatter_add_", "index"},
    {"embedding", "index"},    {"cross_entropy", "target"}, {"nll_loss", "target"},
};
static_assert(sizeof(kDeviceErrorOpNames) / sizeof(kDeviceErrorOpNames[0]) == size_t(DeviceErrorOp::kCount),
              "every DeviceErrorOp needs a name");

std::string device_error_message(const DeviceErrorRecord& r, const std::string& device) {
  const bool known = r.op > 0 && r.op < int32_t(DeviceErrorOp::kCount);
  const DeviceErrorOpName name = known ? kDeviceErrorOpNames[r.op] : DeviceErrorOpName{"unknown op", "value"};
  return detail::concat(name.op, ": ", name.what, " ", r.value, " out of range [", r.lo, ", ", r.hi, ") (found on ",
                        device, " at a later synchronization)");
}

namespace detail {

namespace {
thread_local DeviceErrorOp current_op = DeviceErrorOp::kNone;
std::atomic<uint64_t> waits{0};
}  // namespace

uint64_t host_waits() { return waits.load(std::memory_order_relaxed); }
void count_host_wait() { waits.fetch_add(1, std::memory_order_relaxed); }

DeviceErrorOp device_error_op(DeviceErrorOp fallback) {
  return current_op == DeviceErrorOp::kNone ? fallback : current_op;
}

DeviceErrorScope::DeviceErrorScope(DeviceErrorOp op) : previous_(current_op) {
  if (current_op == DeviceErrorOp::kNone) current_op = op;
}
DeviceErrorScope::~DeviceErrorScope() { current_op = previous_; }

}  // namespace detail

}  // namespace tt
