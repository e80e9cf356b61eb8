// One test per edge the hostile-input probe of issue 15 found in sizes, views, fills and tables:
// each failed (a wrong numel, a crash, undefined behaviour or a std:: exception) before the fix.
#include "hostile.h"

#include <cmath>

#include "tinytorch/core/allocator.h"
#include "tinytorch/core/checked.h"

using namespace tt;
using Catch::Contains;

TEST_CASE("sizes: element counts past int64 are refused before anything is allocated", "[hostile][sizes]") {
  const int64_t two62 = int64_t(1) << 62;
  // Was a tensor with numel() == -4 whose rows landed in other tensors' memory.
  REQUIRE_THROWS_WITH(zeros({two62 - 1, 4}),
                      Contains("zeros: the number of elements of sizes [4611686018427387903, 4] overflows int64"));
  // Was a segfault: 2^62 floats is 2^64 bytes.
  REQUIRE_THROWS_WITH(zeros({two62}), Contains("zeros: storage size calculation overflowed") &&
                                          Contains("[4611686018427387904] of 4-byte elements"));
  REQUIRE_THROWS_AS(eye(int64_t(1) << 32), ShapeError);  // was a segfault
  REQUIRE_THROWS_WITH(linspace(0, 1, hostile::kMax), Contains("linspace: storage size calculation overflowed"));
  REQUIRE_THROWS_WITH(arange(0.0, 1e30), Contains("arange: invalid size"));
  REQUIRE_THROWS_AS(tensor(std::vector<float>{}, {int64_t(1) << 32, int64_t(1) << 32}), ShapeError);
  // A zero anywhere makes the count 0, however large the other sizes: a valid empty tensor.
  Tensor e = zeros({two62, 4, 0});
  CHECK(e.numel() == 0);
  CHECK(e.shape() == Shape{two62, 4, 0});
}

TEST_CASE("sizes: the checked helpers name the op and the operands", "[hostile][sizes]") {
  CHECK(checked_mul(int64_t(1) << 31, int64_t(1) << 31, "t") == int64_t(1) << 62);
  REQUIRE_THROWS_WITH(checked_mul(int64_t(1) << 32, int64_t(1) << 31, "t"),
                      "t: size arithmetic overflows int64: 4294967296 * 2147483648");
  REQUIRE_THROWS_WITH(checked_add(hostile::kMax, 1, "t"), "t: size arithmetic overflows int64: 9223372036854775807 + 1");
  CHECK(checked_numel({3, 0, hostile::kMax}, "t") == 0);
  REQUIRE_THROWS_WITH(checked_numel({3, -1}, "t"), "t: sizes must be non-negative, got [3, -1]");
  CHECK(checked_extent({2, 3}, {10, 1}, "t") == 13);
  CHECK(checked_extent({2, 0}, {10, 1}, "t") == 0);
  REQUIRE_THROWS_WITH(checked_extent({2, 3}, {-3, 1}, "t"), Contains("strides must be non-negative"));
  REQUIRE_THROWS_WITH(checked_extent({3, 3}, {hostile::kMax / 2 + 1, 1}, "t"), Contains("overflow int64"));
  REQUIRE_THROWS_AS(checked_count(std::nan(""), "t"), ShapeError);
  REQUIRE_THROWS_AS(checked_count(9223372036854775808.0, "t"), ShapeError);
}

TEST_CASE("sizes: the allocators refuse byte counts no storage can have", "[hostile][sizes]") {
  REQUIRE_THROWS_WITH(allocator_for(kCPU).allocate(size_t(-1)), Contains("more than a storage can hold"));
}

TEST_CASE("views: expand refuses negative sizes and counts past int64", "[hostile][views]") {
  // Was a tensor of shape [-5, 3] with numel() == -15.
  REQUIRE_THROWS_WITH(ones({3}).expand({-5, 3}), Contains("expand: a new leading dimension needs a size >= 0"));
  REQUIRE_THROWS_WITH(ones({1, 3}).expand({-5, 3}), Contains("expand: sizes must be non-negative or -1"));
  // Was a view whose sum() returned 0.
  REQUIRE_THROWS_WITH(ones({1, 1}).expand({int64_t(1) << 32, int64_t(1) << 32}),
                      Contains("expand: the number of elements of sizes [4294967296, 4294967296] overflows int64"));
}

TEST_CASE("views: narrow and slice bounds that would overflow", "[hostile][views]") {
  Tensor t = arange(5);
  // Was an empty tensor: start + length wrapped around.
  REQUIRE_THROWS_WITH(t.narrow(0, 2, hostile::kMax),
                      "narrow: start (2) + length (9223372036854775807) exceeds dimension size (5) of dimension 0");
  REQUIRE_THROWS_AS(t.narrow(0, -6, 1), IndexError);
  CHECK(t.narrow(0, 5, 0).numel() == 0);
  CHECK(t.narrow(0, -5, 2).to_vector<int64_t>() == std::vector<int64_t>{0, 1});
  // Was a negative length: end - start + step - 1 overflowed.
  CHECK(t.slice(0, 1, 5, hostile::kMax).to_vector<int64_t>() == std::vector<int64_t>{1});
  CHECK(t.slice(0, 0, hostile::kMax, int64_t(1) << 62).to_vector<int64_t>() == std::vector<int64_t>{0});
}

TEST_CASE("views: from_blob refuses negative strides", "[hostile][views]") {
  // Negative strides broke the in-place overlap check, which assumes none (a wrong in-place product).
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  REQUIRE_THROWS_WITH(from_blob(data.data() + 5, {6}, {-1}, kFloat32),
                      "from_blob: strides must be non-negative, got [-1] for sizes [6]");
  Tensor ok = from_blob(data.data(), {3, 2}, {1, 3}, kFloat32);  // a transposed layout is fine
  CHECK(ok.to_vector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("fills: values an integer or float32 tensor cannot hold are refused", "[hostile][fills]") {
  // Was INT64_MIN (an undefined double -> int64 conversion).
  REQUIRE_THROWS_WITH(full({2}, 1e20, kInt64), "full: value 1e+20 cannot be converted to type int64 without overflow");
  REQUIRE_THROWS_WITH(full({2}, std::nan(""), kInt64), Contains("cannot be converted to type int64"));
  REQUIRE_THROWS_WITH(zeros({2}, kInt64).fill_(-1e19), Contains("fill_: value -1e+19 cannot be converted"));
  REQUIRE_THROWS_WITH(full({2}, 1e39, kFloat32), Contains("cannot be converted to type float32"));
  CHECK(full({1}, -9223372036854775808.0, kInt64).item<int64_t>() == hostile::kMin);  // exactly -2^63 fits
  CHECK(full({1}, 2.9, kInt64).item<int64_t>() == 2);                                 // truncated, as in PyTorch
  CHECK(std::isinf(full({1}, INFINITY, kFloat32).item<float>()));
  // A scalar operand is not a fill: float32 + 1e40 is inf, as in PyTorch.
  CHECK(std::isinf((ones({1}) + 1e40).item<float>()));
}

TEST_CASE("randint: the whole int64 range without overflow", "[hostile]") {
  // high - low overflowed (undefined behaviour) for ranges wider than INT64_MAX.
  Tensor r = randint(hostile::kMin, hostile::kMax, {4096}, kInt64);
  CHECK((r < 0).sum().item<int64_t>() > 1500);
  CHECK((r > 0).sum().item<int64_t>() > 1500);
}

TEST_CASE("lists: an undefined tensor in cat or stack is named by its position", "[hostile]") {
  // Was "Tensor: this tensor is undefined (default-constructed)", naming neither op nor element.
  REQUIRE_THROWS_WITH(cat({ones({2}), Tensor()}),
                      "cat: expected a defined tensor as element 1 of the list, got an undefined (default-constructed) one");
  REQUIRE_THROWS_WITH(stack({Tensor(), ones({2})}), Contains("stack: expected a defined tensor as element 0"));
}

TEST_CASE("RotaryEmbedding: a huge offset costs seq_len rows, not offset rows", "[hostile]") {
  // Was std::bad_alloc: the cache was grown to cover every position up to the offset.
  nn::RotaryEmbedding rope(4);
  const int64_t offset = 1000000000000;
  auto [cos, sin] = rope.cos_sin(3, offset, kFloat64, kCPU);
  REQUIRE(cos.shape() == Shape{3, 4});
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t i = 0; i < 2; ++i) {
      double angle = double(offset + t) * std::pow(10000.0, -2.0 * double(i) / 4.0);
      CHECK(cos.select(0, t).select(0, i).item<double>() == Approx(std::cos(angle)).margin(1e-12));
      CHECK(sin.select(0, t).select(0, i + 2).item<double>() == Approx(std::sin(angle)).margin(1e-12));
    }
  // The cached path gives the same rows as the direct one.
  auto [c_small, s_small] = rope.cos_sin(2, 5, kFloat64, kCPU);
  nn::RotaryEmbedding fresh(4);
  auto [c_direct, s_direct] = fresh.cos_sin(70000, 0, kFloat64, kCPU);  // past the cache: computed alone
  CHECK(testing::allclose(c_small, c_direct.slice(0, 5, 7), 0, 0));
  REQUIRE_THROWS_WITH(rope.cos_sin(2, hostile::kMax, kFloat64, kCPU),
                      Contains("nn::RotaryEmbedding: size arithmetic overflows int64"));
  // A position of INT64_MAX: the table up to it would need INT64_MAX + 1 rows (was signed overflow).
  Tensor x = ones({1, 1, 1, 4}, kFloat64);
  REQUIRE_THROWS_WITH(rope.apply(x, tensor(std::vector<int64_t>{hostile::kMax}, {1})),
                      Contains("nn::RotaryEmbedding: size arithmetic overflows int64: 9223372036854775807 + 1"));
}

TEST_CASE("chunk and split: piece counts and sizes that would overflow", "[hostile]") {
  // (size + chunks - 1) overflowed for chunks near INT64_MAX.
  CHECK(chunk(arange(24), hostile::kMax).size() == 24);
  CHECK(chunk(zeros({0}), 3).size() == 3);  // empty pieces, as PyTorch
  REQUIRE_THROWS_WITH(chunk(zeros({0}), int64_t(1) << 40), Contains("chunk: 1099511627776 empty pieces"));
  REQUIRE_THROWS_WITH(split(arange(4), std::vector<int64_t>{hostile::kMax, hostile::kMax, 2}),
                      Contains("split: size arithmetic overflows int64"));
}
