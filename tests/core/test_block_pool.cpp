// BlockPool, the caching allocator behind CUDA tensors, tested on the CPU with a fake system
// allocator that hands out addresses it never lets anyone read: best fit, splitting, coalescing,
// reuse across training steps, release-and-retry on out of memory, exact statistics. The last
// case checks, on a GPU, that tt::memory::stats(kCUDA) sees a tensor's bytes.
#include <cstdint>
#include <map>
#include <thread>
#include <vector>

#include <tinytorch/core/block_pool.h>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {

constexpr size_t KiB = size_t(1) << 10;
constexpr size_t MiB = size_t(1) << 20;
constexpr size_t GiB = size_t(1) << 30;

// Hands out fake, never dereferenced addresses from a bump pointer, within a capacity.
struct FakeSystem {
  size_t capacity = size_t(64) << 30;
  size_t in_use = 0;
  int64_t allocs = 0, frees = 0, syncs = 0;
  uintptr_t next = uintptr_t(1) << 40;
  std::map<void*, size_t> live;

  void* alloc(size_t n) {
    if (in_use + n > capacity) return nullptr;
    void* p = reinterpret_cast<void*>(next);
    next += n + 4096;  // a gap: segments are never adjacent
    in_use += n;
    ++allocs;
    live[p] = n;
    return p;
  }
  void free(void* p, size_t n) {
    REQUIRE(live.count(p) == 1);
    REQUIRE(live[p] == n);
    live.erase(p);
    in_use -= n;
    ++frees;
  }
};

BlockPool make_pool(FakeSystem& sys) {
  return BlockPool([&sys](size_t n) { return sys.alloc(n); }, [&sys](void* p, size_t n) { sys.free(p, n); },
                   [&sys]() { ++sys.syncs; }, "fake:0");
}

char* as_char(void* p) { return static_cast<char*>(p); }

}  // namespace

TEST_CASE("BlockPool rounds sizes and picks segment sizes per pool", "[core][allocator][block_pool]") {
  CHECK(BlockPool::round_size(1) == 512);
  CHECK(BlockPool::round_size(512) == 512);
  CHECK(BlockPool::round_size(513) == 1024);
  CHECK(BlockPool::segment_size(512) == 2 * MiB);
  CHECK(BlockPool::segment_size(MiB) == 2 * MiB);
  CHECK(BlockPool::segment_size(MiB + 512) == 20 * MiB);
  CHECK(BlockPool::segment_size(10 * MiB) == 10 * MiB);
  CHECK(BlockPool::segment_size(11 * MiB) == 12 * MiB);
  CHECK(BlockPool::format_bytes(512) == "512 bytes");
  CHECK(BlockPool::format_bytes(1536) == "1.50 KiB");
  CHECK(BlockPool::format_bytes(int64_t(3 * GiB / 2)) == "1.50 GiB");
}

TEST_CASE("BlockPool splits a segment and reuses a freed block without a new system allocation",
          "[core][allocator][block_pool]") {
  FakeSystem sys;
  BlockPool pool = make_pool(sys);
  void* a = pool.allocate(1000);  // 1024 bytes from a fresh 2 MiB segment
  void* b = pool.allocate(3000);  // 3072 bytes: the split remainder of the same segment
  CHECK(sys.allocs == 1);
  CHECK(as_char(b) == as_char(a) + 1024);
  MemoryStats s = pool.stats();
  CHECK(s.allocated_bytes == 1024 + 3072);
  CHECK(s.reserved_bytes == int64_t(2 * MiB));
  CHECK(s.num_allocs == 2);
  CHECK(s.num_system_allocs == 1);
  pool.deallocate(a, 1000);
  void* c = pool.allocate(1024);  // the freed block is the best fit
  CHECK(c == a);
  CHECK(sys.allocs == 1);
  CHECK(pool.stats().num_allocs == 3);
  pool.deallocate(b, 3000);
  pool.deallocate(c, 1024);
  CHECK(pool.stats().allocated_bytes == 0);
  CHECK(pool.stats().reserved_bytes == int64_t(2 * MiB));
  CHECK(pool.allocate(0) == nullptr);
  pool.deallocate(nullptr, 0);
}

TEST_CASE("BlockPool takes the smallest cached block that fits", "[core][allocator][block_pool]") {
  FakeSystem sys;
  BlockPool pool = make_pool(sys);
  // Three free holes of 4 KiB, 2 KiB and 8 KiB, kept apart by live blocks.
  void* h4 = pool.allocate(4 * KiB);
  void* k1 = pool.allocate(512);
  void* h2 = pool.allocate(2 * KiB);
  void* k2 = pool.allocate(512);
  void* h8 = pool.allocate(8 * KiB);
  void* k3 = pool.allocate(512);
  pool.deallocate(h4, 0);
  pool.deallocate(h2, 0);
  pool.deallocate(h8, 0);
  CHECK(pool.allocate(1500) == h2);      // 2 KiB is the best fit, not the first hole
  CHECK(pool.allocate(3 * KiB) == h4);   // 4 KiB, split: 1 KiB stays cached after it
  CHECK(pool.allocate(1 * KiB) == as_char(h4) + 3 * KiB);  // the remainder, before the 8 KiB hole
  CHECK(pool.allocate(8 * KiB) == h8);
  CHECK(sys.allocs == 1);
  (void)k1, (void)k2, (void)k3;
}

TEST_CASE("BlockPool coalesces free neighbours and empty_cache returns whole segments",
          "[core][allocator][block_pool]") {
  FakeSystem sys;
  BlockPool pool = make_pool(sys);
  void* a = pool.allocate(MiB / 2);
  void* b = pool.allocate(MiB / 2);
  void* c = pool.allocate(MiB / 2);
  CHECK(sys.allocs == 1);
  // Freeing a and c leaves two holes; freeing b merges all three with the segment's tail.
  pool.deallocate(a, 0);
  pool.deallocate(c, 0);
  pool.empty_cache();  // the segment still holds b: nothing goes back
  CHECK(sys.frees == 0);
  CHECK(pool.stats().reserved_bytes == int64_t(2 * MiB));
  pool.deallocate(b, 0);
  // One 2 MiB block again: a 1 MiB request fits at the segment's start.
  void* d = pool.allocate(MiB);
  CHECK(d == a);
  CHECK(sys.allocs == 1);
  pool.deallocate(d, 0);
  pool.empty_cache();
  CHECK(sys.frees == 1);
  CHECK(sys.syncs == 1);  // synchronized once before handing segments back
  CHECK(sys.live.empty());
  MemoryStats s = pool.stats();
  CHECK(s.reserved_bytes == 0);
  CHECK(s.allocated_bytes == 0);
}

TEST_CASE("BlockPool large pool: 20 MiB segments below 10 MiB, split only above 1 MiB of remainder",
          "[core][allocator][block_pool]") {
  FakeSystem sys;
  BlockPool pool = make_pool(sys);
  void* a = pool.allocate(4 * MiB);  // a 20 MiB segment, split: 16 MiB stay cached
  CHECK(pool.stats().reserved_bytes == int64_t(20 * MiB));
  void* b = pool.allocate(17 * MiB);  // does not fit the 16 MiB: its own 18 MiB segment, 1 MiB left unsplit
  CHECK(pool.stats().reserved_bytes == int64_t(38 * MiB));
  CHECK(pool.stats().allocated_bytes == int64_t(4 * MiB + 18 * MiB));
  void* c = pool.allocate(15 * MiB + 512);  // takes the cached 16 MiB whole (1 MiB - 512 left: no split)
  CHECK(c == as_char(a) + 4 * MiB);
  CHECK(pool.stats().allocated_bytes == int64_t(4 * MiB + 18 * MiB + 16 * MiB));
  CHECK(sys.allocs == 2);
  void* d = pool.allocate(MiB + 512);  // the large pool: a new 20 MiB segment, split
  CHECK(sys.allocs == 3);
  CHECK(pool.stats().allocated_bytes == int64_t(38 * MiB + MiB + 512));
  pool.deallocate(c, 0);
  void* e = pool.allocate(16 * MiB - MiB / 2);  // best fit: c's 16 MiB, not d's 19 MiB remainder
  CHECK(e == c);
  CHECK(sys.allocs == 3);
  for (void* p : {a, b, d, e}) pool.deallocate(p, 0);
  CHECK(pool.stats().allocated_bytes == 0);
  pool.empty_cache();
  CHECK(pool.stats().reserved_bytes == 0);
  CHECK(sys.live.empty());
}

TEST_CASE("BlockPool: a training loop stops reaching the system allocator after its first step",
          "[core][allocator][block_pool]") {
  FakeSystem sys;
  BlockPool pool = make_pool(sys);
  // Parameters live across steps; activations, gradients and scratch come and go.
  std::vector<void*> params;
  for (size_t n : {3 * MiB, 768 * KiB, 12 * MiB, 4 * KiB}) params.push_back(pool.allocate(n));
  auto step = [&pool]() {
    std::vector<void*> acts;
    for (size_t n : {6 * MiB, 2 * MiB, 300 * KiB, 17 * KiB, 25 * MiB, size_t(1000), 6 * MiB})
      acts.push_back(pool.allocate(n));
    void* scratch = pool.allocate(9 * MiB);
    pool.deallocate(scratch, 0);
    for (auto it = acts.rbegin(); it != acts.rend(); ++it) pool.deallocate(*it, 0);  // backward frees
    std::vector<void*> grads;
    for (size_t n : {3 * MiB, 768 * KiB, 12 * MiB, 4 * KiB}) grads.push_back(pool.allocate(n));
    for (void* g : grads) pool.deallocate(g, 0);
  };
  step();
  int64_t after_first = pool.stats().num_system_allocs;
  int64_t reserved = pool.stats().reserved_bytes;
  for (int i = 0; i < 5; ++i) step();
  CHECK(pool.stats().num_system_allocs == after_first);
  CHECK(pool.stats().reserved_bytes == reserved);
  CHECK(pool.stats().num_allocs == 4 + 6 * (7 + 1 + 4));
  for (void* p : params) pool.deallocate(p, 0);
}

TEST_CASE("BlockPool statistics: exact allocated, peak and reserved bytes", "[core][allocator][block_pool]") {
  FakeSystem sys;
  BlockPool pool = make_pool(sys);
  void* a = pool.allocate(100);          // 512
  void* b = pool.allocate(2 * MiB);      // 2 MiB from a 20 MiB segment
  void* c = pool.allocate(64 * MiB);     // its own 64 MiB segment
  MemoryStats s = pool.stats();
  CHECK(s.allocated_bytes == int64_t(512 + 2 * MiB + 64 * MiB));
  CHECK(s.peak_allocated_bytes == s.allocated_bytes);
  CHECK(s.reserved_bytes == int64_t(2 * MiB + 20 * MiB + 64 * MiB));
  CHECK(s.num_allocs == 3);
  CHECK(s.num_system_allocs == 3);
  pool.deallocate(c, 0);
  s = pool.stats();
  CHECK(s.allocated_bytes == int64_t(512 + 2 * MiB));
  CHECK(s.peak_allocated_bytes == int64_t(512 + 2 * MiB + 64 * MiB));
  CHECK(s.reserved_bytes == int64_t(86 * MiB));  // cached, not returned
  pool.reset_peak_stats();
  CHECK(pool.stats().peak_allocated_bytes == int64_t(512 + 2 * MiB));
  pool.empty_cache();  // only c's segment is entirely free
  s = pool.stats();
  CHECK(s.reserved_bytes == int64_t(22 * MiB));
  pool.deallocate(a, 0);
  pool.deallocate(b, 0);
  pool.empty_cache();
  s = pool.stats();
  CHECK(s.reserved_bytes == 0);
  CHECK(s.allocated_bytes == 0);
  CHECK(s.num_system_allocs == 3);
  CHECK(sys.live.empty());
}

TEST_CASE("BlockPool out of memory: releases the cache and retries once", "[core][allocator][block_pool]") {
  FakeSystem sys;
  sys.capacity = 100 * MiB;
  BlockPool pool = make_pool(sys);
  void* a = pool.allocate(40 * MiB);
  void* b = pool.allocate(40 * MiB);
  pool.deallocate(a, 0);
  pool.deallocate(b, 0);  // 80 MiB cached in two 40 MiB segments, none in use
  void* c = pool.allocate(70 * MiB);  // 20 MiB left at first: the cache goes back, then it fits
  REQUIRE(c != nullptr);
  CHECK(sys.frees == 2);
  CHECK(sys.syncs == 1);
  MemoryStats s = pool.stats();
  CHECK(s.reserved_bytes == int64_t(70 * MiB));
  CHECK(s.allocated_bytes == int64_t(70 * MiB));
  CHECK(s.num_system_allocs == 3);
  pool.deallocate(c, 0);
}

TEST_CASE("BlockPool out of memory: falls back to a segment of just the request's size",
          "[core][allocator][block_pool]") {
  FakeSystem sys;
  sys.capacity = 15 * MiB;
  BlockPool pool = make_pool(sys);
  void* a = pool.allocate(5 * MiB);  // a 20 MiB segment does not fit; a 5 MiB one does
  REQUIRE(a != nullptr);
  CHECK(pool.stats().reserved_bytes == int64_t(5 * MiB));
  CHECK(pool.stats().allocated_bytes == int64_t(5 * MiB));
  void* b = pool.allocate(MiB / 2);  // the small pool's 2 MiB segment still fits
  CHECK(pool.stats().reserved_bytes == int64_t(7 * MiB));
  pool.deallocate(a, 0);
  pool.deallocate(b, 0);
  pool.empty_cache();
  CHECK(sys.live.empty());
}

TEST_CASE("BlockPool out of memory: OutOfMemoryError with requested, allocated and reserved bytes",
          "[core][allocator][block_pool]") {
  FakeSystem sys;
  sys.capacity = 3 * GiB;
  BlockPool pool = make_pool(sys);
  void* live = pool.allocate(3 * GiB / 2);    // 1.50 GiB in use
  void* cached = pool.allocate(GiB / 4);      // 0.25 GiB, freed below: cached in its own segment
  void* busy = pool.allocate(5 * MiB);        // a 20 MiB segment kept busy
  pool.deallocate(cached, 0);
  REQUIRE_THROWS_AS(pool.allocate(2 * GiB), OutOfMemoryError);
  // The first failure released the cached quarter GiB: 1.50 GiB + 5 MiB allocated, 1.52 GiB reserved.
  REQUIRE_THROWS_WITH(pool.allocate(2 * GiB), Contains("fake:0 out of memory") &&
                                                  Contains("tried to allocate 2.00 GiB") &&
                                                  Contains("1.50 GiB allocated") && Contains("1.52 GiB reserved"));
  MemoryStats s = pool.stats();
  CHECK(s.allocated_bytes == int64_t(3 * GiB / 2 + 5 * MiB));
  CHECK(s.reserved_bytes == int64_t(3 * GiB / 2 + 20 * MiB));
  CHECK(s.num_allocs == 3);  // failed requests are not counted
  // The pool still works after the error.
  void* small = pool.allocate(1000);
  CHECK(small != nullptr);
  for (void* p : {live, busy, small}) pool.deallocate(p, 0);
  pool.empty_cache();
  CHECK(pool.stats().reserved_bytes == 0);
  CHECK(sys.live.empty());
}

TEST_CASE("BlockPool is safe to use from several threads", "[core][allocator][block_pool]") {
  FakeSystem sys;
  BlockPool pool = make_pool(sys);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t]() {
      for (int i = 0; i < 200; ++i) {
        void* p = pool.allocate(size_t(512 * (1 + (i + t) % 7)));
        void* q = pool.allocate(size_t(MiB + 512 * (i % 3)));
        pool.deallocate(p, 0);
        pool.deallocate(q, 0);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(pool.stats().allocated_bytes == 0);
  CHECK(pool.stats().num_allocs == 4 * 200 * 2);
  pool.empty_cache();
  CHECK(pool.stats().reserved_bytes == 0);
}

TEST_CASE("memory::stats(kCUDA) sees the bytes of a CUDA tensor", "[core][allocator][cuda]") {
  TT_REQUIRE_CUDA();
  cuda::synchronize();
  MemoryStats before = memory::stats(kCUDA);
  {
    Tensor t = empty({1000, 1000}, Device(kCUDA));  // 4,000,000 bytes: a large-pool block
    MemoryStats during = memory::stats(kCUDA);
    CHECK(during.allocated_bytes - before.allocated_bytes == int64_t(BlockPool::round_size(4000000)));
    CHECK(during.num_allocs - before.num_allocs == 1);
    CHECK(during.reserved_bytes >= during.allocated_bytes);
    CHECK(during.peak_allocated_bytes >= during.allocated_bytes);
  }
  MemoryStats after = memory::stats(kCUDA);
  CHECK(after.allocated_bytes == before.allocated_bytes);
  // A second tensor of the same size reuses the cached block: no new cudaMalloc.
  {
    Tensor t = empty({1000, 1000}, Device(kCUDA));
    CHECK(memory::stats(kCUDA).num_system_allocs == after.num_system_allocs);
  }
  cuda::empty_cache();
  CHECK(memory::stats(kCUDA).reserved_bytes <= after.reserved_bytes);
  CHECK(memory::stats(kCPU).allocated_bytes >= 0);
}

// --- private pools: the memory of a CUDA graph (Note [private pools]) --------------------------------

TEST_CASE("BlockPool private pool (CUDA graph): a capture's allocations come from segments of its own",
          "[core][allocator][block_pool][graph]") {
  FakeSystem sys;
  BlockPool pool = make_pool(sys);
  void* cached = pool.allocate(4096);  // a shared-pool block, freed: cached for reuse
  pool.deallocate(cached, 4096);
  const BlockPool::PoolId id = pool.create_private_pool();
  CHECK(id != 0);
  pool.begin_allocate_to_pool(id);
  CHECK(pool.capturing());
  void* a = pool.allocate(4096);  // not the cached shared block: a new segment of the private pool
  CHECK(a != cached);
  CHECK(sys.allocs == 2);
  // Another thread's allocation during the capture still comes from the shared pool.
  void* other = nullptr;
  std::thread([&] { other = pool.allocate(4096); }).join();
  CHECK(other == cached);
  MemoryStats ps = pool.private_pool_stats(id);
  CHECK(ps.reserved_bytes == int64_t(2 * MiB));
  CHECK(ps.allocated_bytes == 4096);
  CHECK(ps.num_allocs == 1);
  CHECK(ps.num_system_allocs == 1);
  pool.end_allocate_to_pool(id);
  CHECK_FALSE(pool.capturing());
  pool.deallocate(other, 4096);
  pool.deallocate(a, 4096);
  CHECK(pool.private_pool_stats(id).allocated_bytes == 0);
  // After the capture, the shared pool never hands out the private pool's free memory.
  void* after = pool.allocate(4096);
  CHECK(after == cached);
  void* big = pool.allocate(MiB);  // the private segment is all free, yet the shared segment serves it
  CHECK(as_char(big) == as_char(cached) + 4096);
  CHECK(sys.allocs == 2);
  pool.deallocate(after, 4096);
  pool.deallocate(big, MiB);
  pool.release_private_pool(id);
}

TEST_CASE("BlockPool private pool (CUDA graph): blocks freed during a capture are reused inside it, and a "
          "second capture into the pool finds the same addresses", "[core][allocator][block_pool][graph]") {
  FakeSystem sys;
  BlockPool pool = make_pool(sys);
  const BlockPool::PoolId id = pool.create_private_pool();
  // One "step": a temporary freed mid-step, a second one of the same size, a result kept.
  auto step = [&](std::vector<void*>& seen) {
    void* tmp = pool.allocate(100000);
    seen.push_back(tmp);
    pool.deallocate(tmp, 100000);
    void* tmp2 = pool.allocate(100000);  // the block just freed, from the private pool
    seen.push_back(tmp2);
    void* result = pool.allocate(512);
    seen.push_back(result);
    pool.deallocate(tmp2, 100000);
    return result;
  };
  std::vector<void*> first, second;
  pool.begin_allocate_to_pool(id);
  void* r1 = step(first);
  pool.end_allocate_to_pool(id);
  CHECK(first[0] == first[1]);
  const int64_t allocs_after_first = sys.allocs;
  pool.deallocate(r1, 512);
  pool.begin_allocate_to_pool(id);
  void* r2 = step(second);
  pool.end_allocate_to_pool(id);
  CHECK(second == first);  // same addresses, in the same order
  CHECK(sys.allocs == allocs_after_first);
  CHECK(r2 == r1);
  pool.deallocate(r2, 512);
  CHECK(pool.private_pool_stats(id).allocated_bytes == 0);
  CHECK(pool.private_pool_stats(id).reserved_bytes == int64_t(2 * MiB));
  // The private pool's segments stay reserved while it lives: empty_cache leaves them.
  pool.empty_cache();
  CHECK(pool.stats().reserved_bytes == int64_t(2 * MiB));
  pool.release_private_pool(id);
  pool.empty_cache();
  CHECK(pool.stats().reserved_bytes == 0);
  CHECK(sys.in_use == 0);
}

TEST_CASE("BlockPool private pool (CUDA graph): a shared block freed during a capture is set aside until the "
          "pool is released", "[core][allocator][block_pool][graph]") {
  FakeSystem sys;
  BlockPool pool = make_pool(sys);
  void* old_grad = pool.allocate(8192);  // from before the capture; the captured step replaces it
  const BlockPool::PoolId id = pool.create_private_pool();
  pool.begin_allocate_to_pool(id);
  void* new_grad = pool.allocate(8192);
  pool.deallocate(old_grad, 8192);  // a replay reads it before this point: not reusable
  void* inside = pool.allocate(8192);
  CHECK(inside != old_grad);
  pool.end_allocate_to_pool(id);
  CHECK(pool.stats().allocated_bytes == 2 * 8192);  // set aside: no longer counted as allocated
  void* eager = pool.allocate(8192);  // after the capture, still not handed out
  CHECK(eager != old_grad);
  pool.deallocate(eager, 8192);
  pool.deallocate(inside, 8192);
  pool.empty_cache();  // the set-aside block keeps its segment
  CHECK(sys.live.count(old_grad) == 1);
  pool.release_private_pool(id);
  pool.deallocate(new_grad, 8192);  // retagged to the shared pool by the release
  CHECK(pool.stats().allocated_bytes == 0);
  pool.empty_cache();  // every segment whole again, the set-aside one included
  CHECK(sys.in_use == 0);
  CHECK(sys.frees == 2);
}

TEST_CASE("BlockPool private pool (CUDA graph): a tensor kept past the graph keeps its block; released memory "
          "serves the shared pool", "[core][allocator][block_pool][graph]") {
  FakeSystem sys;
  BlockPool pool = make_pool(sys);
  const BlockPool::PoolId id = pool.create_private_pool();
  pool.begin_allocate_to_pool(id);
  void* loss = pool.allocate(512);
  void* act = pool.allocate(3 * MiB);  // a 20 MiB large-pool segment
  pool.deallocate(act, 3 * MiB);
  pool.end_allocate_to_pool(id);
  const int64_t allocs = sys.allocs;
  CHECK(allocs == 2);
  pool.release_private_pool(id);
  REQUIRE_THROWS_WITH(pool.private_pool_stats(id), Contains("has no private pool"));
  void* reuse = pool.allocate(3 * MiB);  // the released large segment, no new system allocation
  CHECK(reuse == act);
  CHECK(sys.allocs == allocs);
  void* small = pool.allocate(1024);  // the loss's segment, split after the loss
  CHECK(as_char(small) == as_char(loss) + 512);
  pool.deallocate(reuse, 3 * MiB);
  pool.deallocate(small, 1024);
  pool.empty_cache();
  CHECK(pool.stats().reserved_bytes == int64_t(2 * MiB));  // the loss still holds its segment
  pool.deallocate(loss, 512);
  pool.empty_cache();
  CHECK(pool.stats().reserved_bytes == 0);
  CHECK(sys.in_use == 0);
}

TEST_CASE("BlockPool private pool (CUDA graph): nothing synchronizes during a capture, and misuse is refused",
          "[core][allocator][block_pool][graph]") {
  FakeSystem sys;
  sys.capacity = 64 * MiB;
  BlockPool pool = make_pool(sys);
  void* cached = pool.allocate(30 * MiB);
  pool.deallocate(cached, 30 * MiB);  // 30 MiB cached in the shared pool
  const BlockPool::PoolId id = pool.create_private_pool();
  pool.begin_allocate_to_pool(id);
  REQUIRE_THROWS_WITH(pool.empty_cache(), Contains("fake:0 cannot release cached memory while a CUDA graph is "
                                                   "being captured"));
  // Out of memory during a capture: no release of the cache (it would wait for the device).
  REQUIRE_THROWS_AS(pool.allocate(40 * MiB), OutOfMemoryError);
  REQUIRE_THROWS_WITH(pool.allocate(40 * MiB), Contains("a CUDA graph is being captured"));
  CHECK(sys.syncs == 0);
  CHECK(pool.stats().reserved_bytes == int64_t(30 * MiB));
  const BlockPool::PoolId other = pool.create_private_pool();
  REQUIRE_THROWS_WITH(pool.begin_allocate_to_pool(other), Contains("one CUDA graph capture at a time"));
  REQUIRE_THROWS_WITH(pool.end_allocate_to_pool(other), Contains("is not capturing into private pool"));
  REQUIRE_THROWS_WITH(pool.release_private_pool(id), Contains("is still capturing"));
  pool.end_allocate_to_pool(id);
  REQUIRE_THROWS_WITH(pool.begin_allocate_to_pool(0), Contains("(0 is the shared pool)"));
  REQUIRE_THROWS_WITH(pool.begin_allocate_to_pool(99), Contains("never created, or already released"));
  pool.release_private_pool(id);
  pool.release_private_pool(other);
  REQUIRE_THROWS_WITH(pool.release_private_pool(id), Contains("has no private pool"));
  // Outside a capture, out of memory releases the cache again.
  void* big = pool.allocate(40 * MiB);
  CHECK(sys.syncs == 1);
  pool.deallocate(big, 40 * MiB);
}
