// BlockPool: best fit, splitting and coalescing of blocks inside system-allocated segments, and
// release-and-retry on out of memory (Note [caching allocator pools] in block_pool.h).
#include "tinytorch/core/block_pool.h"

#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "tinytorch/core/error.h"

namespace tt {

BlockPool::BlockPool(SystemAlloc system_alloc, SystemFree system_free, Synchronize synchronize, std::string name)
    : system_alloc_(std::move(system_alloc)),
      system_free_(std::move(system_free)),
      synchronize_(std::move(synchronize)),
      name_(std::move(name)) {
  TT_CHECK(system_alloc_ && system_free_, "BlockPool: the system allocate and free functions are required");
}

BlockPool::~BlockPool() {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    release_cached_segments_locked();
  } catch (...) {  // a destructor must not throw; the memory goes back with the process
  }
  // Segments with live blocks are not freed: a tensor still points into them.
  std::vector<Block*> blocks(small_free_.begin(), small_free_.end());
  blocks.insert(blocks.end(), large_free_.begin(), large_free_.end());
  for (auto& kv : live_) blocks.push_back(kv.second);
  for (auto& kv : private_) {
    PrivatePool& pp = *kv.second;
    blocks.insert(blocks.end(), pp.small_free.begin(), pp.small_free.end());
    blocks.insert(blocks.end(), pp.large_free.begin(), pp.large_free.end());
    blocks.insert(blocks.end(), pp.set_aside.begin(), pp.set_aside.end());
  }
  for (Block* b : blocks) delete b;
}

size_t BlockPool::round_size(size_t nbytes) {
  if (nbytes < kMinBlockSize) return kMinBlockSize;
  return (nbytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t BlockPool::segment_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

std::string BlockPool::format_bytes(int64_t nbytes) {
  if (nbytes < 1024 && nbytes > -1024) return std::to_string(nbytes) + " bytes";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = double(nbytes) / 1024.0;
  int u = 0;
  while (u < 3 && (v >= 1024.0 || v <= -1024.0)) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f %s", v, units[u]);
  return buf;
}

BlockPool::Block* BlockPool::find_free_block(FreeSet& free, size_t size) {
  // TT_EXERCISE_BEGIN(09, 1)
  Block key;
  key.size = size;
  key.ptr = nullptr;
  auto it = free.lower_bound(&key);  // the smallest block of at least `size` bytes
  if (it == free.end()) return nullptr;
  Block* b = *it;
  free.erase(it);
  return b;
  // TT_EXERCISE_END
}

BlockPool::Block* BlockPool::new_segment(size_t rounded, bool small, bool exact, uint64_t pool_id) {
  size_t seg = exact ? rounded : segment_size(rounded);
  void* p = system_alloc_(seg);
  if (p == nullptr) return nullptr;
  auto* b = new Block();
  b->ptr = static_cast<char*>(p);
  b->size = seg;
  b->small = small;
  b->pool_id = pool_id;
  stats_.reserved_bytes += int64_t(seg);
  ++stats_.num_system_allocs;
  if (pool_id != 0) {
    PrivatePool& pp = *private_.at(pool_id);
    pp.segments.push_back(b);
    pp.stats.reserved_bytes += int64_t(seg);
    ++pp.stats.num_system_allocs;
  }
  return b;
}

BlockPool::FreeSet& BlockPool::free_set(uint64_t id, bool small) {
  if (id == 0) return pool(small);
  PrivatePool& pp = *private_.at(id);
  return small ? pp.small_free : pp.large_free;
}

bool BlockPool::should_split(const Block* block, size_t size) const {
  // TT_EXERCISE_BEGIN(09, 2)
  size_t remaining = block->size - size;
  return block->small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  // TT_EXERCISE_END
}

void* BlockPool::allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  // Storages are at most INT64_MAX bytes (Note [checked sizes]), so the rounding cannot wrap.
  TT_CHECK(nbytes <= size_t(INT64_MAX), "allocate: ", nbytes, " bytes is more than a storage can hold (2^63 - 1)");
  size_t size = round_size(nbytes);
  bool small = size <= kSmallSize;
  std::lock_guard<std::mutex> lock(mu_);
  // The capturing thread's requests go to the capture's private pool (Note [private pools]).
  const uint64_t pool_id =
      capturing_pool_ != 0 && std::this_thread::get_id() == capturing_thread_ ? capturing_pool_ : 0;
  FreeSet& free = free_set(pool_id, small);
  Block* b = find_free_block(free, size);
  if (b == nullptr) b = new_segment(size, small, false, pool_id);
  // Out of memory: hand every cached segment back and try once more. Not during a capture:
  // releasing waits for the device, which a capture forbids.
  if (b == nullptr && capturing_pool_ == 0) {
    release_cached_segments_locked();
    b = new_segment(size, small, false, pool_id);
  }
  // Last resort: a segment of just the rounded size rather than a shared 2 or 20 MiB one.
  if (b == nullptr && segment_size(size) != size) b = new_segment(size, small, /*exact=*/true, pool_id);
  if (b == nullptr) {
    throw OutOfMemoryError(detail::concat(
        name_, " out of memory: tried to allocate ", format_bytes(int64_t(nbytes)), "; ",
        format_bytes(stats_.allocated_bytes), " allocated, ", format_bytes(stats_.reserved_bytes),
        capturing_pool_ != 0
            ? " reserved by tinytorch (a CUDA graph is being captured, so the cache could not be released). "
            : " reserved by tinytorch (the cache was released and the allocation retried). ",
        "Use smaller batches or sequences, or free tensors that are no longer needed"));
  }
  if (should_split(b, size)) {
    auto* rest = new Block();
    rest->ptr = b->ptr + size;
    rest->size = b->size - size;
    rest->small = small;
    rest->pool_id = b->pool_id;
    rest->prev = b;
    rest->next = b->next;
    if (b->next != nullptr) b->next->prev = rest;
    b->next = rest;
    b->size = size;
    free.insert(rest);
  }
  b->allocated = true;
  live_[b->ptr] = b;
  ++stats_.num_allocs;
  stats_.allocated_bytes += int64_t(b->size);
  if (stats_.allocated_bytes > stats_.peak_allocated_bytes) stats_.peak_allocated_bytes = stats_.allocated_bytes;
  if (b->pool_id != 0) {
    MemoryStats& ps = private_.at(b->pool_id)->stats;
    ++ps.num_allocs;
    ps.allocated_bytes += int64_t(b->size);
    if (ps.allocated_bytes > ps.peak_allocated_bytes) ps.peak_allocated_bytes = ps.allocated_bytes;
  }
  return b->ptr;
}

// `neighbour` is block->next; it is absorbed into block and deleted.
void BlockPool::merge_into(Block* block, Block* neighbour) {
  // TT_EXERCISE_BEGIN(09, 3)
  block->size += neighbour->size;
  block->next = neighbour->next;
  if (neighbour->next != nullptr) neighbour->next->prev = block;
  delete neighbour;
  // TT_EXERCISE_END
}

void BlockPool::deallocate(void* ptr, size_t /*nbytes*/) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return;  // not ours (called from destructors: never throw)
  Block* b = it->second;
  live_.erase(it);
  stats_.allocated_bytes -= int64_t(b->size);
  if (b->pool_id != 0) private_.at(b->pool_id)->stats.allocated_bytes -= int64_t(b->size);
  if (b->pool_id == 0 && capturing_pool_ != 0) {
    // A replay may still read it before this point: kept (allocated, so no neighbour merges with
    // it) until the capture's pool is released.
    private_.at(capturing_pool_)->set_aside.push_back(b);
    return;
  }
  free_block_locked(b);
}

// Returns a block that is no longer used to the free set of its pool, merged with free neighbours.
void BlockPool::free_block_locked(Block* b) {
  b->allocated = false;
  FreeSet& free = free_set(b->pool_id, b->small);
  if (b->prev != nullptr && !b->prev->allocated) {
    Block* prev = b->prev;
    free.erase(prev);  // before its size (the set's key) changes
    merge_into(prev, b);
    b = prev;
  }
  if (b->next != nullptr && !b->next->allocated) {
    free.erase(b->next);
    merge_into(b, b->next);
  }
  free.insert(b);
}

void BlockPool::release_cached_segments_locked() {
  // TT_EXERCISE_BEGIN(09, 4)
  std::vector<Block*> whole;  // free blocks that are an entire segment
  for (FreeSet* free : {&small_free_, &large_free_})
    for (Block* b : *free)
      if (b->prev == nullptr && b->next == nullptr) whole.push_back(b);
  if (whole.empty()) return;
  if (synchronize_) synchronize_();  // no queued kernel may still use the memory
  for (Block* b : whole) {
    // Forget the block before freeing it: if the free throws, it is never handed out or freed twice.
    pool(b->small).erase(b);
    stats_.reserved_bytes -= int64_t(b->size);
    std::unique_ptr<Block> owned(b);
    system_free_(b->ptr, b->size);
  }
  // TT_EXERCISE_END
}

MemoryStats BlockPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void BlockPool::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
}

void BlockPool::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  TT_CHECK(capturing_pool_ == 0, "empty_cache: ", name_, " cannot release cached memory while a CUDA graph is "
           "being captured (it would synchronize with the host); call it before or after the capture");
  release_cached_segments_locked();
}

BlockPool::PrivatePool& BlockPool::private_pool_locked(PoolId id, const char* op) {
  auto it = private_.find(id);
  TT_CHECK(it != private_.end(), op, ": ", name_, " has no private pool ", id,
           id == 0 ? " (0 is the shared pool)" : " (never created, or already released)");
  return *it->second;
}

BlockPool::PoolId BlockPool::create_private_pool() {
  std::lock_guard<std::mutex> lock(mu_);
  const PoolId id = next_pool_id_++;
  private_[id] = std::make_unique<PrivatePool>();
  return id;
}

void BlockPool::begin_allocate_to_pool(PoolId id) {
  std::lock_guard<std::mutex> lock(mu_);
  private_pool_locked(id, "begin_allocate_to_pool");
  TT_CHECK(capturing_pool_ == 0, "begin_allocate_to_pool: ", name_, " is already capturing into private pool ",
           capturing_pool_, "; one CUDA graph capture at a time per device");
  capturing_pool_ = id;
  capturing_thread_ = std::this_thread::get_id();
}

void BlockPool::end_allocate_to_pool(PoolId id) {
  std::lock_guard<std::mutex> lock(mu_);
  TT_CHECK(capturing_pool_ == id && id != 0, "end_allocate_to_pool: ", name_, " is not capturing into private pool ",
           id);
  capturing_pool_ = 0;
  capturing_thread_ = std::thread::id();
}

void BlockPool::release_private_pool(PoolId id) {
  std::lock_guard<std::mutex> lock(mu_);
  PrivatePool& pp = private_pool_locked(id, "release_private_pool");
  TT_CHECK(capturing_pool_ != id, "release_private_pool: ", name_, " is still capturing into private pool ", id);
  // Its segments join the shared pool: free blocks move to the shared free sets, blocks in use are
  // retagged and go there when freed. The set keys (size, address) do not change on the way.
  for (Block* head : pp.segments) {
    for (Block* b = head; b != nullptr; b = b->next) {
      if (!b->allocated) {
        (b->small ? pp.small_free : pp.large_free).erase(b);
        pool(b->small).insert(b);
      }
      b->pool_id = 0;
    }
  }
  std::vector<Block*> set_aside = std::move(pp.set_aside);
  private_.erase(id);
  for (Block* b : set_aside) free_block_locked(b);
}

MemoryStats BlockPool::private_pool_stats(PoolId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = private_.find(id);
  TT_CHECK(it != private_.end(), "private_pool_stats: ", name_, " has no private pool ", id);
  return it->second->stats;
}

bool BlockPool::capturing() const {
  std::lock_guard<std::mutex> lock(mu_);
  return capturing_pool_ != 0;
}

}  // namespace tt
