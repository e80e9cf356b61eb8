// Module 09 suite: devices and the GPU. What runs everywhere: device names parsed and printed,
// the clear DeviceError at the first CUDA request on a machine without a GPU (or a build without
// CUDA), the CPU caching allocator that stops calling malloc after a training loop's first step,
// and BlockPool, the device-independent caching allocator behind tt::memory::stats(kCUDA), driven
// by a fake "system" allocator: rounding and segment sizes, best fit, splitting, coalescing of
// freed neighbours, reuse without a system allocation, empty_cache, release-and-retry on out of
// memory and the OutOfMemoryError message. What needs a GPU is tagged [cuda] and reported as
// skipped without one: transfers round trip bit for bit, the grid-stride loop covers every
// element of odd sizes, strided and contiguous copies agree, a parity check of softmax and matmul
// forward and backward, and no cudaMalloc after the second step of a training loop on the device.
// It is the judge in exercise mode (`tools/tt exercise 09`): the cases tagged [exercise] run the
// BlockPool bodies a learner writes.
#include <cstdlib>
#include <map>
#include <vector>

#include <tinytorch/core/block_pool.h>

#include "test_util.h"

using Catch::Matchers::Contains;
using tt::BlockPool;
using tt::Device;
using tt::Tensor;
namespace F = tt::F;

namespace {

// A "system" allocator for BlockPool backed by malloc, with a budget of bytes it may hand out
// (nullptr past it: the pool's out-of-memory path) and a record of every call.
struct FakeSystem {
  size_t budget = size_t(1) << 40;
  size_t in_use = 0;
  int allocs = 0, frees = 0, syncs = 0;
  std::map<void*, size_t> live;

  FakeSystem() = default;
  FakeSystem(const FakeSystem&) = delete;
  FakeSystem& operator=(const FakeSystem&) = delete;
  // Segments a test leaves in use (the pool never frees a segment with a live block) go back here.
  ~FakeSystem() {
    for (const auto& seg : live) std::free(seg.first);
  }

  BlockPool pool(const std::string& name = "fake:0") {
    return BlockPool([this](size_t n) { return alloc(n); }, [this](void* p, size_t n) { free(p, n); },
                     [this] { ++syncs; }, name);
  }
  void* alloc(size_t n) {
    if (in_use + n > budget) return nullptr;
    void* p = std::malloc(n);
    REQUIRE(p != nullptr);
    in_use += n;
    ++allocs;
    live[p] = n;
    return p;
  }
  void free(void* p, size_t n) {
    REQUIRE(live.count(p) == 1);
    CHECK(live[p] == n);  // a segment goes back whole, with the size it was allocated with
    live.erase(p);
    in_use -= n;
    ++frees;
    std::free(p);
  }
};

constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;

char* as_bytes(void* p) { return static_cast<char*>(p); }

// Ten steps of an MLP on random data of fixed shapes on `device`; the number of system
// allocations of that device's allocator after each step.
std::vector<int64_t> system_allocs_per_step(const Device& device) {
  tt::manual_seed(9);
  tt::nn::Sequential mlp;
  mlp.push_back(tt::nn::Linear(32, 64));
  mlp.push_back(tt::nn::ReLU());
  mlp.push_back(tt::nn::Linear(64, 10));
  mlp.to(device);
  tt::optim::Adam opt(mlp.parameters(), tt::optim::AdamOptions(1e-3));
  std::vector<int64_t> counts;
  for (int step = 0; step < 10; ++step) {
    Tensor x = tt::randn({16, 32}).to(device), y = tt::randint(0, 10, {16}).to(device);
    opt.zero_grad();
    Tensor loss = F::cross_entropy(mlp.forward(x), y);
    loss.backward();
    opt.step();
    (void)loss.item<double>();
    counts.push_back(tt::memory::stats(device).num_system_allocs);
  }
  return counts;
}

}  // namespace

// --- devices --------------------------------------------------------------------------------------

TEST_CASE("device names are parsed and printed as PyTorch spells them", "[module09]") {
  CHECK(Device("cpu") == Device(tt::kCPU));
  CHECK(Device("cuda") == Device(tt::kCUDA, 0));
  CHECK(Device("cuda:3").index == 3);
  CHECK(Device("cuda:3").is_cuda());
  CHECK(Device(tt::kCUDA, 1).str() == "cuda:1");
  CHECK(Device("cpu").str() == "cpu");
  CHECK(Device("cuda:0") != Device("cuda:1"));
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:1:2", "cuda:-1", "cuda:128", "CPU"}) {
    INFO(bad);
    REQUIRE_THROWS_AS(Device(bad), tt::DeviceError);
    REQUIRE_THROWS_WITH(Device(bad), Contains("expected 'cpu', 'cuda' or 'cuda:N'"));
  }
}

TEST_CASE("without a GPU the first CUDA request is a clear DeviceError and nothing else changes", "[module09]") {
  CHECK(tt::cuda::is_available() == (tt::cuda::device_count() > 0));
  Tensor x = tt::ones({2, 3});
  tt::nn::Linear lin(3, 2);
  if (tt::cuda::is_available()) {  // on a GPU: the same requests work
    CHECK(tt::zeros({2}, tt::kCUDA).is_cuda());
    CHECK(x.cuda().cpu().to_vector<float>() == x.to_vector<float>());
    lin.to(Device(tt::kCUDA));
    CHECK(lin.weight.is_cuda());
    // An index past the last device is an error naming the count.
    REQUIRE_THROWS_AS(tt::zeros({2}, Device(tt::kCUDA, tt::cuda::device_count())), tt::DeviceError);
    return;
  }
  // (Catch's combined matchers hold references: each is built inside its assertion.)
#define TT_CLEAR_NO_CUDA (Contains("no CUDA device is available") || Contains("built without CUDA"))
  REQUIRE_THROWS_AS(tt::zeros({2}, tt::kCUDA), tt::DeviceError);
  REQUIRE_THROWS_WITH(tt::zeros({2}, tt::kCUDA), TT_CLEAR_NO_CUDA && Contains("cuda:0"));
  REQUIRE_THROWS_WITH(x.cuda(), TT_CLEAR_NO_CUDA);
  REQUIRE_THROWS_WITH(x.to(Device("cuda:1")), TT_CLEAR_NO_CUDA && Contains("cuda:1"));
#undef TT_CLEAR_NO_CUDA
  REQUIRE_THROWS_AS(tt::memory::stats(Device(tt::kCUDA)), tt::DeviceError);
  Tensor w = lin.weight.detach().clone();
  REQUIRE_THROWS_AS(lin.to(Device(tt::kCUDA)), tt::DeviceError);
  // The failed move changed nothing: the layer is on the CPU with its values, and works.
  CHECK(lin.weight.device() == Device(tt::kCPU));
  CHECK(lin.weight.to_vector<float>() == w.to_vector<float>());
  CHECK(lin.forward(x).shape() == tt::Shape{2, 2});
  CHECK(x.device() == Device(tt::kCPU));
}

// --- caching allocators ---------------------------------------------------------------------------

TEST_CASE("the CPU caching allocator stops calling malloc after a training loop's first step", "[module09]") {
  std::vector<int64_t> counts = system_allocs_per_step(Device(tt::kCPU));
  INFO("system allocations after each step: " << ::Catch::Detail::stringify(counts));
  for (size_t step = 2; step < counts.size(); ++step) CHECK(counts[step] == counts[1]);
  // A freed block of a size is handed out again for the same size.
  tt::MemoryStats before = tt::memory::stats();
  { Tensor t = tt::empty({12345}); }
  int64_t after_first = tt::memory::stats().num_system_allocs;
  { Tensor t = tt::empty({12345}); }
  CHECK(tt::memory::stats().num_system_allocs == after_first);
  CHECK(tt::memory::stats().num_allocs == before.num_allocs + 2);
}

TEST_CASE("BlockPool rounds requests to 512 bytes and picks a segment size per pool", "[module09]") {
  CHECK(BlockPool::round_size(1) == 512);
  CHECK(BlockPool::round_size(512) == 512);
  CHECK(BlockPool::round_size(513) == 1024);
  CHECK(BlockPool::segment_size(512) == 2 * kMiB);          // small pool: 2 MiB segments
  CHECK(BlockPool::segment_size(kMiB) == 2 * kMiB);
  CHECK(BlockPool::segment_size(kMiB + 512) == 20 * kMiB);  // mid-sized: a shared 20 MiB segment
  CHECK(BlockPool::segment_size(11 * kMiB) == 12 * kMiB);   // big: its size rounded to 2 MiB
  CHECK(BlockPool::format_bytes(512) == "512 bytes");
  CHECK(BlockPool::format_bytes(3 * 512 * 1024) == "1.50 MiB");
}

TEST_CASE("BlockPool splits a segment into neighbouring blocks and reuses freed ones", "[module09][exercise]") {
  FakeSystem sys;
  BlockPool pool = sys.pool();
  void* a = pool.allocate(100);
  void* b = pool.allocate(1000);
  void* c = pool.allocate(512);
  // One 2 MiB segment, carved front to back in rounded sizes.
  CHECK(sys.allocs == 1);
  CHECK(as_bytes(b) == as_bytes(a) + 512);
  CHECK(as_bytes(c) == as_bytes(b) + 1024);
  tt::MemoryStats s = pool.stats();
  CHECK(s.allocated_bytes == 512 + 1024 + 512);
  CHECK(s.reserved_bytes == int64_t(2 * kMiB));
  CHECK(s.num_allocs == 3);
  CHECK(s.num_system_allocs == 1);
  // A freed block is handed out again, without a system allocation.
  pool.deallocate(b, 1000);
  CHECK(pool.stats().allocated_bytes == 1024);
  void* b2 = pool.allocate(600);
  CHECK(b2 == b);
  CHECK(sys.allocs == 1);
  pool.deallocate(a, 100);
  pool.deallocate(b2, 600);
  pool.deallocate(c, 512);
  CHECK(pool.stats().allocated_bytes == 0);
  CHECK(pool.stats().peak_allocated_bytes == 2048);
}

TEST_CASE("BlockPool takes the smallest cached block that fits (best fit)", "[module09][exercise]") {
  FakeSystem sys;
  BlockPool pool = sys.pool();
  // Free blocks of 4 KiB, 1 KiB and 2 KiB, kept apart by live blocks so they cannot merge.
  void* big = pool.allocate(4 * kKiB);
  void* sep1 = pool.allocate(512);
  void* small = pool.allocate(kKiB);
  void* sep2 = pool.allocate(512);
  void* mid = pool.allocate(2 * kKiB);
  void* sep3 = pool.allocate(512);
  pool.deallocate(big, 0);
  pool.deallocate(small, 0);
  pool.deallocate(mid, 0);
  CHECK(pool.allocate(kKiB) == small);     // exact fit
  CHECK(pool.allocate(1500) == mid);       // 2 KiB is the smallest that holds 1536 bytes
  void* part = pool.allocate(3 * kKiB);    // only the 4 KiB block fits: split, 1 KiB stays cached
  CHECK(part == big);
  CHECK(pool.allocate(kKiB) == as_bytes(big) + 3 * kKiB);
  CHECK(sys.allocs == 1);
  (void)sep1, (void)sep2, (void)sep3;
}

TEST_CASE("BlockPool merges a freed block with its free neighbours", "[module09][exercise]") {
  FakeSystem sys;
  BlockPool pool = sys.pool();
  void* a = pool.allocate(kKiB);
  void* b = pool.allocate(kKiB);
  void* c = pool.allocate(kKiB);
  void* d = pool.allocate(kKiB);  // keeps the segment's tail apart from a..c
  // Free a and c, then b: the three become one 3 KiB block at a.
  pool.deallocate(a, 0);
  pool.deallocate(c, 0);
  pool.deallocate(b, 0);
  CHECK(pool.allocate(3 * kKiB) == a);
  CHECK(sys.allocs == 1);
  pool.deallocate(a, 0);
  pool.deallocate(d, 0);
  // Everything free again: the segment is whole, and the largest small request fits at its start.
  CHECK(pool.allocate(kMiB) == a);
  CHECK(sys.allocs == 1);
}

TEST_CASE("BlockPool: a training step's pattern twice needs no new segment", "[module09][exercise]") {
  FakeSystem sys;
  BlockPool pool = sys.pool();
  auto step = [&] {
    std::vector<void*> live;
    for (size_t n : {size_t(4000), size_t(70000), size_t(3 * kMiB), size_t(512), size_t(4000), size_t(12 * kMiB)})
      live.push_back(pool.allocate(n));
    for (size_t i = live.size(); i-- > 0;) pool.deallocate(live[i], 0);  // freed in reverse, as activations
  };
  step();
  int64_t after_first = pool.stats().num_system_allocs;
  for (int i = 0; i < 5; ++i) step();
  CHECK(pool.stats().num_system_allocs == after_first);
  CHECK(pool.stats().allocated_bytes == 0);
  CHECK(pool.stats().num_allocs == 36);
}

TEST_CASE("BlockPool: empty_cache hands whole free segments back, never a live one", "[module09][exercise]") {
  FakeSystem sys;
  {
    BlockPool pool = sys.pool();
    void* keep = pool.allocate(kKiB);        // its small segment stays
    void* gone = pool.allocate(3 * kMiB);    // a large segment of its own
    pool.deallocate(gone, 0);
    CHECK(pool.stats().reserved_bytes == int64_t(22 * kMiB));
    pool.empty_cache();
    CHECK(sys.frees == 1);
    CHECK(sys.syncs == 1);  // the device is synchronized before memory goes back
    CHECK(pool.stats().reserved_bytes == int64_t(2 * kMiB));
    CHECK(pool.stats().allocated_bytes == 1024);
    pool.deallocate(keep, 0);
    pool.empty_cache();
    CHECK(pool.stats().reserved_bytes == 0);
    CHECK(sys.live.empty());
  }
  CHECK(sys.allocs == sys.frees);
}

TEST_CASE("BlockPool out of memory: release the cache and retry, then a clear error", "[module09][exercise]") {
  FakeSystem sys;
  sys.budget = 21 * kMiB;
  BlockPool pool = sys.pool("fake:0");
  void* small = pool.allocate(kKiB);  // a 2 MiB small segment...
  pool.deallocate(small, 0);          // ...cached, whole, reserved
  // A 3 MiB tensor needs a 20 MiB segment: 22 MiB is past the budget while the cache holds the
  // small segment, so the pool hands that back and the retry succeeds.
  void* large = pool.allocate(3 * kMiB);
  CHECK(large != nullptr);
  CHECK(sys.frees == 1);
  CHECK(pool.stats().reserved_bytes == int64_t(20 * kMiB));
  // Nothing whole is cached now (the segment's free 17 MiB tail is part of a live segment): a
  // request past the budget is an OutOfMemoryError with the numbers.
  REQUIRE_THROWS_AS(pool.allocate(20 * kMiB), tt::OutOfMemoryError);
  REQUIRE_THROWS_WITH(pool.allocate(20 * kMiB), Contains("fake:0 out of memory") &&
                                                    Contains("tried to allocate 20.00 MiB") &&
                                                    Contains("3.00 MiB allocated") &&
                                                    Contains("20.00 MiB reserved"));
  // The failure changed nothing.
  CHECK(pool.stats().allocated_bytes == int64_t(3 * kMiB));
  CHECK(pool.stats().reserved_bytes == int64_t(20 * kMiB));
  pool.deallocate(large, 0);
}

// --- on a GPU ---------------------------------------------------------------------------------------

TEST_CASE("transfers between host and device round trip bit for bit", "[module09][cuda]") {
  TT_REQUIRE_CUDA();
  for (tt::ScalarType dt : {tt::kFloat32, tt::kFloat64, tt::kInt64, tt::kBool}) {
    Tensor h = (tt::randn({1000, 33}) * 100).to(dt);
    Tensor d = h.cuda();
    CHECK(d.is_cuda());
    CHECK(d.dtype() == dt);
    CHECK(d.cpu().to_vector<double>() == h.to_vector<double>());
    // Non-contiguous both ways.
    CHECK(h.t().cuda().cpu().to_vector<double>() == h.t().to_vector<double>());
    CHECK(d.t().cpu().to_vector<double>() == h.t().to_vector<double>());
  }
}

TEST_CASE("the grid-stride loop covers every element of odd sizes, and strided copies agree", "[module09][cuda]") {
  TT_REQUIRE_CUDA();
  // Sizes around a block (256 threads), and past the grid cap, where each thread loops.
  for (int64_t n : {int64_t(1), int64_t(255), int64_t(257), int64_t(65536 * 256 * 8 + 3)}) {
    INFO("n = " << n);
    Tensor d = tt::arange(0, n, 1, tt::TensorOptions().dtype(tt::kInt64).device(tt::kCUDA)) * 2 + 1;
    Tensor h = tt::arange(0, n, 1, tt::kInt64) * 2 + 1;
    CHECK(d.sum().item<int64_t>() == h.sum().item<int64_t>());
    CHECK(d.max().item<int64_t>() == 2 * n - 1);
  }
  Tensor x = tt::randn({513, 1025});
  Tensor xd = x.cuda();
  CHECK(xd.t().contiguous().cpu().to_vector<float>() == x.t().contiguous().to_vector<float>());
  CHECK(xd.slice(1, 3, 1025, 7).contiguous().cpu().to_vector<float>() ==
        x.slice(1, 3, 1025, 7).contiguous().to_vector<float>());
}

TEST_CASE("parity: softmax and matmul agree with the CPU forward and backward", "[module09][cuda]") {
  TT_REQUIRE_CUDA();
  tt::manual_seed(11);
  Tensor a = tt::randn({33, 65}, tt::kFloat64), b = tt::randn({65, 17}, tt::kFloat64);
  Tensor ac = a.clone().requires_grad_(), bc = b.clone().requires_grad_();
  Tensor ad = a.cuda().requires_grad_(), bd = b.cuda().requires_grad_();
  Tensor yc = ac.matmul(bc).softmax(1), yd = ad.matmul(bd).softmax(1);
  CHECK_ALLCLOSE(yd.cpu(), yc, 1e-10, 1e-12);
  Tensor cot = tt::randn({33, 17}, tt::kFloat64);
  (yc * cot).sum().backward();
  (yd * cot.cuda()).sum().backward();
  CHECK_ALLCLOSE(ad.grad().cpu(), ac.grad(), 1e-10, 1e-12);
  CHECK_ALLCLOSE(bd.grad().cpu(), bc.grad(), 1e-10, 1e-12);
}

TEST_CASE("no cudaMalloc after the second step of a training loop on the device", "[module09][cuda]") {
  TT_REQUIRE_CUDA();
  std::vector<int64_t> counts = system_allocs_per_step(Device(tt::kCUDA));
  INFO("device allocations after each step: " << ::Catch::Detail::stringify(counts));
  for (size_t step = 2; step < counts.size(); ++step) CHECK(counts[step] == counts[1]);
}
