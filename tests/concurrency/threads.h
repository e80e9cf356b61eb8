// Helpers for the concurrency suite: run a function on n std::threads that start together, and
// hand any exception a thread threw back to the test's own thread (Catch2's assertions are not
// thread-safe, so threads record results and the test checks them after joining).
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "test_util.h"

namespace tt::testing {

// Runs fn(0) .. fn(n - 1) on n threads released at the same moment (each spins until all have
// started, so their work overlaps as much as it can), joins them, and rethrows the first
// exception any of them threw.
inline void run_threads(int n, const std::function<void(int)>& fn) {
  std::atomic<int> arrived{0};
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      arrived.fetch_add(1);
      while (arrived.load() < n) std::this_thread::yield();
      try {
        fn(i);
      } catch (...) {
        errors[static_cast<size_t>(i)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// Bitwise equality of two tensors of the same dtype (shape and every byte of every element).
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  const char* pa = static_cast<const char*>(ca.raw_data_ptr());
  const char* pb = static_cast<const char*>(cb.raw_data_ptr());
  return std::equal(pa, pa + ca.numel() * int64_t(ca.element_size()), pb);
}

}  // namespace tt::testing
