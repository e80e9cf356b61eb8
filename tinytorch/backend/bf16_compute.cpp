// Bf16Compute's kernels: bf16 operands widened to float32, the wrapped backend's float32 kernel,
// results rounded back to bf16 once (Note [bf16 compute] in bf16_compute.h). The bodies come from
// the kernel registry (backend/kernels.h): each entry's bf16 column picks one, and its arguments'
// In/Out/InOut marks say what is widened and what is rounded back; the two kernels that take
// lists of tensors are written out at the end.
#include "tinytorch/backend/bf16_compute.h"

#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "tinytorch/backend/cpu/cpu_backend.h"

namespace tt {

namespace {

// Whether any of a kernel's tensors (nullptr: an argument that is not one) is bf16.
bool any_bf16(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t != nullptr && t->defined() && t->dtype() == kBFloat16) return true;
  return false;
}

// The float32 stand-ins of one kernel call's bf16 operands. in() and out() hand the kernel a
// contiguous float32 tensor in place of each bf16 one (other tensors pass through unchanged);
// finish() rounds every output stand-in into its bf16 tensor.
class Widen {
 public:
  explicit Widen(Backend& inner) : inner_(inner) {}

  // A bf16 input's float32 copy (exact: float32 holds every bf16 value).
  Tensor in(const Tensor& t) {
    if (!t.defined() || t.dtype() != kBFloat16) return t;
    Tensor f = float32_like(t);
    backend_of(t).copy(f, t);
    return f;
  }
  // A bf16 output's float32 stand-in; `reads`: the kernel reads the output's old values too.
  Tensor out(const Tensor& t, bool reads = false) {
    if (!t.defined() || t.dtype() != kBFloat16) return t;
    Tensor f = reads ? in(t) : float32_like(t);
    outputs_.emplace_back(t, f);
    return f;
  }
  void finish() {
    for (auto& [bf16, f32] : outputs_) backend_of(bf16).copy(bf16, f32);
  }

 private:
  // A 0-d operand may live on the CPU whatever the kernel's device (binary's wrapped scalar).
  Backend& backend_of(const Tensor& t) { return t.device().is_cpu() ? cpu::cpu_backend() : inner_; }
  static Tensor float32_like(const Tensor& t) {
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = std::make_shared<StorageImpl>(size_t(t.numel()) * sizeof(float), t.device());
    impl->shape = t.shape();
    impl->strides = contiguous_strides(t.shape());
    impl->dtype = kFloat32;
    return Tensor(std::move(impl));
  }

  Backend& inner_;
  std::vector<std::pair<Tensor, Tensor>> outputs_;
};

}  // namespace

// --- the bodies, from the registry -----------------------------------------------------------------
// What each marked argument becomes: in the list any_bf16 checks, and in the call on float32
// stand-ins (In: a float32 copy; Out: a float32 buffer rounded back by finish(); InOut: a float32
// copy rounded back; Keep and Val: as they are).
#define TT_KARG_BF16_In(t) &t
#define TT_KARG_BF16_Out(t) &t
#define TT_KARG_BF16_InOut(t) &t
#define TT_KARG_BF16_Keep(t) nullptr
#define TT_KARG_BF16_Val(T, v) nullptr
#define TT_KARG_WIDEN_In(t) w.in(t)
#define TT_KARG_WIDEN_Out(t) w.out(t)
#define TT_KARG_WIDEN_InOut(t) w.out(t, /*reads=*/true)
#define TT_KARG_WIDEN_Keep(t) t
#define TT_KARG_WIDEN_Val(T, v) v

#define TT_BF16_TENSORS(...) {TT_KMAP(TT_KARG_BF16_, __VA_ARGS__)}
#define TT_BF16_WIDENED_CALL(name, ...)              \
  Widen w(inner_);                                   \
  inner_.name(TT_KMAP(TT_KARG_WIDEN_, __VA_ARGS__)); \
  w.finish();
// Native: bf16 as it is.
#define TT_BF16_KERNEL_Native(name, ...) \
  void Bf16Compute::name(TT_KERNEL_PARAMS(__VA_ARGS__)) { inner_.name(TT_KERNEL_ARGS(__VA_ARGS__)); }
// Widen: float32 inside when any tensor is bf16.
#define TT_BF16_KERNEL_Widen(name, ...)                                                                     \
  void Bf16Compute::name(TT_KERNEL_PARAMS(__VA_ARGS__)) {                                                   \
    if (!any_bf16(TT_BF16_TENSORS(__VA_ARGS__))) return inner_.name(TT_KERNEL_ARGS(__VA_ARGS__));           \
    TT_BF16_WIDENED_CALL(name, __VA_ARGS__)                                                                 \
  }
// CudaNative: as it is on a GPU, float32 inside elsewhere. The device is the first argument's (the
// kernel's output; the op has checked that every tensor is on one device).
#define TT_BF16_FIRST_ON_CUDA(first, ...) TT_KPASTE(TT_KARG_NAME_, first).device().is_cuda()
#define TT_BF16_KERNEL_CudaNative(name, ...)                                                                \
  void Bf16Compute::name(TT_KERNEL_PARAMS(__VA_ARGS__)) {                                                   \
    if (!any_bf16(TT_BF16_TENSORS(__VA_ARGS__)) || TT_BF16_FIRST_ON_CUDA(__VA_ARGS__))                      \
      return inner_.name(TT_KERNEL_ARGS(__VA_ARGS__));                                                      \
    TT_BF16_WIDENED_CALL(name, __VA_ARGS__)                                                                 \
  }
// Own: written out below.
#define TT_BF16_KERNEL_Own(name, ...)
#define TT_BF16_KERNEL(name, bf16, ...) TT_BF16_KERNEL_##bf16(name, __VA_ARGS__)
TT_KERNELS(TT_BF16_KERNEL)
#undef TT_BF16_KERNEL

// The multi-tensor steps: float32 stand-ins for the bf16 tensors (the step counters are int64).
void Bf16Compute::sgd_step_multi(const std::vector<SgdParamState>& params, const SgdStepArgs& args) {
  bool bf16 = false;
  for (const SgdParamState& e : params) bf16 = bf16 || any_bf16({&e.param, &e.grad, &e.momentum_buf});
  if (!bf16) return inner_.sgd_step_multi(params, args);
  Widen w(inner_);
  std::vector<SgdParamState> wide;
  for (const SgdParamState& e : params)
    wide.push_back({w.out(e.param, true), w.in(e.grad), w.out(e.momentum_buf, true), e.first_step});
  inner_.sgd_step_multi(wide, args);
  w.finish();
}
void Bf16Compute::adam_step_multi(const std::vector<AdamParamState>& params, const AdamStepArgs& args) {
  bool bf16 = false;
  for (const AdamParamState& e : params)
    bf16 = bf16 || any_bf16({&e.param, &e.grad, &e.exp_avg, &e.exp_avg_sq, &e.max_exp_avg_sq});
  if (!bf16) return inner_.adam_step_multi(params, args);
  Widen w(inner_);
  std::vector<AdamParamState> wide;
  for (const AdamParamState& e : params)
    wide.push_back({w.out(e.param, true), w.in(e.grad), w.out(e.exp_avg, true), w.out(e.exp_avg_sq, true),
                    w.out(e.max_exp_avg_sq, true), e.step});
  inner_.adam_step_multi(wide, args);
  w.finish();
}

}  // namespace tt
