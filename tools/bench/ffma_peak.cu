// tt_bench --device cuda: the measured FP32 FMA (FFMA) peak of GPU 0, the yardstick of issue 8's
// "exact-float32 forward at >= 45% of the measured FFMA peak" (cuda_bench.cpp times the launch and
// reports 2 FLOPs per FMA). Not a model of any real kernel: no memory traffic, no shared memory.
//
// Note [FFMA peak]: each thread runs kChains independent FMA chains x = x * a + b in registers, so
// every warp scheduler always has a ready FFMA (an FMA's latency is ~4 cycles; 8 chains per warp
// and many warps per scheduler hide it); the loop body is unrolled kUnroll times so the loop's own
// compare and branch are ~1% of the instructions. a and b are kernel arguments, so the compiler
// cannot fold the chains, and every thread writes its sum, so they are not dead code. One launch
// is exactly one full wave: SMs x the resident blocks per SM at this block size.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace ttbench::cuda_bench {
namespace {

constexpr int kChains = 8;
constexpr int kUnroll = 32;

__global__ void ffma_peak_kernel(float* out, int iters, float a, float b) {
  float x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = float(threadIdx.x) * 1e-3f + float(c);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) x[c] = fmaf(x[c], a, b);
    }
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += x[c];
  out[size_t(blockIdx.x) * blockDim.x + threadIdx.x] = s;
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("tt_bench --device cuda: ffma_peak: ") + what + " failed: " +
                             cudaGetErrorString(status));
}

}  // namespace

// Blocks of `threads` threads that fill every SM of the current device once (one full wave).
int ffma_peak_blocks(int threads) {
  int device = 0, sms = 0, per_sm = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ffma_peak_kernel, threads, 0),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  if (sms <= 0 || per_sm <= 0)
    throw std::runtime_error("tt_bench --device cuda: ffma_peak: no resident blocks of " + std::to_string(threads) +
                             " threads (SMs " + std::to_string(sms) + ", blocks per SM " + std::to_string(per_sm) +
                             ")");
  return sms * per_sm;
}

// FLOPs of one launch: 2 per FMA.
double ffma_peak_flops(int blocks, int threads, int iters) {
  return 2.0 * double(blocks) * threads * double(iters) * kUnroll * kChains;
}

// One launch on the legacy default stream; out holds blocks * threads floats. Throws on a launch
// error (the kernel itself cannot fail).
void ffma_peak_launch(float* out, int blocks, int threads, int iters) {
  ffma_peak_kernel<<<blocks, threads>>>(out, iters, 0.99999f, 1e-5f);
  check(cudaGetLastError(), "kernel launch");
}

}  // namespace ttbench::cuda_bench
