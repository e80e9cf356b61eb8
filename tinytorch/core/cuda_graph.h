// tt::cuda::Graph: a whole training step (or any sequence of tinytorch GPU work) captured once into
// a CUDA graph and replayed with one launch, in the style of torch.cuda.CUDAGraph. The memory the
// captured work allocated comes from a pool private to the graph and keeps its addresses while the
// graph lives (Note [private pools], core/block_pool.h), so tensors made during the capture (the
// loss, the gradients) hold the values of the latest replay. Usage and rules: docs/cuda_graphs.md.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include "tinytorch/core/allocator.h"

namespace tt::cuda {

class Graph {
 public:
  // A graph for CUDA device `device`. Throws DeviceError (naming tt::cuda::Graph) in a build
  // without CUDA or on a machine without that GPU.
  explicit Graph(int device = 0);
  // Ends a capture left open (an exception between capture_begin and capture_end), waits for
  // replays in flight and hands the private pool back to the device's shared pool.
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Everything tinytorch queues on the device between the two calls, on this thread, is recorded,
  // not run. capture_end instantiates the graph. Work on the device must not synchronize with the
  // host in between: item(), copies to or from the CPU, cuda::synchronize and empty_cache throw.
  void capture_begin();
  void capture_end();
  // capture_begin(); fn(); capture_end(), ending the capture cleanly when fn throws (the exception
  // then goes on, and this graph is empty again).
  template <typename Fn>
  void capture(Fn&& fn) {
    capture_begin();
    try {
      std::forward<Fn>(fn)();
    } catch (...) {
      abort_capture();
      throw;
    }
    capture_end();
  }
  // Pre-warm, then capture: fn() run eagerly `warmup` times (optimizer state, cuBLAS, kernel modules
  // and the allocator's cache set up; docs/cuda_graphs.md), then captured as above. The eager runs
  // are real steps: a training step captured this way has trained `warmup` steps already.
  template <typename Fn>
  void capture(Fn&& fn, int warmup) {
    for (int i = 0; i < warmup; ++i) fn();
    capture(std::forward<Fn>(fn));
  }
  // Runs the captured work once more on the device's stream (asynchronously, like a kernel).
  void replay();
  // Drops the captured graph and its private pool; the graph may capture again.
  void reset();

  bool captured() const;
  int device() const;
  // Nodes (kernels, copies, memsets) in the captured graph; 0 before a capture.
  size_t num_nodes() const;
  // The private pool's numbers: reserved_bytes (its segments), allocated_bytes (its blocks still in
  // use, e.g. the loss and the gradients made during the capture). Zeros before a capture.
  MemoryStats pool_stats() const;

 private:
  void abort_capture() noexcept;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// True while tinytorch's stream of CUDA device `device` is being captured into a graph; false in a
// build without CUDA. Ops that would wait for the device (item(), host copies) check it to throw a
// clear error instead of invalidating the capture.
bool is_capturing(int device);

}  // namespace tt::cuda
