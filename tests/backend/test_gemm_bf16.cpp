// tt::cpu::gemm_bf16 on both paths (the AVX512_BF16 kernel and the cblas_sgemm fallback) against
// a float64 reference computed from the same bf16 inputs: shapes around every block edge, K = 0,
// beta 0 / 1 / other, bf16 output, transposed and strided operands, and what each path promises
// across thread counts.
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "tinytorch/backend/cpu/cpu_features.h"
#include "tinytorch/backend/cpu/gemm_bf16.h"

using namespace tt;
using cpu::detail::Bf16GemmPath;

namespace {

const uint16_t kNaNBits = 0x7fc0;  // a quiet bf16 NaN: fills every gap an operand must not read

// One strided operand: a buffer where element (r, c) lives at r*s0 + c*s1 and every other slot is NaN.
struct Operand {
  std::vector<BFloat16> buf;
  int64_t rows = 0, cols = 0, s0 = 0, s1 = 0;
  BFloat16 at(int64_t r, int64_t c) const { return buf[size_t(r * s0 + c * s1)]; }
};

// How an operand is laid out: row-major, column-major (a transposed view), or both strides
// non-unit; pad adds unused slots per row (or column).
enum class Layout { kRowMajor, kColMajor, kStrided };

Operand make_operand(int64_t rows, int64_t cols, Layout layout, int64_t pad, std::mt19937& rng) {
  Operand op;
  op.rows = rows;
  op.cols = cols;
  switch (layout) {
    case Layout::kRowMajor: op.s1 = 1; op.s0 = cols + pad; break;
    case Layout::kColMajor: op.s0 = 1; op.s1 = rows + pad; break;
    case Layout::kStrided: op.s1 = 2; op.s0 = 2 * cols + 1 + pad; break;
  }
  const int64_t size = (rows > 0 && cols > 0) ? (rows - 1) * op.s0 + (cols - 1) * op.s1 + 1 : 1;
  op.buf.assign(size_t(size), BFloat16::from_bits(kNaNBits));
  // Values in [-2, 2] with some exact zeros and powers of two; no denormals (vdpbf16ps flushes them).
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) op.buf[size_t(r * op.s0 + c * op.s1)] = BFloat16(u(rng));
  return op;
}

// The float64 reference sum_k a[i,k] b[k,j] + beta * c_old[i,j] and the tolerance for a float32
// sum of K products: 1e-5 * sqrt(K) * (sum |a||b| + |beta c|), plus half a bf16 ulp of the
// result for a bf16 output.
struct Reference {
  std::vector<double> value, tol;
};

template <typename OutT>
Reference reference(const Operand& a, const Operand& b, const std::vector<OutT>& c_old, int64_t ldc, double beta,
                    int64_t M, int64_t N, int64_t K) {
  Reference ref;
  ref.value.resize(size_t(M * N));
  ref.tol.resize(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = double(float(a.at(i, k))) * double(float(b.at(k, j)));
        s += p;
        mag += std::fabs(p);
      }
      if (beta != 0.0) {
        const double old = double(float(c_old[size_t(i * ldc + j)]));
        s += beta * old;
        mag += std::fabs(beta * old);
      }
      double tol = 1e-5 * std::sqrt(double(std::max<int64_t>(K, 1))) * mag + 1e-30;
      if (std::is_same<OutT, BFloat16>::value) tol += std::fabs(s) * std::ldexp(1.0, -8);
      ref.value[size_t(i * N + j)] = s;
      ref.tol[size_t(i * N + j)] = tol;
    }
  return ref;
}

const char* path_name(Bf16GemmPath p) { return p == Bf16GemmPath::kNative ? "native" : "fallback"; }
const char* layout_name(Layout l) {
  return l == Layout::kRowMajor ? "row-major" : l == Layout::kColMajor ? "col-major" : "strided";
}

// Runs one GEMM on one path and checks every element of c against the reference, and that the
// padding of c (columns N..ldc) is untouched. Returns the number of mismatches.
template <typename OutT>
int check_gemm(Bf16GemmPath path, int64_t M, int64_t N, int64_t K, Layout la, Layout lb, double beta,
               bool nan_in_c, std::mt19937& rng, int64_t c_pad = 3) {
  Operand a = make_operand(M, K, la, 2, rng);
  Operand b = make_operand(K, N, lb, 1, rng);
  const int64_t ldc = N + c_pad;
  const float sentinel = 12288.0f;  // exact in bf16 too
  std::vector<OutT> c(size_t(std::max<int64_t>(1, M * ldc)), OutT(sentinel));
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      c[size_t(i * ldc + j)] = nan_in_c ? OutT(std::numeric_limits<float>::quiet_NaN()) : OutT(u(rng));
  const Reference ref = reference(a, b, c, ldc, beta, M, N, K);
  cpu::detail::gemm_bf16_path(path, a.buf.data(), b.buf.data(), c.data(), M, N, K, a.s0, a.s1, b.s0, b.s1, ldc,
                              beta);
  int bad = 0;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      const double got = double(float(c[size_t(i * ldc + j)]));
      const double want = ref.value[size_t(i * N + j)];
      if (!(std::fabs(got - want) <= ref.tol[size_t(i * N + j)])) {
        if (bad++ < 3)
          UNSCOPED_INFO(path_name(path) << " M=" << M << " N=" << N << " K=" << K << " a " << layout_name(la)
                                        << " b " << layout_name(lb) << " beta=" << beta << ": c[" << i << ","
                                        << j << "] = " << got << ", want " << want << " +- "
                                        << ref.tol[size_t(i * N + j)]);
      }
    }
    for (int64_t j = N; j < ldc; ++j)
      if (float(c[size_t(i * ldc + j)]) != sentinel && bad++ < 3)
        UNSCOPED_INFO(path_name(path) << ": wrote c[" << i << "," << j << "] past N=" << N);
  }
  return bad;
}

const Bf16GemmPath kPaths[] = {Bf16GemmPath::kNative, Bf16GemmPath::kFallback};

struct RestoreThreads {
  int saved = get_num_threads();
  ~RestoreThreads() { set_num_threads(saved); }
};

}  // namespace

TEST_CASE("gemm_bf16 reports its native path as the CPU and TT_BF16_GEMM allow", "[backend][gemm_bf16]") {
  const bool cpu_has = cpu::cpu_features().avx512_bf16 && cpu::cpu_features().avx512bw && cpu::cpu_features().avx512vl;
  ::unsetenv("TT_BF16_GEMM");
  CHECK(cpu::gemm_bf16_native() == cpu_has);
  ::setenv("TT_BF16_GEMM", "fallback", 1);
  CHECK_FALSE(cpu::gemm_bf16_native());
  ::unsetenv("TT_BF16_GEMM");
  if (!cpu_has) WARN("this CPU has no AVX512_BF16: the native cases below run the fallback");
}

TEST_CASE("gemm_bf16 square sizes match the float64 reference", "[backend][gemm_bf16]") {
  std::mt19937 rng(1);
  for (Bf16GemmPath path : kPaths)
    for (int64_t n : {16, 64, 128, 256, 300}) {
      CHECK(check_gemm<float>(path, n, n, n, Layout::kRowMajor, Layout::kRowMajor, 0.0, false, rng) == 0);
    }
}

TEST_CASE("gemm_bf16 odd M, N, K around the block edges", "[backend][gemm_bf16]") {
  std::mt19937 rng(2);
  const int64_t sizes[] = {1, 3, 17, 31, 33, 65, 127};
  for (Bf16GemmPath path : kPaths) {
    int bad = 0;
    for (int64_t M : sizes)
      for (int64_t N : sizes)
        for (int64_t K : sizes) bad += check_gemm<float>(path, M, N, K, Layout::kRowMajor, Layout::kRowMajor, 0.0, false, rng);
    CHECK(bad == 0);
  }
}

TEST_CASE("gemm_bf16 K above the k-slices (odd and even), float and bf16 output", "[backend][gemm_bf16]") {
  std::mt19937 rng(3);
  for (Bf16GemmPath path : kPaths)
    for (int64_t K : {255, 256, 257, 511, 513, 600, 1100}) {
      CHECK(check_gemm<float>(path, 29, 70, K, Layout::kRowMajor, Layout::kRowMajor, 0.0, false, rng) == 0);
      CHECK(check_gemm<float>(path, 29, 70, K, Layout::kColMajor, Layout::kRowMajor, 0.5, false, rng) == 0);
      CHECK(check_gemm<BFloat16>(path, 29, 70, K, Layout::kRowMajor, Layout::kColMajor, 0.0, false, rng) == 0);
      CHECK(check_gemm<BFloat16>(path, 29, 70, K, Layout::kRowMajor, Layout::kRowMajor, 1.0, false, rng) == 0);
      CHECK(check_gemm<BFloat16>(path, 29, 70, K, Layout::kRowMajor, Layout::kRowMajor, -0.75, false, rng) == 0);
    }
}

TEST_CASE("gemm_bf16 with K == 0 gives beta * c", "[backend][gemm_bf16]") {
  std::mt19937 rng(4);
  for (Bf16GemmPath path : kPaths) {
    CHECK(check_gemm<float>(path, 5, 7, 0, Layout::kRowMajor, Layout::kRowMajor, 0.0, true, rng) == 0);
    CHECK(check_gemm<float>(path, 5, 7, 0, Layout::kRowMajor, Layout::kRowMajor, 1.0, false, rng) == 0);
    CHECK(check_gemm<float>(path, 5, 7, 0, Layout::kRowMajor, Layout::kRowMajor, 2.5, false, rng) == 0);
    CHECK(check_gemm<BFloat16>(path, 5, 7, 0, Layout::kRowMajor, Layout::kRowMajor, 0.0, true, rng) == 0);
    CHECK(check_gemm<BFloat16>(path, 5, 7, 0, Layout::kRowMajor, Layout::kRowMajor, 0.5, false, rng) == 0);
    // And the exact values: beta == 0 writes zeros over NaN.
    std::vector<float> c(6, std::numeric_limits<float>::quiet_NaN());
    cpu::detail::gemm_bf16_path(path, nullptr, nullptr, c.data(), 2, 3, 0, 0, 1, 3, 1, 3, 0.0);
    for (float v : c) CHECK(v == 0.0f);
  }
}

TEST_CASE("gemm_bf16 beta == 0 never reads c (NaN there stays out)", "[backend][gemm_bf16]") {
  std::mt19937 rng(5);
  for (Bf16GemmPath path : kPaths)
    for (int64_t K : {1, 64, 300, 700}) {
      CHECK(check_gemm<float>(path, 45, 77, K, Layout::kRowMajor, Layout::kRowMajor, 0.0, true, rng) == 0);
      CHECK(check_gemm<BFloat16>(path, 45, 77, K, Layout::kRowMajor, Layout::kRowMajor, 0.0, true, rng) == 0);
    }
}

TEST_CASE("gemm_bf16 beta == 1 and other betas accumulate into c", "[backend][gemm_bf16]") {
  std::mt19937 rng(6);
  for (Bf16GemmPath path : kPaths)
    for (double beta : {1.0, 0.25, -2.0}) {
      CHECK(check_gemm<float>(path, 40, 50, 33, Layout::kRowMajor, Layout::kRowMajor, beta, false, rng) == 0);
      CHECK(check_gemm<BFloat16>(path, 40, 50, 33, Layout::kRowMajor, Layout::kRowMajor, beta, false, rng) == 0);
    }
}

TEST_CASE("gemm_bf16 with a bf16 output rounds once", "[backend][gemm_bf16]") {
  std::mt19937 rng(7);
  for (Bf16GemmPath path : kPaths) {
    for (int64_t n : {1, 17, 64, 127})
      CHECK(check_gemm<BFloat16>(path, n, n + 5, n + 2, Layout::kRowMajor, Layout::kRowMajor, 0.0, false, rng) == 0);
    // An exact tie: a = [1, 1], b = [1 + 2^-7; 2^-8] sums (exactly, in float32) to 1 + 2^-7 + 2^-8,
    // halfway between the bf16 neighbours 1 + 2^-7 (odd) and 1 + 2^-6 (even): one rounding to
    // nearest-even gives 1 + 2^-6 (truncation, or rounding twice, would not).
    const BFloat16 a[2] = {BFloat16(1.0f), BFloat16(1.0f)};
    const BFloat16 b[2] = {BFloat16(1.0f + 0x1p-7f), BFloat16(0x1p-8f)};
    BFloat16 c[1] = {BFloat16::from_bits(kNaNBits)};
    cpu::detail::gemm_bf16_path(path, a, b, c, 1, 1, 2, 2, 1, 1, 1, 1, 0.0);
    CHECK(float(c[0]) == 1.0f + 0x1p-6f);
  }
}

TEST_CASE("gemm_bf16 all four transpose combinations and non-unit strides", "[backend][gemm_bf16]") {
  std::mt19937 rng(8);
  const Layout layouts[] = {Layout::kRowMajor, Layout::kColMajor, Layout::kStrided};
  struct Shape {
    int64_t M, N, K;
  };
  // Transformer-like (small K) and odd shapes.
  const Shape shapes[] = {{37, 70, 64}, {130, 33, 17}, {13, 100, 129}, {64, 64, 300}};
  for (Bf16GemmPath path : kPaths)
    for (Layout la : layouts)
      for (Layout lb : layouts)
        for (const Shape& s : shapes) {
          CHECK(check_gemm<float>(path, s.M, s.N, s.K, la, lb, 0.0, false, rng) == 0);
          CHECK(check_gemm<BFloat16>(path, s.M, s.N, s.K, la, lb, 1.0, false, rng) == 0);
        }
}

// Note [GEMM reproducibility] (backend/cpu/gemm.cpp): the native kernel gives the same bits on any
// thread count; the fallback is the BLAS's, the same bits at one thread count run after run, and
// within the rounding bound on every count (not always the same bits across counts: OpenBLAS's
// Haswell kernel set on an AVX-512 CPU sums edge tiles in another order when C is split in two).
TEST_CASE("gemm_bf16 bits and thread count: what each path promises", "[backend][gemm_bf16]") {
  RestoreThreads restore;
  std::mt19937 rng(9);
  const int64_t M = 250, N = 190, K = 700;  // several blocks and k-slices; above the serial cutoff
  const bool native_here = cpu::cpu_features().avx512_bf16 && cpu::cpu_features().avx512bw &&
                           cpu::cpu_features().avx512vl;
  for (Bf16GemmPath path : kPaths)
    for (Layout la : {Layout::kRowMajor, Layout::kColMajor}) {
      Operand a = make_operand(M, K, la, 0, rng);
      Operand b = make_operand(K, N, Layout::kRowMajor, 0, rng);
      // float32 and bf16 outputs, each on `threads` threads, twice.
      auto run = [&](int threads) {
        set_num_threads(threads);
        std::vector<float> c(size_t(M * N), 0.5f);
        std::vector<BFloat16> h(size_t(M * N), BFloat16(0.5f));
        cpu::detail::gemm_bf16_path(path, a.buf.data(), b.buf.data(), c.data(), M, N, K, a.s0, a.s1, b.s0, b.s1, N, 0.5);
        cpu::detail::gemm_bf16_path(path, a.buf.data(), b.buf.data(), h.data(), M, N, K, a.s0, a.s1, b.s0, b.s1, N, 0.5);
        return std::make_pair(c, h);
      };
      const auto one = run(1), one_again = run(1), two = run(2), two_again = run(2);
      const bool native = path == Bf16GemmPath::kNative && native_here;
      INFO(path_name(path) << (native ? " (native kernel)" : " (BLAS)") << ", a " << layout_name(la));
      // The same thread count: the same bits, on every path.
      CHECK(std::memcmp(one.first.data(), one_again.first.data(), one.first.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(two.first.data(), two_again.first.data(), two.first.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(two.second.data(), two_again.second.data(), two.second.size() * sizeof(BFloat16)) == 0);
      // Across thread counts: the same bits from our own kernel.
      if (native) {
        CHECK(std::memcmp(one.first.data(), two.first.data(), one.first.size() * sizeof(float)) == 0);
        CHECK(std::memcmp(one.second.data(), two.second.data(), one.second.size() * sizeof(BFloat16)) == 0);
      }
      // Every element right on both counts, against float64 (whatever the BLAS's order).
      const Reference ref = reference(a, b, std::vector<float>(size_t(M * N), 0.5f), N, 0.5, M, N, K);
      const Reference ref_h = reference(a, b, std::vector<BFloat16>(size_t(M * N), BFloat16(0.5f)), N, 0.5, M, N, K);
      int bad = 0;
      for (const auto* result : {&one, &two})
        for (size_t i = 0; i < size_t(M * N); ++i) {
          bad += std::fabs(double(result->first[i]) - ref.value[i]) <= ref.tol[i] ? 0 : 1;
          bad += std::fabs(double(float(result->second[i])) - ref_h.value[i]) <= ref_h.tol[i] ? 0 : 1;
        }
      CHECK(bad == 0);
    }
}

TEST_CASE("gemm_bf16 follows TT_BF16_GEMM=fallback", "[backend][gemm_bf16]") {
  std::mt19937 rng(10);
  const int64_t M = 70, N = 90, K = 1000;
  Operand a = make_operand(M, K, Layout::kRowMajor, 0, rng);
  Operand b = make_operand(K, N, Layout::kRowMajor, 0, rng);
  auto run = [&](Bf16GemmPath path, bool through_env) {
    std::vector<float> c(size_t(M * N), 0.0f);
    if (through_env)
      cpu::gemm_bf16(a.buf.data(), b.buf.data(), c.data(), M, N, K, a.s0, a.s1, b.s0, b.s1, N, 0.0);
    else
      cpu::detail::gemm_bf16_path(path, a.buf.data(), b.buf.data(), c.data(), M, N, K, a.s0, a.s1, b.s0, b.s1, N, 0.0);
    return c;
  };
  const std::vector<float> native = run(Bf16GemmPath::kNative, false);
  const std::vector<float> fallback = run(Bf16GemmPath::kFallback, false);
  ::setenv("TT_BF16_GEMM", "fallback", 1);
  const std::vector<float> env_fallback = run(Bf16GemmPath::kAuto, true);
  ::unsetenv("TT_BF16_GEMM");
  const std::vector<float> env_auto = run(Bf16GemmPath::kAuto, true);
  CHECK(env_fallback == fallback);
  CHECK(env_auto == native);
  // The two paths sum in different orders (k-pairs and 256-slices against OpenBLAS's own): on a
  // CPU with the native kernel some of 6300 sums of 1000 products differ in their last bits,
  // which shows the environment variable really switched paths.
  if (cpu::gemm_bf16_native()) CHECK(native != fallback);
}
