// The CPU caching allocator and the device -> allocator lookup.
#include "tinytorch/core/allocator.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tinytorch/backend/cuda/entry.h"
#include "tinytorch/core/error.h"

namespace tt {

namespace {

constexpr size_t kAlignment = 64;
// Cached (free) blocks above this many bytes are returned to the system rather than kept.
constexpr int64_t kMaxCachedBytes = int64_t(4) << 30;

size_t round_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

class CpuCachingAllocator final : public Allocator {
 public:
  ~CpuCachingAllocator() override { empty_cache(); }

  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    // Storages are at most INT64_MAX bytes (Note [checked sizes]), so rounding up cannot wrap.
    TT_CHECK(nbytes <= size_t(INT64_MAX), "allocate: ", nbytes, " bytes is more than a storage can hold (2^63 - 1)");
    size_t size = round_up(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.num_allocs;
    stats_.allocated_bytes += int64_t(size);
    if (stats_.allocated_bytes > stats_.peak_allocated_bytes)
      stats_.peak_allocated_bytes = stats_.allocated_bytes;
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= int64_t(size);
      return p;
    }
    void* p = std::aligned_alloc(kAlignment, size);
    if (p == nullptr) {  // release the cache and try once more
      release_cache_locked();
      p = std::aligned_alloc(kAlignment, size);
    }
    if (p == nullptr) {
      stats_.allocated_bytes -= int64_t(size);
      throw Error(detail::concat("allocate: out of CPU memory, requested ", nbytes,
                                 " bytes with ", stats_.allocated_bytes, " bytes in use"));
    }
    ++stats_.num_system_allocs;
    stats_.reserved_bytes += int64_t(size);
    return p;
  }

  void deallocate(void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    size_t size = round_up(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.allocated_bytes -= int64_t(size);
    if (cached_bytes_ + int64_t(size) > kMaxCachedBytes) {
      std::free(ptr);
      stats_.reserved_bytes -= int64_t(size);
      return;
    }
    free_[size].push_back(ptr);
    cached_bytes_ += int64_t(size);
  }

  MemoryStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
  }
  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mu_);
    release_cache_locked();
  }

 private:
  void release_cache_locked() {
    for (auto& kv : free_) {
      for (void* p : kv.second) {
        std::free(p);
        stats_.reserved_bytes -= int64_t(kv.first);
      }
      kv.second.clear();
    }
    cached_bytes_ = 0;
  }

  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  int64_t cached_bytes_ = 0;
  MemoryStats stats_;
};

}  // namespace

Allocator& allocator_for(const Device& device) {
  if (device.is_cpu()) {
    // Leaked on purpose: tensors in static storage may be freed after main returns.
    static auto* cpu = new CpuCachingAllocator();
    return *cpu;
  }
  check_device_available(device, "allocate");
#ifdef TINYTORCH_HAS_CUDA
  return cuda_allocator(device.index);
#else
  throw DeviceError("allocate: tinytorch was built without CUDA");
#endif
}

namespace memory {
MemoryStats stats(const Device& device) { return allocator_for(device).stats(); }
void reset_peak_stats(const Device& device) { allocator_for(device).reset_peak_stats(); }
void empty_cache(const Device& device) { allocator_for(device).empty_cache(); }
}  // namespace memory

}  // namespace tt
