// tt::BFloat16: the 16-bit brain float (1 sign, 8 exponent, 7 mantissa bits), stored as the top
// half of a float32, converted with round-to-nearest-even. Arithmetic goes through float.
//
// Note [bfloat16]: bf16 keeps float32's exponent range (it overflows only from 3.3962e38 up, and
// needs no loss scaling) but only 8 significant bits, about 2-3 decimal digits: one rounding
// costs up to 2^-8 = 0.39% relative. tinytorch stores bf16 and computes in float32: every
// kernel reads bf16, works in float, and rounds once when it writes (PyTorch's "opmath"), and
// every sum and dot product accumulates in float32. torch.bfloat16's bits (nearest, ties to even),
// but a NaN keeps its sign and top 7 payload bits, quieted (torch gives 0x7FC0 for every NaN).
#pragma once

#include <cstdint>
#include <cstring>
#include <ostream>

#include "tinytorch/core/host_device.h"

namespace tt {

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  TT_HOST_DEVICE BFloat16(float f) : bits(round_to_bits(f)) {}  // NOLINT: implicit, like float16 types
  TT_HOST_DEVICE operator float() const { return to_float(bits); }  // NOLINT

  // Builds a value from raw bits (no rounding).
  static TT_HOST_DEVICE BFloat16 from_bits(uint16_t b) {
    BFloat16 v;
    v.bits = b;
    return v;
  }

  // float32 -> nearest bf16, ties to even; NaN -> a quiet NaN of the same sign.
  static TT_HOST_DEVICE uint16_t round_to_bits(float f) {
    // TT_EXERCISE_BEGIN(15, 1)
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
    // Add just under half of the dropped part's range, plus the kept part's lowest bit: a tie
    // then carries into the kept bits only when they are odd (round half to even).
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
    // TT_EXERCISE_END
  }
  static TT_HOST_DEVICE float to_float(uint16_t b) {
    uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  static TT_HOST_DEVICE uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
  }
};
static_assert(sizeof(BFloat16) == 2, "BFloat16 is two bytes");

inline std::ostream& operator<<(std::ostream& os, BFloat16 v) { return os << float(v); }

}  // namespace tt
