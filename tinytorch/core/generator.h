// Generator: the seed and position of the counter-based random stream (see core/philox.h).
// A request for n numbers takes the counters [offset, offset + n) and advances offset, so the
// same seed gives the same tensors on any thread count.
#pragma once

#include <cstdint>
#include <mutex>

namespace tt {

class Generator {
 public:
  explicit Generator(uint64_t seed = kDefaultSeed) : seed_(seed) {}
  void manual_seed(uint64_t seed);
  uint64_t seed() const;
  uint64_t offset() const;
  // Reserves n counters and returns the first.
  uint64_t take(uint64_t n);

  static constexpr uint64_t kDefaultSeed = 67280421310721ull;

 private:
  mutable std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

Generator& default_generator();
// Seeds the default generator (as torch::manual_seed).
void manual_seed(uint64_t seed);

}  // namespace tt
