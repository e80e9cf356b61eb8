// BlockPool: the device-independent caching allocator behind tt::memory::stats(kCUDA), in the
// spirit of PyTorch's CUDACachingAllocator. It gets memory from an injected "system" allocator
// (cudaMalloc / cudaFree for a GPU, anything in the tests) and keeps it. It knows nothing about
// CUDA, so the block logic is compiled and tested in every build. Streams are not modelled: every
// kernel runs on the device's own stream, so a freed block can be handed out again at once.
//
// Note [caching allocator pools]
//   Requests are rounded up to 512 bytes and served from one of two pools:
//   * small (rounded size <= 1 MiB): blocks carved from 2 MiB segments;
//   * large (> 1 MiB): a request below 10 MiB gets a 20 MiB segment, a bigger one a segment of its
//     size rounded up to 2 MiB (PyTorch's rule: mid-sized tensors share segments, big ones
//     waste at most 2 MiB).
//   A request takes the smallest cached block of its pool that fits (best fit, a std::set ordered
//   by (size, address)). When the block is bigger, it is split and the remainder stays cached if
//   it is worth keeping (>= 512 bytes in the small pool, > 1 MiB in the large pool; otherwise
//   the whole block is handed out and counted as allocated). A freed block merges with its free
//   neighbours in the same segment, so a segment whose blocks are all free is one block again
//   and empty_cache() can hand it back to the system.
//   When the system allocator fails (returns nullptr), every cached free segment is released and
//   the request retried once (then, where the segment would be bigger than the request, with a
//   segment of just the request's size); if that fails too, OutOfMemoryError gives the bytes
//   requested, allocated and reserved.
//
// Note [private pools]
//   A CUDA graph (tt::cuda::Graph, docs/cuda_graphs.md) replays the kernels it captured with the
//   addresses they had at capture time, so the memory they touched must not be handed to anyone
//   else while the graph lives. create_private_pool() opens a pool of its own segments;
//   between begin_allocate_to_pool(id) and end_allocate_to_pool(id), every allocation made by
//   the calling thread is served from it (other threads keep using the shared pool). Its blocks,
//   freed during the capture or after, go back to that pool only, so a later replay finds the same
//   addresses and nothing outside the graph ever overlaps them. A block of the shared pool freed
//   during the capture (a gradient from before the capture, replaced by the captured step) may
//   still be read by a replay before the point of its free, so it is set aside, not reused, until
//   the pool is released. release_private_pool(id), when the graph goes, hands the pool's segments
//   and the set-aside blocks to the shared pool (a tensor still holding a block of it keeps that
//   block; it returns to the shared pool when freed). While a pool captures, nothing may
//   synchronize with the host: out of memory does not release the cache (it would wait for the
//   device) and empty_cache() refuses. One capture at a time per pool object (per device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tinytorch/core/allocator.h"

namespace tt {

class BlockPool final : public Allocator {
 public:
  // Returns nullptr when the memory is not there (out of memory); throws for any other failure.
  using SystemAlloc = std::function<void*(size_t nbytes)>;
  using SystemFree = std::function<void(void* ptr, size_t nbytes)>;
  // Called once before cached segments are handed back (e.g. cudaDeviceSynchronize), may be empty.
  using Synchronize = std::function<void()>;

  static constexpr size_t kMinBlockSize = 512;            // every size is a multiple of this
  static constexpr size_t kSmallSize = size_t(1) << 20;   // largest request of the small pool
  static constexpr size_t kSmallBuffer = size_t(2) << 20; // segment size of the small pool
  static constexpr size_t kMinLargeAlloc = size_t(10) << 20;  // below: a kLargeBuffer segment
  static constexpr size_t kLargeBuffer = size_t(20) << 20;
  static constexpr size_t kRoundLarge = size_t(2) << 20;  // big segments are multiples of this

  // `name` ("cuda:0") starts the out-of-memory message.
  BlockPool(SystemAlloc system_alloc, SystemFree system_free, Synchronize synchronize = {},
            std::string name = "device");
  // Hands the cached free segments back; blocks still in use are left alone (never freed twice).
  ~BlockPool() override;
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  void* allocate(size_t nbytes) override;            // nbytes == 0 gives nullptr
  void deallocate(void* ptr, size_t nbytes) override;  // nbytes is ignored: the pool knows the block
  MemoryStats stats() const override;
  void reset_peak_stats() override;
  void empty_cache() override;

  // --- private pools (Note [private pools]) -------------------------------------------------------
  using PoolId = uint64_t;  // 0 is the shared pool; private pools count from 1
  PoolId create_private_pool();
  // Until end_allocate_to_pool(id), the calling thread's allocations come from pool `id`. Throws
  // when another pool is capturing.
  void begin_allocate_to_pool(PoolId id);
  void end_allocate_to_pool(PoolId id);
  // The pool's segments and set-aside blocks join the shared pool; its id is gone.
  void release_private_pool(PoolId id);
  // The pool's own numbers: reserved_bytes (its segments), allocated_bytes (its blocks in use),
  // num_allocs and num_system_allocs served from it.
  MemoryStats private_pool_stats(PoolId id) const;
  // True while some pool is capturing (allocations of its thread routed to it).
  bool capturing() const;

  // The size a request of nbytes occupies (multiple of 512) and the segment it would open.
  static size_t round_size(size_t nbytes);
  static size_t segment_size(size_t rounded);
  // "512 bytes", "1.50 KiB", "2.00 GiB".
  static std::string format_bytes(int64_t nbytes);

 private:
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    bool small = false;      // which pool
    bool allocated = false;  // handed out, or set aside by a capture (Note [private pools])
    uint64_t pool_id = 0;    // 0: the shared pool; else the private pool owning the segment
    Block* prev = nullptr;   // neighbours inside the same segment
    Block* next = nullptr;
  };
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using FreeSet = std::set<Block*, BySizeThenAddress>;
  struct PrivatePool {
    FreeSet small_free, large_free;
    std::vector<Block*> segments;  // the first block of each of its segments
    std::vector<Block*> set_aside;  // shared-pool blocks freed while it captured
    MemoryStats stats;
  };

  FreeSet& pool(bool small) { return small ? small_free_ : large_free_; }
  // The free set a block of pool `id` returns to.
  FreeSet& free_set(uint64_t id, bool small);
  PrivatePool& private_pool_locked(PoolId id, const char* op);
  void free_block_locked(Block* b);
  Block* find_free_block(FreeSet& free, size_t size);
  Block* new_segment(size_t rounded, bool small, bool exact = false, uint64_t pool_id = 0);
  bool should_split(const Block* block, size_t size) const;
  void merge_into(Block* block, Block* neighbour);
  void release_cached_segments_locked();

  SystemAlloc system_alloc_;
  SystemFree system_free_;
  Synchronize synchronize_;
  std::string name_;

  mutable std::mutex mu_;
  FreeSet small_free_, large_free_;
  std::unordered_map<void*, Block*> live_;  // blocks handed out, by address
  MemoryStats stats_;
  std::unordered_map<PoolId, std::unique_ptr<PrivatePool>> private_;
  PoolId next_pool_id_ = 1;
  PoolId capturing_pool_ = 0;          // the pool allocations are routed to, 0 when none
  std::thread::id capturing_thread_;  // the thread whose allocations are routed
};

}  // namespace tt
