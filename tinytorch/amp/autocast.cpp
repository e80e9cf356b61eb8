// Autocast's state (per thread and device type), its guard, and the cast an op's hook performs.
#include "tinytorch/amp/autocast.h"

#include <unordered_map>
#include <utility>

#include "tinytorch/core/error.h"

namespace tt {

// Note [autocast]
// ~~~~~~~~~~~~~~~
// Mixed precision keeps everything that is *stored across steps* in float32 (parameters, their
// gradients, the optimizer's moments) and runs the *matrix products* in bf16 with float32
// accumulation, which is where the time goes and where bf16 costs little accuracy. Autocast does
// this without touching the model: inside an AutocastGuard, each op of TT_AUTOCAST_OPS casts its
// inputs at its entry (amp::autocast), by its policy:
//   * LowerPrecision ops (linear, matmul, attention) cast float32 inputs to bf16; their output is
//     bf16. The cast of a weight is an ordinary differentiable op (Tensor::to), so its gradient
//     comes back to the float32 parameter as float32.
//   * Float32 ops (softmax, norms, losses, sums) cast bf16 inputs to float32.
//   * The rest follow type promotion, so a bf16 activation added to a float32 residual stream
//     gives float32, as in PyTorch.
// The cast happens once, at the outermost listed op: while a hook's Autocast lives, autocast is
// off on its thread, so an op that calls other ops (cross_entropy calls log_softmax) is not cast
// twice. Backward passes run with autocast off (autograd/engine.cpp): a gradient keeps the dtype
// of the forward value it belongs to.
// The cast has to happen at the op's entry, where PyTorch's Autocast dispatch key sits in front of
// its kernels: the hook (amp::autocast, ops/autocast_hook.cpp) is called there. It casts with an
// op, so it lives in ops/; this file holds the policy and the per-thread state, below ops/ and
// autograd/ (the engine turns autocast off for a backward pass).
// Casts of leaves that require grad (the parameters) are cached until the outermost guard closes,
// so a weight that several listed ops read under one guard (a layer applied in a loop, several
// forwards in one guard) is cast once; tied embeddings gain nothing, since the lookup is not a
// listed op. Do not step the optimizer inside the guard: the cache would hand out the weights' old
// values (PyTorch has the same rule).

namespace {

struct DeviceState {
  bool enabled = false;
  ScalarType dtype = kBFloat16;
};

struct ThreadState {
  DeviceState device[2];  // kCPU, kCUDA
  int nesting = 0;        // live AutocastGuards on this thread
  // Casts of parameters: source impl -> (source, cast). The source is kept so its address is not
  // reused while the entry lives.
  std::unordered_map<const TensorImpl*, std::pair<Tensor, Tensor>> cache;
  uint64_t hits[amp::kNumAutocastOps] = {};
};

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

DeviceState& device_state(DeviceType t) { return state().device[t == kCUDA ? 1 : 0]; }

#define TT_AUTOCAST_X(name, policy) #name,
constexpr const char* kNames[] = {TT_AUTOCAST_OPS()};
#undef TT_AUTOCAST_X
#define TT_AUTOCAST_X(name, policy) CastPolicy::policy,
constexpr CastPolicy kPolicies[] = {TT_AUTOCAST_OPS()};
#undef TT_AUTOCAST_X

}  // namespace

AutocastGuard::AutocastGuard(DeviceType device_type, ScalarType dtype, bool enabled) : device_type_(device_type) {
  TT_CHECK_DTYPE(dtype == kBFloat16, "AutocastGuard: autocast supports bfloat16 only, got ", dtype,
                 " (float16 would also need loss scaling; see modules/15_mixed_precision)");
  DeviceState& s = device_state(device_type);
  prev_enabled_ = s.enabled;
  prev_dtype_ = s.dtype;
  s.enabled = enabled;
  s.dtype = dtype;
  ++state().nesting;
}

AutocastGuard::~AutocastGuard() {
  DeviceState& s = device_state(device_type_);
  s.enabled = prev_enabled_;
  s.dtype = prev_dtype_;
  if (--state().nesting == 0) state().cache.clear();
}

namespace amp {

bool is_autocast_enabled(DeviceType device_type) { return device_state(device_type).enabled; }
ScalarType get_autocast_dtype(DeviceType device_type) { return device_state(device_type).dtype; }
const char* op_name(AutocastOp op) { return kNames[size_t(op) % kNumAutocastOps]; }
CastPolicy policy(AutocastOp op) { return kPolicies[size_t(op) % kNumAutocastOps]; }
uint64_t autocast_hits(AutocastOp op) { return state().hits[size_t(op) % kNumAutocastOps]; }

namespace detail {

Tensor cached_cast(const Tensor& source, ScalarType to) {
  auto& cache = state().cache;
  auto it = cache.find(source.unsafe_impl());
  if (it == cache.end() || it->second.second.dtype() != to) return Tensor();
  return it->second.second;
}
void cache_cast(const Tensor& source, const Tensor& cast) { state().cache[source.unsafe_impl()] = {source, cast}; }
void count_hit(AutocastOp op) { ++state().hits[size_t(op) % kNumAutocastOps]; }
void set_enabled(DeviceType device_type, bool enabled) { device_state(device_type).enabled = enabled; }

}  // namespace detail

}  // namespace amp

}  // namespace tt
