// tt_bench --device cuda: tinytorch's CUDA backend on linear_fb, softmax_fb, layernorm_fb and
// gpt_step, beside a bare cuBLAS linear_fb (the same three SGEMMs), a device-to-device copy (the
// bandwidth the memory-bound softmax is judged against) and PyTorch eager on the same GPU
// (tools/bench_pytorch_cuda.py); the flags, the run() driver and the main results table. Issue 8's
// attention rows (sdpa_*) are in cuda_bench_sdpa.cpp, the helpers both use in cuda_bench_common.h.
// Usage in tools/bench/README.md ("GPU benchmarks", "Attention").
//
// Built only when tinytorch has its CUDA backend (TINYTORCH_HAS_CUDA; cuda_bench_off.cpp stands in
// otherwise), linked with CUDA::cudart and CUDA::cublas, the same shared libraries tinytorch uses.
// Everything runs on the legacy default stream of device 0, the stream tinytorch's kernels use,
// so events bracket exactly its work.
#include "cuda_bench.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
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
constexpr int64_t kGptVocab = 65, kGptT = 256, kGptB = 64;

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

// The CPU gpt_step's model (4 layers, E 128, 4 heads, MLP 4x, tied head, vocab 65) at context 256
// and batch 64: logits, cross-entropy, zero_grad, backward, AdamW step. With `bf16`, the logits
// and the loss under tt::AutocastGuard(kCUDA, kBFloat16) (gpt_step_bf16, issue 19).
std::function<void()> gpt_step(bool bf16 = false) {
  auto gpt = std::make_shared<tt::nn::GPT>(
      tt::nn::GPTOptions(kGptVocab, kGptT).n_layer(4).n_embd(128).n_head(4).mlp_ratio(4).tie_weights(true));
  gpt->to(kGpu);
  tt::Tensor tokens = tt::randint(0, kGptVocab, {kGptB, kGptT + 1}).to(kGpu);
  tt::Tensor ids = tokens.slice(1, 0, kGptT).contiguous();
  tt::Tensor targets = tokens.slice(1, 1, kGptT + 1).contiguous().reshape({kGptB * kGptT});
  auto opt = std::make_shared<tt::optim::AdamW>(gpt->parameters(), tt::optim::AdamWOptions(1e-3).weight_decay(0.01));
  return [=] {
    tt::Tensor loss;
    {
      tt::AutocastGuard autocast(tt::kCUDA, tt::kBFloat16, bf16);
      loss = tt::F::cross_entropy(gpt->forward(ids).reshape({kGptB * kGptT, kGptVocab}), targets);
    }
    opt->zero_grad();
    loss.backward();
    opt->step();
  };
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
  };
  const double lin_flops = 3.0 * 2 * kLinRows * kLinIn * kLinOut;
  const double soft_elems = double(kSoftRows) * kSoftCols;
  // The GPT step's matrix FLOPs, counted as the CPU gpt_step's (workloads.cpp) at T 256, B 64:
  // per token and layer 24·E² (projections and MLP) + 4·T·E (causal scores and mix), the head
  // 2·E·V; x3 with the backward.
  const double gpt_flops =
      3.0 * kGptB * kGptT * (4 * (24.0 * 128 * 128 + 4.0 * kGptT * 128) + 2.0 * 128 * kGptVocab);
  const std::vector<Row> rows = {
      {"linear_fb", [] { return linear_fb(); }, 0, lin_flops},
      {"linear_fb_cublas", [&] { return linear_fb_cublas(blas); }, 0, lin_flops},
      {"copy", [] { return copy_dd(); }, 2 * 4 * soft_elems, 0},
      {"softmax_fb", [] { return softmax_fb(); }, 5 * 4 * soft_elems, 0},  // fwd: x, y; bwd: y, dy, dx
      {"layernorm_fb", [] { return layernorm_fb(); }, 0, 0},
      {"gpt_step", [] { return gpt_step(); }, 0, gpt_flops},
      {"gpt_step_bf16", [] { return gpt_step(/*bf16=*/true); }, 0, gpt_flops},
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
    {
      std::function<void()> op = r.make();
      t = time_ms(op, warmup, rounds);
    }
    ms[r.name] = t;
    std::printf("workload=%s impl=%s ms_med=%.3f", r.name.c_str(),
                r.name == "linear_fb_cublas" ? "cublas" : "tinytorch", t);
    if (r.flops > 0) std::printf(" tflops=%.2f", r.flops / t / 1e9);
    if (r.bytes > 0) std::printf(" gb_s=%.0f", r.bytes / t / 1e6);
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
    std::printf("%-14s %12s %12s %12s %10s %10s  %s\n", "workload", "tinytorch_ms", "cublas_ms", "pytorch_ms",
                "vs_cublas", "vs_pytorch", "note");
  }
  auto cell = [](const std::map<std::string, double>& m, const std::string& k, char* buf, size_t n) {
    auto it = m.find(k);
    if (it == m.end() || it->second <= 0)
      std::snprintf(buf, n, "n/a");
    else
      std::snprintf(buf, n, "%.3f", it->second);
  };
  for (const char* name : {"linear_fb", "softmax_fb", "layernorm_fb", "gpt_step", "gpt_step_bf16"}) {
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
    if (std::string(name).rfind("gpt_step", 0) == 0) {
      // Tokens per second, and (bf16) the share of the GPU's dense bf16 tensor-core peak.
      char buf[128];
      const double tflops = gpt_flops / ours / 1e9;
      std::snprintf(buf, sizeof buf, "%.0f tokens/s, %.1f TFLOP/s", kGptB * kGptT / (ours / 1e3), tflops);
      note = buf;
      const double peak = bf16_peak_tflops();
      if (std::string(name) == "gpt_step_bf16" && peak > 0) {
        std::snprintf(buf, sizeof buf, ", MFU %.1f%% of %.0f bf16 TFLOP/s", 100 * tflops / peak, peak);
        note += buf;
      }
    }
    cell(torch, name, c_torch, sizeof c_torch);
    if (torch.count(name) && torch[name] > 0) std::snprintf(r_torch, sizeof r_torch, "%.2f", torch[name] / ours);
    std::printf("%-14s %12.3f %12s %12s %10s %10s  %s\n", name, ours, c_blas, c_torch, r_blas, r_torch, note.c_str());
  }

  sdpa_report(*sdpa, torch);  // the attention table, when any shape ran
  return 0;
}

}  // namespace ttbench::cuda_bench
