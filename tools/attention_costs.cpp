// tt_attention_costs (tools/tt attention-costs): what attention costs, worked out on paper and
// then measured. For one configuration it prints the sizes of Q, K, V, the scores, the weights
// and the output, the FLOPs, bytes and arithmetic intensity of each stage, and the peak bytes
// tinytorch's CPU allocator reported, forward and forward+backward, on each of three paths:
// the composed math (attention_weights + matmul), scaled_dot_product_attention's materializing
// kernel (SDPBackend::Math) and its flash kernel (SDPBackend::Flash). Then it sweeps T to show
// O(T^2) memory next to O(T), and draws that as a PNG. `tt_attention_costs --help` lists the
// flags. CPU only; times are one run each, not a benchmark (tools/bench is).
//
// Note [counting attention]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// With q, k, v [B, H, T, D] and e bytes per element (one query length T = key length):
//   QK^T        2*B*H*T*T*D FLOPs (a multiply and an add per term); reads q, k, writes scores
//   scale/mask  B*H*T*T (a multiply each), plus B*H*T*T for the causal mask; scores -> scores
//   softmax     5*B*H*T*T (max, subtract, exp, sum, divide; exp counted as one); scores -> weights
//   PV          2*B*H*T*T*D; reads weights and v, writes the output
// "bytes" is the least traffic a stage needs: each input read once, each output written once.
// Arithmetic intensity = FLOPs / bytes: for T >> D the two matmuls do about 2*D/e FLOPs per byte
// and can keep a CPU busy; scale/mask and softmax do about one FLOP per byte or less and wait on
// memory. The flash kernel keeps its tiles of scores in cache and never writes them, so its least
// traffic is q, k, v in and the output out. (A causal kernel that skips key blocks above the
// diagonal does about half of QK^T and PV; the composed path computes them all, then masks.)
//
// Note [measured peak]
// ~~~~~~~~~~~~~~~~~~~~
// "peak" = tt::memory::stats().peak_allocated_bytes after a reset, minus the bytes allocated
// before the call: everything the call held at its high-water mark beyond its inputs (the
// output included; for forward+backward also the graph's saved tensors and the three input
// gradients). Bytes held by live tensors, rounded up to the allocator's 64-byte blocks, not what
// the cache keeps from the system.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

namespace {

using tt::Tensor;

struct Config {
  int64_t B = 1, H = 8, T = 1024, D = 64;
  bool causal = false;
  tt::ScalarType dtype = tt::kFloat32;
  int64_t min_seq = 128, max_seq = 4096;
  double mem_limit_gib = 6;  // skip sizes whose composed path would need more (about 3 x scores)
  std::string plot = "attention_costs.png";
  bool sweep = true;
};

void usage() {
  std::printf(
      "usage: tt_attention_costs [--batch B] [--heads H] [--seq T] [--head-dim D] [--causal]\n"
      "                          [--dtype float32|float64] [--min-seq N] [--max-seq N]\n"
      "                          [--mem-limit GIB] [--plot PATH | --no-plot] [--no-sweep]\n"
      "  --batch, --heads, --seq, --head-dim   the configuration (default B=1 H=8 T=1024 D=64)\n"
      "  --causal          causal attention (query i sees keys j <= i)\n"
      "  --dtype           element type (default float32)\n"
      "  --min-seq, --max-seq   the sweep's T range, doubling from min (default 128 .. 4096)\n"
      "  --mem-limit GIB   skip a size whose composed path would need more than this (default 6)\n"
      "  --plot PATH       the PNG of bytes against T (default attention_costs.png)\n"
      "  --no-plot         no PNG\n"
      "  --no-sweep        only the single configuration\n");
}

[[noreturn]] void bad_flag(const std::string& msg) {
  std::fprintf(stderr, "tt_attention_costs: %s (see --help)\n", msg.c_str());
  std::exit(2);
}

int64_t parse_positive(const std::string& flag, const char* value) {
  char* end = nullptr;
  long long v = std::strtoll(value, &end, 10);
  if (*value == '\0' || *end != '\0' || v <= 0) bad_flag(flag + " wants a positive integer, got '" + value + "'");
  return v;
}

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) bad_flag(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage();
      std::exit(0);
    } else if (a == "--batch") {
      c.B = parse_positive(a, value());
    } else if (a == "--heads") {
      c.H = parse_positive(a, value());
    } else if (a == "--seq") {
      c.T = parse_positive(a, value());
    } else if (a == "--head-dim") {
      c.D = parse_positive(a, value());
    } else if (a == "--min-seq") {
      c.min_seq = parse_positive(a, value());
    } else if (a == "--max-seq") {
      c.max_seq = parse_positive(a, value());
    } else if (a == "--mem-limit") {
      const char* v = value();
      char* end = nullptr;
      c.mem_limit_gib = std::strtod(v, &end);
      if (*end != '\0' || !(c.mem_limit_gib > 0)) bad_flag("--mem-limit wants a positive number of GiB");
    } else if (a == "--causal") {
      c.causal = true;
    } else if (a == "--dtype") {
      std::string v = value();
      if (v == "float32" || v == "f32") {
        c.dtype = tt::kFloat32;
      } else if (v == "float64" || v == "f64") {
        c.dtype = tt::kFloat64;
      } else {
        bad_flag("--dtype wants float32 or float64, got '" + v + "'");
      }
    } else if (a == "--plot") {
      c.plot = value();
    } else if (a == "--no-plot") {
      c.plot.clear();
    } else if (a == "--no-sweep") {
      c.sweep = false;
    } else {
      bad_flag("unknown flag '" + a + "'");
    }
  }
  if (c.min_seq > c.max_seq) bad_flag("--min-seq must be at most --max-seq");
  return c;
}

// --- theory (Note [counting attention]) ---------------------------------------------------------

struct Theory {
  double qkv_bytes, scores_bytes, out_bytes;  // one of q, k, v; scores (= weights); the output
  double flops_qk, flops_scale, flops_softmax, flops_pv;
};

Theory theory(const Config& c, int64_t T) {
  double e = double(tt::element_size(c.dtype));
  double bh = double(c.B) * double(c.H);  // in double: huge flags must not overflow int64
  double btd = bh * double(T) * double(c.D), btt = bh * double(T) * double(T);
  Theory t;
  t.qkv_bytes = btd * e;
  t.scores_bytes = btt * e;
  t.out_bytes = btd * e;
  t.flops_qk = 2 * btt * double(c.D);
  t.flops_scale = btt * (c.causal ? 2 : 1);
  t.flops_softmax = 5 * btt;
  t.flops_pv = 2 * btt * double(c.D);
  return t;
}

// --- measurement (Note [measured peak]) ---------------------------------------------------------

struct Measured {
  int64_t peak_bytes = 0;
  double ms = 0;
};

Measured measure(const std::function<void()>& fn) {
  int64_t before = tt::memory::stats().allocated_bytes;
  tt::memory::reset_peak_stats();
  auto t0 = std::chrono::steady_clock::now();
  fn();
  auto t1 = std::chrono::steady_clock::now();
  return {tt::memory::stats().peak_allocated_bytes - before,
          std::chrono::duration<double, std::milli>(t1 - t0).count()};
}

struct Inputs {
  Tensor q, k, v;
};

Inputs make_inputs(const Config& c, int64_t T, bool requires_grad) {
  tt::Shape s{c.B, c.H, T, c.D};
  auto opts = tt::TensorOptions().dtype(c.dtype);
  Inputs in{tt::randn(s, opts), tt::randn(s, opts), tt::randn(s, opts)};
  if (requires_grad) {
    in.q.requires_grad_();
    in.k.requires_grad_();
    in.v.requires_grad_();
  }
  return in;
}

// The three ways tinytorch computes attention, from the most to the least memory.
enum class Path {
  kComposed,    // attention_weights (scores, then softmax: two T x T tensors) + matmul
  kMathKernel,  // scaled_dot_product_attention's materializing kernel: the T x T weights, once
  kFlash,       // its flash kernel: tiles and an online softmax, no T x T tensor
};
constexpr Path kPaths[] = {Path::kComposed, Path::kMathKernel, Path::kFlash};

const char* path_name(Path p) {
  switch (p) {
    case Path::kComposed:
      return "composed: attention_weights + matmul";
    case Path::kMathKernel:
      return "SDPA, math kernel (SDPBackend::Math)";
    case Path::kFlash:
      return "SDPA, flash kernel (SDPBackend::Flash)";
  }
  return "?";
}

Tensor run(Path p, const Inputs& in, bool causal) {
  if (p == Path::kComposed) return tt::attention_weights(in.q, in.k, {}, causal).matmul(in.v);
  tt::SdpaKernelGuard kernel(p == Path::kFlash ? tt::SDPBackend::Flash : tt::SDPBackend::Math);
  return tt::scaled_dot_product_attention(in.q, in.k, in.v, {}, 0.0, causal);
}

Measured forward(const Config& c, int64_t T, Path p) {
  Inputs in = make_inputs(c, T, false);
  return measure([&] {
    tt::NoGradGuard no_grad;
    Tensor out = run(p, in, c.causal);
  });
}

Measured forward_backward(const Config& c, int64_t T, Path p) {
  Inputs in = make_inputs(c, T, true);  // the gradients die with `in`, after the measurement
  return measure([&] {
    Tensor out = run(p, in, c.causal);
    out.sum().backward();
  });
}

// --- printing -----------------------------------------------------------------------------------

std::string bytes(double b) { return tt::viz::format_tick(b, tt::viz::TickFormat::kBytes); }

std::string count(double v) {
  const char* units[] = {"", "k", "M", "G", "T"};
  int u = 0;
  while (std::abs(v) >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g %s", v, units[u]);
  return buf;
}

std::string shape_of(const Config& c, int64_t a, int64_t b) {
  return "[" + std::to_string(c.B) + ", " + std::to_string(c.H) + ", " + std::to_string(a) + ", " + std::to_string(b) +
         "]";
}

bool fits(const Config& c, int64_t T) {
  return 3 * theory(c, T).scores_bytes <= c.mem_limit_gib * double(int64_t(1) << 30);
}

void print_single(const Config& c) {
  Theory t = theory(c, c.T);
  std::printf("attention costs: B=%lld H=%lld T=%lld D=%lld %s%s\n\n", (long long)c.B, (long long)c.H, (long long)c.T,
              (long long)c.D, tt::dtype_name(c.dtype), c.causal ? ", causal" : "");
  std::printf("%-9s %-22s %12s\n", "tensor", "shape", "bytes");
  const char* names[] = {"q", "k", "v"};
  for (const char* n : names)
    std::printf("%-9s %-22s %12s\n", n, shape_of(c, c.T, c.D).c_str(), bytes(t.qkv_bytes).c_str());
  std::printf("%-9s %-22s %12s\n", "scores", shape_of(c, c.T, c.T).c_str(), bytes(t.scores_bytes).c_str());
  std::printf("%-9s %-22s %12s\n", "weights", shape_of(c, c.T, c.T).c_str(), bytes(t.scores_bytes).c_str());
  std::printf("%-9s %-22s %12s\n", "output", shape_of(c, c.T, c.D).c_str(), bytes(t.out_bytes).c_str());
  std::printf("scores are T/D = %.3g times the size of q: %s\n\n", double(c.T) / double(c.D),
              c.T > c.D ? "the T x T matrices, not the inputs, dominate memory" : "small next to the inputs");

  struct Row {
    const char* stage;
    double flops, moved;
  };
  double S = t.scores_bytes;
  Row rows[] = {
      {"QK^T", t.flops_qk, 2 * t.qkv_bytes + S},
      {c.causal ? "scale+mask" : "scale", t.flops_scale, 2 * S},
      {"softmax", t.flops_softmax, 2 * S},
      {"PV", t.flops_pv, S + t.qkv_bytes + t.out_bytes},
  };
  double total_flops = 0, total_moved = 0;
  std::printf("%-24s %12s %14s %12s   (Note [counting attention])\n", "stage", "FLOPs", "bytes moved", "FLOPs/byte");
  for (const Row& r : rows) {
    std::printf("%-24s %12s %14s %12.3g\n", r.stage, count(r.flops).c_str(), bytes(r.moved).c_str(), r.flops / r.moved);
    total_flops += r.flops;
    total_moved += r.moved;
  }
  std::printf("%-24s %12s %14s %12.3g\n", "all stages, unfused", count(total_flops).c_str(), bytes(total_moved).c_str(),
              total_flops / total_moved);
  double fused_moved = 3 * t.qkv_bytes + t.out_bytes;
  std::printf("%-24s %12s %14s %12.3g\n\n", "flash (q,k,v in, out)", count(total_flops).c_str(),
              bytes(fused_moved).c_str(), total_flops / fused_moved);

  if (!fits(c, c.T)) {
    std::printf("measured: skipped, the composed path would need about %s (over --mem-limit %.3g GiB)\n\n",
                bytes(3 * S).c_str(), c.mem_limit_gib);
    return;
  }
  std::printf("measured peak bytes above the inputs (Note [measured peak]), one run each\n");
  std::printf("%-40s %10s %9s %8s %10s %9s %8s\n", "path", "forward", "x scores", "ms", "fwd+bwd", "x scores", "ms");
  for (Path p : kPaths) {
    Measured f = forward(c, c.T, p), fb = forward_backward(c, c.T, p);
    std::printf("%-40s %10s %9.2f %8.1f %10s %9.2f %8.1f\n", path_name(p), bytes(double(f.peak_bytes)).c_str(),
                double(f.peak_bytes) / S, f.ms, bytes(double(fb.peak_bytes)).c_str(), double(fb.peak_bytes) / S, fb.ms);
  }
  std::printf("(fwd+bwd includes the gradients of q, k, v: %s)\n\n", bytes(3 * t.qkv_bytes).c_str());
}

void sweep(const Config& c) {
  std::printf("sweep over T (B=%lld H=%lld D=%lld %s%s), forward only: peak bytes above the inputs\n", (long long)c.B,
              (long long)c.H, (long long)c.D, tt::dtype_name(c.dtype), c.causal ? ", causal" : "");
  std::printf("%6s %10s | %10s %7s %5s | %10s %7s %5s | %10s %7s | %8s %8s %8s\n", "T", "scores", "composed", "growth",
              "xS", "math krnl", "growth", "xS", "flash", "growth", "ms comp", "ms math", "ms flash");
  tt::viz::LineSeries scores{"scores [B,H,T,T] (theory)", {}, {}, true};
  tt::viz::LineSeries io{"q + k + v + out (theory)", {}, {}, true};
  std::vector<tt::viz::LineSeries> measured;
  for (Path p : kPaths) measured.push_back({std::string(path_name(p)) + ", peak", {}, {}, false});
  auto growth = [](const tt::viz::LineSeries& s) { return s.y.size() < 2 ? 0.0 : s.y.back() / s.y[s.y.size() - 2]; };
  auto growth_text = [&](const tt::viz::LineSeries& s) {
    char buf[16] = "";
    if (s.y.size() >= 2) std::snprintf(buf, sizeof(buf), "x%.2f", growth(s));
    return std::string(buf);
  };
  for (int64_t T = c.min_seq; T <= c.max_seq; T *= 2) {
    Theory t = theory(c, T);
    if (!fits(c, T)) {
      std::printf("%6lld %10s   skipped: the composed path would need about %s (--mem-limit %.3g GiB)\n", (long long)T,
                  bytes(t.scores_bytes).c_str(), bytes(3 * t.scores_bytes).c_str(), c.mem_limit_gib);
      break;
    }
    std::vector<Measured> m;
    for (Path p : kPaths) m.push_back(forward(c, T, p));
    scores.x.push_back(double(T));
    scores.y.push_back(t.scores_bytes);
    io.x.push_back(double(T));
    io.y.push_back(3 * t.qkv_bytes + t.out_bytes);
    for (size_t i = 0; i < m.size(); ++i) {
      measured[i].x.push_back(double(T));
      measured[i].y.push_back(std::max(1.0, double(m[i].peak_bytes)));  // a log axis needs > 0
    }
    auto peak = [&](size_t i) { return bytes(double(m[i].peak_bytes)); };
    auto xs = [&](size_t i) { return double(m[i].peak_bytes) / t.scores_bytes; };
    std::printf("%6lld %10s | %10s %7s %5.2f | %10s %7s %5.2f | %10s %7s | %8.1f %8.1f %8.1f\n", (long long)T,
                bytes(t.scores_bytes).c_str(), peak(0).c_str(), growth_text(measured[0]).c_str(), xs(0),
                peak(1).c_str(), growth_text(measured[1]).c_str(), xs(1), peak(2).c_str(),
                growth_text(measured[2]).c_str(), m[0].ms, m[1].ms, m[2].ms);
  }
  // What the last doubling says: about x4 is memory that grows as T^2, about x2 as T.
  auto order = [](double g) { return g > 3 ? "O(T^2): it holds T x T tensors" : "O(T): no T x T tensor"; };
  if (scores.y.size() >= 2) {
    std::printf("xS = peak / scores bytes. Per doubling of T (last step), scores grow x4, q, k, v and out x2:\n");
    for (size_t i = 0; i < measured.size(); ++i)
      std::printf("  %-40s x%.2f  %s\n", path_name(kPaths[i]), growth(measured[i]), order(growth(measured[i])));
  }
  if (c.plot.empty() || scores.x.empty()) return;
  tt::viz::LinePlotOptions o;
  o.title = "attention memory vs sequence length";
  o.x_label = "sequence length T (B=" + std::to_string(c.B) + ", H=" + std::to_string(c.H) +
              ", D=" + std::to_string(c.D) + (c.causal ? ", causal" : "") + ")";
  o.y_label = "bytes";
  o.log_x = o.log_y = true;
  o.y_format = tt::viz::TickFormat::kBytes;
  std::vector<tt::viz::LineSeries> all = {scores, io};
  all.insert(all.end(), measured.begin(), measured.end());
  tt::viz::save_line_plot(c.plot, all, o);
  std::printf("plot: %s\n", c.plot.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Config c = parse(argc, argv);
  try {
    tt::manual_seed(0);
    auto t0 = std::chrono::steady_clock::now();
    {  // warm up: the first call starts thread pools and fills the allocator's cache
      Config small = c;
      small.T = std::min<int64_t>(c.min_seq, 128);
      for (Path p : kPaths) forward(small, small.T, p);
    }
    print_single(c);
    if (c.sweep) sweep(c);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("done in %.1f s\n", s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tt_attention_costs: %s\n", e.what());
    return 1;
  }
  return 0;
}
