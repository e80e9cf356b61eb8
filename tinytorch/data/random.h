// Deterministic randomness for the data layer: a stream of Philox draws and the permutations
// built from it (the DataLoader's shuffle, train_test_split, the synthetic datasets).
//
// Everything here is integer arithmetic on Philox4x32-10 (core/philox.h) with our own
// uniform-integer draw, so the same (seed, stream) gives the same permutation on every platform,
// compiler and standard library. std::shuffle and std::uniform_int_distribution are deliberately
// not used: their algorithms are implementation-defined. (Normal draws go through std::log and
// std::cos, which may differ in the last bit between C libraries.)
#pragma once

#include <cstdint>
#include <vector>

namespace tt::data {

// A sequential stream of random numbers: Philox with key `seed`, counters
// (stream << 32) + 0, 1, 2, ... Distinct streams of one seed never share a counter as long as a
// stream uses fewer than 2^32 counters (each counter gives two 64-bit words); stream numbers
// are taken mod 2^32.
class RandomStream {
 public:
  RandomStream(uint64_t seed, uint64_t stream) : key_(seed), counter_(stream << 32) {}

  // 64 random bits: each Philox draw gives four 32-bit words, handed out as two 64-bit values.
  uint64_t next_u64();

  // Uniform in [0, bound), exactly (no modulo bias): draws below 2^64 mod bound are rejected,
  // which leaves a whole number of copies of [0, bound). Throws tt::Error for bound 0.
  uint64_t uniform_below(uint64_t bound);

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return double(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

  // Standard normal (Box-Muller; one value per call, the second is not kept).
  double normal();

 private:
  uint64_t key_;
  uint64_t counter_;
  uint32_t buffer_[4] = {};
  int used_ = 2;  // 64-bit values of buffer_ handed out (two per draw)
};

// A random permutation of 0..n-1 (Fisher-Yates driven by RandomStream(seed, stream)). The same
// (n, seed, stream) always gives the same permutation. n must be >= 0.
std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream = 0);

}  // namespace tt::data
