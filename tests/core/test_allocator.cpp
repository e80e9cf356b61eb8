// The CPU caching allocator: 64-byte alignment, current / peak / count statistics, peak reset,
// and reuse of freed blocks (a loop stops reaching malloc after its first iteration).
#include <cstdint>

#include "test_util.h"

using namespace tt;

namespace {
constexpr int64_t kBlock = 64;
int64_t rounded(int64_t nbytes) { return (nbytes + kBlock - 1) / kBlock * kBlock; }
}  // namespace

TEST_CASE("allocations are 64-byte aligned", "[core][allocator]") {
  for (int64_t n : {1, 3, 17, 1000, 4097}) {
    Tensor t = empty({n});
    CHECK(reinterpret_cast<uintptr_t>(t.data_ptr<float>()) % 64 == 0);
  }
  Tensor z = empty({0});
  CHECK(z.raw_data_ptr() == nullptr);
}

TEST_CASE("memory::stats tracks current bytes and allocation counts", "[core][allocator]") {
  MemoryStats before = memory::stats();
  {
    Tensor t = empty({1000});  // 4000 bytes, rounded up to 4032
    MemoryStats during = memory::stats(kCPU);
    CHECK(during.allocated_bytes - before.allocated_bytes == rounded(4000));
    CHECK(during.num_allocs - before.num_allocs == 1);
    CHECK(during.reserved_bytes >= during.allocated_bytes);
    Tensor v = t.view({10, 100}).t();  // views allocate nothing
    CHECK(memory::stats().allocated_bytes == during.allocated_bytes);
    CHECK(memory::stats().num_allocs == during.num_allocs);
    Tensor d = empty({3}, kFloat64);
    CHECK(memory::stats().allocated_bytes - during.allocated_bytes == rounded(24));
  }
  MemoryStats after = memory::stats();
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.num_allocs - before.num_allocs == 2);
  // An empty tensor takes no block at all.
  Tensor e = empty({0, 5});
  CHECK(memory::stats().num_allocs == after.num_allocs);
  CHECK(memory::stats().allocated_bytes == after.allocated_bytes);
}

TEST_CASE("peak statistics keep the high-water mark until reset", "[core][allocator]") {
  memory::reset_peak_stats();
  MemoryStats base = memory::stats();
  CHECK(base.peak_allocated_bytes == base.allocated_bytes);
  const int64_t big = int64_t(1) << 20;
  {
    Tensor a = empty({big / 4});  // 1 MiB
    Tensor b = empty({big / 4});
    CHECK(memory::stats().peak_allocated_bytes >= base.allocated_bytes + 2 * big);
  }
  MemoryStats after = memory::stats();
  CHECK(after.allocated_bytes == base.allocated_bytes);
  CHECK(after.peak_allocated_bytes >= base.allocated_bytes + 2 * big);
  memory::reset_peak_stats(kCPU);
  CHECK(memory::stats().peak_allocated_bytes == memory::stats().allocated_bytes);
  {
    Tensor c = empty({big / 8});
    CHECK(memory::stats().peak_allocated_bytes == base.allocated_bytes + big / 2);
  }
}

TEST_CASE("freed blocks are reused: a loop stops calling malloc", "[core][allocator]") {
  Tensor a = rand({256, 64}), b = rand({64});
  std::vector<int64_t> system_allocs;
  for (int it = 0; it < 6; ++it) {
    Tensor c = (a + b) * 2.0;
    Tensor s = c.sum({0});
    Tensor m = a.matmul(b);
    CHECK(s.numel() == 64);
    CHECK(m.numel() == 256);
    system_allocs.push_back(memory::stats().num_system_allocs);
  }
  for (size_t i = 2; i < system_allocs.size(); ++i) CHECK(system_allocs[i] == system_allocs[1]);

  SECTION("a block of the same rounded size is handed out again") {
    void* p;
    {
      Tensor t = empty({1000});
      p = t.raw_data_ptr();
    }
    int64_t sys = memory::stats().num_system_allocs;
    Tensor u = empty({1001});  // 4004 bytes round to the same 4032-byte block
    CHECK(u.raw_data_ptr() == p);
    CHECK(memory::stats().num_system_allocs == sys);
  }
  SECTION("empty_cache gives cached blocks back") {
    { Tensor t = empty({12345}); }
    MemoryStats cached = memory::stats();
    CHECK(cached.reserved_bytes > cached.allocated_bytes);
    memory::empty_cache();
    MemoryStats emptied = memory::stats();
    CHECK(emptied.reserved_bytes == emptied.allocated_bytes);
    CHECK(emptied.allocated_bytes == cached.allocated_bytes);
  }
}
