// Autocast (automatic mixed precision): tt::AutocastGuard, and the one list of the ops it changes,
// each with its cast policy. See Note [autocast] in autocast.cpp and modules/15_mixed_precision.
// The hook each listed op calls, which does the casting, is amp::autocast in ops/autocast_hook.h:
// it casts with an op, so it sits above ops/ while this policy sits below (no include climbs).
//
//   tt::AutocastGuard autocast(tt::kCPU, tt::kBFloat16);   // or tt::kCUDA, as torch.autocast
//   tt::Tensor loss = F::cross_entropy(model->forward(x), y);  // linear in bf16, the loss in float32
//   // leave the scope, then: loss.backward(); opt.step();  (parameters and grads stay float32)
#pragma once

#include <cstddef>
#include <cstdint>

#include "tinytorch/core/device.h"
#include "tinytorch/core/dtype.h"
#include "tinytorch/core/tensor.h"

namespace tt {

// --- the ops autocast changes ------------------------------------------------------------------
// The autocast column of core/op_registry.h lists them, one value per op:
//   LowerPrecision  float32 inputs are cast to the autocast dtype (bf16): the matrix products,
//                   where bf16 doubles the speed (tensor cores, AVX512-BF16) and a float32
//                   accumulator keeps the sums accurate.
//   Float32         bf16 inputs are cast to float32: ops that exponentiate, divide by a sum, or
//                   add up many terms, where bf16's 8 significant bits lose too much.
// Every other op runs in the dtype of its inputs, promoted as usual: bf16 + float32 is float32,
// so a residual connection in float32 stays float32. Elementwise ops on bf16 compute in float32
// and round once (Note [bf16 compute] in backend/bf16_compute.h).
// A listed op calls its hook first (amp::autocast(AutocastOp::name, ...), ops/autocast_hook.h); an
// op listed without one is flagged by the test that walks the list (tests/amp/test_autocast.cpp).
// TT_AUTOCAST_OPS() expands TT_AUTOCAST_X(name, policy) for each, e.g. TT_AUTOCAST_X(matmul,
// LowerPrecision): define TT_AUTOCAST_X first. The enum below is in the registry's order.
enum class CastPolicy : uint8_t { LowerPrecision, Float32 };
#define TT_AUTOCAST_OPS() TT_OPS(TT_AUTOCAST_ROW)

#define TT_AUTOCAST_X(name, policy) name,
enum class AutocastOp : uint8_t { TT_AUTOCAST_OPS() };
#undef TT_AUTOCAST_X

// Turns autocast on (or, with enabled = false, off) for ops on `device_type` tensors, on this
// thread, until the guard goes out of scope; guards nest and restore what they found. dtype must
// be kBFloat16 (float16 is not supported: it also needs loss scaling; module 15 says why).
class AutocastGuard {
 public:
  explicit AutocastGuard(DeviceType device_type, ScalarType dtype = kBFloat16, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_type_;
  bool prev_enabled_;
  ScalarType prev_dtype_;
};

namespace amp {

bool is_autocast_enabled(DeviceType device_type);  // on this thread
ScalarType get_autocast_dtype(DeviceType device_type);
const char* op_name(AutocastOp op);
CastPolicy policy(AutocastOp op);
#define TT_AUTOCAST_X(...) +1
constexpr size_t kNumAutocastOps = 0 TT_AUTOCAST_OPS();
#undef TT_AUTOCAST_X

// How many ops went through autocast on this thread (a counter for the test that checks every
// listed op has its hook).
uint64_t autocast_hits(AutocastOp op);

// This thread's autocast state, for the hook at the top of each listed op (amp::autocast,
// ops/autocast_hook.h), which casts with ops and so lives above them: the cached casts of
// parameters (kept until the outermost AutocastGuard closes; Note [autocast]), the hook counter,
// and turning autocast off and on again around an op's body.
namespace detail {
Tensor cached_cast(const Tensor& source, ScalarType to);  // undefined when none is cached
void cache_cast(const Tensor& source, const Tensor& cast);
void count_hit(AutocastOp op);
void set_enabled(DeviceType device_type, bool enabled);
}  // namespace detail

}  // namespace amp

}  // namespace tt
