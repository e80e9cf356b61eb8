// The attention masks the GPU flash suites (float32 and bf16) draw from, and their additive bias.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <tinytorch/tinytorch.h>

namespace flash_masks {

// The mask kinds: 0 none, 1 bool [Tq, Tk], 2 float [B, 1, Tq, Tk] in `dtype` with -inf, 3 bool key
// padding [B, 1, 1, Tk], 4 bool [Tq, Tk] with whole rows false.
inline tt::Tensor make_mask(int kind, int64_t B, int64_t Tq, int64_t Tk, tt::ScalarType dtype = tt::kFloat32) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (kind == 1) return tt::rand({Tq, Tk}) > 0.2;
  if (kind == 2)
    return tt::masked_fill(tt::randn({B, 1, Tq, Tk}), tt::rand({B, 1, Tq, Tk}) > 0.8, -kInf).to(dtype);
  if (kind == 3) return tt::rand({B, 1, 1, Tk}) > 0.1;
  if (kind == 4) {  // about a quarter of the rows hidden entirely
    std::mt19937 rng(uint32_t(Tq * 131 + Tk));
    std::uniform_real_distribution<float> u(0.f, 1.f);
    std::vector<float> allowed(size_t(Tq * Tk));
    for (int64_t i = 0; i < Tq; ++i) {
      const bool hidden = u(rng) < 0.25f;
      for (int64_t j = 0; j < Tk; ++j) allowed[size_t(i * Tk + j)] = !hidden && u(rng) > 0.3f ? 1.f : 0.f;
    }
    return tt::tensor(allowed, {Tq, Tk}) > 0.5;
  }
  return tt::Tensor();
}

// The mask as the kernels' additive bias in `dtype`, on `device`, expanded (stride 0) to `shape`
// ([B, Hq, Tq, Tk]).
inline tt::Tensor bias_of(const tt::Tensor& mask, tt::ScalarType dtype, const tt::Device& device,
                          const tt::Shape& shape) {
  if (!mask.defined()) return tt::Tensor();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const tt::Tensor zero = tt::zeros({}, tt::TensorOptions().dtype(dtype));
  const tt::Tensor b = mask.dtype() == tt::kBool ? tt::where(mask, zero, -kInf) : mask.to(dtype);
  return tt::expand(b.to(device), shape);
}

}  // namespace flash_masks
