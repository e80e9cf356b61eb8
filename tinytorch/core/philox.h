// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator shared by the CPU and CUDA backends, the Generator and data/'s
// RandomStream. draw(key, counter) is a pure function, which is what makes random tensors
// reproducible across thread counts and devices.
#pragma once

#include <cmath>
#include <cstdint>

#include "tinytorch/core/host_device.h"

namespace tt::philox {

struct Draw {
  uint32_t w[4];
};

TT_HOST_DEVICE uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t& hi) {
  uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  return uint32_t(p);
}

TT_HOST_DEVICE Draw draw(uint64_t key, uint64_t counter) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    uint32_t lo0 = mulhilo(0xD2511F53u, c0, hi0);
    uint32_t lo1 = mulhilo(0xCD9E8D57u, c2, hi1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Draw{{c0, c1, c2, c3}};
}

// Uniform in [0, 1): 24 random bits for float, 53 for double.
template <typename T>
TT_HOST_DEVICE T to_unit(const Draw& r) {
  if constexpr (sizeof(T) == 4) {
    return T(r.w[0] >> 8) * T(1.0f / 16777216.0f);
  } else {
    uint64_t bits = (uint64_t(r.w[0]) << 21) ^ uint64_t(r.w[1] >> 11);
    return T(bits & ((uint64_t(1) << 53) - 1)) * T(1.0 / 9007199254740992.0);
  }
}

// Standard normal by Box-Muller from two 53-bit uniforms (u1 in (0, 1]).
TT_HOST_DEVICE double to_normal(const Draw& r) {
  uint64_t b1 = ((uint64_t(r.w[0]) << 32) | r.w[1]) >> 11;
  uint64_t b2 = ((uint64_t(r.w[2]) << 32) | r.w[3]) >> 11;
  double u1 = (double(b1) + 1.0) * (1.0 / 9007199254740992.0);
  double u2 = double(b2) * (1.0 / 9007199254740992.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace tt::philox
