// tt_bench --device cuda: tinytorch's CUDA backend on linear_fb, softmax_fb, layernorm_fb,
// gpt_step (eager, bf16 and captured in a CUDA graph) and the compute-bound GPT-2-small gpt2_step
// (eager and graph), beside a bare cuBLAS linear_fb (the same three SGEMMs), a device-to-device
// copy (the bandwidth the memory-bound softmax is judged against) and PyTorch eager on the same GPU
// (tools/bench_pytorch_cuda.py); the flags, the run() driver and the main results table. Issue 8's
// attention rows (sdpa_*) are in cuda_bench_sdpa.cpp, the helpers both use in cuda_bench_common.h.
// Usage in tools/bench/README.md ("GPU benchmarks", "Attention").
//
// Built only when tinytorch has its CUDA backend (TINYTORCH_HAS_CUDA; cuda_bench_off.cpp stands in
// otherwise), linked with CUDA::cudart and CUDA::cublas, the same shared libraries tinytorch uses.
// tinytorch queues its work on its own blocking stream of device 0 (tt::cuda::stream), which the
// legacy default stream waits for and is waited on by, so events recorded there bracket its work.
#include "cuda_bench.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_bench_common.h"
#include "tinytorch/tinytorch.h"

namespace ttbench::cuda_bench {
namespace {

// One cuBLAS handle for the bare-cuBLAS rows, created on first use and destroyed at exit of run().
struct Blas {
  cublasHandle_t handle = nullptr;
  cublasHandle_t get() {
    if (handle == nullptr) check(cublasCreate(&handle), "cublasCreate");
    return handle;
  }
  ~Blas() {
    if (handle != nullptr) cublasDestroy(handle);
  }
};

// --- workloads ---------------------------------------------------------------------------------
constexpr int64_t kLinRows = 8192, kLinIn = 768, kLinOut = 3072;
constexpr int64_t kSoftRows = 8192, kSoftCols = 4096;

// A GPT training step's shape: the CPU gpt_step's model at context 256, batch 64 (gpt_step), and
// GPT-2 small (gpt2_step: E 768, 12 heads, 12 layers, context 1024, batch 8, vocab 50304).
struct GptShape {
  int64_t vocab, T, B, layers, embd, heads;
};
constexpr GptShape kGptSmall{65, 256, 64, 4, 128, 4};
constexpr GptShape kGpt2{50304, 1024, 8, 12, 768, 12};

// Matrix FLOPs of one step, counted as the CPU gpt_step's (workloads.cpp): per token and layer
// 24·E² (projections and MLP) + 4·T·E (causal scores and mix, counted whole), the head 2·E·V;
// x3 with the backward.
double gpt_flops(const GptShape& s) {
  return 3.0 * double(s.B) * double(s.T) *
         (double(s.layers) * (24.0 * double(s.embd * s.embd) + 4.0 * double(s.T * s.embd)) +
          2.0 * double(s.embd * s.vocab));
}

std::function<void()> linear_fb() {
  auto fc = std::make_shared<tt::nn::Linear>(kLinIn, kLinOut);
  fc->to(kGpu);
  tt::Tensor x = gpu_uniform({kLinRows, kLinIn}, -1, 1).requires_grad_(true);
  return forward_backward([=] { return fc->forward(x); }, gpu_uniform({kLinRows, kLinOut}, -1, 1),
                          {x, fc->weight, fc->bias});
}

// The three SGEMMs of linear_fb's forward and backward (y = x W^T, dx = dy W, dW = dy^T x), on
// row-major buffers seen by column-major cuBLAS as their transposes.
std::function<void()> linear_fb_cublas(Blas& blas) {
  cublasHandle_t h = blas.get();
  auto buf = [](const tt::Shape& s) { return tt::empty(s, tt::TensorOptions().dtype(tt::kFloat32).device(kGpu)); };
  tt::Tensor x = gpu_uniform({kLinRows, kLinIn}, -1, 1), w = gpu_uniform({kLinOut, kLinIn}, -1, 1);
  tt::Tensor dy = gpu_uniform({kLinRows, kLinOut}, -1, 1);
  tt::Tensor y = buf({kLinRows, kLinOut}), dx = buf({kLinRows, kLinIn}), dw = buf({kLinOut, kLinIn});
  return [=] {
    const float one = 1, zero = 0;
    const int R = int(kLinRows), I = int(kLinIn), O = int(kLinOut);
    constexpr cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    check(cublasSgemm(h, T, N, O, R, I, &one, w.data_ptr<float>(), I, x.data_ptr<float>(), I, &zero,
                   y.data_ptr<float>(), O), "cublasSgemm (y)");
    check(cublasSgemm(h, N, N, I, R, O, &one, w.data_ptr<float>(), I, dy.data_ptr<float>(), O, &zero,
                   dx.data_ptr<float>(), I), "cublasSgemm (dx)");
    check(cublasSgemm(h, N, T, I, O, R, &one, x.data_ptr<float>(), I, dy.data_ptr<float>(), O, &zero,
                   dw.data_ptr<float>(), I), "cublasSgemm (dW)");
  };
}

std::function<void()> softmax_fb() {
  tt::Tensor x = gpu_uniform({kSoftRows, kSoftCols}, -4, 4).requires_grad_(true);
  return forward_backward([=] { return x.softmax(-1); }, gpu_uniform({kSoftRows, kSoftCols}, -1, 1), {x});
}

// dst = src over softmax_fb's [rows, 4096] float32: the device-to-device bandwidth reference.
std::function<void()> copy_dd() {
  tt::Tensor src = gpu_uniform({kSoftRows, kSoftCols}, 0, 1);
  tt::Tensor dst = tt::empty(src.shape(), src.options());
  return [=]() mutable { dst.copy_(src); };
}

std::function<void()> layernorm_fb() {
  auto ln = std::make_shared<tt::nn::LayerNorm>(tt::nn::LayerNormOptions({768}));
  ln->to(kGpu);
  tt::Tensor x = gpu_uniform({8192, 768}, -1, 1).requires_grad_(true);
  return forward_backward([=] { return ln->forward(x); }, gpu_uniform({8192, 768}, -1, 1),
                          {x, ln->weight, ln->bias});
}

// One GPT training step's model (pre-norm blocks, MLP 4x, tied head), AdamW(1e-3, weight decay
// 0.01) and batch, on the GPU: logits, cross-entropy, zero_grad, backward, AdamW step. Seeded, so
// two of the same shape start from the same weights and batch. With `bf16`, the logits and the
// loss under tt::AutocastGuard(kCUDA, kBFloat16) (gpt_step_bf16, issue 19).
struct GptTrainer {
  GptShape s;
  bool bf16 = false;
  std::shared_ptr<tt::nn::GPT> gpt;
  std::shared_ptr<tt::optim::AdamW> opt;
  tt::Tensor ids, targets;

  GptTrainer(const GptShape& shape, bool bf16_) : s(shape), bf16(bf16_) {
    tt::manual_seed(1234);
    gpt = std::make_shared<tt::nn::GPT>(tt::nn::GPTOptions(s.vocab, s.T)
                                            .n_layer(s.layers)
                                            .n_embd(s.embd)
                                            .n_head(s.heads)
                                            .mlp_ratio(4)
                                            .tie_weights(true));
    gpt->to(kGpu);
    tt::Tensor tokens = tt::randint(0, s.vocab, {s.B, s.T + 1}).to(kGpu);
    ids = tokens.slice(1, 0, s.T).contiguous();
    targets = tokens.slice(1, 1, s.T + 1).contiguous().reshape({s.B * s.T});
    opt = std::make_shared<tt::optim::AdamW>(gpt->parameters(), tt::optim::AdamWOptions(1e-3).weight_decay(0.01));
  }

  tt::Tensor step() {  // the loss, left on the GPU
    tt::Tensor loss;
    {
      tt::AutocastGuard autocast(tt::kCUDA, tt::kBFloat16, bf16);
      loss = tt::F::cross_entropy(gpt->forward(ids).reshape({s.B * s.T, s.vocab}), targets);
    }
    opt->zero_grad();
    loss.backward();
    opt->step();
    return loss;
  }
};

std::function<void()> gpt_step(const GptShape& shape, bool bf16 = false) {
  auto trainer = std::make_shared<GptTrainer>(shape, bf16);
  return [trainer] { (void)trainer->step(); };
}

// What a graph row checked before it was timed: the losses of its replays against the eager
// steps of an identical trainer, the captured graph's size and its private pool.
struct GraphCheck {
  std::vector<double> eager, graph;  // eager: all warm-up + replay steps; graph: the replays
  double max_rel_diff = 0;
  size_t nodes = 0;
  double pool_mib = 0;
};

// Issue 17's rule for "identical losses": each replay's loss within 1e-5 relative of the eager
// step's. Not bit-exact, because the embedding's backward adds rows with float atomics, whose
// order (and so the last bits of a sum) may change between any two runs, eager or not.
constexpr double kGraphLossRtol = 1e-5;

// The gpt_step workload captured once in a tt::cuda::Graph (docs/cuda_graphs.md) and replayed:
// `warm` eager steps (AdamW's state, cuBLAS, the allocator), the cache emptied, one step captured,
// `replays` replays whose losses are checked against an eager trainer's first warm + replays steps.
// The op timed is one replay. Throws what the capture throws (a step that synchronizes with the
// host: docs/cuda_graphs.md).
std::function<void()> gpt_step_graph(const GptShape& shape, int warm, int replays, GraphCheck& check) {
  {
    GptTrainer eager(shape, false);
    for (int i = 0; i < warm + replays; ++i) check.eager.push_back(eager.step().item<double>());
  }
  tt::cuda::empty_cache();
  auto trainer = std::make_shared<GptTrainer>(shape, false);
  for (int i = 0; i < warm; ++i) (void)trainer->step();
  tt::cuda::synchronize(0);
  tt::cuda::empty_cache();  // the captured step's memory from its own segments, not the warm-up's cache
  auto graph = std::make_shared<tt::cuda::Graph>(0);
  auto loss = std::make_shared<tt::Tensor>();
  graph->capture([&] { *loss = trainer->step(); });
  check.nodes = graph->num_nodes();
  check.pool_mib = double(graph->pool_stats().reserved_bytes) / double(1 << 20);
  for (int i = 0; i < replays; ++i) {
    graph->replay();
    const double got = loss->item<double>(), want = check.eager[size_t(warm + i)];
    check.graph.push_back(got);
    check.max_rel_diff = std::max(check.max_rel_diff, std::fabs(got - want) / std::max(1e-30, std::fabs(want)));
  }
  return [trainer, graph, loss] { graph->replay(); };
}

// The dense bf16 tensor-core peak of device 0 in TFLOP/s, from its name (vendor datasheets, without
// sparsity): H100 SXM 989, H100 PCIe 756, H200 989, A100 312; 0 when unknown (MFU not printed).
double bf16_peak_tflops() {
  const std::string name = tt::cuda::device_description(0);
  if (name.find("H200") != std::string::npos) return 989;
  if (name.find("H100") != std::string::npos) return name.find("PCIe") != std::string::npos ? 756 : 989;
  if (name.find("A100") != std::string::npos) return 312;
  return 0;
}

// --- PyTorch's times: {"name": ms, ...} from tools/bench_pytorch_cuda.py --------------------------
std::map<std::string, double> parse_times(const std::string& text) {
  std::map<std::string, double> out;
  static const std::regex entry("\"([A-Za-z0-9_]+)\"\\s*:\\s*([-+0-9.eE]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), entry); it != std::sregex_iterator(); ++it)
    out[(*it)[1].str()] = std::atof((*it)[2].str().c_str());
  return out;
}

// A shell word: s in single quotes, its own single quotes written '\''.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// `extra_args` go to the script (already shell-quoted): --filter, --rounds, --warmup.
std::map<std::string, double> pytorch_times(const std::string& json_file, const std::string& script,
                                            const std::string& extra_args, std::string& source) {
  std::string text;
  if (!json_file.empty()) {
    std::ifstream in(json_file);
    if (!in) throw std::runtime_error("--pytorch-json: cannot read " + json_file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    source = json_file;
  } else {
    if (!std::ifstream(script)) {
      source = "not run (" + script + " not found; pass --pytorch-script or --pytorch-json)";
      return {};
    }
    const std::string cmd = "python3 " + shell_quote(script) + " --json" + extra_args + " 2>/dev/null";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (pipe == nullptr) return {};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, pipe)) > 0) text.append(chunk, n);
    const int status = pclose(pipe);
    if (status != 0) {
      source = "not run (python3 " + script + " failed: is torch with CUDA installed?)";
      return {};
    }
    source = "python3 " + script;
  }
  return parse_times(text);
}

// --- the run -----------------------------------------------------------------------------------
void usage() {
  std::printf(
      "usage: tt_bench --device cuda [--filter REGEX] [--rounds N] [--warmup N] [--no-math]\n"
      "                [--pytorch-json FILE | --pytorch-script PATH | --no-pytorch]\n"
      "  --filter REGEX         only the workloads whose name matches (ECMAScript regex search), e.g.\n"
      "                         'sdpa' (all attention rows), 'sdpa_d64_n4096', '_fwd$'; passed on to PyTorch's script\n"
      "  --no-math              attention: skip tinytorch's math-path rows (flash and flash TF32 only)\n"
      "  --pytorch-json FILE    PyTorch's times from `python3 tools/bench_pytorch_cuda.py --json > FILE`\n"
      "  --pytorch-script PATH  run that script (default tools/bench_pytorch_cuda.py from the cwd)\n"
      "  --no-pytorch           tinytorch and bare cuBLAS only\n");
}

}  // namespace

int run(int argc, char** argv) {
  std::string filter, json_file, script = "tools/bench_pytorch_cuda.py";
  int rounds = 7, warmup = 3;
  bool pytorch = true, math = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--device") {
      value();
    } else if (arg == "--filter") {
      filter = value();
    } else if (arg == "--rounds") {
      rounds = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--warmup") {
      warmup = std::max(0, std::atoi(value().c_str()));
    } else if (arg == "--pytorch-json") {
      json_file = value();
    } else if (arg == "--pytorch-script") {
      script = value();
    } else if (arg == "--no-pytorch") {
      pytorch = false;
    } else if (arg == "--no-math") {
      math = false;
    } else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "tt_bench --device cuda: unknown argument '%s'\n", arg.c_str());
      usage();
      return 2;
    }
  }
  if (!tt::cuda::is_available()) {
    std::fprintf(stderr,
                 "tt_bench --device cuda: no CUDA device is usable (tinytorch built without CUDA, or no GPU "
                 "visible: %d device(s)); nothing was run\n",
                 tt::cuda::device_count());
    return 3;
  }
  Blas blas;

  struct Row {
    std::string name;
    std::function<std::function<void()>()> make;
    double bytes = 0, flops = 0;
    bool may_fail = false;       // a failure (out of memory, a capture refused) is reported, not fatal
    int max_warmup = 1 << 30;    // caps on --warmup and --rounds for the long steps
    int max_rounds = 1 << 30;
  };
  const double lin_flops = 3.0 * 2 * kLinRows * kLinIn * kLinOut;
  const double soft_elems = double(kSoftRows) * kSoftCols;
  const double gpt_small_flops = gpt_flops(kGptSmall), gpt2_flops = gpt_flops(kGpt2);
  // The graph rows: 3 warm-up steps and 5 checked replays for gpt_step; 2 and 2 for GPT-2, whose
  // step lasts a few hundred ms (gpu-check's bench phase must stay within its time limit).
  std::map<std::string, GraphCheck> checks;
  const std::vector<Row> rows = {
      {"linear_fb", [] { return linear_fb(); }, 0, lin_flops},
      {"linear_fb_cublas", [&] { return linear_fb_cublas(blas); }, 0, lin_flops},
      {"copy", [] { return copy_dd(); }, 2 * 4 * soft_elems, 0},
      {"softmax_fb", [] { return softmax_fb(); }, 5 * 4 * soft_elems, 0},  // fwd: x, y; bwd: y, dy, dx
      {"layernorm_fb", [] { return layernorm_fb(); }, 0, 0},
      {"gpt_step", [] { return gpt_step(kGptSmall); }, 0, gpt_small_flops},
      {"gpt_step_bf16", [] { return gpt_step(kGptSmall, /*bf16=*/true); }, 0, gpt_small_flops},
      {"gpt_step_graph", [&] { return gpt_step_graph(kGptSmall, 3, 5, checks["gpt_step_graph"]); }, 0,
       gpt_small_flops, true},
      {"gpt2_step", [] { return gpt_step(kGpt2); }, 0, gpt2_flops, true, 2, 3},
      {"gpt2_step_graph", [&] { return gpt_step_graph(kGpt2, 2, 2, checks["gpt2_step_graph"]); }, 0, gpt2_flops,
       true, 2, 3},
  };
  const std::regex re(filter);
  auto selected = [&](const std::string& name) { return filter.empty() || std::regex_search(name, re); };
  std::map<std::string, double> ms;
  std::printf("# tt_bench --device cuda: device 0, allow_tf32=%d, %d rounds, events on the default stream\n",
              int(tt::cuda::allow_tf32()), rounds);
  for (const Row& r : rows) {
    if (!filter.empty() && !std::regex_search(r.name, re) && r.name != "copy" && r.name != "linear_fb_cublas")
      continue;
    if (!filter.empty() && r.name == "linear_fb_cublas" && !std::regex_search(std::string("linear_fb"), re)) continue;
    if (!filter.empty() && r.name == "copy" && !std::regex_search(std::string("softmax_fb"), re)) continue;
    double t;
    try {
      std::function<void()> op = r.make();
      t = time_ms(op, std::min(warmup, r.max_warmup), std::min(rounds, r.max_rounds));
    } catch (const std::exception& e) {
      if (!r.may_fail) throw;
      std::string why = e.what();
      why = why.substr(0, why.find('\n'));
      std::printf("workload=%s impl=tinytorch n/a (%s)\n", r.name.c_str(), why.c_str());
      std::fflush(stdout);
      tt::cuda::synchronize(0);
      tt::cuda::empty_cache();
      continue;
    }
    ms[r.name] = t;
    std::printf("workload=%s impl=%s ms_med=%.3f", r.name.c_str(),
                r.name == "linear_fb_cublas" ? "cublas" : "tinytorch", t);
    if (r.flops > 0) std::printf(" tflops=%.2f", r.flops / t / 1e9);
    if (r.bytes > 0) std::printf(" gb_s=%.0f", r.bytes / t / 1e6);
    if (checks.count(r.name)) {
      const GraphCheck& c = checks[r.name];
      std::printf(" nodes=%zu pool_mib=%.0f losses_match=%s max_rel_diff=%.2e", c.nodes, c.pool_mib,
                  c.max_rel_diff <= kGraphLossRtol ? "yes" : "NO", c.max_rel_diff);
      for (size_t i = 0; i < c.graph.size(); ++i)
        std::printf(" replay%zu=%.7f/eager=%.7f", i, c.graph[i], c.eager[c.eager.size() - c.graph.size() + i]);
    }
    std::printf("\n");
    std::fflush(stdout);
    tt::cuda::empty_cache();
  }

  // Attention (issue 8, cuda_bench_sdpa.cpp): the FFMA peak, then the selected sdpa_* shapes.
  std::shared_ptr<SdpaRun> sdpa = sdpa_measure(selected, math, warmup, rounds);

  std::string source = "skipped (--no-pytorch)";
  std::map<std::string, double> torch;
  std::string extra_args = " --rounds " + std::to_string(rounds) + " --warmup " + std::to_string(warmup);
  if (!filter.empty()) extra_args += " --filter " + shell_quote(filter);
  if (pytorch) torch = pytorch_times(json_file, script, extra_args, source);
  std::printf("# pytorch: %s\n", source.c_str());

  if (!ms.empty()) {
    std::printf("\n== cuda: tinytorch vs bare cuBLAS and PyTorch eager (ratio = their time / ours; >= 1: we are "
                "as fast or faster) ==\n");
    std::printf("%-16s %12s %12s %12s %10s %10s  %s\n", "workload", "tinytorch_ms", "cublas_ms", "pytorch_ms",
                "vs_cublas", "vs_pytorch", "note");
  }
  auto cell = [](const std::map<std::string, double>& m, const std::string& k, char* buf, size_t n) {
    auto it = m.find(k);
    if (it == m.end() || it->second <= 0)
      std::snprintf(buf, n, "n/a");
    else
      std::snprintf(buf, n, "%.3f", it->second);
  };
  for (const char* name : {"linear_fb", "softmax_fb", "layernorm_fb", "gpt_step", "gpt_step_bf16", "gpt_step_graph",
                           "gpt2_step", "gpt2_step_graph"}) {
    if (!ms.count(name)) continue;
    const double ours = ms[name];
    char c_blas[32] = "-", c_torch[32], r_blas[32] = "-", r_torch[32] = "n/a";
    std::string note;
    if (std::string(name) == "linear_fb") {
      cell(ms, "linear_fb_cublas", c_blas, sizeof c_blas);
      if (ms.count("linear_fb_cublas")) std::snprintf(r_blas, sizeof r_blas, "%.2f", ms["linear_fb_cublas"] / ours);
    }
    if (std::string(name) == "softmax_fb" && ms.count("copy")) {
      const double soft_gbs = 5 * 4 * soft_elems / ours / 1e6, copy_gbs = 2 * 4 * soft_elems / ms["copy"] / 1e6;
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.0f GB/s = %.0f%% of copy's %.0f GB/s", soft_gbs, 100 * soft_gbs / copy_gbs,
                    copy_gbs);
      note = buf;
    }
    const std::string n = name;
    const bool gpt2 = n.rfind("gpt2_step", 0) == 0;
    if (gpt2 || n.rfind("gpt_step", 0) == 0) {
      // Tokens per second, and (bf16) the share of the GPU's dense bf16 tensor-core peak.
      const GptShape& shape = gpt2 ? kGpt2 : kGptSmall;
      char buf[160];
      const double tflops = gpt_flops(shape) / ours / 1e9;
      std::snprintf(buf, sizeof buf, "%.0f tokens/s, %.1f TFLOP/s", double(shape.B * shape.T) / (ours / 1e3), tflops);
      note = buf;
      const double peak = bf16_peak_tflops();
      if (n == "gpt_step_bf16" && peak > 0) {
        std::snprintf(buf, sizeof buf, ", MFU %.1f%% of %.0f bf16 TFLOP/s", 100 * tflops / peak, peak);
        note += buf;
      }
      if (checks.count(n)) {  // a graph row: how its losses compared with the eager steps
        const GraphCheck& c = checks[n];
        std::snprintf(buf, sizeof buf, "; losses vs eager: %s (max rel diff %.1e over %zu replays), %zu nodes",
                      c.max_rel_diff <= kGraphLossRtol ? "match" : "DIFFER", c.max_rel_diff, c.graph.size(), c.nodes);
        note += buf;
      }
    }
    // A graph row is judged against PyTorch eager's step (the _graph suffix dropped).
    const bool graph_row = n.size() > 6 && n.compare(n.size() - 6, 6, "_graph") == 0;
    const std::string torch_name = graph_row ? n.substr(0, n.size() - 6) : n;
    cell(torch, torch_name, c_torch, sizeof c_torch);
    if (torch.count(torch_name) && torch[torch_name] > 0)
      std::snprintf(r_torch, sizeof r_torch, "%.2f", torch[torch_name] / ours);
    std::printf("%-16s %12.3f %12s %12s %10s %10s  %s\n", name, ours, c_blas, c_torch, r_blas, r_torch, note.c_str());
  }

  sdpa_report(*sdpa, torch);  // the attention table, when any shape ran
  return 0;
}

}  // namespace ttbench::cuda_bench
