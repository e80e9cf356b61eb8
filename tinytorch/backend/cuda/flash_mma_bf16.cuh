// Shared pieces of the bfloat16 flash-attention kernels (flash_mma_bf16_forward.cu, _backward.cu):
// their argument block, the test for whether a call can take them, the float32 stand-ins of the
// fallback, and the two host entries CudaBackend::flash_attention_forward/_backward call for bf16.
// Note [bf16 flash attention on the GPU] in flash_mma_bf16_forward.cu describes the kernels.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "tinytorch/backend/backend.h"
#include "tinytorch/backend/cuda/flash_common.cuh"

namespace tt::cuda::flash_bf16 {

using flash::Strides3;

// Everything a bf16 flash kernel reads. bf16 tensors as their raw 16-bit patterns. q [B, Hq, Tq, D],
// k, v [B, Hkv, Tk, D], bias [B, Hq, Tq, Tk] (any strides, null when absent), out, dout
// [B, Hq, Tq, D], dk, dv as k; lse, dvec [B, Hq, Tq] float32 contiguous; dq_accum [B, Hq, Tq, D]
// float32 contiguous. Query head h reads key/value head h / G. scale_log2 = scale * log2(e).
struct Args {
  const uint16_t* q = nullptr;
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  const uint16_t* bias = nullptr;
  uint16_t* out = nullptr;
  float* lse = nullptr;
  const uint16_t* dout = nullptr;
  const float* dvec = nullptr;
  float* dq_accum = nullptr;
  uint16_t* dk = nullptr;
  uint16_t* dv = nullptr;
  Strides3 sq, sk, sv, so, sdo, sdk, sdv;
  int64_t bias_b = 0, bias_h = 0, bias_i = 0, bias_j = 0;
  int B = 0, Hq = 0, G = 1, Tq = 0, Tk = 0, D = 0;
  float scale = 1.f, scale_log2 = 1.f;
  bool causal = false;
};

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// A bf16 bit pattern as a float (exact).
__device__ __forceinline__ float bf16_bits_to_float(uint16_t b) { return __uint_as_float(uint32_t(b) << 16); }

inline const uint16_t* bits_of(const Tensor& t) {
  return t.defined() ? reinterpret_cast<const uint16_t*>(t.data_ptr<BFloat16>()) : nullptr;
}
inline uint16_t* mutable_bits_of(const Tensor& t) { return const_cast<uint16_t*>(bits_of(t)); }

// True when t's rows can be copied in 16-byte chunks: 16-byte aligned data, every stride but the
// last (1) a multiple of 8 elements.
inline bool chunk_aligned(const Tensor& t) {
  if (reinterpret_cast<uintptr_t>(t.data_ptr<BFloat16>()) % 16 != 0 || t.stride(3) != 1) return false;
  for (int d = 0; d < 3; ++d)
    if (t.size(d) > 1 && t.stride(d) % 8 != 0) return false;
  return true;
}

// The tensor-core kernels take D = Dv in {32, 64, 128} with chunk-aligned q, k, v (and out, dout,
// dk, dv); anything else runs the float32 kernels on float32 copies (the fallback).
inline bool head_dim_supported(int64_t D, int64_t Dv) { return D == Dv && (D == 32 || D == 64 || D == 128); }

inline Args make_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                      const AttentionArgs& args) {
  Args a;
  a.q = bits_of(q);
  a.k = bits_of(k);
  a.v = bits_of(v);
  a.sq = flash::strides_of(q);
  a.sk = flash::strides_of(k);
  a.sv = flash::strides_of(v);
  if (bias.defined()) {
    a.bias = bits_of(bias);
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
  a.scale = float(args.scale);
  a.scale_log2 = float(args.scale * 1.4426950408889634);
  a.causal = args.causal;
  return a;
}

// A contiguous float32 tensor of t's shape on t's device (uninitialized); the fallback's stand-in.
inline Tensor float32_like(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(size_t(t.numel()) * sizeof(float), t.device());
  impl->shape = t.shape();
  impl->strides = contiguous_strides(t.shape());
  impl->dtype = kFloat32;
  return Tensor(std::move(impl));
}

// bf16 t widened into a float32 stand-in through `be` (exact); undefined stays undefined.
inline Tensor widened(Backend& be, const Tensor& t) {
  if (!t.defined() || t.dtype() != kBFloat16) return t;
  Tensor f = float32_like(t);
  be.copy(f, t);
  return f;
}

// The bf16 entries (host). be: the CUDA backend itself (the fallback runs its float32 kernels).
// Arguments as Backend::flash_attention_forward/_backward with q, k, v, bias, out, dout, dq, dk,
// dv bf16 and lse float32.
void forward(Backend& be, const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
             const Tensor& bias, const AttentionArgs& args);
void backward(Backend& be, const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
              const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
              const Tensor& bias, const AttentionArgs& args);

}  // namespace tt::cuda::flash_bf16
