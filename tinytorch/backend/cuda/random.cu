// CUDA random numbers, twin of cpu/random.cpp: Philox4x32-10 (core/philox.h). Element i of a
// request draws from counter (offset + i) under key `seed`, one draw per element, and maps the
// draw to a value exactly as the CPU does, so a tensor is the same on either device.
//
// Note [random parity]: uniform and randint are bit-for-bit the CPU's numbers (integer and
// exactly-rounded double arithmetic; the affine maps use __dadd_rn / __dmul_rn so nvcc cannot
// fuse them into an FMA the CPU does not do). normal's Box-Muller calls log, sqrt and cos:
// CUDA's double log and cos are within 1-2 ulp of glibc's but not always identical, so float64
// normals agree to ~1e-16 relative, and float32 normals (rounded from that double) agree unless
// the double lands within an ulp of a float rounding boundary (about 1 element in 2^28).
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/launch.cuh"
#include "tinytorch/backend/cuda/loop.cuh"
#include "tinytorch/core/philox.h"

namespace tt::cuda {

namespace {

// out: [n] contiguous; out[i] = low + range * unit(draw(seed, offset + i)).
template <typename T>
__global__ void uniform_kernel(T* out, int64_t n, double low, double range, uint64_t seed, uint64_t offset) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const philox::Draw r = philox::draw(seed, offset + uint64_t(i));
    out[i] = static_cast<T>(__dadd_rn(low, __dmul_rn(range, double(philox::to_unit<T>(r)))));
  }
}

// out: [n] contiguous; out[i] = mean + std * box_muller(draw(seed, offset + i)).
template <typename T>
__global__ void normal_kernel(T* out, int64_t n, double mean, double stddev, uint64_t seed, uint64_t offset) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const philox::Draw r = philox::draw(seed, offset + uint64_t(i));
    out[i] = static_cast<T>(__dadd_rn(mean, __dmul_rn(stddev, philox::to_normal(r))));
  }
}

// out: [n] contiguous; out[i] = low + (64 bits of draw(seed, offset + i)) % range.
template <typename T>
__global__ void randint_kernel(T* out, int64_t n, int64_t low, uint64_t range, uint64_t seed, uint64_t offset) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const philox::Draw r = philox::draw(seed, offset + uint64_t(i));
    const uint64_t bits = (uint64_t(r.w[0]) << 32) | r.w[1];
    out[i] = static_cast<T>(int64_t(uint64_t(low) + bits % range));
  }
}

void check_contiguous(const Tensor& out, const char* op) {
  TT_CHECK(out.is_contiguous(), op, ": out must be contiguous, got shape ", out.shape());
}

}  // namespace

void CudaBackend::uniform(const Tensor& out, double low, double high, uint64_t seed, uint64_t offset) {
  DeviceGuard guard(out.device().index);
  check_contiguous(out, "uniform");
  const int64_t n = out.numel();
  TT_DISPATCH_FLOATING(out.dtype(), "uniform", [&] {
    if (n == 0) return;
    launch(uniform_kernel<scalar_t>, blocks_for(n), kThreads, 0, out.data_ptr<scalar_t>(), n, low, high - low, seed,
           offset);
  });
}

void CudaBackend::normal(const Tensor& out, double mean, double std, uint64_t seed, uint64_t offset) {
  DeviceGuard guard(out.device().index);
  check_contiguous(out, "normal");
  const int64_t n = out.numel();
  TT_DISPATCH_FLOATING(out.dtype(), "normal", [&] {
    if (n == 0) return;
    launch(normal_kernel<scalar_t>, blocks_for(n), kThreads, 0, out.data_ptr<scalar_t>(), n, mean, std, seed, offset);
  });
}

void CudaBackend::randint(const Tensor& out, int64_t low, int64_t high, uint64_t seed, uint64_t offset) {
  DeviceGuard guard(out.device().index);
  check_contiguous(out, "randint");
  TT_CHECK(high > low, "randint: high must be greater than low, got low=", low, " and high=", high);
  const uint64_t range = uint64_t(high) - uint64_t(low);  // unsigned: [INT64_MIN, INT64_MAX) fits
  const int64_t n = out.numel();
  TT_DISPATCH_NUMERIC(out.dtype(), "randint", [&] {
    if (n == 0) return;
    launch(randint_kernel<scalar_t>, blocks_for(n), kThreads, 0, out.data_ptr<scalar_t>(), n, low, range, seed, offset);
  });
}

}  // namespace tt::cuda
