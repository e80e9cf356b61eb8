// CPU<->CUDA parity of reductions (sum, mean, max, min, argmax, argmin, var, std: over one dim,
// several, all, keepdim, strided inputs, odd and empty sizes, ties and NaN) and of matmul through
// cuBLAS (2-D, batched, broadcast batch, transposed operands, vectors, float64, K = 0).
// All [cuda]: skipped where no GPU is present.
#include <limits>

#include "cuda/parity.h"

using namespace tt;
using namespace tt::testing;

namespace {
// Float32 sums in another order: relative to the magnitude of the terms, not of the result.
ParityOptions sum_tol(ScalarType dt, int64_t n) {
  if (dt == kFloat64) return tol(1e-10, 1e-11);
  return tol(1e-5, 2e-6 * double(n > 1 ? n : 1));
}
}  // namespace

TEST_CASE("parity: full reductions on odd sizes", "[cuda][parity][reduce]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(33), int64_t(1000), int64_t(4097),
                      int64_t(1 << 20)}) {
      Tensor x = rnd({n}, dt);
      std::string at = std::string(dtype_name(dt)) + " n=" + std::to_string(n);
      check_parity_with("sum " + at, sum_tol(dt, 64), [](const Tensor& t) { return t.sum(); }, x);
      check_parity_with("mean " + at, sum_tol(dt, 1), [](const Tensor& t) { return t.mean(); }, x);
      if (n == 0) continue;  // max/min/arg of nothing are errors
      check_parity("max " + at, [](const Tensor& t) { return t.max(); }, x);
      check_parity("min " + at, [](const Tensor& t) { return t.min(); }, x);
      check_parity("argmax/argmin " + at,
                   [](const Tensor& t) { return std::vector<Tensor>{t.argmax(), t.argmin()}; }, x);
    }
  }
  // Integer and bool sums are exact.
  check_parity("int64 sum", [](const Tensor& t) { return t.sum(); }, rnd_int({4097}, -1000, 1000));
  check_parity("bool sum", [](const Tensor& t) { return t.sum(); }, rand({4097}, {}, &parity_generator()) < 0.3);
}

TEST_CASE("parity: reductions over dims, keepdim, strided inputs", "[cuda][parity][reduce]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Tensor x = rnd({5, 33, 7}, dt);
    for (bool keep : {false, true}) {
      for (int64_t d = 0; d < 3; ++d) {
        std::string at = std::string(dtype_name(dt)) + " dim " + std::to_string(d) + (keep ? " keepdim" : "");
        check_parity_with("sum " + at, sum_tol(dt, 8), [d, keep](const Tensor& t) { return t.sum({d}, keep); }, x);
        check_parity_with("mean " + at, sum_tol(dt, 1), [d, keep](const Tensor& t) { return t.mean({d}, keep); },
                          x);
        check_parity("max " + at, [d, keep](const Tensor& t) { return t.max(d, keep); }, x);
        check_parity("min " + at, [d, keep](const Tensor& t) { return t.min(d, keep); }, x);
        check_parity("argmax/argmin " + at,
                     [d, keep](const Tensor& t) { return std::vector<Tensor>{t.argmax(d, keep), t.argmin(d, keep)}; },
                     x);
        check_parity("var/std " + at,
                     [d, keep](const Tensor& t) {
                       return std::vector<Tensor>{t.var({d}, 1, keep), t.std({d}, 0, keep)};
                     },
                     x);
      }
      check_parity_with("sum over two dims", sum_tol(dt, 16), [keep](const Tensor& t) { return t.sum({0, 2}, keep); },
                        x);
      check_parity_with("mean over the last two", sum_tol(dt, 1),
                        [keep](const Tensor& t) { return t.mean({-1, -2}, keep); }, x);
    }
    // Strided inputs: permuted, stepped slice, expanded (stride 0 in the reduced dim).
    check_parity_with("sum of a permuted tensor over its new last dim", sum_tol(dt, 8),
                      [](const Tensor& t) { return t.permute({2, 0, 1}).sum({2}); }, x);
    check_parity("max of a stepped slice", [](const Tensor& t) { return t.slice(1, 0, 33, 4).max(1); }, x);
    check_parity_with("sum of an expanded tensor over the broadcast dim", sum_tol(dt, 64),
                      [](const Tensor& t) { return t.expand({1000, 33}).sum({0}); }, rnd({1, 33}, dt));
    // Long rows and many short rows.
    check_parity_with("sum of rows of 4097", sum_tol(dt, 64), [](const Tensor& t) { return t.sum({1}); },
                      rnd({3, 4097}, dt));
    check_parity_with("sum of 4097 rows of 3", sum_tol(dt, 4), [](const Tensor& t) { return t.sum({1}); },
                      rnd({4097, 3}, dt));
    check_parity_with("sum down 4097 columns", sum_tol(dt, 64), [](const Tensor& t) { return t.sum({0}); },
                      rnd({1000, 33}, dt));
    check_parity("argmax of long rows", [](const Tensor& t) { return t.argmax(1); }, rnd({7, 5000}, dt));
    // Empty: a sum over a 0 dim is 0, a reduction of rows of an empty batch is empty.
    check_parity("sum over an empty dim", [](const Tensor& t) { return t.sum({1}); }, rnd({3, 0}, dt));
    check_parity("max of an empty batch", [](const Tensor& t) { return t.max(1); }, rnd({0, 5}, dt));
  }
  // Ties: the first index wins on both devices; integer reductions are exact.
  Tensor ties = rnd_int({33, 100}, 0, 3);
  check_parity("int64 argmax/argmin with ties",
               [](const Tensor& t) { return std::vector<Tensor>{t.argmax(1), t.argmin(0), t.argmax(), t.argmin()}; },
               ties);
  check_parity("int64 max/min/sum over dims",
               [](const Tensor& t) {
                 auto [mx, imx] = t.max(0);
                 auto [mn, imn] = t.min(1, true);
                 return std::vector<Tensor>{mx, imx, mn, imn, t.sum({1})};
               },
               ties);
  // NaN wins max/min and its index, as on the CPU.
  Tensor nan = rnd({4, 9}, kFloat64).detach();
  nan.select(0, 1).select(0, 4).fill_(std::numeric_limits<double>::quiet_NaN());
  check_parity_with("max/argmax with a NaN", ParityOptions{{}, {}, false},
                    [](const Tensor& t) {
                      auto [m, i] = t.max(1);
                      return std::vector<Tensor>{m, i, t.argmin(1), t.max(), t.sum({1})};
                    },
                    nan);
}

TEST_CASE("parity: matmul through cuBLAS", "[cuda][parity][matmul]") {
  TT_REQUIRE_CUDA();
  for (ScalarType dt : {kFloat32, kFloat64}) {
    // Float32 dot products of K terms in another order: absolute slack grows with K.
    auto mm_tol = [dt](int64_t k) { return dt == kFloat64 ? tol(1e-10, 1e-11) : tol(1e-5, 2e-6 * double(k)); };
    std::string at = dtype_name(dt);
    for (int64_t m : {1, 7, 33}) {
      for (int64_t k : {1, 33, 1000}) {
        for (int64_t n : {1, 7, 129}) {
          std::string shape = " [" + std::to_string(m) + ", " + std::to_string(k) + "] @ [" + std::to_string(k) +
                              ", " + std::to_string(n) + "]";
          check_parity_with("mm " + at + shape, mm_tol(k), [](const Tensor& a, const Tensor& b) { return a.matmul(b); },
                            rnd({m, k}, dt), rnd({k, n}, dt));
        }
      }
    }
    // Transposed operands (transposes as cuBLAS flags), both and either.
    check_parity_with("a^T @ b", mm_tol(33), [](const Tensor& a, const Tensor& b) { return a.t().matmul(b); },
                      rnd({33, 17}, dt), rnd({33, 9}, dt));
    check_parity_with("a @ b^T", mm_tol(33), [](const Tensor& a, const Tensor& b) { return a.matmul(b.t()); },
                      rnd({17, 33}, dt), rnd({9, 33}, dt));
    check_parity_with("a^T @ b^T", mm_tol(33), [](const Tensor& a, const Tensor& b) { return a.t().matmul(b.t()); },
                      rnd({33, 17}, dt), rnd({9, 33}, dt));
    check_parity_with("non-BLAS layout (stepped slice)", mm_tol(17),
                      [](const Tensor& a, const Tensor& b) { return a.slice(1, 0, 34, 2).matmul(b); }, rnd({9, 34}, dt),
                      rnd({17, 5}, dt));
    // Batched: strided batched GEMM, broadcast batch dims (stride 0), transposed batches.
    check_parity_with("bmm", mm_tol(33), [](const Tensor& a, const Tensor& b) { return a.bmm(b); },
                      rnd({4, 7, 33}, dt), rnd({4, 33, 5}, dt));
    check_parity_with("batched, broadcast batch", mm_tol(33),
                      [](const Tensor& a, const Tensor& b) { return a.matmul(b); }, rnd({2, 1, 7, 33}, dt),
                      rnd({3, 33, 5}, dt));
    check_parity_with("batched @ matrix", mm_tol(33), [](const Tensor& a, const Tensor& b) { return a.matmul(b); },
                      rnd({2, 3, 7, 33}, dt), rnd({33, 5}, dt));
    check_parity_with("batched, transposed last dims", mm_tol(33),
                      [](const Tensor& a, const Tensor& b) { return a.transpose(1, 2).matmul(b.transpose(1, 2)); },
                      rnd({4, 33, 7}, dt), rnd({4, 5, 33}, dt));
    check_parity_with("batched, permuted batch dims", mm_tol(33),
                      [](const Tensor& a, const Tensor& b) { return a.permute({1, 0, 2, 3}).matmul(b); },
                      rnd({3, 2, 7, 33}, dt), rnd({2, 3, 33, 5}, dt));
    // Vectors.
    check_parity_with("vector @ matrix", mm_tol(33), [](const Tensor& a, const Tensor& b) { return a.matmul(b); },
                      rnd({33}, dt), rnd({33, 7}, dt));
    check_parity_with("matrix @ vector", mm_tol(33), [](const Tensor& a, const Tensor& b) { return a.matmul(b); },
                      rnd({7, 33}, dt), rnd({33}, dt));
    check_parity_with("dot", mm_tol(4097), [](const Tensor& a, const Tensor& b) { return dot(a, b); },
                      rnd({4097}, dt), rnd({4097}, dt));
    check_parity_with("linear with bias", mm_tol(33),
                      [](const Tensor& x, const Tensor& w, const Tensor& b) { return linear(x, w, b); },
                      rnd({2, 5, 33}, dt), rnd({17, 33}, dt), rnd({17}, dt));
    // Empty: K = 0 gives zeros (beta = 0 must not read the uninitialized output), M = 0 gives nothing.
    check_parity("K = 0", [](const Tensor& a, const Tensor& b) { return a.matmul(b); }, rnd({3, 0}, dt),
                 rnd({0, 4}, dt));
    check_parity("M = 0", [](const Tensor& a, const Tensor& b) { return a.matmul(b); }, rnd({0, 5}, dt),
                 rnd({5, 2}, dt));
    check_parity("batch of 0", [](const Tensor& a, const Tensor& b) { return a.matmul(b); }, rnd({0, 3, 5}, dt),
                 rnd({0, 5, 2}, dt));
  }
  // TF32 is off by default: float32 GEMMs are exact float32 (a TF32 product of K = 1000 would
  // miss 1e-5 by far).
  CHECK_FALSE(cuda::allow_tf32());
  check_parity_with("float32 GEMM, K = 4097, TF32 off", tol(1e-5, 5e-4),
                    [](const Tensor& a, const Tensor& b) { return a.matmul(b); }, rnd({64, 4097}), rnd({4097, 64}));
}
