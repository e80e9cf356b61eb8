// tt::cuda::Graph (core/cuda_graph.h): stream capture of tinytorch's stream of one device into a CUDA
// graph, its private memory pool, replay with cudaGraphLaunch on the same stream; and
// cuda::is_capturing, which item() and the host copies check. docs/cuda_graphs.md.
#include <cuda_runtime.h>

#include <cstddef>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_allocator.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/error_flag.h"
#include "tinytorch/backend/cuda/stream.h"
#include "tinytorch/core/cuda_graph.h"
#include "tinytorch/core/device.h"
#include "tinytorch/core/error.h"

namespace tt::cuda {

struct Graph::Impl {
  int device = 0;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  BlockPool::PoolId pool = 0;  // 0: none yet (before the first capture, after reset)
  bool capturing = false;
  bool replayed = false;  // a replay may still run: reset waits for the stream first
};

bool is_capturing(int device) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  TT_CUDA_CHECK(cudaStreamIsCapturing(stream(device), &status));
  return status != cudaStreamCaptureStatusNone;
}

Graph::Graph(int device) : impl_(std::make_unique<Impl>()) {
  check_device_available(Device(kCUDA, device), "tt::cuda::Graph");
  impl_->device = device;
}

Graph::~Graph() {
  try {
    reset();
  } catch (...) {  // a destructor must not throw; the pool's memory stays reserved
  }
}

void Graph::capture_begin() {
  Impl& g = *impl_;
  TT_CHECK(!g.capturing, "tt::cuda::Graph::capture_begin: this graph is already capturing");
  TT_CHECK(g.exec == nullptr, "tt::cuda::Graph::capture_begin: this graph already holds a capture; call reset() "
           "before capturing again");
  DeviceGuard guard(g.device);
  cudaStream_t s = stream(g.device);
  TT_CHECK(!is_capturing(g.device), "tt::cuda::Graph::capture_begin: the stream of ", Device(kCUDA, g.device),
           " is already being captured by another graph");
  // Device buffers that kernels create on first use, made now: a capture without a warm-up step
  // would otherwise cudaMalloc them mid-capture (invalidating it).
  (void)device_error_record(g.device);
  create_optimizer_counters(g.device);
  BlockPool& pool = block_pool(g.device);
  if (g.pool == 0) g.pool = pool.create_private_pool();
  pool.begin_allocate_to_pool(g.pool);
  const cudaError_t err = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    pool.end_allocate_to_pool(g.pool);
    TT_CUDA_CHECK(err);
  }
  g.capturing = true;
}

void Graph::capture_end() {
  Impl& g = *impl_;
  TT_CHECK(g.capturing, "tt::cuda::Graph::capture_end: no capture is in progress (call capture_begin first)");
  DeviceGuard guard(g.device);
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(stream(g.device), &graph);
  g.capturing = false;
  block_pool(g.device).end_allocate_to_pool(g.pool);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    reset();
    TT_CHECK(err != cudaErrorStreamCaptureInvalidated && err != cudaErrorStreamCaptureUnjoined,
             "tt::cuda::Graph::capture_end: the capture was invalidated (", cudaGetErrorName(err),
             "): something synchronized with the device or used the legacy default stream while it was being "
             "captured (a cudaDeviceSynchronize, a cudaMemcpy without Async, a kernel launched outside "
             "tinytorch's stream)");
    TT_CUDA_CHECK(err);
  }
  g.graph = graph;
  const cudaError_t inst = cudaGraphInstantiate(&g.exec, g.graph, 0);
  if (inst != cudaSuccess) {
    g.exec = nullptr;
    reset();
    TT_CUDA_CHECK(inst);
  }
  // The graph's resources on the device now, so the first replay costs what the others do.
  TT_CUDA_CHECK(cudaGraphUpload(g.exec, stream(g.device)));
}

void Graph::abort_capture() noexcept {
  Impl& g = *impl_;
  if (!g.capturing) return;
  int previous = 0;
  const bool have_previous = cudaGetDevice(&previous) == cudaSuccess;
  (void)cudaSetDevice(g.device);
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(stream(g.device), &graph);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
  g.capturing = false;
  try {
    BlockPool& pool = block_pool(g.device);
    pool.end_allocate_to_pool(g.pool);
    // Tensors made during the capture and still held keep their blocks (retagged to the shared pool).
    pool.release_private_pool(g.pool);
  } catch (...) {
  }
  g.pool = 0;
  if (have_previous) (void)cudaSetDevice(previous);
}

void Graph::replay() {
  Impl& g = *impl_;
  TT_CHECK(g.exec != nullptr, "tt::cuda::Graph::replay: nothing was captured", g.capturing ? " yet (call "
           "capture_end first)" : " (call capture, or capture_begin and capture_end, first)");
  DeviceGuard guard(g.device);
  TT_CUDA_CHECK(cudaGraphLaunch(g.exec, stream(g.device)));
  g.replayed = true;
}

void Graph::reset() {
  Impl& g = *impl_;
  abort_capture();
  DeviceGuard guard(g.device);
  // A replay still running may use the pool's memory: wait for it before the pool is handed back.
  if (g.replayed && !is_capturing(g.device)) TT_CUDA_CHECK(cudaStreamSynchronize(stream(g.device)));
  g.replayed = false;
  if (g.exec != nullptr) TT_CUDA_CHECK(cudaGraphExecDestroy(g.exec));
  g.exec = nullptr;
  if (g.graph != nullptr) TT_CUDA_CHECK(cudaGraphDestroy(g.graph));
  g.graph = nullptr;
  if (g.pool != 0) block_pool(g.device).release_private_pool(g.pool);
  g.pool = 0;
}

bool Graph::captured() const { return impl_->exec != nullptr; }
int Graph::device() const { return impl_->device; }

size_t Graph::num_nodes() const {
  if (impl_->graph == nullptr) return 0;
  size_t n = 0;
  TT_CUDA_CHECK(cudaGraphGetNodes(impl_->graph, nullptr, &n));
  return n;
}

MemoryStats Graph::pool_stats() const {
  if (impl_->pool == 0) return {};
  return block_pool(impl_->device).private_pool_stats(impl_->pool);
}

}  // namespace tt::cuda
