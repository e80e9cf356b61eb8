// Module 01 suite: storage, dtype, shape and strides, views, broadcasting, elementwise ops,
// reductions, printing and memory statistics. It tests only what module 01 introduces, and it
// is the judge in exercise mode (`tools/tt exercise 01`): the cases tagged [exercise] lean on the
// three functions a learner writes (compute_view_strides, binary_loop, sum_row).
#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"

using Catch::Matchers::Contains;
using tt::Shape;
using tt::Tensor;

namespace {

bool same_storage(const Tensor& a, const Tensor& b) { return a.storage().get() == b.storage().get(); }

// Allocations made by `f`, from the CPU allocator's counter.
template <typename F>
int64_t allocations_during(F f) {
  int64_t before = tt::memory::stats().num_allocs;
  f();
  return tt::memory::stats().num_allocs - before;
}

// 0, 1, 2, ... as float32, viewed as `shape`.
Tensor iota(const Shape& shape) { return tt::arange(tt::numel_of(shape), tt::kFloat32).view(shape); }

}  // namespace

// --- creating tensors and dtypes -----------------------------------------------------------------

TEST_CASE("factories give the documented values and dtypes", "[module01]") {
  CHECK(tt::tensor({1.5, 2.5}).dtype() == tt::kFloat32);
  CHECK(tt::tensor({1, 2}).dtype() == tt::kInt64);
  CHECK(tt::tensor({true, false}).dtype() == tt::kBool);
  CHECK(tt::arange(5).dtype() == tt::kInt64);
  CHECK(tt::arange(5).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(tt::arange(1.0, 2.0, 0.25).to_vector<float>() == std::vector<float>{1.0f, 1.25f, 1.5f, 1.75f});
  CHECK(tt::zeros({2, 3}).to_vector<float>() == std::vector<float>(6, 0.0f));
  CHECK(tt::full({2}, 7.5, tt::kFloat64).to_vector<double>() == std::vector<double>{7.5, 7.5});
  CHECK(tt::eye(2).to_vector<float>() == std::vector<float>{1, 0, 0, 1});
  CHECK(tt::linspace(0, 1, 5).to_vector<float>() == std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1});
  CHECK(tt::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}).shape() == Shape{2, 3});
  CHECK(tt::scalar_tensor(3.0).dim() == 0);
  CHECK(tt::scalar_tensor(3.0).numel() == 1);
  CHECK(tt::zeros({3, 0}).numel() == 0);
}

TEST_CASE("element sizes and dtype conversion", "[module01]") {
  CHECK(tt::zeros({1}, tt::kFloat32).element_size() == 4);
  CHECK(tt::zeros({1}, tt::kFloat64).element_size() == 8);
  CHECK(tt::zeros({1}, tt::kInt64).element_size() == 8);
  CHECK(tt::zeros({1}, tt::kBool).element_size() == 1);
  // float -> int truncates toward zero, as a C++ cast does.
  CHECK(tt::tensor({1.9, -1.9}).to(tt::kInt64).to_vector<int64_t>() == std::vector<int64_t>{1, -1});
  CHECK(tt::tensor({0.0, 2.0}).to(tt::kBool).to_vector<bool>() == std::vector<bool>{false, true});
  // to() to the same dtype returns the same tensor; copy = true forces a new one.
  Tensor x = tt::ones({3});
  CHECK(x.to(tt::kFloat32).is_same(x));
  CHECK_FALSE(same_storage(x.to(tt::kFloat32, /*copy=*/true), x));
}

TEST_CASE("the same seed gives the same random numbers", "[module01]") {
  tt::manual_seed(42);
  std::vector<float> a = tt::randn({100}).to_vector<float>();
  tt::manual_seed(42);
  std::vector<float> b = tt::randn({100}).to_vector<float>();
  CHECK(a == b);
  tt::manual_seed(43);
  CHECK(tt::randn({100}).to_vector<float>() != a);
}

// --- storage, offset, shape, strides --------------------------------------------------------------

TEST_CASE("a fresh tensor is contiguous with row-major strides", "[module01]") {
  Tensor x = tt::zeros({2, 3, 4});
  CHECK(x.strides() == Shape{12, 4, 1});
  CHECK(x.storage_offset() == 0);
  CHECK(x.is_contiguous());
  CHECK(x.storage()->nbytes == 2 * 3 * 4 * sizeof(float));
  CHECK(tt::contiguous_strides({5, 1, 7}) == Shape{7, 7, 1});
}

TEST_CASE("element [i, j] lives at offset + i * stride0 + j * stride1", "[module01]") {
  Tensor x = iota({3, 4});
  Tensor v = x.slice(1, 1, 4, 2);  // columns 1 and 3
  const float* base = static_cast<const float*>(x.storage()->data);
  for (int64_t i = 0; i < v.size(0); ++i)
    for (int64_t j = 0; j < v.size(1); ++j)
      CHECK(v[i][j].item<float>() == base[v.storage_offset() + i * v.stride(0) + j * v.stride(1)]);
  CHECK(v.data_ptr<float>() == base + 1);
}

// --- views -----------------------------------------------------------------------------------------

TEST_CASE("transpose swaps strides and shares storage", "[module01]") {
  Tensor x = iota({2, 3});
  Tensor t = x.t();
  CHECK(t.shape() == Shape{3, 2});
  CHECK(t.strides() == Shape{1, 3});
  CHECK(t.storage_offset() == 0);
  CHECK_FALSE(t.is_contiguous());
  CHECK(same_storage(t, x));
  CHECK(t.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  Tensor y = iota({2, 3, 4}).transpose(0, 2);
  CHECK(y.shape() == Shape{4, 3, 2});
  CHECK(y.strides() == Shape{1, 4, 12});
}

TEST_CASE("slice moves the offset and scales the stride", "[module01]") {
  Tensor x = iota({4, 6});
  Tensor s = x.slice(1, 1, 6, 2);  // columns 1, 3, 5
  CHECK(s.shape() == Shape{4, 3});
  CHECK(s.strides() == Shape{6, 2});
  CHECK(s.storage_offset() == 1);
  CHECK(s[2].to_vector<float>() == std::vector<float>{13, 15, 17});
  Tensor r = x.slice(0, -2, tt::kEnd);  // Python's x[-2:]
  CHECK(r.shape() == Shape{2, 6});
  CHECK(r.storage_offset() == 12);
  CHECK(r.is_contiguous());
  CHECK(x.slice(0, 3, 100).size(0) == 1);  // out-of-range ends clamp
  CHECK(x.slice(0, 2, 1).size(0) == 0);
  CHECK(x.narrow(1, 2, 3).to_vector<float>()[0] == 2.0f);
}

TEST_CASE("select drops a dim, unsqueeze, squeeze and permute rearrange metadata", "[module01]") {
  Tensor x = iota({2, 3, 4});
  Tensor s = x.select(1, 2);
  CHECK(s.shape() == Shape{2, 4});
  CHECK(s.strides() == Shape{12, 1});
  CHECK(s.storage_offset() == 8);
  CHECK(x.select(0, -1).storage_offset() == 12);
  Tensor u = x.unsqueeze(1);
  CHECK(u.shape() == Shape{2, 1, 3, 4});
  CHECK(u.squeeze().shape() == Shape{2, 3, 4});
  CHECK(u.squeeze(1).strides() == x.strides());
  Tensor p = x.permute({2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.strides() == Shape{1, 12, 4});
  CHECK(same_storage(p, x));
  CHECK(p[3][1][2].item<float>() == x[1][2][3].item<float>());
}

TEST_CASE("expand gives stride 0 and allocates nothing", "[module01]") {
  Tensor row = tt::tensor({1.0, 2.0, 3.0});
  Tensor e;
  CHECK(allocations_during([&] { e = row.expand({4, 3}); }) == 0);
  CHECK(e.shape() == Shape{4, 3});
  CHECK(e.strides() == Shape{0, 1});
  CHECK(e[3].to_vector<float>() == std::vector<float>{1, 2, 3});
  Tensor col = tt::tensor({1.0, 2.0}).unsqueeze(1).expand({2, 5});
  CHECK(col.strides() == Shape{1, 0});
  CHECK(row.expand({2, -1}).shape() == Shape{2, 3});
  REQUIRE_THROWS_AS(row.expand({4, 2}), tt::ShapeError);
  REQUIRE_THROWS_WITH(row.expand({4, 2}), Contains("expand: the expanded size of the tensor (2) must "
                                                   "match the existing size (3)"));
}

TEST_CASE("writes through a view reach the base and bump the version", "[module01]") {
  Tensor x = tt::zeros({2, 3});
  uint64_t v0 = x.version();
  x.select(1, 1).fill_(5);
  CHECK(x.to_vector<float>() == std::vector<float>{0, 5, 0, 0, 5, 0});
  CHECK(x.version() == v0 + 1);
  Tensor alias = x;  // a handle copy: the very same tensor
  alias.add_(1.0);
  CHECK(x.to_vector<float>() == std::vector<float>{1, 6, 1, 1, 6, 1});
  CHECK(x.version() == v0 + 2);
  Tensor deep = x.clone();
  deep.zero_();
  CHECK(x.sum().item<float>() == 16.0f);
}

// --- view vs reshape -------------------------------------------------------------------------------

TEST_CASE("view splits and merges dims of a contiguous tensor without copying", "[module01][exercise]") {
  Tensor x = iota({2, 3, 4});
  Tensor v = x.view({6, 4});
  CHECK(v.strides() == Shape{4, 1});
  CHECK(same_storage(v, x));
  CHECK(x.view({-1}).shape() == Shape{24});
  CHECK(x.view({4, -1}).shape() == Shape{4, 6});
  CHECK(x.view({2, 3, 2, 2}).strides() == Shape{12, 4, 2, 1});
  CHECK(x.view({1, 24, 1}).shape() == Shape{1, 24, 1});
  CHECK(x.view({24}).to_vector<float>() == x.to_vector<float>());
  CHECK(tt::scalar_tensor(2.0).view({1, 1}).shape() == Shape{1, 1});
  CHECK(tt::zeros({0, 3}).view({3, 0}).shape() == Shape{3, 0});
  REQUIRE_THROWS_WITH(x.view({5, 5}), Contains("view: shape [5, 5] is invalid for input of size 24"));
  REQUIRE_THROWS_WITH(x.view({-1, -1}), Contains("only one dimension can be inferred"));
}

TEST_CASE("view works on non-contiguous tensors where the strides allow it", "[module01][exercise]") {
  Tensor x = iota({4, 6});
  // Columns 0..2 of every row: strides [6, 1]. Splitting dim 0 or dim 1 is fine ...
  Tensor s = x.slice(1, 0, 3);
  Tensor a = s.view({2, 2, 3});
  CHECK(a.strides() == Shape{12, 6, 1});
  CHECK(same_storage(a, x));
  CHECK(a[1][0].to_vector<float>() == std::vector<float>{12, 13, 14});
  Tensor b = x.t().view({3, 2, 4});  // split the outer dim of a transposed view
  CHECK(b.strides() == Shape{2, 1, 6});
  CHECK(b[2][1][3].item<float>() == x[3][5].item<float>());
  // ... merging rows whose ends are not adjacent in memory is not.
  REQUIRE_THROWS_AS(s.view({12}), tt::ShapeError);
  REQUIRE_THROWS_WITH(x.t().view({24}),
                      Contains("view: size is not compatible with the input tensor's size and stride"));
  // Size-1 dims carry no stride constraint.
  Tensor c = x.slice(0, 1, 2).t();  // shape [6, 1], strides [1, 6]
  CHECK(c.view({6}).to_vector<float>() == std::vector<float>{6, 7, 8, 9, 10, 11});
  // An expanded dim stays stride 0 through a split.
  Tensor e = tt::tensor({1.0, 2.0}).expand({4, 2}).view({2, 2, 2});
  CHECK(e.strides() == Shape{0, 0, 1});
}

TEST_CASE("reshape returns a view when it can and a copy when it must", "[module01][exercise]") {
  Tensor x = iota({3, 4});
  Tensor r1 = x.reshape({4, 3});
  CHECK(same_storage(r1, x));
  Tensor r2;
  CHECK(allocations_during([&] { r2 = x.t().reshape({12}); }) == 1);
  CHECK_FALSE(same_storage(r2, x));
  CHECK(r2.to_vector<float>() == std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  CHECK(x.t().flatten().to_vector<float>() == r2.to_vector<float>());
}

TEST_CASE("contiguous() copies exactly when the tensor is not contiguous", "[module01]") {
  Tensor x = iota({3, 4});
  CHECK(x.contiguous().is_same(x));
  CHECK(allocations_during([&] { (void)x.contiguous(); }) == 0);
  Tensor c;
  CHECK(allocations_during([&] { c = x.t().contiguous(); }) == 1);
  CHECK(c.is_contiguous());
  CHECK(c.strides() == Shape{3, 1});
  CHECK(c.to_vector<float>() == x.t().to_vector<float>());
  // Size-1 dims do not break contiguity, whatever their stride.
  CHECK(x.slice(0, 1, 2).is_contiguous());
  CHECK(x.unsqueeze(0).is_contiguous());
}

// --- broadcasting and elementwise ops --------------------------------------------------------------

TEST_CASE("broadcasting lines shapes up from the right", "[module01][exercise]") {
  Tensor col = tt::tensor({0.0, 10.0, 20.0}).unsqueeze(1);  // [3, 1]
  Tensor row = tt::tensor({1.0, 2.0, 3.0, 4.0});            // [4]
  Tensor s = col + row;
  CHECK(s.shape() == Shape{3, 4});
  CHECK(s.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24});
  CHECK((row - col).to_vector<float>()[4] == -9.0f);
  Tensor batch = iota({2, 3, 4});
  Tensor b = batch * row;  // [2, 3, 4] * [4]
  CHECK(b[1][2].to_vector<float>() == std::vector<float>{20, 42, 66, 92});
  CHECK((tt::ones({2, 1, 4}) + tt::ones({3, 1})).shape() == Shape{2, 3, 4});
  CHECK((tt::ones({5, 0}) + tt::ones({1})).shape() == Shape{5, 0});
  Tensor zero_d = tt::scalar_tensor(2.0);
  CHECK((batch * zero_d).to_vector<float>()[23] == 46.0f);
  REQUIRE_THROWS_AS(tt::ones({3}) + tt::ones({4}), tt::ShapeError);
  REQUIRE_THROWS_WITH(tt::ones({2, 3}) * tt::ones({2, 2}),
                      "mul: shapes cannot be broadcast together, sizes must match or be 1 at each "
                      "dimension from the right, got [2, 3] and [2, 2]");
}

TEST_CASE("elementwise ops read strided views in place", "[module01][exercise]") {
  Tensor x = iota({3, 4});
  Tensor xt = x.t();                  // strides [1, 4]
  Tensor cols = x.slice(1, 0, 4, 2);  // strides [4, 2]
  CHECK((xt + xt.contiguous()).to_vector<float>() == (xt * 2.0).to_vector<float>());
  CHECK((xt - x.t().contiguous()).abs().max().item<float>() == 0.0f);
  CHECK((cols * cols).to_vector<float>() == std::vector<float>{0, 4, 16, 36, 64, 100});
  // a transposed view plus an expanded one, into [4, 3]
  Tensor e = tt::tensor({100.0, 200.0, 300.0}).expand({4, 3});
  CHECK((xt + e)[1].to_vector<float>() == std::vector<float>{101, 205, 309});
  CHECK((e + xt)[1].to_vector<float>() == std::vector<float>{101, 205, 309});
  // large enough to run on several threads, non-contiguous on both sides
  Tensor big = iota({300, 200});
  Tensor sum = big.t() + big.t();
  CHECK(sum[199][299].item<float>() == 2.0f * big[299][199].item<float>());
  CHECK(sum[7][11].item<float>() == 2.0f * (11 * 200 + 7));
}

TEST_CASE("binary ops give known values", "[module01][exercise]") {
  Tensor a = tt::tensor({1.0, 4.0, 9.0});
  Tensor b = tt::tensor({2.0, 2.0, 3.0});
  CHECK((a + b).to_vector<float>() == std::vector<float>{3, 6, 12});
  CHECK((a - b).to_vector<float>() == std::vector<float>{-1, 2, 6});
  CHECK((a * b).to_vector<float>() == std::vector<float>{2, 8, 27});
  CHECK((a / b).to_vector<float>() == std::vector<float>{0.5f, 2, 3});
  CHECK(a.pow(b).to_vector<float>() == std::vector<float>{1, 16, 729});
  CHECK(a.maximum(b * 2).to_vector<float>() == std::vector<float>{4, 4, 9});
  CHECK(a.minimum(b).to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK((a > b).to_vector<bool>() == std::vector<bool>{false, true, true});
  CHECK((a == 4.0).to_vector<bool>() == std::vector<bool>{false, true, false});
  CHECK((10.0 - a).to_vector<float>() == std::vector<float>{9, 6, 1});
  CHECK((36.0 / a).to_vector<float>() == std::vector<float>{36, 9, 4});
  CHECK(tt::sqrt(a).to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK_ALLCLOSE(tt::exp(tt::tensor({0.0, 1.0})), tt::tensor({1.0, std::exp(1.0)}));
  CHECK(tt::relu(tt::tensor({-1.0, 0.0, 2.0})).to_vector<float>() == std::vector<float>{0, 0, 2});
  CHECK((tt::tensor({5, 7}) - tt::tensor({2, 9})).to_vector<int64_t>() == std::vector<int64_t>{3, -2});
}

TEST_CASE("type promotion follows PyTorch", "[module01]") {
  Tensor i = tt::tensor({7, 8});
  CHECK((i + 1).dtype() == tt::kInt64);
  CHECK((i + 0.5).dtype() == tt::kFloat32);  // the default float, not float64
  CHECK((i + 0.5).to_vector<float>() == std::vector<float>{7.5f, 8.5f});
  // `/` is true division: integers give float32.
  CHECK((i / 2).dtype() == tt::kFloat32);
  CHECK((i / 2).to_vector<float>() == std::vector<float>{3.5f, 4.0f});
  CHECK((i / tt::tensor({2, 2})).to_vector<float>() == std::vector<float>{3.5f, 4.0f});
  CHECK((tt::ones({2}) + tt::ones({2}, tt::kFloat64)).dtype() == tt::kFloat64);
  // a 0-d tensor of the same category does not widen a dimensioned one
  CHECK((tt::ones({2}) + tt::scalar_tensor(1.0, tt::kFloat64)).dtype() == tt::kFloat32);
  CHECK((i + tt::ones({2})).dtype() == tt::kFloat32);
  CHECK((tt::tensor({true, false}) + tt::tensor({true, true})).dtype() == tt::kBool);
  CHECK(tt::exp(i).dtype() == tt::kFloat32);
  CHECK((i < 8).dtype() == tt::kBool);
}

TEST_CASE("in-place ops check what they write into", "[module01]") {
  Tensor acc = tt::zeros({4});
  acc.add_(tt::ones({4}), 2);
  acc += tt::tensor({1.0, 2.0, 3.0, 4.0});
  acc *= 2.0;
  CHECK(acc.to_vector<float>() == std::vector<float>{6, 8, 10, 12});
  Tensor m = tt::zeros({2, 3});
  m += tt::tensor({1.0, 2.0, 3.0});  // broadcast the operand, not the output
  CHECK(m.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
  // An expanded view's elements alias: writing into it is refused, and nothing changes.
  Tensor base = tt::zeros({1, 4});
  Tensor aliased = base.expand({3, 4});
  REQUIRE_THROWS_WITH(
      aliased.add_(1.0),
      Contains("more than one element of the written-to tensor refers to a single memory location"));
  REQUIRE_THROWS_WITH(aliased.fill_(1.0), Contains("fill_: unsupported operation"));
  CHECK(base.sum().item<float>() == 0.0f);
  // The output cannot be broadcast, and a float result does not fit an int tensor.
  REQUIRE_THROWS_AS(tt::zeros({3}).add_(tt::ones({2, 3})), tt::ShapeError);
  Tensor ints = tt::tensor({1, 2});
  REQUIRE_THROWS_AS(ints.add_(0.5), tt::DtypeError);
  REQUIRE_THROWS_WITH(ints.div_(2),
                      "div_: result type float32 can't be cast to the desired output type int64");
  CHECK(ints.to_vector<int64_t>() == std::vector<int64_t>{1, 2});
}

// --- reductions ------------------------------------------------------------------------------------

TEST_CASE("sum and mean over all, one or several dims, with keepdim", "[module01][exercise]") {
  Tensor x = iota({2, 3, 4});  // 0 .. 23
  CHECK(x.sum().item<float>() == 276.0f);
  CHECK(x.sum().dim() == 0);
  CHECK(x.sum({0}).shape() == Shape{3, 4});
  CHECK(x.sum({0}).to_vector<float>()[0] == 12.0f);  // 0 + 12
  CHECK(x.sum({2}).to_vector<float>() == std::vector<float>{6, 22, 38, 54, 70, 86});
  CHECK(x.sum({0, 2}).to_vector<float>() == std::vector<float>{60, 92, 124});
  CHECK(x.sum({-1}, true).shape() == Shape{2, 3, 1});
  CHECK(x.sum({1}, true).shape() == Shape{2, 1, 4});
  CHECK(x.mean().item<float>() == 11.5f);
  CHECK(x.mean({1}).to_vector<float>() == std::vector<float>{4, 5, 6, 7, 16, 17, 18, 19});
  CHECK(tt::zeros({0}).sum().item<float>() == 0.0f);
  REQUIRE_THROWS_WITH(x.sum({0, 0}), Contains("sum: dim 0 appears multiple times"));
  REQUIRE_THROWS_AS(x.sum({3}), tt::IndexError);
}

TEST_CASE("reductions read views in place", "[module01][exercise]") {
  Tensor x = iota({3, 4});
  CHECK(x.t().sum({1}).to_vector<float>() == std::vector<float>{12, 15, 18, 21});
  CHECK(x.slice(1, 1, 4, 2).sum({1}).to_vector<float>() == std::vector<float>{4, 12, 20});
  CHECK(x.t().sum().item<float>() == 66.0f);
  CHECK(tt::tensor({1.0, 2.0, 3.0}).expand({5, 3}).sum().item<float>() == 30.0f);
  // a long row, strided: every other element of 0 .. 9999
  Tensor big = tt::arange(10000, tt::kFloat32);
  CHECK(big.slice(0, 0, 10000, 2).sum().item<double>() == 24995000.0);
  CHECK(big.view({100, 100}).t().sum({1}).to_vector<float>()[99] == 504900.0f);
}

TEST_CASE("float32 sums stay accurate over many terms", "[module01][exercise]") {
  // One float32 accumulator adding 0.1f a million times drifts to ~100958; the exact sum of
  // float(0.1) * 1e6 is 100000.0015.
  std::vector<float> tenths(1000000, 0.1f);
  Tensor t = tt::from_blob(tenths.data(), {int64_t(tenths.size())});
  CHECK(std::fabs(t.sum().item<double>() - 100000.0015) < 0.5);
  CHECK(std::fabs(t.view({1000, 1000}).sum({1}).sum().item<double>() - 100000.0015) < 0.5);
  CHECK(std::fabs(t.mean().item<double>() - 0.1) < 1e-6);
  // 1e7 ones: exactly 1e7.
  CHECK(tt::ones({10000000}).sum().item<double>() == 1e7);
  // odd lengths exercise the tail after the 16-wide lanes
  CHECK(tt::ones({2049}).sum().item<float>() == 2049.0f);
  CHECK(tt::ones({17}).sum().item<float>() == 17.0f);
  CHECK(tt::ones({5}, tt::kFloat64).sum().item<double>() == 5.0);
}

TEST_CASE("max, min, argmax, var and std", "[module01]") {
  Tensor m = tt::tensor({{1.0, 5.0, 3.0}, {4.0, 2.0, 6.0}});
  CHECK(m.max().item<float>() == 6.0f);
  CHECK(m.min().item<float>() == 1.0f);
  CHECK(m.argmax().item<int64_t>() == 5);
  auto [values, indices] = m.max(1);
  CHECK(values.to_vector<float>() == std::vector<float>{5, 6});
  CHECK(indices.to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(indices.dtype() == tt::kInt64);
  CHECK(m.argmin(0).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 0});
  CHECK(tt::tensor({3.0, 7.0, 7.0, 1.0}).argmax().item<int64_t>() == 1);  // first of a tie
  CHECK(std::get<0>(m.max(0, true)).shape() == Shape{1, 3});
  CHECK(m.var({1}).to_vector<float>() == std::vector<float>{4, 4});
  CHECK_ALLCLOSE(m.var({1}, 0), tt::tensor({8.0 / 3, 8.0 / 3}));
  CHECK_ALLCLOSE(m.std(), tt::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).std().view({}));
  CHECK(std::fabs(tt::tensor({2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0}).std({}, 0).item<double>() - 2.0) <
        1e-6);
}

TEST_CASE("reductions of integers and bools, and their errors", "[module01]") {
  CHECK((tt::tensor({1.0, 5.0, 3.0}) > 2.0).sum().item<int64_t>() == 2);
  CHECK(tt::tensor({true, true, false}).sum().dtype() == tt::kInt64);
  CHECK(tt::tensor({3, 4}).sum().dtype() == tt::kInt64);
  CHECK(tt::tensor({3, 4}).sum().item<int64_t>() == 7);
  REQUIRE_THROWS_AS(tt::tensor({3, 4}).mean(), tt::DtypeError);
  REQUIRE_THROWS_WITH(tt::tensor({3, 4}).mean(), Contains("mean: could not infer output dtype"));
  REQUIRE_THROWS_WITH(tt::zeros({0}).max(), Contains("max: expected a non-empty tensor"));
  REQUIRE_THROWS_WITH(
      tt::zeros({2, 3}).max(2),
      Contains("max: dimension out of range (expected to be in range of [-2, 1], but got 2)"));
}

// --- indexing errors ---------------------------------------------------------------------------------

TEST_CASE("bad dims and indices name the op and the range", "[module01]") {
  Tensor x = tt::zeros({2, 3});
  REQUIRE_THROWS_AS(x.select(0, 2), tt::IndexError);
  REQUIRE_THROWS_WITH(x.select(0, 2), "select: index 2 is out of bounds for dimension 0 with size 2");
  REQUIRE_THROWS_WITH(x.transpose(0, 2), Contains("transpose: dimension out of range"));
  REQUIRE_THROWS_WITH(x.permute({0, 0}), Contains("permute: repeated dim 0"));
  REQUIRE_THROWS_WITH(x.size(5), Contains("size: dimension out of range"));
  REQUIRE_THROWS_WITH(x.data_ptr<double>(), "data_ptr: requested float64 but the tensor has dtype float32");
  REQUIRE_THROWS_WITH(x.item<float>(),
                      Contains("item: a tensor with 6 elements cannot be converted to a scalar"));
}

// --- printing ------------------------------------------------------------------------------------------

TEST_CASE("tensors print like PyTorch", "[module01]") {
  CHECK(tt::to_string(tt::tensor({{1.0, 2.0}, {3.0, 4.0}})) == "tensor([[1., 2.],\n        [3., 4.]])");
  CHECK(tt::to_string(tt::tensor({0.5, -1.25, 3.0})) == "tensor([ 0.5000, -1.2500,  3.0000])");
  CHECK(tt::to_string(tt::tensor({1.0, 2.0}, tt::kFloat64)) == "tensor([1., 2.], dtype=float64)");
  CHECK(tt::to_string(tt::tensor({1, -20})) == "tensor([  1, -20])");
  CHECK(tt::to_string(tt::tensor({true, false})) == "tensor([ True, False])");
  CHECK(tt::to_string(tt::scalar_tensor(2.5)) == "tensor(2.5000)");
  CHECK(tt::to_string(tt::tensor({1e-6, 1.0, 1e6})) == "tensor([1.0000e-06, 1.0000e+00, 1.0000e+06])");
  CHECK(tt::to_string(tt::zeros({2, 0})) == "tensor([], size=(2, 0))");
  // views print their own elements, in their own order
  CHECK(tt::to_string(iota({2, 2}).t()) == "tensor([[0., 2.],\n        [1., 3.]])");
  // more than 1000 elements: first and last three of each long dim
  std::string big = tt::to_string(tt::arange(2000).view({40, 50}));
  CHECK(big.find("[   0,    1,    2,  ...,   47,   48,   49],") != std::string::npos);
  CHECK(big.find("...,\n") != std::string::npos);
  CHECK(big.find("1999]])") != std::string::npos);
  CHECK(big.find("1000") == std::string::npos);
}

// --- memory statistics -----------------------------------------------------------------------------------

TEST_CASE("memory stats count bytes, peaks and cache reuse", "[module01]") {
  tt::memory::empty_cache();
  tt::MemoryStats s0 = tt::memory::stats();
  Tensor a = tt::empty({1000, 1000});  // 4,000,000 bytes, a multiple of 64
  tt::MemoryStats s1 = tt::memory::stats();
  CHECK(s1.allocated_bytes - s0.allocated_bytes == 4000000);
  CHECK(s1.num_allocs - s0.num_allocs == 1);
  CHECK(s1.peak_allocated_bytes >= s1.allocated_bytes);
  Tensor tiny = tt::empty({3});  // 12 bytes round up to one 64-byte block
  CHECK(tt::memory::stats().allocated_bytes - s1.allocated_bytes == 64);
  // Views are free.
  CHECK(allocations_during([&] {
          Tensor v = a.t().slice(0, 0, 10).unsqueeze(0).expand({4, 10, 1000});
        }) == 0);
  // Dropping a tensor gives its bytes back; the block stays reserved in the cache ...
  a = Tensor();
  tt::MemoryStats s2 = tt::memory::stats();
  CHECK(s2.allocated_bytes == s1.allocated_bytes - 4000000 + 64);
  CHECK(s2.reserved_bytes >= s1.reserved_bytes);
  CHECK(s2.peak_allocated_bytes >= s1.allocated_bytes);
  // ... and the next tensor of that size reuses it without asking the system.
  Tensor b = tt::zeros({2000, 500});
  tt::MemoryStats s3 = tt::memory::stats();
  CHECK(s3.num_system_allocs == s2.num_system_allocs);
  CHECK(s3.num_allocs == s2.num_allocs + 1);
  // reset_peak_stats restarts the high-water mark from what is live now.
  tt::memory::reset_peak_stats();
  CHECK(tt::memory::stats().peak_allocated_bytes == s3.allocated_bytes);
  { Tensor c = tt::empty({1000, 1000}); }
  CHECK(tt::memory::stats().peak_allocated_bytes == s3.allocated_bytes + 4000000);
  CHECK(tt::memory::stats().allocated_bytes == s3.allocated_bytes);
}

TEST_CASE("from_blob wraps memory without copying", "[module01]") {
  std::vector<double> data = {1, 2, 3, 4, 5, 6};
  Tensor t;
  CHECK(allocations_during([&] { t = tt::from_blob(data.data(), {2, 3}, tt::kFloat64); }) == 0);
  CHECK(t.data_ptr<double>() == data.data());
  data[4] = 50;
  CHECK(t[1][1].item<double>() == 50.0);
  Tensor strided = tt::from_blob(data.data(), {3}, {2}, tt::kFloat64);
  CHECK(strided.to_vector<double>() == std::vector<double>{1, 3, 50});
}
