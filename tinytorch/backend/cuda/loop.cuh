// The CUDA elementwise engine, twin of cpu/loop.h: N operands (out first) walked over one shape
// with arbitrary byte strides, so broadcast and transposed views are read in place.
//
// The host builds a StridedOffsets<N> (dims coalesced by backend/strided_plan.h, as on the CPU)
// and passes it to a kernel by value; each thread turns its linear index into N byte offsets.
// launch_elementwise() runs a grid-stride loop with one element per thread per step.
//
// launch_map() is the typed layer on top: out[i] = f(in0[i], in1[i], ...) with a scalar functor
// (functors.h), a vectorized kernel for contiguous operands (Note [contiguous fast path]) and the
// strided engine for the rest; an input may also be a value read on the host (MapArg).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/strided_plan.h"
#include "tinytorch/core/tensor.h"

namespace tt::cuda {

constexpr int kThreads = 256;  // threads per block of the elementwise kernels

// Blocks for n elements at kThreads each, capped so a grid-stride loop covers the rest.
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(b, 65535LL * 8)));
}

template <int N>
struct StridedOffsets : StridedPlan<N> {
  using Plan = StridedPlan<N>;
  using Plan::base;
  using Plan::ndim;
  using Plan::numel;
  using Plan::shape;
  using Plan::strides;

  StridedOffsets() = default;
  // ops[0] is the output; the others are broadcast to its shape (backend/strided_plan.h).
  explicit StridedOffsets(const Tensor* const (&ops)[N]) : Plan(ops) {}

  // True when every operand walks its bytes densely in order (one dim, stride = element size).
  bool contiguous(const int64_t (&element_sizes)[N]) const {
    if (ndim != 1) return false;
    for (int k = 0; k < N; ++k)
      if (strides[k][0] != element_sizes[k] && shape[0] != 1) return false;
    return true;
  }

  // The N operand addresses of linear element i.
  __device__ __forceinline__ void pointers(int64_t i, char* (&ptrs)[N]) const {
    for (int k = 0; k < N; ++k) ptrs[k] = base[k];
    for (int d = ndim - 1; d >= 0; --d) {
      int64_t idx = i % shape[d];
      i /= shape[d];
      for (int k = 0; k < N; ++k) ptrs[k] += idx * strides[k][d];
    }
  }
};

// Grid-stride loop: f(ptrs) for every element, ptrs[0] the output's address.
template <int N, typename F>
__global__ void strided_kernel(StridedOffsets<N> offs, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < offs.numel;
       i += int64_t(blockDim.x) * gridDim.x) {
    char* ptrs[N];
    offs.pointers(i, ptrs);
    f(ptrs);
  }
}

// Runs f(char* (&ptrs)[N]) on the device over every element of ops[0]'s shape.
template <int N, typename F>
void launch_elementwise(const Tensor* const (&ops)[N], F f) {
  StridedOffsets<N> offs(ops);
  if (offs.numel == 0) return;
  launch(strided_kernel<N, F>, blocks_for(offs.numel), kThreads, 0, offs, f);
}

// --- maps: out[i] = f(in0[i], in1[i], ...) -----------------------------------------------------
// Note [contiguous fast path]: when out is contiguous and every input is either contiguous with
// out's numel, or a single element broadcast to all, the elements line up by linear index and
// no index arithmetic is needed: each thread loads kVecBytes (16) per operand as one aligned
// vector (float4-like: 4 floats, 2 doubles, 16 bools), applies f lane by lane and stores one
// vector; the last numel % V elements are a scalar tail. Misaligned pointers (views starting
// mid-vector) and every other layout take the strided engine above.
constexpr int kVecBytes = 16;

template <typename T, int V>
struct alignas(sizeof(T) * V) AlignedVec {
  T val[V];
};

// One input of a map as the kernels see it.
template <typename T>
struct MapIn {
  const T* ptr = nullptr;  // contiguous path: the first element
  T value{};               // read instead of memory when by_value
  int slot = 0;            // its operand number in the strided path (1.., out is 0)
  bool by_value = false;   // a host scalar (e.g. a wrapped 0-d CPU tensor): never dereferenced
  bool broadcast = false;  // contiguous path: one element (ptr[0]) for every index

  __device__ __forceinline__ T read(const char* p) const {
    return by_value ? value : *reinterpret_cast<const T*>(p);
  }
  __device__ __forceinline__ T at(int64_t i) const {
    return by_value ? value : ptr[broadcast ? 0 : i];
  }
  template <int V>
  __device__ __forceinline__ AlignedVec<T, V> vec(int64_t v) const {
    if (!by_value && !broadcast) return reinterpret_cast<const AlignedVec<T, V>*>(ptr)[v];
    AlignedVec<T, V> r;
    const T x = by_value ? value : ptr[0];
#pragma unroll
    for (int j = 0; j < V; ++j) r.val[j] = x;
    return r;
  }
};

// One input of a map as the host describes it: a tensor on out's device, or a value.
template <typename T>
struct MapArg {
  const Tensor* tensor = nullptr;  // always set (its shape broadcasts in the strided path)
  bool by_value = false;
  T value{};
};

// A device tensor as a map input. A CPU tensor with one element (the wrapped scalar of `t + 2`,
// which backend.h allows whatever the device) is read here, on the host, and passed by value.
template <typename T>
MapArg<T> map_arg(const Tensor& t) {
  MapArg<T> a;
  a.tensor = &t;
  if (t.device().is_cpu()) {
    TT_CHECK_DEVICE(t.numel() == 1, "cuda kernel: a CPU operand must be a single element, got shape ", t.shape());
    TT_CHECK_DTYPE(t.dtype() == dtype_of<T>::value, "cuda kernel: a CPU operand must be ", dtype_of<T>::value,
                   ", got ", t.dtype());
    a.by_value = true;
    a.value = *static_cast<const T*>(t.raw_data_ptr());
  }
  return a;
}

// V lanes: o[j] = f(x[j]...).
template <int V, typename F, typename out_t, typename... in_t>
__device__ __forceinline__ void map_lanes(const F& f, AlignedVec<out_t, V>& o, const AlignedVec<in_t, V>&... x) {
#pragma unroll
  for (int j = 0; j < V; ++j) o.val[j] = static_cast<out_t>(f(x.val[j]...));
}

// out: [n] contiguous, 16-byte-aligned vectors of V; inputs: contiguous [n], broadcast or values.
template <int V, typename F, typename out_t, typename... in_t>
__global__ void map_contiguous_kernel(int64_t n, F f, out_t* out, MapIn<in_t>... in) {
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t nvec = n / V;
  for (int64_t v = first; v < nvec; v += stride) {
    AlignedVec<out_t, V> o;
    map_lanes<V>(f, o, in.template vec<V>(v)...);
    reinterpret_cast<AlignedVec<out_t, V>*>(out)[v] = o;
  }
  for (int64_t i = nvec * V + first; i < n; i += stride) out[i] = static_cast<out_t>(f(in.at(i)...));
}

// out: [*] any strides; inputs bcast to out (offsets from the strided engine) or values.
template <int N, typename F, typename out_t, typename... in_t>
__global__ void map_strided_kernel(StridedOffsets<N> offs, F f, out_t* /*type tag*/, MapIn<in_t>... in) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < offs.numel;
       i += int64_t(blockDim.x) * gridDim.x) {
    char* ptrs[N];
    offs.pointers(i, ptrs);
    *reinterpret_cast<out_t*>(ptrs[0]) = static_cast<out_t>(f(in.read(ptrs[in.slot])...));
  }
}

namespace detail {

template <typename T>
MapIn<T> map_in(const MapArg<T>& a, int slot, int64_t n) {
  MapIn<T> m;
  m.slot = slot;
  m.by_value = a.by_value;
  m.value = a.value;
  if (!a.by_value) {
    m.ptr = static_cast<const T*>(a.tensor->raw_data_ptr());
    m.broadcast = a.tensor->numel() == 1 && n != 1;
  }
  return m;
}

// True when `a` can be read by linear index in the contiguous kernel with V-vectors.
template <typename T, int V>
bool map_linear(const MapArg<T>& a, int64_t n) {
  if (a.by_value || a.tensor->numel() == 1) return true;
  return a.tensor->numel() == n && a.tensor->is_contiguous() &&
         reinterpret_cast<uintptr_t>(a.tensor->raw_data_ptr()) % (sizeof(T) * V) == 0;
}

template <typename out_t, typename F, size_t... K, typename... in_t>
void launch_map_impl(const Tensor& out, const F& f, std::index_sequence<K...>, const MapArg<in_t>&... args) {
  constexpr int N = 1 + int(sizeof...(in_t));
  constexpr size_t kWidest = std::max({sizeof(out_t), sizeof(in_t)...});
  constexpr int V = int(kVecBytes / kWidest);
  const int64_t n = out.numel();
  if (n == 0) return;
  out_t* o = static_cast<out_t*>(out.raw_data_ptr());
  bool linear = out.is_contiguous() && reinterpret_cast<uintptr_t>(o) % (sizeof(out_t) * V) == 0;
  for (bool ok : {true, map_linear<in_t, V>(args, n)...}) linear = linear && ok;
  if (linear) {
    launch(map_contiguous_kernel<V, F, out_t, in_t...>, blocks_for((n + V - 1) / V), kThreads, 0, n, f, o,
           map_in(args, int(K) + 1, n)...);
  } else {
    const Tensor* const ops[N] = {&out, args.tensor...};
    StridedOffsets<N> offs(ops);
    launch(map_strided_kernel<N, F, out_t, in_t...>, blocks_for(n), kThreads, 0, offs, f, o,
           map_in(args, int(K) + 1, n)...);
  }
}

}  // namespace detail

// out[i] = f(args[i]...) over out's shape: the vectorized kernel where Note [contiguous fast
// path] allows, else the strided engine. out may alias an input exactly (each element is read
// before it is written, by the same thread). f's result is converted to out_t.
template <typename out_t, typename F, typename... in_t>
void launch_map(const Tensor& out, const F& f, const MapArg<in_t>&... args) {
  detail::launch_map_impl<out_t>(out, f, std::index_sequence_for<in_t...>{}, args...);
}

}  // namespace tt::cuda
