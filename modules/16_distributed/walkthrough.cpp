// Module 16 walkthrough: distributed data-parallel training. The world (ranks, local ranks, the
// backend); all-reduce and its siblings by hand; all-reduce latency and bandwidth measured against
// message size; two ranks on batch B against one process on batch 2B, parameter by parameter;
// the gradient buckets of the tiny GPT; backward overlapped with the all-reduces against one
// all-reduce after backward, over shared memory and over a simulated slower link (SlowLink);
// no_sync gradient accumulation; the DistributedSampler's shards; and the memory arithmetic of
// ZeRO and tensor parallelism. Run it with `tools/tt walkthrough 16`,
// which starts two ranks under mpirun (or `mpirun -np 2 build/modules/walkthrough_16`). Every
// rank runs every step, since collectives need all of them; only rank 0 prints. Run alone it is a
// world of one: it says so, and the steps that need a partner shrink or explain instead. Each
// numbered section is one function; `--step N` reruns section N alone, `--list` lists them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include <tinytorch/data/distributed_sampler.h>
#include <tinytorch/distributed/data_parallel.h>
#include <tinytorch/distributed/distributed.h>
#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, best_ms, quietly, and SHOW / RUN / SHOW_ERROR

namespace {

using tt::Tensor;
namespace nn = tt::nn;
namespace dist = tt::distributed;

// --- the world -------------------------------------------------------------------------------------

// The group every step uses: the job's default group under mpirun, else this process alone
// (world_of_one(): its collectives leave the data as one rank has it, so DistributedDataParallel
// and its Reducer still build buckets and copy gradients in and out).
std::shared_ptr<dist::ProcessGroup> group() {
  if (dist::is_initialized()) return dist::default_group();
  return dist::world_of_one();
}
int rank() { return group()->rank(); }
int world() { return group()->size(); }
bool alone() { return world() == 1; }
// DDP's options on that group (a DDP without a group would be a plain wrapper, with no reducer).
nn::DistributedDataParallelOptions ddp_options() { return nn::DistributedDataParallelOptions().process_group(group()); }

// Every rank's copy of `local` [*], stacked: [W, *] (an all-gather; every rank gets it).
Tensor gather(const Tensor& local) {
  std::vector<int64_t> shape = local.shape().vec();
  shape.insert(shape.begin(), int64_t(world()));
  Tensor out = tt::zeros(tt::Shape(shape), local.dtype());
  group()->allgather(out, local.contiguous())->wait();
  return out;
}

// One number from every rank: the largest.
double max_over_ranks(double v) {
  Tensor t = tt::tensor({v}, tt::kFloat64);
  group()->allreduce(t, dist::ReduceOp::Max)->wait();
  return t.item<double>();
}

// "[1, 2, 3]": a small tensor's values on one line.
std::string values(const Tensor& t) {
  std::vector<double> v = t.to(tt::kFloat64).to_vector<double>();
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt("%g", v[i]);
  return s + "]";
}

// The largest |a - b| over two lists of tensors (parameters, gradients) of the same shapes.
double max_abs_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d = std::max(d, (a[i].detach() - b[i].detach()).abs().max().item<double>());
  return d;
}

// The largest |p - p on rank 0| over the tensors and the ranks: 0 when every rank holds the same.
double spread_across_ranks(const std::vector<Tensor>& ts) {
  double d = 0;
  for (const Tensor& t : ts) {
    Tensor mine = t.detach().clone();
    Tensor root = mine.clone();
    group()->broadcast(root, 0)->wait();
    d = std::max(d, (mine - root).abs().max().item<double>());
  }
  return max_over_ranks(d);
}

std::vector<Tensor> grads_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> g;
  for (const Tensor& p : params) g.push_back(p.grad().clone());
  return g;
}

// "4 B", "16 KiB", "64 MiB".
std::string bytes_text(double b) {
  if (b >= 1024.0 * 1024.0) return fmt("%.0f MiB", b / (1024.0 * 1024.0));
  if (b >= 1024.0) return fmt("%.0f KiB", b / 1024.0);
  return fmt("%.0f B", b);
}
// "1.23 MiB" with two decimals, for byte counts that are not powers of two.
std::string mib(double b) { return fmt("%.2f MiB", b / (1024.0 * 1024.0)); }
// s right-aligned in `width` columns.
std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? " " + s : std::string(width - s.size(), ' ') + s;
}

// --- the models ------------------------------------------------------------------------------------

// The MLP of sections 4 and 7: 16 inputs, 32 hidden units, 1 output.
std::shared_ptr<nn::Sequential> make_mlp(uint64_t seed) {
  tt::manual_seed(seed);
  return std::make_shared<nn::Sequential>(nn::Linear(16, 32), nn::Tanh(), nn::Linear(32, 1));
}

// Module 14's milestone GPT (vocabulary 11, context 16, 2 blocks, E = 64, 4 heads).
nn::GPTOptions tiny_gpt_options() { return nn::GPTOptions(11, 16).n_layer(2).n_embd(64).n_head(4); }

int64_t count_parameters(const std::vector<Tensor>& ps) {
  int64_t n = 0;
  for (const Tensor& p : ps) n += p.numel();
  return n;
}

// -----------------------------------------------------------------------------------------------

void step_1_world() {
  say("Data-parallel training runs W copies of one program, the ranks 0 .. W-1, each on its own\n"
      "core or GPU, possibly on several machines. mpirun starts them and tells each who it is;\n"
      "init_process_group joins them into the default group that every collective runs on:");
  SHOW(dist::is_available(dist::Backend::MPI));
  SHOW(dist::launched_by_mpirun());
  SHOW(dist::is_initialized());
  SHOW(dist::get_world_size());
  SHOW(dist::get_rank());
  SHOW(dist::get_local_rank());
  if (alone()) {
    say("A world of one: this process was not started by mpirun, so there is nobody to talk to.\n"
        "Every program runs unchanged this way (world size 1, rank 0). The steps below use a\n"
        "group of this process alone (tt::distributed::world_of_one()) and say where a partner is\n"
        "needed; `tools/tt walkthrough 16` runs them on two ranks.");
    return;
  }
  SHOW(dist::to_string(dist::default_group()->backend()));
  say("Every rank runs every line of this walkthrough; only rank 0 prints (the others' std::cout\n"
      "goes nowhere). What each rank knows about itself, gathered to all of them:");
  Tensor me = tt::tensor(std::vector<int64_t>{dist::get_rank(), dist::get_local_rank(), int64_t(::getpid())});
  Tensor all = gather(me);
  std::cout << ">>> gather({get_rank(), get_local_rank(), getpid()})\n";
  for (int r = 0; r < world(); ++r) {
    std::vector<int64_t> v = all[r].to_vector<int64_t>();
    std::cout << "    rank " << v[0] << ": local rank " << v[1] << ", process " << v[2] << "\n";
  }
  say("The local rank is the rank's number on its own machine: with one GPU per rank it picks the\n"
      "GPU (the NCCL backend calls cuda::set_device(local rank)). On one machine it equals the rank.");
}

// -----------------------------------------------------------------------------------------------

void step_2_collectives() {
  say("A collective is called by every rank of the group, in the same order, with tensors of the\n"
      "same shape. all-reduce combines the ranks' tensors elementwise and leaves the result on\n"
      "every rank, in place. Each rank starts with a different tensor, (rank + 1) x [1, 2, 3]:");
  RUN(Tensor x = tt::tensor({1.0, 2.0, 3.0}) * double(dist::get_rank() + 1));
  std::cout << ">>> gather(x)   (every rank's x)\n";
  {
    Tensor all = gather(x);
    for (int r = 0; r < world(); ++r) std::cout << "    rank " << r << ": " << values(all[r]) << "\n";
  }
  for (dist::ReduceOp op : {dist::ReduceOp::Sum, dist::ReduceOp::Avg, dist::ReduceOp::Max}) {
    Tensor y = x.clone();
    dist::allreduce(y, op);
    Tensor all = gather(y);
    const char* name = op == dist::ReduceOp::Sum ? "Sum" : op == dist::ReduceOp::Avg ? "Avg" : "Max";
    std::cout << ">>> y = x.clone(); dist::allreduce(y, ReduceOp::" << name
              << ");   (y on every rank)\n";
    for (int r = 0; r < world(); ++r) std::cout << "    rank " << r << ": " << values(all[r]) << "\n";
  }
  say("Sum adds the W tensors, Avg divides the sum by W (what gradient averaging uses), Max takes\n"
      "the largest. The siblings: broadcast copies one rank's tensor to all; all-gather stacks\n"
      "every rank's tensor into [W, *] on every rank; reduce-scatter sums [W, *] across ranks and\n"
      "leaves row r of the sum on rank r (an all-reduce is a reduce-scatter then an all-gather):");
  {
    Tensor b = x.clone();
    dist::broadcast(b, 0);
    std::cout << ">>> b = x.clone(); dist::broadcast(b, 0);   (rank " << world() - 1 << "'s b)\n    "
              << values(gather(b)[world() - 1]) << "\n";
    Tensor rows = tt::arange(0.0, double(2 * world()), 1.0).reshape({world(), 2}) + 10.0 * double(rank());
    Tensor mine = tt::zeros({2});
    dist::reduce_scatter(mine, rows);
    std::cout << ">>> rows = arange(2W).reshape({W, 2}) + 10 * rank; dist::reduce_scatter(mine, rows);\n";
    Tensor all = gather(mine);
    for (int r = 0; r < world(); ++r) std::cout << "    rank " << r << ": " << values(all[r]) << "\n";
  }
  if (alone()) {
    say("With one rank every collective leaves the data as it is (the sum of one tensor is that\n"
        "tensor). Under mpirun the ranks' values meet here.");
    return;
  }
  say("A collective on tensors whose shapes differ between ranks is a bug MPI does not always\n"
      "catch: with mismatched element counts one rank gets MPI_ERR_TRUNCATE and the other's\n"
      "MPI_Allreduce reports success with garbage. The group compares shapes first, so the error\n"
      "is thrown on every rank, naming both shapes:");
  RUN(Tensor wrong = tt::ones({3 + dist::get_rank()}));
  SHOW_ERROR(dist::allreduce(wrong));
  say("An error only one rank sees is different: the others would wait forever in their next\n"
      "collective. dist::abort(\"why\") ends the whole job at once with \"rank R: why\" on stderr,\n"
      "and an exception escaping main does the same once init_process_group has run.");
}

// -----------------------------------------------------------------------------------------------

void step_3_bandwidth() {
  say("What an all-reduce costs. The ring algorithm sends each rank's tensor around the W ranks in\n"
      "W chunks: W - 1 steps of reduce-scatter, then W - 1 of all-gather, each moving n / W bytes\n"
      "per rank: 2 (W - 1) / W x n bytes in and out of every rank, whatever W is. With a latency\n"
      "alpha per step and beta seconds per byte:\n"
      "    t(n) = 2 (W - 1) alpha + 2 (W - 1) / W x n x beta\n"
      "Small messages pay alpha, large ones beta. Two bandwidths summarize a measurement:\n"
      "algorithm bandwidth n / t, and bus bandwidth 2 (W - 1) / W x n / t, the bytes each rank's\n"
      "link actually carried per second, comparable across W (NCCL's tests report both).");
  if (alone()) {
    say("A world of one has no all-reduce to time (it leaves the tensor as it is). Run\n"
        "`tools/tt walkthrough 16 --step 3` for the table on two ranks.");
    return;
  }
  const double W = world(), bus = 2.0 * (W - 1) / W;
  std::cout << ">>> for each size: barrier(); t0; dist::allreduce(x); t1   (the slowest rank's time; best of reps)\n"
            << "        size      reps      time us   algbw GB/s   busbw GB/s\n";
  double first_us = 0, last_bw = 0, peak_bw = 0;
  int64_t peak_n = 0;
  std::vector<std::pair<int64_t, double>> measured;  // (bytes, best us)
  for (int64_t n : {int64_t(4), int64_t(64), int64_t(1) << 10, int64_t(4) << 10, int64_t(16) << 10,
                    int64_t(64) << 10, int64_t(256) << 10, int64_t(1) << 20, int64_t(4) << 20, int64_t(16) << 20,
                    int64_t(64) << 20}) {
    Tensor x = tt::ones({n / 4});
    const int reps = int(std::max<int64_t>(5, std::min<int64_t>(200, (int64_t(256) << 20) / n / 4)));
    dist::allreduce(x);  // warm-up: buffers, pages, the communication thread
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
      dist::barrier();
      const auto t0 = std::chrono::steady_clock::now();
      dist::allreduce(x);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    Tensor t = tt::tensor(times, tt::Shape{int64_t(times.size())}, tt::kFloat64);
    group()->allreduce(t, dist::ReduceOp::Max)->wait();  // each repetition: its slowest rank
    const double best = t.min().item<double>();
    const double algbw = double(n) / best / 1e9;
    if (n == 4) first_us = best * 1e6;
    measured.emplace_back(n, best * 1e6);
    last_bw = algbw * bus;
    if (last_bw > peak_bw) {
      peak_bw = last_bw;
      peak_n = n;
    }
    std::cout << pad(bytes_text(double(n)), 12) << fmt("%10.0f", reps) << fmt("%13.1f", best * 1e6)
              << fmt("%13.3f", algbw) << fmt("%13.3f", algbw * bus) << "\n";
  }
  const int threads = tt::get_num_threads();
  std::cout << "    (" << world() << " ranks, " << threads << (threads == 1 ? " thread" : " threads")
            << " each, best of reps)\n";
  // n_half: the size where the two terms of t(n) are equal, so that the time is twice the floor;
  // linear between the two measured sizes around it.
  double n_half = 0;
  int64_t below = 0, above = 0;
  for (size_t i = 1; i < measured.size() && n_half == 0; ++i) {
    if (measured[i].second < 2 * first_us) continue;
    const auto [n0, t0] = measured[i - 1];
    const auto [n1, t1] = measured[i];
    n_half = double(n0) + (2 * first_us - t0) / (t1 - t0) * double(n1 - n0);
    below = n0;
    above = n1;
  }
  std::cout << ">>> the latency floor t(4 B); n_half, where the time reaches 2 t(4 B); the best bus bandwidth\n"
            << "    t(4 B) ~ " << fmt("%.1f", first_us) << " us; n_half ~ " << bytes_text(n_half) << " (between "
            << bytes_text(double(below)) << " and " << bytes_text(double(above)) << "); bus bandwidth at best "
            << fmt("%.2f", peak_bw) << " GB/s (" << bytes_text(double(peak_n)) << "), at 64 MiB "
            << fmt("%.2f", last_bw) << " GB/s\n";
  say("t(4 B) is two tiny all-reduces: the group first all-reduces a fingerprint of each\n"
      "collective's arguments, to catch ranks that disagree (section 2), then the data. Below\n"
      "n_half an all-reduce is mostly latency: sending 1 KiB costs about what 4 bytes cost. Above\n"
      "it, time grows with the bytes. n_half is well below t(4 B) x the best bandwidth: small\n"
      "messages never reach the rate of large ones, so one beta does not fit every size. On one\n"
      "machine the \"link\" is memory, shared with every other program, and the bandwidth of the\n"
      "largest sizes moves from run to run. This is why gradients are not sent one tensor at a\n"
      "time (a GPT-2 has ~150 parameter tensors, many of them small) but packed into buckets of\n"
      "megabytes, and why a bucket should not be so large that it waits for all of backward\n"
      "(section 6).");
}

// -----------------------------------------------------------------------------------------------

void step_4_equivalence() {
  say("Data parallelism: every rank holds the same model and takes its own shard of the batch. With\n"
      "a loss that is a mean over the examples and equal shards of B, the gradient of the mean over\n"
      "all W x B examples is the mean of the W shard gradients (a mean of equal-sized means is the\n"
      "mean). Averaging the gradients across ranks therefore gives every rank the gradient of the\n"
      "big batch, and identical optimizer steps keep the copies identical. First by hand, in one\n"
      "process: the gradient of an MLP on 8 rows, against the mean of the gradients of its halves:");
  {
    auto mlp = make_mlp(100);
    tt::manual_seed(7);
    Tensor X = tt::randn({8, 16}), Y = tt::randn({8, 1});
    auto grad_on = [&](const Tensor& x, const Tensor& y) {
      mlp->zero_grad();
      tt::F::mse_loss(mlp->forward(x), y).backward();
      return grads_of(mlp->parameters());
    };
    std::vector<Tensor> whole = grad_on(X, Y);
    std::vector<Tensor> a = grad_on(X.narrow(0, 0, 4), Y.narrow(0, 0, 4));
    std::vector<Tensor> b = grad_on(X.narrow(0, 4, 4), Y.narrow(0, 4, 4));
    std::vector<Tensor> mean;
    for (size_t i = 0; i < a.size(); ++i) mean.push_back((a[i] + b[i]) * 0.5);
    std::cout << ">>> max |grad(rows 0..7) - (grad(rows 0..3) + grad(rows 4..7)) / 2|\n    "
              << fmt("%.3g", max_abs_diff(whole, mean)) << "   (float32 rounding: the same gradient)\n";
  }
  say("Now for real: each rank builds the MLP from a different seed (100 + rank), and\n"
      "DistributedDataParallel broadcasts rank 0's parameters, so all start equal. Each step, rank\n"
      "r trains with AdamW on rows [r B, (r + 1) B) of a batch of W x B rows (B = 4); and every\n"
      "rank also trains, alone and without DDP, a copy built from seed 100 on all W x B rows:\n"
      "what one process with the big batch would do.");
  const int64_t B = 4, W = world(), steps = 5;
  RUN(auto model = make_mlp(100 + uint64_t(dist::get_rank())));
  RUN(nn::DistributedDataParallel<nn::Sequential> ddp(model, ddp_options()));
  std::cout << ">>> spread_across_ranks(ddp.parameters())   (max |p - p on rank 0| over ranks)\n    "
            << fmt("%g", spread_across_ranks(ddp.parameters())) << "\n";
  auto reference = make_mlp(100);
  tt::optim::AdamW opt(ddp.parameters(), tt::optim::AdamWOptions(1e-2));
  tt::optim::AdamW ref_opt(reference->parameters(), tt::optim::AdamWOptions(1e-2));
  std::cout << ">>> for each step: loss = mse(ddp(x[rank's rows]), y[rank's rows]); loss.backward(); opt.step();\n"
            << "    and on every rank, alone: the reference on all " << W * B << " rows\n"
            << "    step   loss (mean of ranks)   loss (one process)   max |param - reference|"
               "   max spread across ranks\n";
  for (int64_t s = 0; s < steps; ++s) {
    tt::manual_seed(1000 + uint64_t(s));  // the same batch on every rank
    Tensor X = tt::randn({W * B, 16}), Y = tt::randn({W * B, 1});
    opt.zero_grad();
    Tensor loss = tt::F::mse_loss(ddp.forward(X.narrow(0, rank() * B, B)), Y.narrow(0, rank() * B, B));
    loss.backward();
    opt.step();
    ref_opt.zero_grad();
    Tensor ref_loss = tt::F::mse_loss(reference->forward(X), Y);
    ref_loss.backward();
    ref_opt.step();
    Tensor mean_loss = loss.detach().clone();
    group()->allreduce(mean_loss, dist::ReduceOp::Avg)->wait();
    const double d = max_over_ranks(max_abs_diff(ddp.parameters(), reference->parameters()));
    std::cout << fmt("%8.0f", double(s + 1)) << fmt("%23.6f", mean_loss.item<double>())
              << fmt("%21.6f", ref_loss.item<double>()) << fmt("%26.3g", d)
              << fmt("%26.3g", spread_across_ranks(ddp.parameters())) << "\n";
  }
  if (alone()) {
    say("With one rank the shard is the whole batch and both columns agree trivially. On two ranks\n"
        "(tools/tt walkthrough 16 --step 4) the gradients of different shards meet in the all-reduce.");
    return;
  }
  say("The ranks stay bit-identical (spread 0: they apply the same averaged gradient to the same\n"
      "parameters with the same optimizer), and they match the one-process run on the big batch to\n"
      "float32 rounding: the sums are added in another order, and AdamW's division by sqrt(v)\n"
      "magnifies the last bits of small gradients a little each step.");
}

// -----------------------------------------------------------------------------------------------

// The buckets of `model` at a cap, one line each: how many tensors, their bytes, the first and last.
void print_buckets(const std::shared_ptr<nn::GPT>& model, double cap_mb) {
  nn::DistributedDataParallel<nn::GPT> ddp(model, ddp_options().bucket_cap_mb(cap_mb));
  std::vector<std::string> names = model->named_parameters().keys();
  std::vector<Tensor> params = model->parameters();
  std::vector<std::vector<size_t>> buckets = ddp.reducer()->bucket_indices();
  std::cout << ">>> ddp.reducer()->bucket_indices()   (bucket_cap_mb " << fmt("%g", cap_mb) << ": " << buckets.size()
            << (buckets.size() == 1 ? " bucket" : " buckets") << ", in launch order)\n";
  for (size_t b = 0; b < buckets.size(); ++b) {
    int64_t bytes = 0;
    for (size_t i : buckets[b]) bytes += params[i].numel() * 4;
    std::cout << "    bucket " << fmt("%2.0f", double(b)) << fmt("%4.0f", double(buckets[b].size())) << " tensors "
              << fmt("%9.0f", double(bytes)) << " bytes   #" << buckets[b].front() << " " << names[buckets[b].front()]
              << " .. #" << buckets[b].back() << " " << names[buckets[b].back()] << "\n";
  }
}

void step_5_buckets() {
  say("Averaging each gradient as soon as backward has produced it would overlap communication with\n"
      "the rest of backward, but would send many small messages, each paying the latency of\n"
      "section 3. DDP packs the gradients into buckets of about bucket_cap_mb (25 MiB by default)\n"
      "and all-reduces a bucket as soon as all its gradients are in. Backward produces gradients\n"
      "roughly in reverse registration order (the head's first, the embeddings' last), so the\n"
      "buckets are filled in reverse parameter order: the first bucket completes first. The tiny\n"
      "GPT of module 14:");
  RUN(auto gpt = std::make_shared<nn::GPT>(tiny_gpt_options()));
  std::vector<Tensor> params = gpt->parameters();
  std::cout << ">>> gpt->parameters().size(), their elements, float32 bytes\n    " << params.size() << " tensors, "
            << count_parameters(params) << " parameters, " << count_parameters(params) * 4 << " bytes\n";
  print_buckets(gpt, 25.0);
  say("All 400 kB fit in one bucket of 25 MiB: a model this small sends one message per step, and\n"
      "it can only start once backward has produced the last gradient. With a cap of 0.05 MiB\n"
      "(52,428 bytes), several buckets, all but the last launched while backward goes on:");
  print_buckets(gpt, 0.05);
  say("A bucket takes parameters in reverse order and closes as soon as it holds the cap or more,\n"
      "so it may pass the cap by its last tensor, and a tensor larger than the cap closes its bucket\n"
      "at once (assign_buckets in distributed/reducer.cpp, as PyTorch's). Every rank builds the\n"
      "same plan from the same model, and every rank must launch the buckets in the same order:\n"
      "MPI and NCCL match collectives by their order, so if rank 0 sent bucket 1 while rank 1 sent\n"
      "bucket 0, each would add its bucket to the other's, or wait forever. A bucket that is full\n"
      "before an earlier one waits for it (Reducer::launch_ready_buckets). The buckets are flat\n"
      "buffers, allocated once: each gradient is copied in when ready, and the averages are\n"
      "copied back into .grad at the end of backward.");
}

// -----------------------------------------------------------------------------------------------

// The link of step 6's second part: --link-gbps and --link-us.
double link_gbps = 0.125;  // 1 Gbit/s Ethernet
double link_us = 50;       // latency of one ring step over it

// A process group whose all-reduces take as long as they would over a slower link: `gbps` GB/s and
// `alpha_us` of latency per ring step, as between two machines. Every collective still runs on
// the real group (here MPI over shared memory); an all-reduce's Work then completes only once such
// a link would have carried it, 2 (W - 1) alpha + 2 (W - 1) / W x n / bandwidth after the later of
// its start and the end of the all-reduce before it (the link carries one at a time). The wait is
// a sleep: like a network card that moves the bytes by DMA, the simulated wire takes no CPU.
class SlowLink final : public dist::ProcessGroup {
 public:
  SlowLink(std::shared_ptr<dist::ProcessGroup> inner, double gbps, double alpha_us)
      : dist::ProcessGroup(inner->rank(), inner->size()),
        inner_(std::move(inner)),
        bytes_per_s_(gbps * 1e9),
        alpha_s_(alpha_us * 1e-6) {}

  // The seconds the link needs for an all-reduce of `bytes`.
  double seconds(double bytes) const {
    const double W = size();
    return 2 * (W - 1) * alpha_s_ + 2 * (W - 1) / W * bytes / bytes_per_s_;
  }

  dist::Backend backend() const override { return inner_->backend(); }
  std::shared_ptr<dist::Work> allreduce(const Tensor& t, dist::ReduceOp op) override {
    return on_link(inner_->allreduce(t, op), t);
  }
  std::shared_ptr<dist::Work> allreduce_unchecked(const Tensor& t, dist::ReduceOp op) override {
    return on_link(inner_->allreduce_unchecked(t, op), t);
  }
  std::shared_ptr<dist::Work> broadcast(const Tensor& t, int root) override { return inner_->broadcast(t, root); }
  std::shared_ptr<dist::Work> allgather(const Tensor& out, const Tensor& in) override {
    return inner_->allgather(out, in);
  }
  std::shared_ptr<dist::Work> reduce_scatter(const Tensor& out, const Tensor& in, dist::ReduceOp op) override {
    return inner_->reduce_scatter(out, in, op);
  }
  std::shared_ptr<dist::Work> barrier() override { return inner_->barrier(); }
  [[noreturn]] void abort(const std::string& why) override {
    inner_->abort(why);
    std::abort();  // not reached: inner_->abort ends the job
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct LinkWork final : dist::Work {
    std::shared_ptr<dist::Work> inner;
    Clock::time_point done;
    bool is_completed() override { return inner->is_completed() && Clock::now() >= done; }
    void wait() override {
      inner->wait();
      std::this_thread::sleep_until(done);
    }
  };
  std::shared_ptr<dist::Work> on_link(std::shared_ptr<dist::Work> work, const Tensor& t) {
    auto w = std::make_shared<LinkWork>();
    w->inner = std::move(work);
    const auto busy = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(seconds(double(t.numel()) * double(t.element_size()))));
    std::lock_guard<std::mutex> lock(mutex_);
    free_ = std::max(Clock::now(), free_) + busy;
    w->done = free_;
    return w;
  }

  std::shared_ptr<dist::ProcessGroup> inner_;
  double bytes_per_s_, alpha_s_;
  std::mutex mutex_;
  Clock::time_point free_{};
};

void step_6_overlap() {
  say("What overlap buys. A GPT of 4 blocks, E = 256, one forward and backward on 2 x 32 tokens\n"
      "per rank, timed three ways: with no communication at all (a plain model), with DDP and one\n"
      "bucket (bucket_cap_mb huge: its all-reduce can only start when backward has produced every\n"
      "gradient, so none of it overlaps), and with DDP and buckets of 1 MiB (the first all-reduces\n"
      "run while backward computes the rest). The three are interleaved, round after round, so\n"
      "that the machine's mood affects them alike.");
  const bool solo = alone();
  if (solo)
    say("A world of one: nothing is sent, so this measures only what the buckets' copies cost.\n"
        "Shrunk to 2 rounds; run under mpirun for the real thing.");
  const nn::GPTOptions options = nn::GPTOptions(64, 32).n_layer(4).n_embd(256).n_head(4);
  auto make = [&] {
    tt::manual_seed(16);
    return std::make_shared<nn::GPT>(options);
  };
  auto plain = make();
  const int64_t n_params = count_parameters(plain->parameters());
  std::cout << ">>> nn::GPT(nn::GPTOptions(64, 32).n_layer(4).n_embd(256).n_head(4))\n    " << n_params
            << " parameters, " << mib(4.0 * double(n_params)) << " of gradients\n";
  tt::manual_seed(uint64_t(160 + rank()));
  Tensor ids = tt::randint(64, {2, 32}), targets = tt::randint(64, {2, 32});
  auto step = [&](auto&& forward, const std::vector<Tensor>& params) {
    for (const Tensor& p : params) p.set_grad(Tensor());
    group()->barrier()->wait();
    const auto t0 = std::chrono::steady_clock::now();
    Tensor logits = forward(ids);
    tt::F::cross_entropy(logits.reshape({-1, 64}), targets.reshape({-1})).backward();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  // The plain model, DDP with one bucket and DDP with 1 MiB buckets, all-reducing over `link`,
  // timed in turn round after round; prints the three best times and the per-round ratios.
  auto compare = [&](const std::shared_ptr<dist::ProcessGroup>& link, const char* what) {
    auto one_model = make(), many_model = make();
    nn::DistributedDataParallel<nn::GPT> one(one_model, ddp_options().process_group(link).bucket_cap_mb(1e6));
    nn::DistributedDataParallel<nn::GPT> many(many_model, ddp_options().process_group(link).bucket_cap_mb(1.0));
    auto run_plain = [&] { return step([&](const Tensor& x) { return plain->forward(x); }, plain->parameters()); };
    auto run_one = [&] { return step([&](const Tensor& x) { return one.forward(x); }, one.parameters()); };
    auto run_many = [&] { return step([&](const Tensor& x) { return many.forward(x); }, many.parameters()); };
    run_plain();
    run_one();
    run_many();
    const int rounds = solo ? 2 : 15;
    double best_plain = 1e30, best_one = 1e30, best_many = 1e30;
    std::vector<double> ratios;
    for (int r = 0; r < rounds; ++r) {
      const double p = max_over_ranks(run_plain()), o = max_over_ranks(run_one()), m = max_over_ranks(run_many());
      best_plain = std::min(best_plain, p);
      best_one = std::min(best_one, o);
      best_many = std::min(best_many, m);
      ratios.push_back(o / m);
    }
    std::sort(ratios.begin(), ratios.end());
    std::cout << ">>> forward + backward (+ gradient averaging), ms, the slowest rank, best of " << rounds
              << " rounds, " << tt::get_num_threads() << (tt::get_num_threads() == 1 ? " thread" : " threads")
              << " a rank; " << what << "\n"
              << "    no communication (plain model)             " << fmt("%8.2f", best_plain) << "\n"
              << "    DDP, one bucket, all-reduce after backward " << fmt("%8.2f", best_one) << "\n"
              << "    DDP, buckets of 1 MiB, overlapped          " << fmt("%8.2f", best_many) << "\n"
              << "    one bucket / 1 MiB buckets: best " << fmt("%.2f", best_one / best_many) << "x, per round "
              << fmt("%.2f", ratios.front()) << " .. " << fmt("%.2f", ratios.back()) << "x (median "
              << fmt("%.2f", ratios[ratios.size() / 2]) << ")\n";
    const dist::Reducer::LastBackward lo = one.reducer()->last_backward(), lm = many.reducer()->last_backward();
    std::cout << ">>> reducer()->last_backward(): buckets started during backward / buckets\n"
              << "    one bucket:      " << lo.buckets_started_during_backward << " / " << lo.buckets << "\n"
              << "    1 MiB buckets:   " << lm.buckets_started_during_backward << " / " << lm.buckets << "\n";
  };
  compare(group(), "all-reduces over shared memory");
  say(solo ? "Alone, the difference between the rows is the cost of copying gradients into buckets and\n"
             "back: small next to the step."
           : "The communication cost is the gap between the first two rows (it includes waiting for\n"
             "the slower rank). Overlap can hide at most that gap, and only if the all-reduces run on\n"
             "resources backward does not need. Here each rank has one core, and the group's\n"
             "communication thread shares it with backward: inside MPI_Allreduce it polls for its\n"
             "partner, and MPI's shared-memory transport copies the bytes with that same core. An\n"
             "all-reduce started early therefore takes cycles from the backward it should hide behind,\n"
             "and waits on a partner that is itself busy computing: on two cores the small buckets\n"
             "are no faster than one bucket, and often slower. With a spare core per rank, or a GPU\n"
             "with NCCL (the all-reduce on its own stream, NVLink or the network moving the bytes),\n"
             "overlap hides most of the gap, while the single bucket always leaves it all exposed.");
  if (solo) return;
  auto link = std::make_shared<SlowLink>(group(), link_gbps, link_us);
  say("What overlap buys when the bytes travel on something that is not the cores: ranks on two\n"
      "machines, joined by a network whose card moves the bytes by DMA while the CPU computes. This\n"
      "machine has no such link, so it is simulated (SlowLink, above): every all-reduce still\n"
      "runs over shared memory, and then waits, asleep, until a link of " + fmt("%g", link_gbps) +
      " GB/s (" + fmt("%g", link_gbps * 8) + " Gbit/s)\n"
      "with " + fmt("%g", link_us) +
      " us of latency per ring step would have carried it, one all-reduce after the other. For\n"
      "all the gradients at once that is:");
  std::cout << ">>> 2 (W - 1) alpha + 2 (W - 1) / W x n / bandwidth, n = " << mib(4.0 * double(n_params)) << "\n    "
            << fmt("%.2f", link->seconds(4.0 * double(n_params)) * 1e3) << " ms\n";
  compare(link, "all-reduces over the simulated link");
  say("The one bucket pays the whole wire time after backward. The 1 MiB buckets start on the\n"
      "wire while backward still computes, so the part of the wire time that backward covers is\n"
      "hidden. The CPU cost of the real all-reduces has not gone away (on a loaded machine it can\n"
      "still eat the gain); what changed is that most of the communication time is now spent on\n"
      "the wire, where nothing computes. (--link-gbps G and --link-us A choose the link.)");
}

// -----------------------------------------------------------------------------------------------

void step_7_no_sync() {
  say("Gradient accumulation: k micro-batches per optimizer step, when the batch does not fit.\n"
      "All-reducing after each would send k times the bytes for nothing: only the sum is needed.\n"
      "Inside ddp.no_sync() backward does not communicate and gradients add up locally in .grad;\n"
      "the first backward after it averages the accumulated sum. Three micro-batches of 4 rows\n"
      "per rank, the first two under no_sync:");
  const int64_t B = 4, W = world(), k = 3;
  auto model = make_mlp(100);
  nn::DistributedDataParallel<nn::Sequential> ddp(model, ddp_options());
  tt::manual_seed(1700);
  Tensor X = tt::randn({k, W * B, 16}), Y = tt::randn({k, W * B, 1});  // micro-batch m, all ranks' rows
  auto micro = [&](int64_t m, int64_t r) {
    return tt::F::mse_loss(ddp.forward(X[m].narrow(0, r * B, B)), Y[m].narrow(0, r * B, B));
  };
  {
    RUN(auto guard = ddp.no_sync());
    RUN(micro(0, dist::get_rank()).backward());
    RUN(micro(1, dist::get_rank()).backward());
  }
  std::cout << ">>> spread_across_ranks(grads)   (after two local backwards: each rank's own sum)\n    "
            << fmt("%.3g", spread_across_ranks(grads_of(ddp.parameters()))) << "\n";
  RUN(micro(2, dist::get_rank()).backward());
  std::cout << ">>> spread_across_ranks(grads)   (after the synced backward)\n    "
            << fmt("%.3g", spread_across_ranks(grads_of(ddp.parameters()))) << "\n";
  auto reference = make_mlp(100);
  for (int64_t m = 0; m < k; ++m)
    for (int64_t r = 0; r < W; ++r)
      tt::F::mse_loss(reference->forward(X[m].narrow(0, r * B, B)), Y[m].narrow(0, r * B, B)).backward();
  std::vector<Tensor> expected;
  for (const Tensor& g : grads_of(reference->parameters())) expected.push_back(g / double(W));
  std::cout << ">>> max |grad - (sum over ranks and micro-batches of the local gradients) / W|\n    "
            << fmt("%.3g", max_over_ranks(max_abs_diff(grads_of(ddp.parameters()), expected))) << "\n";
  say("Dividing that sum by k as well (or scaling each micro-batch's loss by 1 / k) gives the mean\n"
      "over all k x W x B examples. No_sync saves k - 1 all-reduces per step; the price is that\n"
      "the whole bucket traffic of the step is exposed after the last backward (nothing overlaps\n"
      "with the first k - 1).");
}

// -----------------------------------------------------------------------------------------------

std::string list(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + fmt("%2.0f", double(v[i]));
  return s;
}

void step_8_sampler() {
  say("Data parallelism needs each rank to see a different shard of every batch, and all of the\n"
      "shards together to be the batch. data::DistributedSampler does it without communicating:\n"
      "every rank computes the same order of the N examples (the single-process loader's, from\n"
      "seed and epoch), makes it a multiple of W long (padding by repeating its start, or with\n"
      "drop_last cutting its tail), and takes every W-th index from its rank on. N = 10 examples\n"
      "shared by 3 ranks, computed here for each rank in turn (num_replicas and rank given):");
  using tt::data::DistributedSampler;
  using tt::data::DistributedSamplerOptions;
  for (bool drop : {false, true}) {
    std::cout << ">>> DistributedSampler(10, DistributedSamplerOptions().num_replicas(3).rank(r).shuffle(false)"
              << (drop ? ".drop_last(true)" : "") << ").indices()\n";
    for (int64_t r = 0; r < 3; ++r) {
      DistributedSampler s(10, DistributedSamplerOptions().num_replicas(3).rank(r).shuffle(false).drop_last(drop));
      std::cout << "    rank " << r << ": " << list(s.indices()) << "\n";
    }
  }
  say("Padding: 10 is not a multiple of 3, so the order is padded to 12 and examples 0 and 1 are\n"
      "seen twice this epoch (every rank must run the same number of steps, or one would wait in\n"
      "an all-reduce the others never start). drop_last drops example 9 instead. Shuffled, the\n"
      "order changes with the epoch, so set_epoch(e) must be called on every rank each epoch;\n"
      "without it every epoch repeats epoch 0's order:");
  for (uint64_t epoch : {uint64_t(0), uint64_t(1)}) {
    std::cout << ">>> sampler.set_epoch(" << epoch
              << ")   (DistributedSampler(10, ...num_replicas(2).rank(r).seed(0)))\n";
    for (int64_t r = 0; r < 2; ++r) {
      DistributedSampler s(10, DistributedSamplerOptions().num_replicas(2).rank(r).seed(0));
      s.set_epoch(epoch);
      std::cout << "    rank " << r << ": " << list(s.indices()) << "\n";
    }
    std::cout << "    one process, permutation(10, 0, " << epoch << "): " << list(tt::data::permutation(10, 0, epoch))
              << "\n";
  }
  say("The ranks' shards interleave the one-process order: at step k, W ranks with batches of B\n"
      "hold exactly positions [k W B, (k + 1) W B) of it, the batch of W B that one process would\n"
      "load. With this job's real world (the options left to ask tt::distributed), gathered:");
  {
    auto sampler = std::make_shared<DistributedSampler>(10, DistributedSamplerOptions().seed(0));
    std::cout << ">>> DistributedSampler(10, DistributedSamplerOptions().seed(0)): num_samples "
              << sampler->num_samples()
              << ", total_size " << sampler->total_size() << "\n";
    Tensor all = gather(tt::tensor(sampler->indices()));
    for (int r = 0; r < world(); ++r)
      std::cout << "    rank " << r << ": " << list(all[r].to_vector<int64_t>()) << "\n";
    auto ds = std::make_shared<tt::data::TensorDataset>(tt::arange(0.0, 10.0, 1.0).reshape({10, 1}),
                                                        tt::arange(int64_t(10)));
    tt::data::DataLoader loader(ds, tt::data::DataLoaderOptions().batch_size(2), sampler);
    std::cout << ">>> for (const data::Batch& b : DataLoader(ds, batch_size(2), sampler))   (rank 0's targets)\n   ";
    for (const tt::data::Batch& b : loader) std::cout << " " << values(b.target);
    std::cout << "\n";
  }
}

// -----------------------------------------------------------------------------------------------

void step_9_memory() {
  say("Data parallelism replicates everything: each rank holds all parameters, all gradients and\n"
      "all optimizer state. With AdamW in float32 that is 4 + 4 + 8 = 16 bytes a parameter on every\n"
      "rank (plus DDP's bucket copy of the gradients, 4 more). ZeRO (Rajbhandari et al. 2020)\n"
      "shards them instead: stage 1 the optimizer state (each rank updates 1/W of the parameters,\n"
      "then all-gathers them), stage 2 also the gradients (a reduce-scatter replaces the\n"
      "all-reduce: each rank receives only the averaged 1/W it updates), stage 3 also the\n"
      "parameters (all-gathered layer by layer when forward and backward need them). For the\n"
      "tiny GPT and for GPT-2 small (124 M parameters), bytes per rank, activations aside:");
  const int64_t P = quietly([] { return count_parameters(nn::GPT(tiny_gpt_options()).parameters()); });
  for (int64_t n : {P, int64_t(124439808)}) {
    const double p = double(n);
    std::cout << ">>> " << (n == P ? "tiny GPT: " : "GPT-2 small: ") << n << " parameters\n"
              << "    W   DDP (16 P)      ZeRO-1 (8P + 8P/W)  ZeRO-2 (4P + 12P/W)  ZeRO-3 (16P/W)\n";
    for (int W : {1, 2, 4, 8}) {
      std::cout << fmt("%5.0f", double(W)) << pad(mib(16 * p), 14) << pad(mib(8 * p + 8 * p / W), 20)
                << pad(mib(4 * p + 12 * p / W), 21) << pad(mib(16 * p / W), 17) << "\n";
    }
  }
  say("Communication per step and rank: DDP's all-reduce moves 2 (W-1)/W x 4P bytes. ZeRO-1 and 2\n"
      "move the same: a reduce-scatter of the gradients and an all-gather of the updated\n"
      "parameters, (W-1)/W x 4P each. ZeRO-3 all-gathers the parameters again in backward: 1.5x.\n"
      "The memory falls by up to W for the price of, at most, half again the traffic.\n"
      "\n"
      "Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) splits the layers themselves. The\n"
      "MLP's fc1 [4E, E] is split by output rows (column-parallel: each rank computes 4E/W of the\n"
      "hidden units from the whole input, and GELU works on its own units), fc2 [E, 4E] by input\n"
      "columns (row-parallel: each rank's partial product is summed by one all-reduce). Attention\n"
      "splits by heads the same way. Per block, two all-reduces of [B, T, E] in forward and two in\n"
      "backward: activations rather than gradients, on the critical path, so it lives inside a\n"
      "machine (NVLink). For the tiny GPT, the blocks' weights per rank:");
  {
    const nn::GPTOptions o = tiny_gpt_options();
    const int64_t E = o.n_embd(), L = o.n_layer();
    const int64_t block_matrices = L * (4 * E * E + 2 * 4 * E * E);  // attention qkv + proj, fc1 + fc2
    std::cout << ">>> n_layer x (4 E^2 attention + 8 E^2 MLP), E = " << E << ", n_layer = " << L << "\n"
              << "    W   block weights per rank   (of " << block_matrices << ")\n";
    for (int W : {1, 2, 4}) std::cout << fmt("%5.0f", double(W)) << fmt("%25.0f", double(block_matrices / W)) << "\n";
  }
  say("Embeddings, norms and biases stay replicated (or are split by vocabulary). Data, tensor and\n"
      "pipeline parallelism combine: tensor parallel inside a machine, data parallel (or ZeRO)\n"
      "across machines.");
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_16";
  w.begin = [] {
    // Join the job when mpirun started this process (after run_walkthrough's relaunch, before any
    // output). Only rank 0 prints: the others' std::cout goes nowhere (std::cerr still shows).
    if (dist::launched_by_mpirun() && dist::is_available(dist::Backend::MPI) && !dist::is_initialized())
      dist::init_process_group(dist::Backend::MPI);
    // Built without MPI but started by mpirun: every process is a world of one and rank 0; only
    // the launcher's rank 0 prints.
    const char* launcher_rank = std::getenv("OMPI_COMM_WORLD_RANK");
    const bool silent_twin = !dist::is_initialized() && launcher_rank && std::string(launcher_rank) != "0";
    if (dist::get_rank() != 0 || silent_twin) {
      static struct : std::streambuf {
        int overflow(int c) override { return traits_type::not_eof(c); }
      } nowhere;
      std::cout.rdbuf(&nowhere);
    }
    std::cout << "Module 16 - distributed training: ranks and collectives, all-reduce measured, data\n"
                 "parallelism against a bigger batch, buckets and overlap, no_sync, the sampler, ZeRO.\n";
    if (dist::launched_by_mpirun() && !dist::is_available(dist::Backend::MPI))
      std::cout << "Started by mpirun, but this tinytorch was built without MPI: every process is a world of one.\n";
    std::cout << (alone() ? "A world of one (run by `tools/tt walkthrough 16` for two ranks).\n"
                          : "A world of " + std::to_string(world()) + " ranks; rank 0 prints.\n");
    std::cout.precision(6);
  };
  w.usage = "[--link-gbps G] [--link-us A]";
  w.usage_help =
      "  --link-gbps G  step 6's simulated link between the ranks: G GB/s (default 0.125, 1 Gbit/s)\n"
      "  --link-us A    and A microseconds of latency per ring step (default 50)\n";
  w.parse = [](int argc, char** argv, int i) {
    const std::string a = argv[i];
    if (a != "--link-gbps" && a != "--link-us") return 0;
    char* end = nullptr;
    const double v = i + 1 < argc ? std::strtod(argv[i + 1], &end) : -1;
    if (end == nullptr || *end != '\0' || !(v >= 0) || (a == "--link-gbps" && !(v > 0))) {
      std::cerr << "walkthrough_16: " << a << " wants a " << (a == "--link-gbps" ? "positive" : "non-negative")
                << " number\n";
      return -1;
    }
    (a == "--link-gbps" ? link_gbps : link_us) = v;
    return 2;
  };
  w.steps = {
      {"1", "The world: ranks, local ranks, backend", step_1_world},
      {"2", "All-reduce by hand, and its siblings", step_2_collectives},
      {"3", "All-reduce latency and bandwidth", step_3_bandwidth},
      {"4", "Two ranks on B against one process on 2B", step_4_equivalence},
      {"5", "Gradient buckets", step_5_buckets},
      {"6", "Overlapping backward with the all-reduces", step_6_overlap},
      {"7", "no_sync: gradient accumulation", step_7_no_sync},
      {"8", "The DistributedSampler's shards", step_8_sampler},
      {"9", "Memory: ZeRO and tensor parallelism", step_9_memory},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs)
              << " s. Same model, a shard of the batch each, averaged gradients: one bigger batch.\n";
  };
  const int rc = narrate::run_walkthrough(argc, argv, w);
  // A rank that stopped on an error would leave the others waiting in their next collective.
  if (rc != 0 && dist::get_world_size() > 1) dist::abort("walkthrough_16 stopped (its error is above)");
  if (dist::is_initialized()) dist::destroy_process_group();
  return rc;
}
