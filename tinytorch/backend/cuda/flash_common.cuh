// Shared pieces of the CUDA flash-attention kernels (flash_attention_forward.cu, _backward.cu,
// flash_decode.cu): the argument block every kernel takes, the score masking, warp reductions.
// Note [flash attention on the GPU] in flash_attention_forward.cu describes the kernels.
#pragma once

#include <cstdint>
#include <limits>

#include <cuda_runtime.h>

#include "tinytorch/backend/activation_functors.h"
#include "tinytorch/backend/backend.h"

namespace tt::cuda::flash {

// Strides (in elements) of a [B, H, T, X] tensor whose last dim has stride 1.
struct Strides3 {
  int64_t b = 0, h = 0, t = 0;
};

inline Strides3 strides_of(const Tensor& t) {
  if (!t.defined()) return {};
  return {t.stride(0), t.stride(1), t.stride(2)};
}

// Everything a flash kernel reads: q [B, Hq, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv],
// bias [B, Hq, Tq, Tk] (any strides, null when absent), out/dout/dq [B, Hq, Tq, *], dk/dv as k/v,
// lse and dvec [B, Hq, Tq] contiguous. Query head h reads key/value head h / G.
template <typename T>
struct FlashArgs {
  const T* q = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  const T* bias = nullptr;
  T* out = nullptr;
  T* lse = nullptr;
  const T* dout = nullptr;
  const T* dvec = nullptr;
  T* dq = nullptr;
  T* dk = nullptr;
  T* dv = nullptr;
  Strides3 sq, sk, sv, so, sdo, sdq, sdk, sdv;
  int64_t bias_b = 0, bias_h = 0, bias_i = 0, bias_j = 0;
  int B = 0, Hq = 0, G = 1, Tq = 0, Tk = 0, D = 0, Dv = 0;
  T scale = 1;
  bool causal = false;
};

template <typename T>
TT_HOST_DEVICE constexpr T neg_inf() {
  return -std::numeric_limits<T>::infinity();
}

// The score of (query row i, key j) for batch b, head h from the raw dot product: scaled, plus the
// bias, -inf where causality or the tails hide it (as mask_tile in cpu/flash_attention.cpp).
template <typename T>
__device__ __forceinline__ T masked_score(const FlashArgs<T>& a, int b, int h, int64_t i, int64_t j, T dot) {
  if (i >= a.Tq || j >= a.Tk || (a.causal && j > i)) return neg_inf<T>();
  T s = dot * a.scale;
  if (a.bias != nullptr) s += a.bias[b * a.bias_b + h * a.bias_h + i * a.bias_i + j * a.bias_j];
  return s;
}

// max that skips NaN (the CPU's `s > mx ? s : mx`).
template <typename T>
__device__ __forceinline__ T max_skip_nan(T a, T b) {
  return b > a ? b : a;
}

template <typename T>
__device__ __forceinline__ T warp_sum(T x, int width = 32) {
  for (int o = width / 2; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o, width);
  return x;
}

template <typename T>
__device__ __forceinline__ T warp_max(T x, int width = 32) {
  for (int o = width / 2; o > 0; o /= 2) x = max_skip_nan(x, __shfl_xor_sync(0xffffffffu, x, o, width));
  return x;
}

template <typename T>
FlashArgs<T> make_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                       const AttentionArgs& args) {
  FlashArgs<T> a;
  a.q = q.data_ptr<T>();
  a.k = k.data_ptr<T>();
  a.v = v.data_ptr<T>();
  a.sq = strides_of(q);
  a.sk = strides_of(k);
  a.sv = strides_of(v);
  if (bias.defined()) {
    a.bias = bias.data_ptr<T>();
    a.bias_b = bias.stride(0);
    a.bias_h = bias.stride(1);
    a.bias_i = bias.stride(2);
    a.bias_j = bias.stride(3);
  }
  a.B = int(q.size(0));
  a.Hq = int(q.size(1));
  a.G = int(q.size(1) / k.size(1));
  a.Tq = int(q.size(2));
  a.Tk = int(k.size(2));
  a.D = int(q.size(3));
  a.Dv = int(v.size(3));
  a.scale = T(args.scale);
  a.causal = args.causal;
  return a;
}

// The split-K decode path (flash_decode.cu): true when it takes this call (few queries, many
// keys), after writing out and lse.
template <typename T>
bool try_flash_decode(const FlashArgs<T>& a, int device);

// True when p and the rows of a [B, H, T, X] tensor with strides s start on 16-byte boundaries
// (what 16-byte cp.async and float2 stores need); a null p passes.
inline bool aligned16(const void* p, const Strides3& s) {
  return (reinterpret_cast<uintptr_t>(p) % 16 == 0 && s.b % 4 == 0 && s.h % 4 == 0 && s.t % 4 == 0);
}

// True when the tensor-core kernels (flash_mma_forward.cu, flash_mma_backward.cu) can take a
// float32 call on `device`: D = Dv in {32, 64, 128}, sm_80 or newer, q, k, v rows 16-byte aligned.
bool mma_supported(const FlashArgs<float>& a, int device);

// True when `device` is sm_80 or newer (cp.async, mma.sync TF32 and bf16) and lets one block have
// `smem_bytes` of dynamic shared memory (cudaDevAttrMaxSharedMemoryPerBlockOptin: 227 KiB on sm_90,
// 163 KiB on sm_80, 99 KiB on sm_86/89). A kernel that does not fit falls back to another path
// rather than fail its launch.
bool tensor_core_kernel_fits(int device, int smem_bytes);

// The tensor-core forward / backward (Note [tensor-core flash forward] in flash_mma_forward.cu):
// true when they took the call (mma_supported and the outputs' rows aligned too), after writing
// out and lse / dq (+=), dk, dv. split: 3xTF32 (float32 accuracy) or 1xTF32. The backward needs
// a.dvec = rowsum(dout * out).
bool mma_forward(const FlashArgs<float>& a, int device, bool split);
bool mma_backward(const FlashArgs<float>& a, int device, bool split);

// The number of key positions a query tile [i0, i0 + rows) can see.
TT_HOST_DEVICE int64_t visible_keys(bool causal, int64_t Tk, int64_t i_end) {
  return causal ? (Tk < i_end ? Tk : i_end) : Tk;
}

}  // namespace tt::cuda::flash
