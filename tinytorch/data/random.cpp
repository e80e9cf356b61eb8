// RandomStream's draws (Philox underneath) and Fisher-Yates permutations on top of them.
#include "tinytorch/data/random.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "tinytorch/core/philox.h"
#include "tinytorch/core/error.h"

namespace tt::data {

uint64_t RandomStream::next_u64() {
  if (used_ == 2) {
    philox::Draw d = philox::draw(key_, counter_++);
    std::copy(d.w, d.w + 4, buffer_);
    used_ = 0;
  }
  const uint32_t* w = buffer_ + 2 * used_++;
  return (uint64_t(w[0]) << 32) | w[1];
}

uint64_t RandomStream::uniform_below(uint64_t bound) {
  TT_CHECK(bound > 0, "RandomStream::uniform_below: bound must be positive, got 0");
  uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  uint64_t x = next_u64();
  while (x < threshold) x = next_u64();
  return x % bound;
}

double RandomStream::normal() {
  double u1 = 1.0 - uniform();  // (0, 1]: log(u1) is finite
  double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream) {
  TT_CHECK(n >= 0, "permutation: n must be non-negative, got ", n);
  // TT_EXERCISE_BEGIN(08, 2)
  // Fisher-Yates: position i takes a uniformly chosen element of the not-yet-placed prefix
  // [0, i], so each of the n! orders has probability 1/n!.
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
  RandomStream rng(seed, stream);
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = int64_t(rng.uniform_below(uint64_t(i) + 1));
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  return order;
  // TT_EXERCISE_END
}

}  // namespace tt::data
