// The CUDA device as a user meets it: memory statistics of the caching allocator (a tensor's
// bytes seen, blocks reused, no device allocation after the second step of a training loop,
// empty_cache), and mixing devices in one op, which is a DeviceError naming both devices.
// All [cuda]: skipped where no GPU is present.
#include "cuda/parity.h"

using namespace tt;
using namespace tt::testing;
using Catch::Matchers::Contains;

TEST_CASE("cuda memory: a tensor's bytes are counted and its block reused", "[cuda][memory]") {
  TT_REQUIRE_CUDA();
  cuda::synchronize();
  MemoryStats before = memory::stats(gpu());
  {
    Tensor t = empty({1000, 1000}, TensorOptions().device(gpu()));
    MemoryStats with = memory::stats(gpu());
    CHECK(with.allocated_bytes >= before.allocated_bytes + 4000000);
    CHECK(with.reserved_bytes >= with.allocated_bytes);
    CHECK(with.peak_allocated_bytes >= with.allocated_bytes);
    CHECK(with.num_allocs == before.num_allocs + 1);
  }
  MemoryStats after = memory::stats(gpu());
  CHECK(after.allocated_bytes == before.allocated_bytes);
  // The freed block is cached: the same request again needs no cudaMalloc.
  {
    Tensor t = empty({1000, 1000}, TensorOptions().device(gpu()));
    CHECK(memory::stats(gpu()).num_system_allocs == after.num_system_allocs);
  }
  // empty_cache hands the unused blocks back: reserved falls to what live tensors hold.
  cuda::empty_cache();
  MemoryStats emptied = memory::stats(gpu());
  CHECK(emptied.reserved_bytes <= after.reserved_bytes);
  CHECK(emptied.allocated_bytes == before.allocated_bytes);
  // The CPU allocator's statistics are separate.
  MemoryStats cpu_before = memory::stats(kCPU);
  Tensor g = zeros({1 << 20}, TensorOptions().device(gpu()));
  CHECK(memory::stats(kCPU).allocated_bytes == cpu_before.allocated_bytes);
}

TEST_CASE("cuda memory: no device allocation after the second training step", "[cuda][memory]") {
  TT_REQUIRE_CUDA();
  manual_seed(3);
  nn::GPT gpt(nn::GPTOptions(17, 32).n_layer(2).n_embd(64).n_head(4));
  gpt.to(gpu());
  optim::AdamW opt(gpt.parameters(), optim::AdamWOptions(1e-3));
  Generator data(5);
  int64_t system_allocs_after_step2 = -1;
  for (int step = 1; step <= 10; ++step) {
    Tensor ids = randint(0, 17, {8, 33}, kInt64, &data).to(gpu());
    opt.zero_grad();
    Tensor loss = F::cross_entropy(gpt(ids.slice(1, 0, 32)).reshape({-1, 17}), ids.slice(1, 1, 33).reshape({-1}));
    loss.backward();
    opt.step();
    (void)loss.item<double>();
    int64_t n = memory::stats(gpu()).num_system_allocs;
    INFO("step " << step << ": " << n << " device allocations so far");
    if (step == 2) system_allocs_after_step2 = n;
    if (step > 2) CHECK(n == system_allocs_after_step2);
  }
  CHECK(system_allocs_after_step2 > 0);
}

TEST_CASE("cuda: mixing devices in one op is a DeviceError naming both", "[cuda][errors]") {
  TT_REQUIRE_CUDA();
  Tensor c = rnd({4, 4}).detach(), d = c.cuda();
  REQUIRE_THROWS_AS(c + d, DeviceError);
  REQUIRE_THROWS_WITH(d * c, Contains("cuda:0") && Contains("cpu"));
  REQUIRE_THROWS_AS(c.matmul(d), DeviceError);
  REQUIRE_THROWS_WITH(d.matmul(c), Contains("cuda:0") && Contains("cpu"));
  REQUIRE_THROWS_AS(where(d > 0, c, d), DeviceError);
  REQUIRE_THROWS_AS(d.index_select(0, tensor({0, 1})), DeviceError);
  REQUIRE_THROWS_AS(d.gather(1, zeros({4, 2}, kInt64)), DeviceError);
  REQUIRE_THROWS_AS(tt::embedding(d, tensor({0, 1})), DeviceError);
  REQUIRE_THROWS_AS(cross_entropy(d, tensor({0, 1, 2, 3})), DeviceError);
  REQUIRE_THROWS_AS(mse_loss(d, c), DeviceError);
  REQUIRE_THROWS_AS(F::layer_norm(d, {4}, ones({4})), DeviceError);
  REQUIRE_THROWS_AS(cat({c, d}), DeviceError);
  Tensor q = rnd({1, 1, 4, 8}).detach();
  REQUIRE_THROWS_AS(F::scaled_dot_product_attention(q.cuda(), q, q.cuda()), DeviceError);
  // A module on the device given a CPU input.
  nn::Linear lin(4, 3);
  lin.to(gpu());
  REQUIRE_THROWS_AS(lin.forward(c), DeviceError);
  // Nothing was changed by the failed calls; the same op on one device works.
  check_same("d + d after the errors", d + d, c + c);
}
