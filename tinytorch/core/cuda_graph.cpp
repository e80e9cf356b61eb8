// tt::cuda::Graph in a build without CUDA: the constructor says so (DeviceError), and nothing is
// ever being captured. With CUDA the class is defined in backend/cuda/graph.cu.
#include "tinytorch/core/cuda_graph.h"

#include "tinytorch/core/device.h"
#include "tinytorch/core/error.h"

#ifndef TINYTORCH_HAS_CUDA
namespace tt::cuda {

struct Graph::Impl {};

Graph::Graph(int device) {
  check_device_available(Device(kCUDA, device), "tt::cuda::Graph");
  throw DeviceError("tt::cuda::Graph: tinytorch was built without CUDA");  // not reached: the check threw
}
Graph::~Graph() = default;
void Graph::capture_begin() {}
void Graph::capture_end() {}
void Graph::replay() {}
void Graph::reset() {}
bool Graph::captured() const { return false; }
int Graph::device() const { return -1; }
size_t Graph::num_nodes() const { return 0; }
MemoryStats Graph::pool_stats() const { return {}; }
void Graph::abort_capture() noexcept {}

bool is_capturing(int /*device*/) { return false; }

}  // namespace tt::cuda
#endif
