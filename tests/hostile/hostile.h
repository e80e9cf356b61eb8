// The hostile-input sweep's vocabulary: the hostile sizes, the rule that says which outcome each
// input must have (computed here in 128-bit arithmetic, independently of the library), and
// run_case, which calls the library and checks that it gave exactly that outcome.
#pragma once

#include "test_util.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace tt::hostile {

// Note [hostile sweep]
// ~~~~~~~~~~~~~~~~~~~~
// Each case is one call with one hostile input, and its outcome is decided before the call:
//   Ok      the input is valid and cheap: the call must return, and the result is checked
//   Error   the input is invalid (a negative size, an element or byte count past int64, an index
//           out of range, a storage no machine has): the call must throw a tt::Error subclass
//   Skip    valid, but it would allocate between kBudgetBytes and kNoMachineBytes: a real
//           allocation of gigabytes is not a unit test. Such sizes are still swept through views
//           (expand allocates nothing), so no size class goes untested.
// Any other exception (std::bad_alloc, std::length_error, ...) fails the case, and a crash or a
// sanitizer report fails the suite: CI runs it under AddressSanitizer + UBSan.
enum class Expect { Ok, Error, Skip };

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
// 0, 1, negative, 2^31 +- 1, 2^32, 2^62, INT64_MAX and INT64_MIN.
inline const std::vector<int64_t> kSizes = {0,           1, -1, -5, (int64_t(1) << 31) - 1, (int64_t(1) << 31) + 1,
                                            int64_t(1) << 32, int64_t(1) << 62, kMax, kMin};
constexpr int64_t kBudgetBytes = int64_t(64) << 20;   // allocate at most 64 MiB in one case
constexpr int64_t kNoMachineBytes = int64_t(1) << 48;  // above x86-64's 128 TiB of user address space

using i128 = __int128;

// Every shape of one and two hostile sizes, plus each of them beside a 0 (an empty tensor).
inline std::vector<Shape> hostile_shapes() {
  std::vector<Shape> out = {Shape{}};
  for (int64_t a : kSizes) {
    out.push_back({a});
    out.push_back({a, 0});
    for (int64_t b : kSizes) out.push_back({a, b});
  }
  return out;
}

// The element count of `shape` in 128 bits; -1 if a size is negative. Products of up to two
// int64 sizes fit in 128 bits; larger ones saturate at 2^100 (still past any int64).
inline i128 count(const Shape& shape) {
  i128 n = 1;
  for (int64_t d : shape)
    if (d < 0) return -1;
  for (int64_t d : shape) {
    if (d == 0) return 0;
    n = n > (i128(1) << 100) / d ? (i128(1) << 100) : n * d;
  }
  return n;
}

// What allocating a contiguous tensor of `shape` with `itemsize`-byte elements must do.
inline Expect allocation(const Shape& shape, int64_t itemsize) {
  i128 n = count(shape);
  if (n < 0 || n > kMax || n * itemsize > kMax) return Expect::Error;  // negative, or past int64
  i128 bytes = n * itemsize;
  if (bytes <= kBudgetBytes) return Expect::Ok;
  return bytes > kNoMachineBytes ? Expect::Error : Expect::Skip;  // out of memory: a tt::Error too
}

// The outcome of a call that makes several allocations: an error if any is, else skipped if any is.
inline Expect all_of(std::initializer_list<Expect> parts) {
  Expect out = Expect::Ok;
  for (Expect e : parts) {
    if (e == Expect::Error) return Expect::Error;
    if (e == Expect::Skip) out = Expect::Skip;
  }
  return out;
}

inline std::string describe(const Shape& shape) {
  std::ostringstream os;
  os << shape;
  return os.str();
}

// Runs `call` and checks it had the outcome `expect`; `check` then looks at a successful result.
// Returns true when the call returned.
template <typename R>
bool run_case(const std::string& what, Expect expect, const std::function<R()>& call,
              const std::function<void(const R&)>& check = nullptr) {
  if (expect == Expect::Skip) return false;
  INFO(what);
  try {
    R r = call();
    if (expect == Expect::Error) {
      FAIL_CHECK("expected a tt::Error, the call returned");
      return true;
    }
    if (check) check(r);
    return true;
  } catch (const tt::Error& e) {
    INFO("tt::Error: " << e.what());
    CHECK(expect == Expect::Error);
    CHECK(std::string(e.what()).size() > 10);  // a message, not an empty what()
  } catch (const std::exception& e) {
    FAIL_CHECK("not a tt::Error: " << e.what());
  }
  return false;
}

// A tensor result must have the expected shape and a consistent, non-negative numel.
inline std::function<void(const Tensor&)> has_shape(const Shape& shape) {
  return [shape](const Tensor& t) {
    CHECK(t.shape() == shape);
    CHECK(t.numel() >= 0);
    CHECK(i128(t.numel()) == count(shape));
  };
}

}  // namespace tt::hostile
