// The tensor-core flash kernels' arithmetic on the CPU (the twin of backend/cuda/mma.cuh): TF32
// rounding as cvt.rna does it, the 3xTF32 split, and a dot product accumulated the way the
// m16n8k8 mma.sync loop of flash_mma_forward.cu / flash_mma_backward.cu accumulates it. Header
// only, for tests and the error analysis of modules/13_flash_attention/README.md.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tt::tf32 {

// The three float32 arithmetics of the CUDA flash kernels: Exact (FFMA, SDPBackend::FlashExact),
// X3 (3xTF32, the float32 default), X1 (1xTF32, under set_allow_tf32(true)).
enum class Mode { Exact, X3, X1 };

// x rounded to TF32: 10 stored mantissa bits (8 exponent bits, as float32), to nearest with ties
// away from zero (cvt.rna.tf32.f32), returned as the float whose low 13 bits are 0. Adding half
// of the dropped range to the magnitude bits and truncating does exactly that; a carry out of the
// mantissa bumps the exponent (to infinity past the largest TF32). Inf and NaN pass unchanged.
inline float round(float x) {
  if (!std::isfinite(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u = (u + 0x1000u) & 0xffffe000u;
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

// The 3xTF32 split of x: big = tf32(x), small = tf32(x - big). x - big is exact in float32 (it
// has at most 13 significant bits), so |x - big - small| <= 2^-11 |x - big| <= 2^-22 |x|.
struct Split {
  float big, small;
};
inline Split split(float x) {
  const float big = round(x);
  return {big, round(x - big)};
}

// sum_k a[k * sa] * b[k * sb] for k < n, as the kernels form it: in steps of 8 (one mma k-step),
// each step adding into the float32 accumulator first sum small(a) big(b), then big(a) small(b),
// then big(a) big(b) (X3), or only big(a) big(b) (X1); Exact: fmaf one term at a time. The
// products of TF32 parts are exact in float32 (11 x 11 significant bits); inside one mma the 8
// products are added here in order, one float32 rounding each (the hardware's internal order and
// rounding within a step are not specified; the GPU tests cover that part).
inline float dot(Mode mode, const float* a, int64_t sa, const float* b, int64_t sb, int64_t n) {
  float acc = 0.f;
  if (mode == Mode::Exact) {
    for (int64_t k = 0; k < n; ++k) acc = std::fmaf(a[k * sa], b[k * sb], acc);
    return acc;
  }
  for (int64_t k0 = 0; k0 < n; k0 += 8) {
    const int64_t k1 = k0 + 8 < n ? k0 + 8 : n;
    if (mode == Mode::X3) {
      for (int64_t k = k0; k < k1; ++k) acc += split(a[k * sa]).small * split(b[k * sb]).big;
      for (int64_t k = k0; k < k1; ++k) acc += split(a[k * sa]).big * split(b[k * sb]).small;
    }
    for (int64_t k = k0; k < k1; ++k) acc += round(a[k * sa]) * round(b[k * sb]);
  }
  return acc;
}

}  // namespace tt::tf32
