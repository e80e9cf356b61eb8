// CPU reductions: sum, max, min, argmax, argmin over any set of dims, reading strided input.
//
// Note [reduction plan]: the input's dims split into kept dims (one output element per index)
// and reduced dims; each list is coalesced. Two paths:
//  * row path: each output reduces rows along the innermost reduced dim; contiguous rows go
//    through a blocked kernel (see Note [float sums]).
//  * column path (sum only): when the innermost kept dim is contiguous and the reduced dims are
//    outer (sum over the batch of [B, C]), whole rows are added into a column accumulator, so
//    memory is read in order.
//
// Note [float sums]: float32 rows are summed in blocks of 4096 with 32 float64 lanes (four
// AVX-512 or eight AVX2 independent vector accumulators, so the adds are not serialized on one
// register's latency). Each step adds two float32 elements 32 apart in float32 (one rounding,
// relative to that pair alone), widens the pair sum and adds it in float64; the block sums are
// added in float64. 1e8 copies of 0.1f sum to 10000000 (exact: 10000000.149), where 64 float32
// lanes of 64 terms each drifted to 9999991 and PyTorch's float32 cascade gets 9999999. The pair
// step halves the widening converts and float64 adds: when the data sits in cache the sum is
// bound by them, not by memory (8 MiB of floats on this EPYC: 0.155 ms with pairs, 0.234 ms
// widening every element, best of 15 interleaved rounds; 64 MiB from memory: the same time).
// float64 rows use the same lanes, one element a step.
//
// Note [integer sums]: int64 sums accumulate in uint64, where overflow wraps around with defined
// behaviour, and are converted back: the sum is taken modulo 2^64, as PyTorch's (Note [integer
// wraparound] in functors.h).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/cpu/cpu_features.h"
#include "tinytorch/backend/cpu/loop.h"
#include "tinytorch/backend/functors.h"
#include "tinytorch/backend/reduce_plan.h"
#include "tinytorch/backend/visit.h"

namespace tt::cpu {

namespace {

// Note [sum prefetch]: a long sum is bound by memory bandwidth. On Intel Xeons, asking for the
// data 8 KB ahead keeps more cache-line fills in flight than the hardware prefetcher alone (4-7%
// faster on 16M floats, A/B in one process). On AMD EPYC (Zen 4) the same prefetches cost 30%
// (a 16M-float sum took 3.65 ms with them, 2.57 ms without, best of 15 interleaved rounds on one
// core): its own prefetcher already runs ahead. So they are issued on Intel CPUs only.
bool sum_prefetch_helps() {
  static const bool helps = cpu_features().vendor == "GenuineIntel";
  return helps;
}

// One row of n elements `stride` apart; see Note [float sums].
template <typename T>
double sum_row(const T* p, int64_t n, int64_t stride) {
  // TT_EXERCISE_BEGIN(01, 3)
  if (stride != 1) {
    double total = 0;
    for (int64_t i = 0; i < n; ++i) total += double(p[i * stride]);
    return total;
  }
  constexpr int kLanes = 32;
  constexpr int kStep = std::is_same<T, float>::value ? 2 * kLanes : kLanes;  // a pair per lane
  constexpr int64_t kBlock = 4096;
  const bool prefetch = sum_prefetch_helps();
  double total = 0;
  for (int64_t start = 0; start < n; start += kBlock) {
    int64_t end = std::min(n, start + kBlock);
    double acc[kLanes] = {};
    int64_t i = start;
    for (; i + kStep <= end; i += kStep) {
      if (prefetch) {  // Note [sum prefetch]: one per 64-byte line, 8 KB ahead; past the end is harmless
        for (int l = 0; l < kStep; l += int(64 / sizeof(T))) __builtin_prefetch(p + i + 2048 + l);
      }
      if constexpr (std::is_same<T, float>::value) {
        for (int j = 0; j < kLanes; ++j) acc[j] += double(p[i + j] + p[i + j + kLanes]);  // a float32 pair
      } else {
        for (int j = 0; j < kLanes; ++j) acc[j] += double(p[i + j]);
      }
    }
    double s = 0;
    for (int j = 0; j < kLanes; ++j) s += acc[j];
    for (; i < end; ++i) s += double(p[i]);
    total += s;
  }
  return total;
  // TT_EXERCISE_END
}

// Note [integer sums].
uint64_t sum_row(const int64_t* p, int64_t n, int64_t stride) {
  uint64_t total = 0;
  for (int64_t i = 0; i < n; ++i) total += uint64_t(p[i * stride]);
  return total;
}

// The accumulator: float64 for floating types, uint64 for int64 (Note [integer sums]).
template <typename T>
using acc_of = std::conditional_t<std::is_floating_point<T>::value, double, uint64_t>;

template <typename T>
void sum_kernel(const ReducePlan& plan, const T* in, T* out) {
  using acc_t = acc_of<T>;
  // Column path: see Note [reduction plan]. Jobs are (outer index, block of columns, slice of
  // the reduced rows); when there are fewer column jobs than threads the rows are split too and
  // the partial column sums added at the end.
  if (plan.nk >= 1 && plan.nr >= 1 && plan.k_in[plan.nk - 1] == 1 && plan.k_out[plan.nk - 1] == 1 &&
      plan.r_in[plan.nr - 1] != 1) {
    const int64_t cols = plan.k_size[plan.nk - 1];
    const int64_t outer = plan.outputs / cols;
    constexpr int64_t kColBlock = 1024;
    const int64_t col_blocks = (cols + kColBlock - 1) / kColBlock;
    const int64_t col_jobs = outer * col_blocks;
    const bool big = plan.rlen * cols >= kParallelGrain;
    const int nt = big ? parallel_threads() : 1;
    const int64_t splits = (col_jobs < nt && plan.rlen >= 2 * nt) ? nt : 1;
    const int64_t stride_job = std::min(cols, kColBlock);
    // Partial sums live in `shared` only when rows are split (then col_jobs < threads, so it is
    // small); otherwise each job sums into a per-thread buffer and writes its columns directly.
    std::vector<acc_t> shared(size_t(splits > 1 ? splits * col_jobs * stride_job : 0), acc_t(0));
    parallel_for(col_jobs * splits, big ? 1 : 1 << 30, [&](int64_t b, int64_t e) {
      std::vector<acc_t> local(size_t(splits > 1 ? 0 : stride_job));
      for (int64_t job = b; job < e; ++job) {
        int64_t cj = job % col_jobs, split = job / col_jobs;
        int64_t ob = cj / col_blocks, c0 = (cj % col_blocks) * kColBlock;
        int64_t w = std::min(cols, c0 + kColBlock) - c0;
        int64_t r0 = plan.rlen * split / splits, r1 = plan.rlen * (split + 1) / splits;
        int64_t in_off, out_off;
        plan.offsets(ob * cols, in_off, out_off);
        acc_t* a = splits > 1 ? shared.data() + job * stride_job : local.data();
        if (splits == 1) std::fill(local.begin(), local.end(), acc_t(0));
        auto row_at = [&](int64_t r) {
          int64_t off = 0, rem = r;
          for (int d = plan.nr - 1; d >= 0; --d) {
            off += (rem % plan.r_size[d]) * plan.r_in[d];
            rem /= plan.r_size[d];
          }
          return in + in_off + off + c0;
        };
        if constexpr (std::is_same<T, float>::value) {
          // Note [float column sums]: eight rows per pass over the block are added pairwise in
          // float32 (three roundings, each relative to that small sum: no drift however many
          // rows) and the result is added into the float64 accumulator. A run of 64 rows summed
          // in float32 first drifted with the run's length (5e6 rows of 0.1f: off by 0.09, three
          // ulps). Eight rows a pass also keep the float64 accumulator's loads and stores at an
          // eighth of the reads: no slower than the float32 runs (A/B in one process, 16M floats).
          int64_t q = r0;
          for (; q + 8 <= r1; q += 8) {
            const float *x0 = row_at(q), *x1 = row_at(q + 1), *x2 = row_at(q + 2), *x3 = row_at(q + 3);
            const float *x4 = row_at(q + 4), *x5 = row_at(q + 5), *x6 = row_at(q + 6), *x7 = row_at(q + 7);
            for (int64_t c = 0; c < w; ++c)
              a[c] += double(((x0[c] + x1[c]) + (x2[c] + x3[c])) + ((x4[c] + x5[c]) + (x6[c] + x7[c])));
          }
          for (; q < r1; ++q) {
            const float* x = row_at(q);
            for (int64_t c = 0; c < w; ++c) a[c] += double(x[c]);
          }
        } else {
          for (int64_t r = r0; r < r1; ++r) {
            const T* row = row_at(r);
            for (int64_t c = 0; c < w; ++c) a[c] += acc_t(row[c]);
          }
        }
        if (splits == 1)
          for (int64_t c = 0; c < w; ++c) out[out_off + c0 + c] = T(a[c]);
      }
    });
    if (splits == 1) return;
    for (int64_t cj = 0; cj < col_jobs; ++cj) {
      int64_t ob = cj / col_blocks, c0 = (cj % col_blocks) * kColBlock;
      int64_t w = std::min(cols, c0 + kColBlock) - c0;
      int64_t in_off, out_off;
      plan.offsets(ob * cols, in_off, out_off);
      for (int64_t c = 0; c < w; ++c) {
        acc_t total = 0;
        for (int64_t sp = 0; sp < splits; ++sp) total += shared[size_t((sp * col_jobs + cj) * stride_job + c)];
        out[out_off + c0 + c] = T(total);
      }
    }
    return;
  }
  // Row path. One huge row (a full sum) is split across threads.
  if (plan.outputs == 1 && plan.nr == 1 && plan.r_in[0] == 1 && plan.rlen >= 4 * kParallelGrain) {
    int nt = parallel_threads();
    std::vector<acc_t> partial(size_t(nt), acc_t(0));
    const int64_t n = plan.rlen, block = 4096;
    const int64_t blocks = (n + block - 1) / block;
    parallel_for(blocks, 2, [&](int64_t b, int64_t e) {
      int64_t lo = b * block, hi = std::min(n, e * block);
      partial[size_t(omp_thread_num_now())] = acc_t(sum_row(in + lo, hi - lo, 1));
    });
    acc_t total = 0;
    for (acc_t v : partial) total += v;
    out[0] = T(total);
    return;
  }
  parallel_for(plan.outputs, plan.rlen > 0 ? std::max<int64_t>(1, kParallelGrain / plan.rlen) : 1 << 30,
               [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      int64_t in_off, out_off;
      plan.offsets(o, in_off, out_off);
      acc_t total = 0;
      if (plan.rlen > 0)
        plan.for_each_row([&](int64_t off, int64_t, int64_t n, int64_t stride) {
          total += acc_t(sum_row(in + in_off + off, n, stride));
        });
      out[out_off] = T(total);
    }
  });
}

// max/min/argmax/argmin: first occurrence wins ties; a NaN wins over everything (first NaN).
template <typename T, bool kMax, bool kArg>
void extreme_kernel(const ReducePlan& plan, const T* in, void* out_raw) {
  parallel_for(plan.outputs, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, plan.rlen)),
               [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      int64_t in_off, out_off;
      plan.offsets(o, in_off, out_off);
      T best = in[in_off];
      int64_t best_idx = 0;
      bool found_nan = false;
      plan.for_each_row([&](int64_t off, int64_t first, int64_t n, int64_t stride) {
        if (found_nan) return;
        const T* p = in + in_off + off;
        for (int64_t i = 0; i < n; ++i) {
          T v = p[i * stride];
          if (functors::is_nan(v)) {
            best = v;
            best_idx = first + i;
            found_nan = true;
            return;
          }
          if (kMax ? (v > best) : (v < best)) {
            best = v;
            best_idx = first + i;
          }
        }
      });
      if (kArg)
        static_cast<int64_t*>(out_raw)[out_off] = best_idx;
      else
        static_cast<T*>(out_raw)[out_off] = best;
    }
  });
}

}  // namespace

void CpuBackend::reduce(ReduceOp op, const Tensor& out, const Tensor& in) {
  ReducePlan plan(out, in);
  TT_DISPATCH_ALL(in.dtype(), op_name(op), [&] {
    const scalar_t* src = in.data_ptr<scalar_t>();
    if constexpr (std::is_same<scalar_t, bool>::value) {
      throw DtypeError(detail::concat(op_name(op), ": not supported for bool tensors here"));
    } else {
      visit_reduce(op, [&](auto traits) {
        using R = decltype(traits);
        if constexpr (R::kKind == ReduceKind::Sum)
          sum_kernel<scalar_t>(plan, src, out.data_ptr<scalar_t>());
        else
          extreme_kernel<scalar_t, R::kMax, R::kArg>(plan, src, out.raw_data_ptr());
      });
    }
  });
}

}  // namespace tt::cpu
