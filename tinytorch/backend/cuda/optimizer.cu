// CUDA optimizer kernels, twin of cpu/optimizer.cpp: the fused SGD and Adam/AdamW steps. One
// thread per element reads every tensor once and writes the parameter and its state once, in
// PyTorch's formula order (torch/optim/sgd.py, adam.py, adamw.py) exactly as the CPU does.
//
// Note [optimizer parity]: every operation is an explicitly rounded intrinsic (__fmul_rn,
// __fadd_rn, __fdiv_rn, __fsqrt_rn and their double twins), so nvcc cannot fuse a multiply and an
// add into an FMA that the CPU loop does not do: a step gives the CPU's bits exactly, and
// training trajectories on the two devices agree bit for bit. The flags are runtime arguments
// (uniform branches, no divergence) rather than template parameters: one kernel per dtype.
// Contiguous float32/float64 only: ops/optim_step.cpp makes the inputs so. Not here: option checks
// (optim/).
//
// Note [multi-tensor optimizer step]
// An optimizer step over a model is one launch, not one per parameter: the launch's arguments carry
// a table of up to kMultiMax parameters (pointers, sizes and the first block of each), every block
// updates one chunk of one parameter (a binary search of the table finds which), so the ~50
// parameters of a small GPT cost one launch where they cost ~50. Arguments are copied at launch, so
// nothing is uploaded and the host never waits. Adam's step counters live on the device, one int64
// per parameter: each block reads its parameter's counter, computes the bias corrections from it
// (the host's formula, adam_bias_corrections in kernel_args.h, evaluated in doubles), and the last
// block of the parameter to finish (an arrival counter per table entry, atomically incremented after
// a __threadfence, reset to 0 by that last block) writes the counter + 1 after every block of that
// parameter has read it. No host value changes from one step to the next (the learning rate is
// passed at launch: a CUDA graph captured with one lr replays that lr), so the step can be captured
// and replayed. Bits: each element's arithmetic is sgd_element / adam_element, shared with the
// single-tensor kernels; the bias corrections use the device's pow, within 2 ulp of glibc's in
// double, which after rounding to the parameter's dtype almost always gives the host's bits (float64
// parameters may differ from the CPU in the last bit of a step).
#include <algorithm>
#include <mutex>
#include <vector>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/loop.cuh"

namespace tt::cuda {

namespace {

// Correctly rounded float/double arithmetic that is never contracted into an FMA.
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float sqrt_rn(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double sqrt_rn(double a) { return __dsqrt_rn(a); }

// The SGD hyperparameters in the parameter's dtype, converted on the host as the CPU does.
template <typename T>
struct SgdConsts {
  T sign, wd, mom, keep, neg_lr;
  bool decay, momentum, first, nesterov;
};

// Element i of the SGD update; first: the momentum buffer starts as the gradient now.
template <typename T>
__device__ __forceinline__ void sgd_element(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf,
                                            int64_t i, const SgdConsts<T>& c, bool first) {
  const T pi = p[i];
  T d = mul_rn(c.sign, g[i]);
  if (c.decay) d = add_rn(d, mul_rn(c.wd, pi));  // d_p.add(param, alpha=weight_decay)
  if (c.momentum) {
    // buf.mul_(momentum).add_(d_p, alpha=1-dampening); the first step's buffer is d_p itself
    const T m = first ? d : add_rn(mul_rn(buf[i], c.mom), mul_rn(c.keep, d));
    buf[i] = m;
    d = c.nesterov ? add_rn(d, mul_rn(c.mom, m)) : m;
  }
  p[i] = add_rn(pi, mul_rn(c.neg_lr, d));  // param.add_(d_p, alpha=-lr)
}

// p, g, buf: [n] contiguous (buf unused without momentum).
template <typename T>
__global__ void sgd_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf, int64_t n,
                           SgdConsts<T> c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    sgd_element(p, g, buf, i, c, c.first);
}

// The Adam(W) hyperparameters in the parameter's dtype, converted on the host as the CPU does.
template <typename T>
struct AdamConsts {
  T sign, wd, decay, beta1, beta2, one_minus_beta1, one_minus_beta2, bc2_sqrt, eps, neg_step_size;
  bool weight_decay, decoupled, amsgrad;
};

// Element i of the Adam(W) update, with the step's bias corrections bc2_sqrt and -step_size.
template <typename T>
__device__ __forceinline__ void adam_element(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m,
                                             T* __restrict__ v, T* __restrict__ vmax, int64_t i,
                                             const AdamConsts<T>& c, T bc2_sqrt, T neg_step_size) {
  T gi = mul_rn(c.sign, g[i]);
  T pi = p[i];
  if (c.weight_decay && c.decoupled) pi = mul_rn(pi, c.decay);  // param.mul_(1 - lr * weight_decay)
  if (c.weight_decay && !c.decoupled) gi = add_rn(gi, mul_rn(c.wd, pi));  // grad.add(param, alpha=wd)
  // exp_avg.mul_(beta1).add_(grad, alpha=1-beta1)
  const T mi = add_rn(mul_rn(m[i], c.beta1), mul_rn(c.one_minus_beta1, gi));
  // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1-beta2)
  T vi = add_rn(mul_rn(v[i], c.beta2), mul_rn(mul_rn(c.one_minus_beta2, gi), gi));
  m[i] = mi;
  v[i] = vi;
  if (c.amsgrad) {
    const T vm = vmax[i];
    vi = vm < vi ? vi : vm;  // std::max(vmax, v), as the CPU
    vmax[i] = vi;
  }
  const T denom = add_rn(div_rn(sqrt_rn(vi), bc2_sqrt), c.eps);  // (v.sqrt() / bc2_sqrt).add_(eps)
  p[i] = add_rn(pi, mul_rn(neg_step_size, div_rn(mi, denom)));  // param.addcdiv_(m, denom, -step_size)
}

// p, g, m, v, vmax: [n] contiguous (vmax unused without amsgrad).
template <typename T>
__global__ void adam_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m, T* __restrict__ v,
                            T* __restrict__ vmax, int64_t n, AdamConsts<T> c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    adam_element(p, g, m, v, vmax, i, c, c.bc2_sqrt, c.neg_step_size);
}

// --- multi-tensor steps (Note [multi-tensor optimizer step]) ------------------------------------

constexpr int kMultiMax = 192;  // parameters per launch: the table stays under 16 KB of arguments

// The table's index and chunk of this block: parameter t, whose blocks start at first_block[t].
__device__ __forceinline__ int table_entry(const int32_t* first_block, int count) {
  int lo = 0, hi = count - 1;
  const int32_t b = int32_t(blockIdx.x);
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (first_block[mid] <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

template <typename T>
struct SgdTable {
  T* p[kMultiMax];
  const T* g[kMultiMax];
  T* buf[kMultiMax];
  int64_t n[kMultiMax];
  int32_t first_block[kMultiMax + 1];
  bool first[kMultiMax];
  int count;
};

// Block b updates elements [chunk * k, chunk * (k + 1)) of table entry t (its k-th block).
template <typename T>
__global__ void sgd_multi_kernel(SgdTable<T> tab, SgdConsts<T> c, int64_t chunk) {
  const int t = table_entry(tab.first_block, tab.count);
  const int64_t begin = int64_t(int32_t(blockIdx.x) - tab.first_block[t]) * chunk;
  const int64_t end = begin + chunk < tab.n[t] ? begin + chunk : tab.n[t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    sgd_element(tab.p[t], tab.g[t], tab.buf[t], i, c, tab.first[t]);
}

template <typename T>
struct AdamTable {
  T* p[kMultiMax];
  const T* g[kMultiMax];
  T* m[kMultiMax];
  T* v[kMultiMax];
  T* vmax[kMultiMax];
  int64_t* step[kMultiMax];
  int64_t n[kMultiMax];
  int32_t first_block[kMultiMax + 1];
  int count;
};

// The scalars of adam_bias_corrections (kernel_args.h), on the device, in doubles.
struct AdamScalars {
  double lr, beta1, beta2;
};

// As sgd_multi_kernel; each block also reads its entry's step counter, and the entry's last block
// to finish writes it + 1 (arrivals[t]: blocks of entry t done, back to 0 after).
template <typename T>
__global__ void adam_multi_kernel(AdamTable<T> tab, AdamConsts<T> c, AdamScalars s, int64_t chunk,
                                  unsigned* arrivals) {
  const int t = table_entry(tab.first_block, tab.count);
  const int64_t begin = int64_t(int32_t(blockIdx.x) - tab.first_block[t]) * chunk;
  const int64_t end = begin + chunk < tab.n[t] ? begin + chunk : tab.n[t];
  const int64_t done = *tab.step[t];
  const double step = double(done + 1);
  const double bias_correction1 = __dadd_rn(1.0, -pow(s.beta1, step));
  const double bias_correction2 = __dadd_rn(1.0, -pow(s.beta2, step));
  const T neg_step_size = T(-__ddiv_rn(s.lr, bias_correction1));
  const T bc2_sqrt = T(__dsqrt_rn(bias_correction2));
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    adam_element(tab.p[t], tab.g[t], tab.m[t], tab.v[t], tab.vmax[t], i, c, bc2_sqrt, neg_step_size);
  __syncthreads();  // every thread of the block has read the counter
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned blocks = unsigned(tab.first_block[t + 1] - tab.first_block[t]);
    if (atomicAdd(arrivals + t, 1u) == blocks - 1) {  // the last: every block of entry t has read it
      *tab.step[t] = done + 1;
      arrivals[t] = 0;
    }
  }
}

// Device `device`'s kMultiMax arrival counters, zero between launches (created on first use).
unsigned* arrivals_of(int device) {
  static std::mutex mu;
  static std::vector<unsigned*> all;  // leaked on purpose, as the streams
  std::lock_guard<std::mutex> lock(mu);
  if (size_t(device) >= all.size()) all.resize(size_t(device) + 1, nullptr);
  if (!all[size_t(device)]) {
    void* d = nullptr;
    TT_CUDA_CHECK(cudaMalloc(&d, kMultiMax * sizeof(unsigned)));
    TT_CUDA_CHECK(cudaMemsetAsync(d, 0, kMultiMax * sizeof(unsigned), current_stream()));
    all[size_t(device)] = static_cast<unsigned*>(d);
  }
  return all[size_t(device)];
}

// Elements per block: about 1024 blocks over the whole list (4+ per SM on an H100), each thread
// with at least 8 elements, at most 256.
int64_t chunk_for(int64_t total) {
  const int64_t per = (total + 1023) / 1024;
  const int64_t lo = int64_t(kThreads) * 8, hi = int64_t(kThreads) * 256;
  const int64_t c = per < lo ? lo : (per > hi ? hi : per);
  return (c + kThreads - 1) / kThreads * kThreads;
}

// Blocks of a parameter of n elements: one at least, so that an empty parameter's step counts too.
int64_t blocks_of(int64_t n, int64_t chunk) { return n > 0 ? (n + chunk - 1) / chunk : 1; }

// Calls launch_table(first, last, blocks) for consecutive ranges [first, last) of `sizes` holding at
// most kMultiMax entries and fewer than 2^31 blocks.
template <typename F>
void for_each_table(const std::vector<int64_t>& sizes, int64_t chunk, F launch_table) {
  size_t first = 0;
  while (first < sizes.size()) {
    size_t last = first;
    int64_t blocks = 0;
    while (last < sizes.size() && last - first < size_t(kMultiMax) &&
           blocks + blocks_of(sizes[last], chunk) < (int64_t(1) << 31) - 1)
      blocks += blocks_of(sizes[last++], chunk);
    TT_CHECK(last > first, "optimizer step: a parameter of ", sizes[first], " elements is too large for one launch");
    launch_table(first, last, blocks);
    first = last;
  }
}

template <typename T>
SgdConsts<T> sgd_consts(const SgdStepArgs& a) {
  SgdConsts<T> c;
  c.sign = a.maximize ? T(-1) : T(1);
  c.wd = T(a.weight_decay);
  c.mom = T(a.momentum);
  c.keep = T(1 - a.dampening);
  c.neg_lr = T(-a.lr);
  c.decay = a.weight_decay != 0;
  c.momentum = a.momentum != 0;
  c.first = a.first_step;
  c.nesterov = a.nesterov;
  return c;
}

template <typename T>
AdamConsts<T> adam_consts(const AdamStepArgs& a) {
  AdamConsts<T> c;
  c.sign = a.maximize ? T(-1) : T(1);
  c.wd = T(a.weight_decay);
  c.decay = T(1 - a.lr * a.weight_decay);
  c.beta1 = T(a.beta1);
  c.beta2 = T(a.beta2);
  c.one_minus_beta1 = T(1 - a.beta1);
  c.one_minus_beta2 = T(1 - a.beta2);
  c.bc2_sqrt = T(a.bias_correction2_sqrt);
  c.eps = T(a.eps);
  c.neg_step_size = T(-a.step_size);
  c.weight_decay = a.weight_decay != 0;
  c.decoupled = a.decoupled;
  c.amsgrad = a.amsgrad;
  return c;
}

template <typename T>
void sgd_typed(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, const SgdStepArgs& a) {
  const SgdConsts<T> c = sgd_consts<T>(a);
  TT_CHECK(!c.momentum || momentum_buf.defined(), "sgd_step: momentum needs a momentum buffer");
  T* buf = c.momentum ? momentum_buf.data_ptr<T>() : nullptr;
  const int64_t n = param.numel();
  if (n == 0) return;
  launch(sgd_kernel<T>, blocks_for(n), kThreads, 0, param.data_ptr<T>(), grad.data_ptr<T>(), buf, n, c);
}

template <typename T>
void adam_typed(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const Tensor& max_exp_avg_sq, const AdamStepArgs& a) {
  const AdamConsts<T> c = adam_consts<T>(a);
  TT_CHECK(!c.amsgrad || max_exp_avg_sq.defined(), "adam_step: amsgrad needs a max_exp_avg_sq buffer");
  T* vmax = c.amsgrad ? max_exp_avg_sq.data_ptr<T>() : nullptr;
  const int64_t n = param.numel();
  if (n == 0) return;
  launch(adam_kernel<T>, blocks_for(n), kThreads, 0, param.data_ptr<T>(), grad.data_ptr<T>(), exp_avg.data_ptr<T>(),
                                              exp_avg_sq.data_ptr<T>(), vmax, n, c);
}

// The numels of a list of parameters, and their sum.
template <typename State>
std::vector<int64_t> sizes_of(const std::vector<State>& params, int64_t& total) {
  std::vector<int64_t> sizes;
  total = 0;
  for (const State& e : params) {
    sizes.push_back(e.param.numel());
    total += e.param.numel();
  }
  return sizes;
}

template <typename T>
void sgd_multi_typed(const std::vector<SgdParamState>& params, const SgdStepArgs& a) {
  const SgdConsts<T> c = sgd_consts<T>(a);
  int64_t total = 0;
  const std::vector<int64_t> sizes = sizes_of(params, total);
  const int64_t chunk = chunk_for(total);
  for_each_table(sizes, chunk, [&](size_t first, size_t last, int64_t blocks) {
    SgdTable<T> tab{};
    tab.count = int(last - first);
    int64_t b = 0;
    for (size_t k = first; k < last; ++k) {
      const SgdParamState& e = params[k];
      const int i = int(k - first);
      TT_CHECK(!c.momentum || e.momentum_buf.defined(), "sgd_step: momentum needs a momentum buffer");
      tab.p[i] = e.param.data_ptr<T>();
      tab.g[i] = e.grad.data_ptr<T>();
      tab.buf[i] = c.momentum ? e.momentum_buf.data_ptr<T>() : nullptr;
      tab.n[i] = sizes[k];
      tab.first[i] = e.first_step;
      tab.first_block[i] = int32_t(b);
      b += blocks_of(sizes[k], chunk);
    }
    tab.first_block[tab.count] = int32_t(b);
    launch(sgd_multi_kernel<T>, unsigned(blocks), kThreads, 0, tab, c, chunk);
  });
}

template <typename T>
void adam_multi_typed(const std::vector<AdamParamState>& params, const AdamStepArgs& a, unsigned* arrivals) {
  const AdamConsts<T> c = adam_consts<T>(a);
  const AdamScalars s{a.lr, a.beta1, a.beta2};
  int64_t total = 0;
  const std::vector<int64_t> sizes = sizes_of(params, total);
  const int64_t chunk = chunk_for(total);
  for_each_table(sizes, chunk, [&](size_t first, size_t last, int64_t blocks) {
    AdamTable<T> tab{};
    tab.count = int(last - first);
    int64_t b = 0;
    for (size_t k = first; k < last; ++k) {
      const AdamParamState& e = params[k];
      const int i = int(k - first);
      TT_CHECK(!c.amsgrad || e.max_exp_avg_sq.defined(), "adam_step: amsgrad needs a max_exp_avg_sq buffer");
      tab.p[i] = e.param.data_ptr<T>();
      tab.g[i] = e.grad.data_ptr<T>();
      tab.m[i] = e.exp_avg.data_ptr<T>();
      tab.v[i] = e.exp_avg_sq.data_ptr<T>();
      tab.vmax[i] = c.amsgrad ? e.max_exp_avg_sq.data_ptr<T>() : nullptr;
      tab.step[i] = e.step.data_ptr<int64_t>();
      tab.n[i] = sizes[k];
      tab.first_block[i] = int32_t(b);
      b += blocks_of(sizes[k], chunk);
    }
    tab.first_block[tab.count] = int32_t(b);
    launch(adam_multi_kernel<T>, unsigned(blocks), kThreads, 0, tab, c, s, chunk, arrivals);
  });
}

}  // namespace

void create_optimizer_counters(int device) { (void)arrivals_of(device); }

void CudaBackend::sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf,
                           const SgdStepArgs& args) {
  DeviceGuard guard(param.device().index);
  if (param.dtype() == kFloat64) return sgd_typed<double>(param, grad, momentum_buf, args);
  if (param.dtype() == kFloat32) return sgd_typed<float>(param, grad, momentum_buf, args);
  throw DtypeError(tt::detail::concat("sgd_step: expected a float32 or float64 parameter, got ", param.dtype()));
}

void CudaBackend::adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                            const Tensor& max_exp_avg_sq, const AdamStepArgs& args) {
  DeviceGuard guard(param.device().index);
  if (param.dtype() == kFloat64) return adam_typed<double>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args);
  if (param.dtype() == kFloat32) return adam_typed<float>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args);
  throw DtypeError(tt::detail::concat("adam_step: expected a float32 or float64 parameter, got ", param.dtype()));
}

void CudaBackend::sgd_step_multi(const std::vector<SgdParamState>& params, const SgdStepArgs& args) {
  if (params.empty()) return;
  const Tensor& p0 = params[0].param;
  DeviceGuard guard(p0.device().index);
  if (p0.dtype() == kFloat64) return sgd_multi_typed<double>(params, args);
  if (p0.dtype() == kFloat32) return sgd_multi_typed<float>(params, args);
  throw DtypeError(tt::detail::concat("sgd_step: expected float32 or float64 parameters, got ", p0.dtype()));
}

void CudaBackend::adam_step_multi(const std::vector<AdamParamState>& params, const AdamStepArgs& args) {
  if (params.empty()) return;
  const Tensor& p0 = params[0].param;
  DeviceGuard guard(p0.device().index);
  unsigned* arrivals = arrivals_of(p0.device().index);
  if (p0.dtype() == kFloat64) return adam_multi_typed<double>(params, args, arrivals);
  if (p0.dtype() == kFloat32) return adam_multi_typed<float>(params, args, arrivals);
  throw DtypeError(tt::detail::concat("adam_step: expected float32 or float64 parameters, got ", p0.dtype()));
}

}  // namespace tt::cuda
