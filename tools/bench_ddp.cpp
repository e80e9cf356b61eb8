// bench_ddp: does DistributedDataParallel's bucketing overlap communication with backward? Run it
// under mpirun (module 16 quotes it):
//
//   mpirun -np 2 -x OMP_NUM_THREADS=1 build/tools/bench_ddp [--layers 4] [--embd 256] [--batch 8]
//          [--context 64] [--rounds 7] [--caps 25,4,1]
//
// One training step's forward + backward of a GPT on every rank, timed in interleaved rounds (every
// setting once per round, in turn) for:
//   local        no DDP: the computation alone;
//   after        DDP with one bucket holding every gradient: its all-reduce starts when backward ends;
//   cap=C        DDP with buckets of C MiB, each all-reduced as soon as it is full.
// plus the all-reduce of every gradient on its own. Prints, on rank 0, each setting's best time, its
// median ratio to `after` over the rounds, and how many buckets started while backward was running.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

namespace {

namespace dist = tt::distributed;

struct Args {
  int64_t layers = 4, embd = 256, batch = 8, context = 64, rounds = 7;
  std::vector<double> caps{25, 4, 1};
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "bench_ddp: %s\nusage: mpirun -np N bench_ddp [--layers N] [--embd E] [--batch B] "
               "[--context T] [--rounds R] [--caps MiB,MiB,...]\n", why);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(("missing a value after " + flag).c_str());
    const std::string v = argv[++i];
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    const bool whole = *end == '\0' && n > 0;
    if (flag == "--caps") {
      a.caps.clear();
      std::stringstream ss(v);
      for (std::string item; std::getline(ss, item, ',');) {
        const double c = std::strtod(item.c_str(), &end);
        if (*end != '\0' || !(c > 0)) usage(("--caps wants positive MiB values, got '" + v + "'").c_str());
        a.caps.push_back(c);
      }
      continue;
    }
    if (!whole) usage((flag + " wants a positive whole number, got '" + v + "'").c_str());
    if (flag == "--layers") a.layers = n;
    else if (flag == "--embd") a.embd = n;
    else if (flag == "--batch") a.batch = n;
    else if (flag == "--context") a.context = n;
    else if (flag == "--rounds") a.rounds = n;
    else usage(("unknown option " + flag).c_str());
  }
  return a;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Setting {
  std::string name;
  double cap_mb = 0;  // 0: no DDP
  std::vector<double> ms;
  size_t overlapped = 0, buckets = 0;
};

}  // namespace

int main(int argc, char** argv) {
  tt::relaunch_with_runtime_env(argv, tt::RuntimePolicy::OpenMPDefault);
  const Args args = parse(argc, argv);
  if (dist::launched_by_mpirun()) dist::init_process_group(dist::Backend::MPI);
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const int64_t V = 64, T = args.context;
  auto options = tt::nn::GPTOptions(V, T).n_layer(args.layers).n_embd(args.embd).n_head(4);
  tt::manual_seed(0);
  auto model = std::make_shared<tt::nn::GPT>(options);
  int64_t numel = 0;
  for (const tt::Tensor& p : model->parameters()) numel += p.numel();
  const double grad_mib = double(numel) * 4 / 1048576.0;

  std::vector<Setting> settings;
  settings.push_back({"local", 0, {}, 0, 0});
  settings.push_back({"after", 1e6, {}, 0, 0});
  for (double c : args.caps) {
    std::ostringstream name;
    name << "cap=" << c;
    settings.push_back({name.str(), c, {}, 0, 0});
  }
  using DDP = tt::nn::DistributedDataParallel<tt::nn::GPT>;
  std::vector<std::unique_ptr<DDP>> ddps;
  for (const Setting& s : settings) {
    if (s.cap_mb == 0) ddps.push_back(nullptr);
    else ddps.push_back(std::make_unique<DDP>(model, tt::nn::DistributedDataParallelOptions().bucket_cap_mb(s.cap_mb)));
  }
  // Every hook is registered once per DDP: only the one whose forward ran should answer. Each
  // wrapper's reducer is switched off (no_sync) except the one being timed.
  tt::Tensor ids = tt::randint(0, V, {args.batch, T}), targets = tt::randint(0, V, {args.batch, T});
  tt::Tensor flat = tt::zeros({numel});
  std::vector<double> allreduce_ms;

  auto step = [&](size_t k) {
    for (auto& p : model->parameters()) p.set_grad(tt::Tensor());
    std::vector<std::unique_ptr<DDP::NoSync>> off;
    for (size_t j = 0; j < ddps.size(); ++j)
      if (ddps[j] && j != k) off.push_back(std::make_unique<DDP::NoSync>(ddps[j]->reducer()));
    dist::barrier();
    const double t0 = now_ms();
    tt::Tensor logits = ddps[k] ? ddps[k]->forward(ids) : model->forward(ids);
    tt::F::cross_entropy(logits.reshape({-1, V}), targets.reshape({-1})).backward();
    const double t1 = now_ms();
    settings[k].ms.push_back(t1 - t0);
    if (ddps[k] && ddps[k]->reducer()) {
      settings[k].overlapped = ddps[k]->reducer()->last_backward().buckets_started_during_backward;
      settings[k].buckets = ddps[k]->reducer()->last_backward().buckets;
    }
  };
  for (size_t k = 0; k < settings.size(); ++k) step(k);  // warm-up
  for (auto& s : settings) s.ms.clear();
  for (int64_t r = 0; r < args.rounds; ++r) {
    for (size_t k = 0; k < settings.size(); ++k) step(k);
    dist::barrier();
    const double t0 = now_ms();
    dist::allreduce(flat, dist::ReduceOp::Avg);
    allreduce_ms.push_back(now_ms() - t0);
  }
  // Every rank's times: the slowest rank decides a step.
  for (auto& s : settings) {
    tt::Tensor mine = tt::tensor(s.ms);
    dist::allreduce(mine, dist::ReduceOp::Max);
    s.ms = mine.to_vector<double>();
  }
  if (rank == 0) {
    std::printf("bench_ddp: %d rank%s, OMP_NUM_THREADS=%s; GPT %lld layers, embd %lld, context %lld, batch %lld "
                "per rank; %.1f MiB of gradients; %lld rounds\n",
                world, world == 1 ? "" : "s", std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "unset",
                (long long)args.layers, (long long)args.embd, (long long)T, (long long)args.batch, grad_mib,
                (long long)args.rounds);
    std::printf("  %-10s %10s %18s %22s\n", "setting", "best ms", "median / after", "buckets (overlapped)");
    const std::vector<double>& after = settings[1].ms;
    for (const Setting& s : settings) {
      std::vector<double> ratios;
      for (size_t r = 0; r < s.ms.size(); ++r) ratios.push_back(s.ms[r] / after[r]);
      std::sort(ratios.begin(), ratios.end());
      const double best = *std::min_element(s.ms.begin(), s.ms.end());
      char buckets[64] = "-";
      if (s.cap_mb > 0) std::snprintf(buckets, sizeof buckets, "%zu (%zu)", s.buckets, s.overlapped);
      std::printf("  %-10s %10.1f %18.3f %22s\n", s.name.c_str(), best, ratios[ratios.size() / 2], buckets);
    }
    std::printf("  all-reduce of all %.1f MiB alone: best %.1f ms\n", grad_mib,
                *std::min_element(allreduce_ms.begin(), allreduce_ms.end()));
  }
  ddps.clear();
  dist::destroy_process_group();
  return 0;
}
