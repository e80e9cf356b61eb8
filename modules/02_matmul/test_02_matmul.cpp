// Module 02 suite: matmul's forms (1-D, 2-D, batched, broadcast batch dims) against the
// definition, transposed and sliced views reaching BLAS without copies, the int64 triple loop,
// the blocked loop against the definition, and the errors. It is the judge in exercise mode
// (`tools/tt exercise 02`): the cases tagged [exercise] run int64 products, which go through
// gemm_naive, and tt::cpu::gemm_blocked, the two functions a learner writes.
#include <cmath>
#include <limits>
#include <vector>

#include <tinytorch/backend/backend.h>           // the kernel seam itself, which the umbrella header leaves out
#include <tinytorch/backend/cpu/gemm_blocked.h>  // the blocked loop, a CPU function of its own

#include "test_util.h"

using Catch::Matchers::Contains;
using tt::Shape;
using tt::Tensor;

namespace {

// Allocations made by `f`, from the CPU allocator's counter.
template <typename F>
int64_t allocations_during(F f) {
  int64_t before = tt::memory::stats().num_allocs;
  f();
  return tt::memory::stats().num_allocs - before;
}

Shape batch_dims(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// The definition of matmul for operands of 2 or more dims, in float64: batch dims broadcast,
// then c[.., i, j] = sum over k of a[.., i, k] * b[.., k, j]. Written with plain loops so that
// it shares nothing with the code under test but element access.
Tensor reference_matmul(const Tensor& a, const Tensor& b) {
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  REQUIRE(b.size(-2) == K);
  Shape batch = tt::broadcast_shapes(batch_dims(a), batch_dims(b), "reference");
  std::vector<double> av = a.expand(with_matrix(batch, M, K)).to_vector<double>();
  std::vector<double> bv = b.expand(with_matrix(batch, K, N)).to_vector<double>();
  const int64_t nb = tt::numel_of(batch);
  std::vector<double> c(size_t(nb * M * N), 0.0);
  for (int64_t p = 0; p < nb; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j)
          c[size_t((p * M + i) * N + j)] += av[size_t((p * M + i) * K + k)] * bv[size_t((p * K + k) * N + j)];
  return tt::tensor(c, with_matrix(batch, M, N));
}

// Checks a float result against the float64 definition with a tolerance suited to its dtype.
void check_matches_definition(const Tensor& result, const Tensor& a, const Tensor& b) {
  Tensor expected = reference_matmul(a, b);
  const double tol = result.dtype() == tt::kFloat32 ? 1e-4 : 1e-10;
  CHECK_ALLCLOSE(result.to(tt::kFloat64), expected, tol, tol);
}

}  // namespace

// --- values -------------------------------------------------------------------------------------

TEST_CASE("mm gives known values in float32 and float64", "[module02]") {
  Tensor a = tt::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Tensor b = tt::tensor({{7.0, 8.0}, {9.0, 10.0}, {11.0, 12.0}});
  Tensor c = tt::mm(a, b);
  CHECK(c.shape() == Shape{2, 2});
  CHECK(c.dtype() == tt::kFloat32);
  CHECK(c.to_vector<float>() == std::vector<float>{58, 64, 139, 154});
  Tensor c64 = a.to(tt::kFloat64).matmul(b.to(tt::kFloat64));
  CHECK(c64.dtype() == tt::kFloat64);
  CHECK(c64.to_vector<double>() == std::vector<double>{58, 64, 139, 154});
  CHECK(tt::eye(3).matmul(b).to_vector<float>() == b.to_vector<float>());
}

TEST_CASE("mm matches the definition over many shapes", "[module02]") {
  tt::manual_seed(7);
  const std::vector<std::vector<int64_t>> shapes = {{1, 1, 1},   {1, 7, 1},     {5, 1, 3},     {3, 4, 5},
                                                    {17, 33, 9}, {64, 31, 128}, {130, 257, 65}};
  for (const auto& s : shapes) {
    INFO("M, K, N = " << s[0] << ", " << s[1] << ", " << s[2]);
    for (tt::ScalarType dt : {tt::kFloat32, tt::kFloat64}) {
      Tensor a = tt::randn({s[0], s[1]}, dt), b = tt::randn({s[1], s[2]}, dt);
      Tensor c = a.matmul(b);
      CHECK(c.shape() == Shape{s[0], s[2]});
      CHECK(c.is_contiguous());
      check_matches_definition(c, a, b);
    }
  }
}

TEST_CASE("matmul's forms follow PyTorch's rules", "[module02]") {
  tt::manual_seed(1);
  Tensor v3 = tt::tensor({1.0, 2.0, 3.0});
  // 1-D . 1-D: the dot product, 0-d
  Tensor d = tt::matmul(v3, tt::tensor({4.0, 5.0, 6.0}));
  CHECK(d.dim() == 0);
  CHECK(d.item<float>() == 32.0f);
  CHECK(tt::dot(v3, v3).item<float>() == 14.0f);
  // 2-D @ 1-D: the vector is a column, removed from the result
  Tensor m = tt::tensor({{1.0, 0.0, 1.0}, {0.0, 2.0, 0.0}});
  CHECK(m.matmul(v3).shape() == Shape{2});
  CHECK(m.matmul(v3).to_vector<float>() == std::vector<float>{4, 4});
  // 1-D @ 2-D: the vector is a row
  CHECK(tt::tensor({1.0, 1.0}).matmul(m).to_vector<float>() == std::vector<float>{1, 2, 1});
  // batched @ 1-D and 1-D @ batched
  Tensor bat = tt::randn({4, 2, 3});
  CHECK(bat.matmul(v3).shape() == Shape{4, 2});
  check_matches_definition(bat.matmul(v3).unsqueeze(-1), bat, v3.unsqueeze(1));
  CHECK(tt::randn({3}).matmul(tt::randn({5, 3, 6})).shape() == Shape{5, 6});
  // bmm and 3-D matmul
  Tensor x = tt::randn({4, 2, 3}), y = tt::randn({4, 3, 5});
  CHECK(tt::bmm(x, y).shape() == Shape{4, 2, 5});
  check_matches_definition(tt::bmm(x, y), x, y);
  check_matches_definition(x.matmul(y), x, y);
  // broadcast batch dims: [2, 1, 3, 4] @ [5, 4, 2] -> [2, 5, 3, 2]
  Tensor p = tt::randn({2, 1, 3, 4}), q = tt::randn({5, 4, 2});
  Tensor pq = p.matmul(q);
  CHECK(pq.shape() == Shape{2, 5, 3, 2});
  check_matches_definition(pq, p, q);
  // a batch against one matrix (a Linear layer's x @ W^T)
  Tensor xs = tt::randn({3, 7, 8}), w = tt::randn({6, 8});
  Tensor lin = xs.matmul(w.t());
  CHECK(lin.shape() == Shape{3, 7, 6});
  check_matches_definition(lin, xs, w.t());
}

TEST_CASE("empty dims give empty or zero results", "[module02]") {
  Tensor z = tt::matmul(tt::ones({2, 0}), tt::ones({0, 3}));
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.to_vector<float>() == std::vector<float>(6, 0.0f));
  CHECK(tt::matmul(tt::ones({0, 3}), tt::ones({3, 4})).shape() == Shape{0, 4});
  CHECK(tt::matmul(tt::ones({0, 2, 3}), tt::ones({3, 4})).shape() == Shape{0, 2, 4});
  CHECK(tt::matmul(tt::ones({0}), tt::ones({0})).item<float>() == 0.0f);
}

TEST_CASE("float32 accumulates less exactly than float64", "[module02]") {
  tt::manual_seed(3);
  Tensor a = tt::rand({8, 4096}), b = tt::rand({4096, 8});
  Tensor c32 = a.matmul(b).to(tt::kFloat64);
  Tensor c64 = a.to(tt::kFloat64).matmul(b.to(tt::kFloat64));
  // each entry is ~1024; float32 keeps ~7 digits, so agreement is to ~1e-5 relative, not exact
  CHECK_ALLCLOSE(c32, c64, 1e-4, 0.0);
  CHECK(((c32 - c64).abs().max().item<double>()) > 0.0);
}

TEST_CASE("matmul leaves its inputs alone", "[module02]") {
  Tensor a = tt::randn({3, 4}), b = tt::randn({4, 5});
  std::vector<float> a0 = a.to_vector<float>(), b0 = b.to_vector<float>();
  uint64_t va = a.version(), vb = b.version();
  Tensor c = a.matmul(b);
  CHECK(a.to_vector<float>() == a0);
  CHECK(b.to_vector<float>() == b0);
  CHECK(a.version() == va);
  CHECK(b.version() == vb);
  CHECK(c.storage().get() != a.storage().get());
}

// --- layouts: what reaches BLAS without a copy ----------------------------------------------------------

TEST_CASE("transposed views are passed as transpose flags, not copied", "[module02]") {
  tt::manual_seed(11);
  Tensor a = tt::randn({40, 24}), b = tt::randn({24, 56});
  Tensor at_src = tt::randn({24, 40}), bt_src = tt::randn({56, 24});
  Tensor at = at_src.t(), bt = bt_src.t();  // [40, 24] and [24, 56], strides [1, 40] and [1, 24]
  CHECK(at.data_ptr<float>() == at_src.data_ptr<float>());  // a view: the same bytes
  Tensor r1, r2, r3;
  CHECK(allocations_during([&] { r1 = at.matmul(b); }) == 1);  // the output, nothing else
  CHECK(allocations_during([&] { r2 = a.matmul(bt); }) == 1);
  CHECK(allocations_during([&] { r3 = at.matmul(bt); }) == 1);
  check_matches_definition(r1, at, b);
  check_matches_definition(r2, a, bt);
  check_matches_definition(r3, at, bt);
  CHECK_ALLCLOSE(r3, at.contiguous().matmul(bt.contiguous()), 1e-5, 1e-5);
  // float64 takes the same path through dgemm
  Tensor d = at_src.to(tt::kFloat64).t();
  Tensor r4;
  CHECK(allocations_during([&] { r4 = d.matmul(d.t()); }) == 1);
  check_matches_definition(r4, d, d.t());
}

TEST_CASE("row and column blocks pass through their leading dimension", "[module02]") {
  tt::manual_seed(12);
  Tensor big = tt::randn({64, 48});
  Tensor cols = big.slice(1, 8, 40);                // [64, 32], strides [48, 1], offset 8
  Tensor rows = big.slice(0, 10, 30);               // [20, 48], offset 480
  Tensor every_other_row = big.slice(0, 0, 64, 2);  // [32, 48], strides [96, 1]
  Tensor w = tt::randn({32, 16}), v = tt::randn({48, 8});
  Tensor r1, r2, r3, r4;
  CHECK(allocations_during([&] { r4 = every_other_row.matmul(v); }) == 1);
  check_matches_definition(r4, every_other_row, v);
  CHECK(allocations_during([&] { r1 = cols.matmul(w); }) == 1);
  CHECK(allocations_during([&] { r2 = rows.matmul(v); }) == 1);
  CHECK(allocations_during([&] { r3 = cols.t().matmul(cols); }) == 1);  // [32, 64] @ [64, 32]
  check_matches_definition(r1, cols, w);
  check_matches_definition(r2, rows, v);
  check_matches_definition(r3, cols.t(), cols);
}

TEST_CASE("layouts BLAS cannot read are made contiguous first, and stay correct", "[module02]") {
  tt::manual_seed(13);
  Tensor base = tt::randn({16, 20});
  Tensor every_other = base.slice(1, 0, 20, 2);  // [16, 10], strides [20, 2]
  Tensor w = tt::randn({10, 4});
  Tensor r;
  CHECK(allocations_during([&] { r = every_other.matmul(w); }) == 2);  // the copy and the output
  check_matches_definition(r, every_other, w);
  // an expanded column: strides [1, 0]
  Tensor col = tt::randn({16, 1}).expand({16, 10});
  Tensor r2;
  CHECK(allocations_during([&] { r2 = col.matmul(w); }) == 2);
  check_matches_definition(r2, col, w);
  // an expanded row: strides [0, 1], every row the same memory
  Tensor row = tt::randn({1, 10}).expand({16, 10});
  Tensor r3;
  CHECK(allocations_during([&] { r3 = row.matmul(w); }) == 2);
  check_matches_definition(r3, row, w);
}

TEST_CASE("attention's Q K^T and P V read head views in place", "[module02]") {
  tt::manual_seed(14);
  const int64_t B = 2, T = 5, H = 3, D = 4, C = H * D;
  // q, k, v: [B, T, C] split into heads: view [B, T, H, D], permute to [B, H, T, D]
  auto heads = [&](const Tensor& x) { return x.view({B, T, H, D}).permute({0, 2, 1, 3}); };
  Tensor q = heads(tt::randn({B, T, C})), k = heads(tt::randn({B, T, C})), v = heads(tt::randn({B, T, C}));
  CHECK(q.strides() == Shape{T * C, D, C, 1});
  Tensor kT = k.transpose(-2, -1);  // [B, H, D, T], strides [T*C, D, 1, C]
  Tensor scores, out;
  CHECK(allocations_during([&] { scores = q.matmul(kT); }) == 1);
  CHECK(scores.shape() == Shape{B, H, T, T});
  check_matches_definition(scores, q, kT);
  CHECK(allocations_during([&] { out = scores.matmul(v); }) == 1);
  CHECK(out.shape() == Shape{B, H, T, D});
  check_matches_definition(out, scores, v);
  // entry (b, h) is the 2-D product of that head's matrices
  Tensor s11 = q[1][2].matmul(k[1][2].t());
  CHECK_ALLCLOSE(scores[1][2], s11, 1e-5, 1e-5);
}

TEST_CASE("broadcast batch dims are read with stride 0, not repeated", "[module02]") {
  tt::manual_seed(15);
  Tensor x = tt::randn({6, 5, 8}), w = tt::randn({8, 3});
  Tensor y;
  CHECK(allocations_during([&] { y = x.matmul(w); }) == 1);
  check_matches_definition(y, x, w);
  Tensor one = tt::randn({1, 5, 8});
  Tensor ws = tt::randn({4, 8, 3});
  CHECK(allocations_during([&] { y = one.matmul(ws); }) == 1);
  CHECK(y.shape() == Shape{4, 5, 3});
  check_matches_definition(y, one, ws);
  Tensor e = tt::randn({5, 8}).expand({4, 5, 8});  // an explicitly expanded operand
  CHECK(allocations_during([&] { y = tt::bmm(e, ws); }) == 1);
  check_matches_definition(y, e, ws);
}

// --- int64: the triple loop (the exercise) -------------------------------------------------------------

TEST_CASE("int64 matmul gives exact known values", "[module02][exercise]") {
  Tensor a = tt::tensor({{1, 2}, {3, 4}});
  Tensor b = tt::tensor({{5, 6}, {7, 8}});
  Tensor c = a.matmul(b);
  CHECK(c.dtype() == tt::kInt64);
  CHECK(c.to_vector<int64_t>() == std::vector<int64_t>{19, 22, 43, 50});
  CHECK(tt::tensor({{1, 2, 3}}).matmul(tt::tensor({1, 10, 100}).unsqueeze(1)).item<int64_t>() == 321);
  CHECK(tt::matmul(tt::tensor({1, 2, 3}), tt::tensor({4, 5, 6})).item<int64_t>() == 32);
  // Integer products and sums are exact where float64 is not: 100000001^2 + 2^2 is an odd
  // number above 2^53, which no double can hold, so accumulating in floating point fails here.
  Tensor big = tt::tensor(std::vector<int64_t>{100000001, 2}, {1, 2});
  CHECK(big.matmul(big.t()).item<int64_t>() == 10000000200000005LL);
}

TEST_CASE("int64 matmul matches the definition over shapes", "[module02][exercise]") {
  tt::manual_seed(21);
  const std::vector<std::vector<int64_t>> shapes = {{1, 1, 1}, {3, 1, 4}, {1, 5, 1}, {4, 6, 3}, {9, 13, 7}};
  for (const auto& s : shapes) {
    INFO("M, K, N = " << s[0] << ", " << s[1] << ", " << s[2]);
    Tensor a = tt::randint(-9, 10, {s[0], s[1]}), b = tt::randint(-9, 10, {s[1], s[2]});
    Tensor c = a.matmul(b);
    CHECK(c.shape() == Shape{s[0], s[2]});
    CHECK(c.to_vector<double>() == reference_matmul(a, b).to_vector<double>());
  }
  Tensor z = tt::matmul(tt::zeros({2, 0}, tt::kInt64), tt::zeros({0, 3}, tt::kInt64));
  CHECK(z.to_vector<int64_t>() == std::vector<int64_t>(6, 0));
}

TEST_CASE("int64 matmul reads any strides in place", "[module02][exercise]") {
  tt::manual_seed(22);
  Tensor a_src = tt::randint(-9, 10, {6, 4});
  Tensor at = a_src.t();  // [4, 6], strides [1, 4]
  Tensor b_wide = tt::randint(-9, 10, {6, 10});
  Tensor b_step = b_wide.slice(1, 1, 10, 3);  // [6, 3], strides [10, 3], offset 1
  Tensor r;
  // Integer operands are never copied: the loop must honour every stride itself.
  CHECK(allocations_during([&] { r = at.matmul(b_step); }) == 1);
  CHECK(r.to_vector<double>() == reference_matmul(at, b_step).to_vector<double>());
  Tensor rt = b_step.t().matmul(at.t());  // [3, 6] @ [6, 4]
  CHECK(rt.to_vector<double>() == reference_matmul(b_step.t(), at.t()).to_vector<double>());
  Tensor col = tt::randint(-9, 10, {4, 1}).expand({4, 6});  // strides [1, 0]
  Tensor rc = col.matmul(b_step);
  CHECK(rc.to_vector<double>() == reference_matmul(col, b_step).to_vector<double>());
}

TEST_CASE("int64 batched and broadcast matmul", "[module02][exercise]") {
  tt::manual_seed(23);
  Tensor p = tt::randint(-5, 6, {2, 1, 3, 4}), q = tt::randint(-5, 6, {5, 4, 2});
  Tensor pq = p.matmul(q);
  CHECK(pq.shape() == Shape{2, 5, 3, 2});
  CHECK(pq.to_vector<double>() == reference_matmul(p, q).to_vector<double>());
  Tensor heads = tt::randint(-5, 6, {2, 4, 3, 2}).permute({0, 2, 1, 3});  // [2, 3, 4, 2]
  Tensor hh = heads.matmul(heads.transpose(-2, -1));
  CHECK(hh.to_vector<double>() == reference_matmul(heads, heads.transpose(-2, -1)).to_vector<double>());
}

TEST_CASE("Backend::gemm computes out = a @ b + beta * out", "[module02][exercise]") {
  // The op always passes beta = 0; later modules accumulate gradients with beta = 1.
  tt::Backend& cpu = tt::backend_for(tt::kCPU);
  Tensor a = tt::tensor({{1, 2}, {3, 4}}), b = tt::tensor({{5, 6}, {7, 8}});
  Tensor out = tt::full({2, 2}, 100, tt::kInt64);
  cpu.gemm(out, a, b, 1.0);
  CHECK(out.to_vector<int64_t>() == std::vector<int64_t>{119, 122, 143, 150});
  cpu.gemm(out, a, b, 0.0);  // beta = 0: the old contents are not read at all
  CHECK(out.to_vector<int64_t>() == std::vector<int64_t>{19, 22, 43, 50});
  cpu.gemm(out, a, b, 2.0);
  CHECK(out.to_vector<int64_t>() == std::vector<int64_t>{57, 66, 129, 150});
  // float: beta = 0 must not read (NaN) garbage
  Tensor fo = tt::full({2, 2}, std::numeric_limits<double>::quiet_NaN());
  cpu.gemm(fo, a.to(tt::kFloat32), b.to(tt::kFloat32), 0.0);
  CHECK(fo.to_vector<float>() == std::vector<float>{19, 22, 43, 50});
}

// --- the blocked loop (the exercise's second region) ----------------------------------------------------

namespace {

// c = a @ b through tt::cpu::gemm_blocked on contiguous copies of a [M, K] and b [K, N], c prefilled
// with `junk` (the loop must overwrite c, not add to it).
template <typename T>
Tensor blocked_product(const Tensor& a, const Tensor& b, int64_t block, double junk) {
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  Tensor c = tt::full({M, N}, junk, a.dtype());
  tt::cpu::gemm_blocked(ac.data_ptr<T>(), bc.data_ptr<T>(), c.data_ptr<T>(), M, N, K, block);
  return c;
}

}  // namespace

TEST_CASE("gemm_blocked gives the naive product for sizes that are not multiples of the block",
          "[module02][exercise]") {
  tt::manual_seed(31);
  // {M, K, N, block}: partial tiles at every edge, a block larger than every dim (the plain i-k-j
  // loop), blocks of 1, and rows split across threads (M * K * N well above the threading grain).
  const std::vector<std::vector<int64_t>> cases = {{1, 1, 1, 64},  {3, 5, 7, 2},     {17, 33, 9, 8},
                                                   {67, 45, 130, 16}, {13, 29, 31, 1}, {5, 70, 3, 64},
                                                   {130, 200, 97, 64}, {257, 129, 65, 32}};
  for (const auto& cs : cases) {
    const int64_t M = cs[0], K = cs[1], N = cs[2], block = cs[3];
    INFO("M, K, N = " << M << ", " << K << ", " << N << ", block " << block);
    // int64: exact, so every partial tile must be right to the last unit.
    Tensor ai = tt::randint(-9, 10, {M, K}), bi = tt::randint(-9, 10, {K, N});
    CHECK(blocked_product<int64_t>(ai, bi, block, 12345).to_vector<double>() ==
          reference_matmul(ai, bi).to_vector<double>());
    // float32 and float64, against the float64 definition; c starts as NaN, which must not survive.
    Tensor af = tt::randn({M, K}), bf = tt::randn({K, N});
    check_matches_definition(blocked_product<float>(af, bf, block, std::nan("")), af, bf);
    Tensor ad = af.to(tt::kFloat64), bd = bf.to(tt::kFloat64);
    check_matches_definition(blocked_product<double>(ad, bd, block, std::nan("")), ad, bd);
  }
  // Empty inner dimension: c is all zeros (not the junk it held).
  Tensor z = blocked_product<float>(tt::ones({3, 0}), tt::ones({0, 4}), 8, 7.0);
  CHECK(z.to_vector<float>() == std::vector<float>(12, 0.0f));
}

TEST_CASE("gemm_blocked gives the same float32 result on 1 thread as on several", "[module02][exercise]") {
  tt::manual_seed(32);
  Tensor a = tt::randn({150, 70}), b = tt::randn({70, 120});
  const int threads = tt::get_num_threads();
  tt::set_num_threads(1);
  Tensor one = blocked_product<float>(a, b, 32, 0.0);
  tt::set_num_threads(std::max(2, threads));
  Tensor many = blocked_product<float>(a, b, 32, 0.0);
  tt::set_num_threads(threads);
  // Each c[i, j] is summed in the same order whichever thread owns row i: bit for bit equal.
  CHECK(one.to_vector<float>() == many.to_vector<float>());
  check_matches_definition(one, a, b);
}

TEST_CASE("gemm_blocked refuses a block below 1 and negative sizes", "[module02]") {
  float x = 0;
  REQUIRE_THROWS_WITH(tt::cpu::gemm_blocked(&x, &x, &x, 1, 1, 1, 0), "gemm_blocked: block must be >= 1, got 0");
  REQUIRE_THROWS_WITH(tt::cpu::gemm_blocked(&x, &x, &x, -1, 1, 1, 8),
                      "gemm_blocked: sizes must be >= 0, got M = -1, N = 1, K = 1");
}

// --- errors ---------------------------------------------------------------------------------------------

TEST_CASE("matmul errors name the op, the rule and the shapes", "[module02]") {
  REQUIRE_THROWS_AS(tt::matmul(tt::ones({2, 3}), tt::ones({4, 5})), tt::ShapeError);
  REQUIRE_THROWS_WITH(tt::matmul(tt::ones({2, 3}), tt::ones({4, 5})),
                      "matmul: inner dimensions must match, got [2, 3] and [4, 5]");
  REQUIRE_THROWS_WITH(tt::matmul(tt::ones({3}), tt::ones({4, 5})),
                      "matmul: inner dimensions must match, got [3] and [4, 5]");
  REQUIRE_THROWS_WITH(tt::matmul(tt::ones({3}), tt::ones({4})),
                      "dot: inconsistent tensor size, got [3] and [4]");
  REQUIRE_THROWS_WITH(tt::matmul(tt::scalar_tensor(1.0), tt::ones({3})),
                      "matmul: both arguments need at least 1 dimension, got [] and [3]");
  REQUIRE_THROWS_WITH(tt::matmul(tt::ones({2, 3, 4}), tt::ones({3, 4, 5})),
                      Contains("matmul: shapes cannot be broadcast together"));
  REQUIRE_THROWS_WITH(tt::mm(tt::ones({2, 2, 3}), tt::ones({3, 4})),
                      "mm: expected 2-d matrices, got [2, 2, 3] and [3, 4]");
  REQUIRE_THROWS_WITH(tt::bmm(tt::ones({2, 3}), tt::ones({3, 4})), Contains("bmm: expected 3-d tensors"));
  REQUIRE_THROWS_WITH(tt::bmm(tt::ones({2, 2, 3}), tt::ones({3, 3, 4})),
                      "bmm: batch sizes must match, got [2, 2, 3] and [3, 3, 4]");
  REQUIRE_THROWS_AS(tt::matmul(tt::ones({2, 2}), tt::ones({2, 2}, tt::kFloat64)), tt::DtypeError);
  REQUIRE_THROWS_WITH(tt::matmul(tt::ones({2, 2}), tt::ones({2, 2}, tt::kFloat64)),
                      "matmul: expected both operands to have the same dtype, got float32 and float64");
  REQUIRE_THROWS_WITH(tt::matmul(tt::ones({2, 2}, tt::kBool), tt::ones({2, 2}, tt::kBool)),
                      "matmul: not supported for bool tensors");
  // a rejected product allocates nothing
  CHECK(allocations_during([] {
          try {
            tt::matmul(tt::empty({0, 3}), tt::empty({4, 0}));
          } catch (const tt::Error&) {
          }
        }) == 0);
}
