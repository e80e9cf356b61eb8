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

BlockPool::Block* BlockPool::new_segment(size_t rounded, bool small, bool exact) {
  size_t seg = exact ? rounded : segment_size(rounded);
  void* p = system_alloc_(seg);
  if (p == nullptr) return nullptr;
  auto* b = new Block();
  b->ptr = static_cast<char*>(p);
  b->size = seg;
  b->small = small;
  stats_.reserved_bytes += int64_t(seg);
  ++stats_.num_system_allocs;
  return b;
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
  FreeSet& free = pool(small);
  Block* b = find_free_block(free, size);
  if (b == nullptr) b = new_segment(size, small);
  if (b == nullptr) {  // out of memory: hand every cached segment back and try once more
    release_cached_segments_locked();
    b = new_segment(size, small);
  }
  // Last resort: a segment of just the rounded size rather than a shared 2 or 20 MiB one.
  if (b == nullptr && segment_size(size) != size) b = new_segment(size, small, /*exact=*/true);
  if (b == nullptr) {
    throw OutOfMemoryError(detail::concat(
        name_, " out of memory: tried to allocate ", format_bytes(int64_t(nbytes)), "; ",
        format_bytes(stats_.allocated_bytes), " allocated, ", format_bytes(stats_.reserved_bytes),
        " reserved by tinytorch (the cache was released and the allocation retried). Use smaller batches "
        "or sequences, or free tensors that are no longer needed"));
  }
  if (should_split(b, size)) {
    auto* rest = new Block();
    rest->ptr = b->ptr + size;
    rest->size = b->size - size;
    rest->small = small;
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
  b->allocated = false;
  stats_.allocated_bytes -= int64_t(b->size);
  FreeSet& free = pool(b->small);
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
  release_cached_segments_locked();
}

}  // namespace tt
