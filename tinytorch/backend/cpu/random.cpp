// CPU random numbers: Philox4x32-10, a counter-based generator. Element i of a request draws
// from counter (offset + i) under key `seed`, so the numbers depend only on (seed, offset, i):
// the same on any thread count, and the CUDA twin can produce the same ones.
#include <cmath>

#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/cpu/loop.h"
#include "tinytorch/core/philox.h"

namespace tt::cpu {

namespace {

template <typename F>
void for_each_draw(const Tensor& out, uint64_t seed, uint64_t offset, F f) {
  const int64_t n = out.numel();
  parallel_for(n, kParallelGrain / 8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i, philox::draw(seed, offset + uint64_t(i)));
  });
}

}  // namespace

void CpuBackend::uniform(const Tensor& out, double low, double high, uint64_t seed, uint64_t offset) {
  TT_DISPATCH_FLOATING(out.dtype(), "uniform", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    for_each_draw(out, seed, offset, [&](int64_t i, const philox::Draw& r) {
      o[i] = static_cast<scalar_t>(low + (high - low) * philox::to_unit<scalar_t>(r));
    });
  });
}

void CpuBackend::normal(const Tensor& out, double mean, double std, uint64_t seed, uint64_t offset) {
  TT_DISPATCH_FLOATING(out.dtype(), "normal", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    for_each_draw(out, seed, offset, [&](int64_t i, const philox::Draw& r) {
      o[i] = static_cast<scalar_t>(mean + std * philox::to_normal(r));
    });
  });
}

void CpuBackend::randint(const Tensor& out, int64_t low, int64_t high, uint64_t seed, uint64_t offset) {
  const uint64_t range = uint64_t(high) - uint64_t(low);  // unsigned: [INT64_MIN, INT64_MAX) fits
  TT_DISPATCH_NUMERIC(out.dtype(), "randint", [&] {
    scalar_t* o = out.data_ptr<scalar_t>();
    for_each_draw(out, seed, offset, [&](int64_t i, const philox::Draw& r) {
      uint64_t bits = (uint64_t(r.w[0]) << 32) | r.w[1];
      o[i] = static_cast<scalar_t>(int64_t(uint64_t(low) + bits % range));
    });
  });
}

}  // namespace tt::cpu
