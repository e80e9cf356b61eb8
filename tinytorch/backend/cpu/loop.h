// The CPU elementwise engine: walks N operands (out first) over one shape with arbitrary
// byte strides, so broadcast and transposed views are read in place, never copied first.
//
// Dims are coalesced (backend/strided_plan.h, shared with the CUDA engine) and the innermost dim
// is handed to a kernel as (pointers, strides, n). Kernels test for the contiguous case and run a
// plain loop the compiler vectorizes. Above kParallelGrain elements the index range is split
// across OpenMP threads.
#pragma once

#include <cstdint>
#include <exception>
#include <mutex>

#include "tinytorch/backend/strided_plan.h"
#include "tinytorch/core/tensor.h"

namespace tt::cpu {

constexpr int64_t kParallelGrain = 32768;

// An exception thrown inside an OpenMP region must not leave it (that terminates the program):
// each thread's body runs under guard(), the first exception is kept and rethrown afterwards.
class ParallelErrors {
 public:
  template <typename F>
  void guard(F&& body) {
    try {
      body();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!first_) first_ = std::current_exception();
    }
  }
  void rethrow() {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mu_;
  std::exception_ptr first_;
};

// Thin wrappers over omp_get_*, out of line so this header needs no <omp.h>.
int omp_num_threads_now();  // threads in the current parallel region
int omp_thread_num_now();   // this thread's number in it
// Threads a new region on this thread will get, after applying tt::set_num_threads to it
// (Note [threading policy] in backend/threads.cpp). Call it before every region.
int parallel_threads();

template <int N>
struct StridedLoop : StridedPlan<N> {
  using Plan = StridedPlan<N>;
  using Plan::base;
  using Plan::ndim;
  using Plan::numel;
  using Plan::shape;
  using Plan::strides;

  // ops[0] is the output; the others are broadcast to its shape (backend/strided_plan.h).
  explicit StridedLoop(const Tensor* const (&ops)[N]) : Plan(ops) {}

  // Calls f(ptrs, inner_strides, n) over the linear index range [begin, end).
  template <typename F>
  void run_range(int64_t begin, int64_t end, F& f) const {
    int64_t inner = shape[ndim - 1];
    int64_t idx[kMaxDims];
    int64_t rem = begin;
    for (int d = ndim - 1; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    int64_t inner_strides[N];
    for (int k = 0; k < N; ++k) inner_strides[k] = strides[k][ndim - 1];
    int64_t pos = begin;
    while (pos < end) {
      char* ptrs[N];
      for (int k = 0; k < N; ++k) {
        char* p = base[k];
        for (int d = 0; d < ndim; ++d) p += idx[d] * strides[k][d];
        ptrs[k] = p;
      }
      int64_t n = inner - idx[ndim - 1];
      if (n > end - pos) n = end - pos;
      f(ptrs, inner_strides, n);
      pos += n;
      idx[ndim - 1] += n;
      for (int d = ndim - 1; d > 0 && idx[d] >= shape[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
      }
    }
  }

  // Runs f over all elements, in parallel when large enough.
  template <typename F>
  void run(F f) const {
    if (numel == 0) return;
    if (numel < kParallelGrain || parallel_threads() == 1) {
      run_range(0, numel, f);
      return;
    }
    ParallelErrors errors;
#pragma omp parallel
    {
      int nt = omp_num_threads_now(), t = omp_thread_num_now();
      int64_t chunk = (numel + nt - 1) / nt;
      int64_t b = t * chunk, e = b + chunk < numel ? b + chunk : numel;
      F local = f;
      if (b < e) errors.guard([&] { run_range(b, e, local); });
    }
    errors.rethrow();
  }
};

// Runs f(begin, end) over [0, n) split across threads when n * cost_per_item is large.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F f) {
  if (n <= 0) return;
  if (n < grain || parallel_threads() == 1) {
    f(int64_t(0), n);
    return;
  }
  ParallelErrors errors;
#pragma omp parallel
  {
    int nt = omp_num_threads_now(), t = omp_thread_num_now();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = t * chunk, e = b + chunk < n ? b + chunk : n;
    if (b < e) errors.guard([&] { f(b, e); });
  }
  errors.rethrow();
}

}  // namespace tt::cpu
