// Module 09 walkthrough: the GPU as a second device. Devices and the clear error without one; two
// address spaces and what a transfer costs (H2D / D2H bandwidth measured on a GPU); kernels and
// launch shapes (the grid-stride loop of backend/cuda/loop.cuh, simulated on the CPU, and timed
// on a GPU); coalescing (a contiguous against a transposed copy); GEMM (the CPU's BLAS against
// cuBLAS, in GFLOP/s); why a caching allocator (system allocations and cache hits counted over a
// training loop, BlockPool's split / reuse / merge shown with a fake system allocator); parity
// testing, the method of tests/cuda; and one training step of a small GPT on each device (time,
// tokens/s, the losses compared). Every section that needs a GPU runs when there is one and prints
// what it measured, and says what it skipped when there is not; the CPU parts always run. Run it
// with `tools/tt walkthrough 09` (or build-*/modules/walkthrough_09). Each step prints its code
// (after ">>>") and the result. Each numbered section is one function; `--step N` reruns
// section N alone, `--list` lists them; the summary of what was skipped ends a full run.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <tinytorch/core/block_pool.h>
#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, best_ms, and SHOW / RUN / SHOW_ERROR

namespace {

// What a timing measured, for the line under it: "best of 5, 2 threads" (tt::get_num_threads()).
std::string best_of(int reps) {
  const int threads = tt::get_num_threads();
  return "best of " + std::to_string(reps) + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

using tt::Tensor;
namespace F = tt::F;

bool g_gpu = false;                // a usable GPU in this process
std::vector<std::string> g_skipped;  // what the summary lists

void skip(const std::string& what) {
  g_skipped.push_back(what);
  say("[skipped: no GPU] " + what);
}

double gbps(double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }

// best_ms of a device op: synchronize after it, so the time covers the work and not the launch.
template <typename Fn>
double device_ms(Fn f, int reps = 5) {
  return best_ms([&] {
    f();
    tt::cuda::synchronize();
  }, reps);
}

// The launch rule of backend/cuda/loop.cuh: 256 threads a block, one block per 256 elements,
// capped at 65535 * 8 blocks; a grid-stride loop covers the rest.
constexpr int64_t kThreads = 256, kMaxBlocks = 65535LL * 8;
int64_t blocks_for(int64_t n) {
  return std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

// --- 1. devices --------------------------------------------------------------------------------

void step_1_devices() {
  say("A Device names a memory: the CPU's, or one GPU's by index. Tensors carry theirs; ops run where\n"
      "their inputs are, and every input must be on the same device.");
  SHOW(tt::Device("cuda:1"));
  SHOW(tt::Device("cpu").is_cpu());
  SHOW(tt::cuda::is_available());
  SHOW(tt::cuda::device_count());
  if (!g_gpu) {
    say("No GPU here. The first CUDA request is a clear DeviceError, never a crash, and nothing else\n"
        "changes: the CPU keeps working.");
    SHOW_ERROR(tt::zeros({2}, tt::kCUDA));
    SHOW_ERROR(tt::ones({2, 3}).cuda());
    skip("moving a tensor and a layer to cuda:0 and printing them");
    return;
  }
  SHOW(tt::cuda::device_description(0));
  RUN(Tensor x = tt::arange(0, 6, 1).reshape({2, 3}).cuda());
  SHOW(x);
  SHOW(x.device());
  RUN(tt::nn::Linear lin(3, 2); lin.to(tt::Device(tt::kCUDA)));
  SHOW(lin.weight.device());
  say("Mixing devices in one op is an error naming both:");
  SHOW_ERROR(x + tt::ones({2, 3}));
}

// --- 2. host and device memory -----------------------------------------------------------------

void step_2_memory_spaces() {
  say("Host memory (DRAM, read by the CPU) and device memory (HBM on the GPU) are separate. A pointer\n"
      "into one means nothing in the other; .cuda() and .cpu() copy the bytes across the bus (PCIe or\n"
      "NVLink): tens of GB/s, against the TB/s the GPU reads its own memory at. So data moves once and\n"
      "stays: parameters, activations and optimizer state live on the device for the whole loop.");
  const int64_t n = int64_t(64) << 20 >> 2;  // 64 MiB of float32
  const double bytes = double(n) * 4;
  Tensor h = tt::randn({n});
  double host_ms = best_ms([&] { (void)h.clone(); });
  say("A 64 MiB copy inside host memory, for scale: " + fmt("%.1f", gbps(2 * bytes, host_ms)) +
      " GB/s (read + write; " + best_of(5) + ").");
  if (!g_gpu) {
    skip("host-to-device and device-to-host bandwidth of a 64 MiB tensor, and a device-to-device copy");
    return;
  }
  Tensor d = h.cuda();
  double h2d = device_ms([&] { (void)h.cuda(); });
  double d2h = device_ms([&] { (void)d.cpu(); });
  double d2d = device_ms([&] { (void)d.clone(); });
  std::printf("    host -> device   %8.2f ms   %7.1f GB/s\n", h2d, gbps(bytes, h2d));
  std::printf("    device -> host   %8.2f ms   %7.1f GB/s\n", d2h, gbps(bytes, d2h));
  std::printf("    device -> device %8.2f ms   %7.1f GB/s (read + write)\n", d2d, gbps(2 * bytes, d2d));
  std::printf("    (best of 5 each, synchronized after every copy)\n");
  say("Compare the rates: on an H100's data sheet HBM3 moves 3.35 TB/s and PCIe 5 x16 64 GB/s each way,\n"
      "about 50 times less. A model that sends its activations to the host every step is bound by\n"
      "the bus, whatever its kernels do.");
}

// --- 3. kernels and launch shapes --------------------------------------------------------------

void step_3_kernels() {
  say("A kernel is one function run by many threads. Threads come in blocks (up to 1024; ours use 256 =\n"
      "8 warps of 32 that execute in lockstep); blocks form the grid. Thread t of block b starts at\n"
      "i = b * 256 + t and steps by the whole grid (gridDim * 256) until i >= n: the grid-stride loop of\n"
      "backend/cuda/loop.cuh. The grid is capped (65535 * 8 blocks), so any n is covered, and a thread\n"
      "past the end simply does nothing. The launch shapes it picks:");
  std::printf("    %12s %10s %14s %18s\n", "n", "blocks", "threads", "elements/thread");
  for (int64_t n : {int64_t(1), int64_t(1000), int64_t(4097), int64_t(1) << 20, int64_t(1) << 30}) {
    int64_t b = blocks_for(n), threads = b * kThreads;
    std::printf("    %12lld %10lld %14lld %18lld\n", (long long)n, (long long)b, (long long)threads,
                (long long)((n + threads - 1) / threads));
  }
  say("The same loop on a toy grid of 2 blocks of 4 threads over n = 19 elements, run on the CPU: each\n"
      "thread's elements. Neighbouring threads touch neighbouring elements at every step.");
  const int64_t toy_threads = 4, toy_blocks = 2, toy_n = 19;
  for (int64_t b = 0; b < toy_blocks; ++b)
    for (int64_t t = 0; t < toy_threads; ++t) {
      std::printf("    block %lld thread %lld:", (long long)b, (long long)t);
      for (int64_t i = b * toy_threads + t; i < toy_n; i += toy_blocks * toy_threads)
        std::printf(" %2lld", (long long)i);
      std::printf("\n");
    }
  if (!g_gpu) {
    skip("timing x + y on 2^26 floats (bandwidth) and an empty-ish launch (launch overhead)");
    return;
  }
  const int64_t n = int64_t(1) << 26;
  Tensor x = tt::randn({n}).cuda(), y = tt::randn({n}).cuda();
  double add_ms = device_ms([&] { (void)(x + y); });
  std::printf("    x + y, 2^26 floats: %.3f ms, %.1f GB/s (2 reads + 1 write per element)\n", add_ms,
              gbps(12.0 * double(n), add_ms));
  Tensor one = tt::ones({1}).cuda();
  double launch_ms = device_ms([&] {
    for (int i = 0; i < 100; ++i) (void)(one + one);
  }) / 100;
  std::printf("    one + one, 1 float: %.1f us per op: launch and bookkeeping, no work\n", launch_ms * 1e3);
  std::printf("    (best of 5 each, synchronized after every run; the second one is 100 launches a run)\n");
  say("Small ops are all overhead: a GPU wants few, large kernels (hence the fused softmax, norms,\n"
      "cross-entropy and optimizer steps).");
}

// --- 4. coalescing -----------------------------------------------------------------------------

void step_4_coalescing() {
  say("Memory moves in transactions of 32-byte sectors. When the 32 threads of a warp read 32 adjacent\n"
      "floats, that is 4 sectors; when each reads a float a row apart (a transposed view), it is 32.\n"
      "Copying x.t() into a contiguous tensor reads with stride n: the same bytes, many more transactions.\n"
      "The CPU has the same effect with 64-byte cache lines:");
  auto compare = [](const Tensor& x, const char* where) {
    const double bytes = double(x.numel()) * 4 * 2;
    double plain = best_ms([&] {
      (void)x.clone();
      if (x.is_cuda()) tt::cuda::synchronize();
    });
    double strided = best_ms([&] {
      (void)x.t().contiguous();
      if (x.is_cuda()) tt::cuda::synchronize();
    });
    std::printf("    %s contiguous copy  %8.3f ms  %7.1f GB/s\n", where, plain, gbps(bytes, plain));
    std::printf("    %s transposed copy  %8.3f ms  %7.1f GB/s  (%.1fx slower; %s)\n", where, strided,
                gbps(bytes, strided), strided / plain, x.is_cuda() ? "best of 5" : best_of(5).c_str());
  };
  compare(tt::randn({2048, 2048}), "cpu ");
  if (!g_gpu) {
    skip("the same contiguous and transposed copies of a 4096 x 4096 float32 tensor on the GPU");
    return;
  }
  compare(tt::randn({4096, 4096}).cuda(), "cuda");
  say("The elementwise engine merges dims whose strides allow it, and takes a vectorized path when all\n"
      "operands are contiguous, so the common case reads each warp's memory in one sweep.");
}

// --- 5. GEMM -------------------------------------------------------------------------------------

double gflops(int64_t n, double ms) { return 2.0 * double(n) * double(n) * double(n) / (ms * 1e-3) / 1e9; }

void step_5_gemm() {
  say("Matmul goes to the CPU's BLAS on the CPU and to cuBLAS on the GPU. [N, N] @ [N, N] is 2 N^3 FLOPs\n"
      "over 3 N^2 numbers: the work per byte grows with N, so a large GEMM runs at compute speed, where\n"
      "the GPU's thousands of lanes pay off. TF32 is off (tt::cuda::allow_tf32() is false): float32\n"
      "products are exact float32 on both devices, so these are float32 FMA rates.");
  const int64_t n = 1024;
  Tensor a = tt::randn({n, n}), b = tt::randn({n, n});
  const double cpu_ms = best_ms([&] { (void)a.matmul(b); }, 3);
  std::printf("    cpu   %4lld^3  %9.3f ms  %9.1f GFLOP/s  (%s)\n", (long long)n, cpu_ms, gflops(n, cpu_ms),
              best_of(3).c_str());
  if (!g_gpu) {
    skip("the same 1024^3 GEMM and a 4096^3 one with cuBLAS on cuda:0, in GFLOP/s against the CPU's");
    return;
  }
  for (int64_t m : {n, int64_t(4096)}) {
    Tensor ad = tt::randn({m, m}).cuda(), bd = tt::randn({m, m}).cuda();
    (void)ad.matmul(bd);  // the first call creates cuBLAS's handle and workspace: not timed
    tt::cuda::synchronize();
    const double ms = device_ms([&] { (void)ad.matmul(bd); });
    std::printf("    cuda  %4lld^3  %9.3f ms  %9.1f GFLOP/s", (long long)m, ms, gflops(m, ms));
    if (m == n) std::printf("  (%.0fx the cpu)", cpu_ms / ms);
    std::printf("\n");
  }
  std::printf("    (cuda: best of 5, synchronized after every run)\n");
  say("At 1024 the GPU is still partly idle (few tiles per SM); at 4096 there are enough tiles for\n"
      "every SM, so expect it near the float32 peak your GPU's data sheet gives.");
}

// --- 6. the caching allocator ------------------------------------------------------------------

// A small training loop on `device`: the count of system allocations after each step, and over the
// whole loop the allocations asked for and how many of them reached the system.
struct LoopAllocs {
  std::vector<int64_t> system_after_step;
  int64_t allocs = 0, system_allocs = 0;
};

LoopAllocs loop_system_allocs(const tt::Device& device) {
  tt::manual_seed(0);
  tt::nn::Sequential mlp(tt::nn::Linear(32, 64), tt::nn::ReLU(), tt::nn::Linear(64, 10));
  mlp.to(device);
  tt::optim::AdamW opt(mlp.parameters(), tt::optim::AdamWOptions(1e-3));
  LoopAllocs out;
  const tt::MemoryStats before = tt::memory::stats(device);
  for (int step = 0; step < 6; ++step) {
    Tensor x = tt::randn({16, 32}).to(device), y = tt::randint(0, 10, {16}).to(device);
    opt.zero_grad();
    Tensor loss = F::cross_entropy(mlp(x), y);
    loss.backward();
    opt.step();
    (void)loss.item<double>();
    out.system_after_step.push_back(tt::memory::stats(device).num_system_allocs);
  }
  const tt::MemoryStats after = tt::memory::stats(device);
  out.allocs = after.num_allocs - before.num_allocs;
  out.system_allocs = after.num_system_allocs - before.num_system_allocs;
  return out;
}

void print_counts(const LoopAllocs& c, const char* where) {
  std::printf("    %s system allocations after steps 1..%zu:", where, c.system_after_step.size());
  for (int64_t v : c.system_after_step) std::printf(" %lld", (long long)v);
  std::printf("\n");
  const int64_t hits = c.allocs - c.system_allocs;
  std::printf("    %s over the loop: %lld allocations, %lld from the system, %lld cache hits (%.1f%%)\n", where,
              (long long)c.allocs, (long long)c.system_allocs, (long long)hits,
              c.allocs > 0 ? 100.0 * double(hits) / double(c.allocs) : 0.0);
}

void step_6_caching_allocator() {
  say("cudaMalloc and cudaFree are slow (microseconds to milliseconds) and cudaFree waits for the whole\n"
      "device. A training step frees and reallocates the same sizes every time, so tinytorch keeps freed\n"
      "blocks and hands them out again. The CPU allocator does the same with malloc. Count the calls that\n"
      "reach the system over a small training loop:");
  print_counts(loop_system_allocs(tt::Device(tt::kCPU)), "cpu ");
  say("After the first step (which also creates the optimizer state) the count stops: every later\n"
      "tensor reuses a cached block. On the GPU the pool is BlockPool (tinytorch/core/block_pool.h): 2 MiB\n"
      "segments for small requests, larger ones for the rest, best fit, split, merge. It takes its memory\n"
      "from an injected system allocator, so it runs here with malloc standing in for cudaMalloc:");
  int system_calls = 0;
  tt::BlockPool pool(
      [&](size_t n) {
        ++system_calls;
        return std::malloc(n);
      },
      [](void* p, size_t) { std::free(p); }, {}, "demo");
  auto off = [&](void* base, void* p) { return (long long)(static_cast<char*>(p) - static_cast<char*>(base)); };
  RUN(void* a = pool.allocate(100); void* b = pool.allocate(1000); void* c = pool.allocate(512));
  std::printf("    offsets in the segment: a %lld, b %lld, c %lld (sizes rounded to 512 bytes)\n", off(a, a),
              off(a, b), off(a, c));
  SHOW(system_calls);
  RUN(pool.deallocate(b, 1000); void* b2 = pool.allocate(700));
  std::printf("    b2 at offset %lld: b's freed block, reused\n", off(a, b2));
  RUN(pool.deallocate(a, 100); pool.deallocate(b2, 700); pool.deallocate(c, 512));
  RUN(void* whole = pool.allocate(1 << 20));
  std::printf("    a 1 MiB block at offset %lld: the freed neighbours merged back into one block\n", off(a, whole));
  SHOW(system_calls);
  tt::MemoryStats s = pool.stats();
  std::printf("    allocated %s, reserved %s, peak %s\n", tt::BlockPool::format_bytes(s.allocated_bytes).c_str(),
              tt::BlockPool::format_bytes(s.reserved_bytes).c_str(),
              tt::BlockPool::format_bytes(s.peak_allocated_bytes).c_str());
  pool.deallocate(whole, 1 << 20);
  if (!g_gpu) {
    skip("the same training loop on cuda:0, counting cudaMalloc calls and cache hits");
    return;
  }
  print_counts(loop_system_allocs(tt::Device(tt::kCUDA)), "cuda");
  tt::MemoryStats g = tt::memory::stats(tt::Device(tt::kCUDA));
  std::printf("    cuda:0 allocated %s, reserved %s\n", tt::BlockPool::format_bytes(g.allocated_bytes).c_str(),
              tt::BlockPool::format_bytes(g.reserved_bytes).c_str());
  RUN(tt::cuda::empty_cache());
  std::printf("    after empty_cache: reserved %s\n",
              tt::BlockPool::format_bytes(tt::memory::stats(tt::Device(tt::kCUDA)).reserved_bytes).c_str());
}

// --- 7. parity testing -------------------------------------------------------------------------

double max_rel(const Tensor& a, const Tensor& ref) {
  Tensor r = ref.detach().cpu().to(tt::kFloat64), x = a.detach().cpu().to(tt::kFloat64);
  return ((x - r).abs() / (r.abs() + 1e-30)).max().item<double>();
}

void step_7_parity() {
  say("A GPU kernel is hard to debug and easy to get almost right (a missed tail, a race). So each one\n"
      "has a slow, simple twin: the CPU kernel. tests/cuda runs every op forward AND backward on CPU\n"
      "tensors and on their .cuda() copies (contiguous, transposed, broadcast, odd sizes, empty) and\n"
      "compares outputs and every input gradient: float64 to ~1e-10, float32 to ~1e-5, integers exactly.\n"
      "Float32 cannot be compared bitwise: the GPU sums in another order. How large is float32's rounding\n"
      "against float64 for the op we check below (on the CPU)?");
  tt::manual_seed(1);
  Tensor a = tt::randn({64, 256}, tt::kFloat64), b = tt::randn({256, 32}, tt::kFloat64);
  Tensor y64 = a.matmul(b).softmax(1), y32 = a.to(tt::kFloat32).matmul(b.to(tt::kFloat32)).softmax(1);
  std::printf("    softmax(a @ b), float32 against float64: max relative difference %.2e\n", max_rel(y32, y64));
  say("The largest relative differences sit on the smallest weights: float32 tolerances are relative\n"
      "AND absolute (1e-5 of the value plus 1e-6), and grow with the length of the sums involved.");
  if (!g_gpu) {
    skip("softmax(a @ b) forward and backward on cuda:0 against the CPU");
    return;
  }
  Tensor ac = a.clone().requires_grad_(), ad = a.cuda().requires_grad_();
  Tensor yc = ac.matmul(b).softmax(1), yd = ad.matmul(b.cuda()).softmax(1);
  Tensor cot = tt::randn(yc.shape(), tt::kFloat64);
  (yc * cot).sum().backward();
  (yd * cot.cuda()).sum().backward();
  std::printf("    float64 cuda vs cpu: output %.2e, grad of a %.2e (max relative difference)\n", max_rel(yd, yc),
              max_rel(ad.grad(), ac.grad()));
}

// --- 8. one training step on each device ---------------------------------------------------------

// One AdamW step of a small GPT (2 layers, embedding 128, 4 heads, context 64, vocabulary 64) on a
// batch of 16 windows, on `device`, from the same weights and batch on every device. Returns the
// best time of 5 steps (after a first, untimed one) and sets the first step's loss.
double gpt_step_ms(const tt::Device& device, double* first_loss) {
  const int64_t V = 64, T = 64, B = 16;
  tt::manual_seed(0);
  tt::nn::GPT gpt(tt::nn::GPTOptions(V, T).n_layer(2).n_embd(128).n_head(4));
  gpt.to(device);
  tt::optim::AdamW opt(gpt.parameters(), tt::optim::AdamWOptions(1e-3));
  tt::Generator gen(1);
  const Tensor ids = tt::randint(0, V, {B, T + 1}, tt::kInt64, &gen);
  const Tensor x = ids.slice(1, 0, T).contiguous().to(device), y = ids.slice(1, 1, T + 1).contiguous().to(device);
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(gpt(x).reshape({-1, V}), y.reshape({-1}));
    loss.backward();
    opt.step();
    return loss;
  };
  *first_loss = step().item<double>();  // also fills the allocator's cache and creates cuBLAS's handle
  return best_ms([&] {
    (void)step();
    if (device.is_cuda()) tt::cuda::synchronize();
  });
}

void step_8_training_step() {
  say("Everything above, together: one training step (forward, cross-entropy, backward, AdamW) of a\n"
      "small GPT, 2 layers, embedding 128, context 64, a batch of 16, from the same weights and batch on\n"
      "each device. The model code is the same; only .to(device) differs.");
  auto row = [](const char* where, double loss, double ms) {
    std::printf("    %s  first-step loss %.7f   one step %9.3f ms   %9.0f tokens/s\n", where, loss, ms,
                16.0 * 64.0 / (ms * 1e-3));
  };
  double cpu_loss = 0.0;
  const double cpu_ms = gpt_step_ms(tt::Device(tt::kCPU), &cpu_loss);
  row("cpu ", cpu_loss, cpu_ms);
  if (!g_gpu) {
    skip("the same training step on cuda:0: its time, tokens/s and loss against the CPU's");
    return;
  }
  double gpu_loss = 0.0;
  const double gpu_ms = gpt_step_ms(tt::Device(tt::kCUDA), &gpu_loss);
  row("cuda", gpu_loss, gpu_ms);
  std::printf("    (best of 5 steps after a first one; cuda synchronized after each)\n");
  std::printf("    the GPU's step is %.1fx the CPU's; the first-step losses differ by %.1e relative\n", cpu_ms / gpu_ms,
              std::abs(gpu_loss - cpu_loss) / std::abs(cpu_loss));
  say("A model this small leaves most of an H100 idle: each kernel is short and the step is bound by\n"
      "launches (a few microseconds each). The GPU's lead grows with the width, the batch and the context.");
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_09";
  w.begin = [] {
    g_gpu = tt::cuda::is_available();
    std::cout << "Module 09: the GPU. " << (g_gpu ? "A GPU is present: every section runs."
                                                  : "No GPU here: the GPU parts are skipped, each one said so.")
              << "\n";
  };
  w.steps = {
      {"1", "Devices: where a tensor's bytes live", step_1_devices},
      {"2", "Two address spaces: transfers cost", step_2_memory_spaces},
      {"3", "Kernels and launch shapes: grid, block, thread, grid-stride loop", step_3_kernels},
      {"4", "Coalescing: neighbouring threads, neighbouring addresses", step_4_coalescing},
      {"5", "GEMM: the CPU's BLAS against cuBLAS", step_5_gemm},
      {"6", "Why a caching allocator", step_6_caching_allocator},
      {"7", "Parity: every CUDA kernel against its CPU twin", step_7_parity},
      {"8", "One training step on each device", step_8_training_step},
  };
  w.end = [](double) {
    heading("Summary");
    if (g_skipped.empty()) {
      say("Every section ran on the GPU.");
    } else {
      say("Skipped for want of a GPU (run the walkthrough on a machine with one to see them):");
      for (const std::string& s : g_skipped) std::cout << "    - " << s << "\n";
    }
  };
  return narrate::run_walkthrough(argc, argv, w);
}
