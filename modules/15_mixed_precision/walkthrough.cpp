// Module 15 walkthrough: mixed precision. Four number formats drawn bit by bit (float32, TF32,
// bf16, float16) with their range and precision; rounding to nearest, ties to even, and what
// happens to NaN, infinity and overflow; sums and dot products accumulated in bf16 against
// float32, and what tt::sum and tt::matmul do with bf16 tensors; autocast on a small MLP: which
// tensors come out bf16, which float32, and the float32 gradients of its parameters; gradients
// that underflow in a simulated float16 and the loss scaling that rescues them, where bf16 needs
// none; and the speed: a bf16 GEMM against float32's, a tiny GPT's training step with and
// without autocast. Run it with `tools/tt walkthrough 15` (or build-*/modules/walkthrough_15).
// Each step prints its code (after ">>>") and the result. Each numbered section is one function;
// `--step N` reruns section N alone, `--list` lists them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <tinytorch/backend/cpu/blas_info.h>
#include <tinytorch/backend/cpu/gemm_bf16.h>
#include <tinytorch/tinytorch.h>

#include "../narrate.h"

using namespace narrate;  // heading, say, fmt, best_ms, quietly, and SHOW / RUN / SHOW_ERROR

namespace {

// What a timing measured, for the line under it: "best of 5, 2 threads" (tt::get_num_threads()).
std::string best_of(int reps) {
  const int threads = tt::get_num_threads();
  return "best of " + std::to_string(reps) + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

using tt::BFloat16;
using tt::Tensor;
namespace nn = tt::nn;

// The BLAS's kernel set, as `tools/tt doctor` reports it ("Zen (AVX2+FMA)"): the float32 GEMM's
// speed depends on it (OPENBLAS_CORETYPE chooses it). Empty when the BLAS does not say.
std::string blas_kernels() {
  const tt::cpu::BlasInfo info = tt::cpu::blas_info();
  if (info.core.empty() || info.vendor != "OpenBLAS") return info.core;
  return info.core + " (" + tt::cpu::simd_level_name(tt::cpu::openblas_core_level(info.core)) + ")";
}

// --- bits ----------------------------------------------------------------------------------------

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// "0x3F80": a 16-bit pattern in hex.
std::string hex16(uint16_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04X", unsigned(b));
  return buf;
}

// The low `total` bits of u as "s | eeeeeeee | mmmmmmm": sign, exponent, mantissa.
std::string boxes(uint32_t u, int total, int exponent_bits) {
  std::string s;
  for (int i = total - 1; i >= 0; --i) {
    s += ((u >> i) & 1u) ? '1' : '0';
    if (i == total - 1 || i == total - 1 - exponent_bits) s += " | ";
  }
  return s;
}

// --- formats simulated in double --------------------------------------------------------------

// x rounded to a binary format with `mantissa` stored bits, normal exponents down to `min_exp`
// (below it, subnormals with the fixed step 2^(min_exp - mantissa)) and largest finite value
// `max_finite`: to nearest, ties to even (std::nearbyint in the default rounding mode), and to
// infinity past the largest value. Every double step here is exact, so this is the format's
// rounding of x. float16: (10, -14, 65504); bf16: (7, -126, 3.3895e38); TF32: (10, -126, ...).
double round_to_format(double x, int mantissa, int min_exp, double max_finite) {
  if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
  int e2;
  std::frexp(x, &e2);                                   // |x| = m 2^e2, m in [0.5, 1)
  const int e = std::max(e2 - 1, min_exp);              // the exponent of x's binade, or min_exp
  const double step = std::ldexp(1.0, e - mantissa);    // the spacing of the format there
  const double r = std::nearbyint(x / step) * step;
  return std::fabs(r) > max_finite ? std::copysign(std::numeric_limits<double>::infinity(), x) : r;
}

constexpr double kHalfMax = 65504.0;
double to_half(double x) { return round_to_format(x, 10, -14, kHalfMax); }
double to_tf32(double x) { return round_to_format(x, 10, -126, std::numeric_limits<float>::max()); }

// The 16 bits of a float16 value (a result of to_half).
uint32_t half_bits(double h) {
  uint32_t sign = std::signbit(h) ? 1u : 0u, exponent = 0, mantissa = 0;
  const double a = std::fabs(h);
  if (std::isinf(a)) {
    exponent = 31;
  } else if (a > 0) {
    int e2;
    std::frexp(a, &e2);
    const int e = e2 - 1;
    if (e < -14) {
      mantissa = uint32_t(a / std::ldexp(1.0, -24));    // subnormal: a multiple of 2^-24
    } else {
      exponent = uint32_t(e + 15);
      mantissa = uint32_t((a / std::ldexp(1.0, e) - 1.0) * 1024.0);
    }
  }
  return (sign << 15) | (exponent << 10) | mantissa;
}

// The 19 bits of a TF32 value: float32's top 19.
uint32_t tf32_bits(double t) { return bits_of(float(t)) >> 13; }

// One number in the four formats, each as its bit boxes and the value they hold.
void print_formats(float x) {
  const double tf = to_tf32(x), bf = float(BFloat16(x)), hf = to_half(x);
  std::cout << "    " << fmt("%.9g", x) << "\n"
            << "      float32  " << boxes(bits_of(x), 32, 8) << "   " << fmt("%.9g", x) << "\n"
            << "      TF32     " << boxes(tf32_bits(tf), 19, 8) << std::string(13, ' ') << "   " << fmt("%.9g", tf) << "\n"
            << "      bf16     " << boxes(BFloat16(x).bits, 16, 8) << std::string(16, ' ') << "   " << fmt("%.9g", bf) << "\n"
            << "      float16  " << boxes(half_bits(hf), 16, 5) << std::string(16, ' ') << "   " << fmt("%.9g", hf) << "\n";
}

// -----------------------------------------------------------------------------------------------

void step_1_formats() {
  say("A binary float is a sign s, an exponent field e and a mantissa field m: the value is\n"
      "(-1)^s x 1.m x 2^(e - bias). The exponent's width sets the range, the mantissa's the\n"
      "precision. Four formats that deep learning uses:\n"
      "    float32   1 | 8 | 23   the default: parameters, gradients, optimizer state\n"
      "    TF32      1 | 8 | 10   what NVIDIA tensor cores read of a float32 (19 bits, stored in 32)\n"
      "    bf16      1 | 8 | 7    float32's top half: float32's range, 8 significant bits\n"
      "    float16   1 | 5 | 10   IEEE half: 11 significant bits, but a range of 6e-8 .. 65504\n"
      "A few numbers in each (bits: sign | exponent | mantissa, then the value those bits hold):");
  std::cout << ">>> print_formats(x)   (in this file: float32 bits, TF32 and float16 simulated, tt::BFloat16)\n";
  for (float x : {1.0f, 0.1f, -3.14159265f, 1.0e-5f, 70000.0f, 1.0e-8f}) print_formats(x);
  say("bf16 drops float32's low 16 bits (rounding, not cutting them): 0.1 keeps only 0.10009765625.\n"
      "float16 keeps 3 more bits of precision but shifts its range down: 70000 overflows to inf\n"
      "and 1e-8 underflows to 0, both values that float32 and bf16 hold easily. The properties\n"
      "that follow from the widths (eps: the gap after 1; smallest normal: 2^(1 - bias)):");
  std::cout << ">>> (from the bit widths)\n"
            << "    format    bits  exp  mant   largest finite   eps = 2^-mant   smallest normal   smallest subnormal   digits\n";
  struct Row {
    const char* name;
    int bits, exp, mant;
  };
  for (Row r : {Row{"float32", 32, 8, 23}, Row{"TF32", 19, 8, 10}, Row{"bf16", 16, 8, 7}, Row{"float16", 16, 5, 10}}) {
    const int bias = (1 << (r.exp - 1)) - 1;
    const double largest = std::ldexp(2.0 - std::ldexp(1.0, -r.mant), bias);
    const double eps = std::ldexp(1.0, -r.mant), normal = std::ldexp(1.0, 1 - bias);
    const double subnormal = std::ldexp(1.0, 1 - bias - r.mant);
    std::cout << "    " << r.name << std::string(10 - std::string(r.name).size(), ' ') << fmt("%4.0f", r.bits)
              << fmt("%5.0f", r.exp) << fmt("%6.0f", r.mant) << fmt("%17.4g", largest) << fmt("%16.3g", eps)
              << fmt("%18.3g", normal) << fmt("%21.3g", subnormal) << fmt("%9.1f", std::log10(std::ldexp(1.0, r.mant + 1)))
              << "\n";
  }
  say("One rounding costs at most half a gap: a relative error of eps / 2, 2^-8 = 0.39% for bf16,\n"
      "2^-11 = 0.049% for float16, 2^-24 = 6e-8 for float32. bf16 and float32 share the exponent,\n"
      "so converting between them never overflows or underflows (up to rounding at the very\n"
      "top): a bf16 tensor is float32 with its mantissa cut to 7 bits, and the conversion back is\n"
      "16 zero bits appended. The library's type, tt::BFloat16, is those 16 bits:");
  SHOW(sizeof(tt::BFloat16));
  SHOW(hex16(tt::BFloat16(1.0f).bits));
  SHOW(hex16(uint16_t(bits_of(1.0f) >> 16)));
  SHOW(tt::BFloat16::to_float(0x4049));
  SHOW(tt::element_size(tt::kBFloat16));
}

// -----------------------------------------------------------------------------------------------

void step_2_rounding() {
  say("float32 -> bf16 keeps the top 16 bits and rounds on the 16 it drops: to the nearest bf16,\n"
      "and an exact tie (dropped bits 0x8000) to the neighbour whose last kept bit is 0, the even\n"
      "one. Near 1 the bf16 gap is 2^-7 = 0.0078125, so 1 + 2^-8 is exactly halfway between 1 and\n"
      "1 + 2^-7:");
  SHOW(float(tt::BFloat16(1.0f + 0x1p-8f)));
  SHOW(float(tt::BFloat16(1.0f + 3 * 0x1p-8f)));
  SHOW(float(tt::BFloat16(1.0f + 0x1p-8f + 0x1p-20f)));
  say("The first tie goes down to 1 (0x3F80, even), the second up to 1 + 2^-6 (0x3F82, even: its\n"
      "lower neighbour 0x3F81 is odd); just above a tie always rounds up. Ties split both ways, so\n"
      "rounding has no bias on average; cutting the bits (truncation) would always shrink |x|.\n"
      "In bits: add 0x7FFF plus the last kept bit, then drop the low 16 (BFloat16::round_to_bits):");
  SHOW(hex16(tt::BFloat16(float_of(0x3F808000u)).bits));
  SHOW(hex16(tt::BFloat16(float_of(0x3F818000u)).bits));
  SHOW(hex16(tt::BFloat16(0.1f).bits));
  say("0.1f is 0x3DCCCCCD: its dropped half 0xCCCD is above the tie, so it rounds up to 0x3DCD.\n"
      "Special values: NaN stays NaN (quiet), infinity stays infinity, and a float32 above bf16's\n"
      "largest value (3.3895e38) rounds up to infinity. A NaN whose payload lives only in the low\n"
      "bits (0x7F800001) must not become infinity, as plain truncation would make it:");
  SHOW(std::isnan(float(tt::BFloat16(float_of(0x7F800001u)))));
  SHOW(hex16(tt::BFloat16(float_of(0x7F800001u)).bits));
  say("round_to_bits keeps a NaN's top half, so its sign and the top 7 bits of its payload, and\n"
      "sets the quiet bit 0x0040 (0x7F80 | 0x0040 above). A negative NaN with a payload in the high\n"
      "bits keeps both (PyTorch's c10 returns 0x7FC0 for every NaN instead):");
  SHOW(hex16(tt::BFloat16(float_of(0xFFA12345u)).bits));
  SHOW(float(tt::BFloat16(std::numeric_limits<float>::infinity())));
  SHOW(float(tt::BFloat16(std::numeric_limits<float>::max())));
  SHOW(hex16(tt::BFloat16(-0.0f).bits));
  say("Round trips. Every bf16 value is a float32, so bf16 -> float32 -> bf16 gives the same bits;\n"
      "and float32 -> bf16 -> float32 is off by at most 2^-8 relative. Over all 65,536 patterns and\n"
      "a million random floats:");
  {
    int64_t same = 0, finite = 0;
    for (uint32_t b = 0; b < 0x10000; ++b) {
      BFloat16 v = BFloat16::from_bits(uint16_t(b));
      if (std::isnan(float(v))) continue;
      ++finite;
      same += BFloat16(float(v)).bits == v.bits ? 1 : 0;
    }
    std::cout << ">>> for every bit pattern b (NaNs aside): BFloat16(float(from_bits(b))).bits == b\n    " << same
              << " of " << finite << "\n";
    tt::manual_seed(2);
    std::vector<float> xs = tt::randn({1000000}).to_vector<float>();
    double worst = 0;
    for (float x : xs) worst = std::max(worst, std::fabs(double(float(BFloat16(x))) - x) / std::fabs(double(x)));
    std::cout << ">>> max |float(BFloat16(x)) - x| / |x| over 1e6 randn x\n    " << fmt("%.6f", worst)
              << "   (2^-8 = " << fmt("%.6f", std::ldexp(1.0, -8)) << ")\n";
  }
  say("On tensors, .to(tt::kBFloat16) rounds each element the same way, and .to(tt::kFloat32)\n"
      "appends the zero bits. Printing shows the values kept:");
  RUN(Tensor t = tt::tensor({1.0f, 0.1f, 1.0f / 3.0f, 256.0f, 257.0f, 1.0e-30f}).to(tt::kBFloat16));
  SHOW(t);
  SHOW(t.to(tt::kFloat32).to_vector<float>()[4]);
  say("257 is not a bf16 value: between 256 and 512 the gap is 2, and 257 is a tie that goes to\n"
      "256 (even). bf16 counts integers exactly only up to 256. 1e-30 is kept, to 3 digits.");
}

// -----------------------------------------------------------------------------------------------

void step_3_sums() {
  say("Adding a small number to a large one rounds the result to the large one's gap. With 8\n"
      "significant bits that gap is 1/128 to 1/256 of the sum itself, so once the sum is 256\n"
      "times larger than the terms, they vanish:");
  SHOW(float(tt::BFloat16(256.0f + 1.0f)));
  SHOW(float(tt::BFloat16(255.0f + 1.0f)));
  say("Ten thousand small numbers (uniform in [0, 0.002), stored in bf16 so every term is exact\n"
      "in every format), added one at a time into a bf16 accumulator (rounded after every add),\n"
      "into a float32 one, and by tt::sum on the bf16 tensor:");
  RUN(tt::manual_seed(3));
  RUN(Tensor xs = (tt::rand({10000}) * 0.002).to(tt::kBFloat16));
  {
    std::vector<float> v = xs.to_vector<float>();
    double exact = 0;
    float acc32 = 0;
    BFloat16 acc16(0.0f);
    std::vector<std::string> trace;
    for (size_t i = 0; i < v.size(); ++i) {
      exact += v[i];
      acc32 += v[i];
      acc16 = BFloat16(float(acc16) + v[i]);  // a bf16 register: round after every add
      if (i + 1 == 500 || i + 1 == 1000 || i + 1 == 2500 || i + 1 == 5000 || i + 1 == 10000)
        trace.push_back("    after " + fmt("%5.0f", double(i + 1)) + " terms: exact " + fmt("%8.4f", exact) +
                        "   bf16 accumulator " + fmt("%8.4f", float(acc16)) + "\n");
    }
    const double by_sum = xs.sum().item<double>();
    std::cout << ">>> acc16 = BFloat16(float(acc16) + x) for each x; acc32 += x; xs.sum()\n";
    for (const std::string& line : trace) std::cout << line;
    std::cout << "    accumulator                       result     relative error\n"
              << "    float64 (the reference)    " << fmt("%14.6f", exact) << "\n"
              << "    bf16, rounded each add     " << fmt("%14.6f", float(acc16))
              << fmt("%15.2e", std::fabs(float(acc16) - exact) / exact) << "\n"
              << "    float32, one at a time     " << fmt("%14.6f", acc32)
              << fmt("%15.2e", std::fabs(acc32 - exact) / exact) << "\n"
              << "    xs.sum() (bf16 tensor)     " << fmt("%14.6f", by_sum)
              << fmt("%15.2e", std::fabs(by_sum - exact) / exact) << "   dtype " << xs.sum().dtype() << "\n";
  }
  say("The bf16 accumulator stalls. Between 0.5 and 1 its gap is 2^-8 = 0.0039: a term adds a\n"
      "whole gap if it is above half of it (0.00195, the top 2% of these terms) and nothing\n"
      "otherwise. From 1 on the gap is 2^-7 = 0.0078, every term is below half of it, and the sum\n"
      "stays at 1.0, a tenth of the truth. The float32 accumulator is off in the 7th digit.\n"
      "tt::sum on a bf16 tensor returns a bf16 tensor, but it adds in float32 (Note [bf16\n"
      "compute]) and rounds once, at the end: its error is that one rounding, under 2^-8. The same\n"
      "for ones, where a bf16 register stops at 256:");
  SHOW(tt::ones({4096}, tt::kBFloat16).sum().item<double>());
  say("So the rule every bf16 kernel follows: store in bf16, accumulate in float32.");
}

// -----------------------------------------------------------------------------------------------

void step_4_dot() {
  say("A dot product is a sum of products. Two bf16 numbers have 8 significant bits each, so their\n"
      "product has at most 16 and is exact in float32: all the error is in the accumulation.\n"
      "256 dot products of length K = 4096 on bf16 values, each error taken relative to\n"
      "sum |a_k b_k| (the scale that rounding errors are proportional to):");
  RUN(tt::manual_seed(4));
  RUN(Tensor A = tt::randn({256, 4096}).to(tt::kBFloat16));
  RUN(Tensor b = tt::randn({4096, 1}).to(tt::kBFloat16));
  {
    std::vector<float> a = A.to_vector<float>(), bv = b.to_vector<float>();
    std::vector<float> mm16 = A.matmul(b).to_vector<float>();                                   // bf16 GEMM
    std::vector<float> mm32 = A.to(tt::kFloat32).matmul(b.to(tt::kFloat32)).to_vector<float>();  // sgemm
    const size_t K = 4096;
    double e16 = 0, e32 = 0, emm16 = 0, emm32 = 0, w16 = 0, w32 = 0;
    for (size_t r = 0; r < 256; ++r) {
      double exact = 0, scale = 0;
      float acc32 = 0;
      BFloat16 acc16(0.0f);
      for (size_t k = 0; k < K; ++k) {
        const float p = a[r * K + k] * bv[k];  // exact
        exact += double(p);
        scale += std::fabs(double(p));
        acc32 += p;
        acc16 = BFloat16(float(acc16) + p);
      }
      const double r16 = std::fabs(float(acc16) - exact) / scale, r32 = std::fabs(acc32 - exact) / scale;
      e16 += r16 / 256;
      e32 += r32 / 256;
      w16 = std::max(w16, r16);
      w32 = std::max(w32, r32);
      emm16 += std::fabs(mm16[r] - exact) / scale / 256;
      emm32 += std::fabs(mm32[r] - exact) / scale / 256;
    }
    std::cout << ">>> per row: exact in float64; acc16 = BFloat16(acc16 + a*b); acc32 += a*b; A.matmul(b)\n"
              << "    accumulation                          mean error   worst error   (relative to sum |a b|)\n"
              << "    bf16 register, rounded each add   " << fmt("%14.2e", e16) << fmt("%14.2e", w16) << "\n"
              << "    float32 register                  " << fmt("%14.2e", e32) << fmt("%14.2e", w32) << "\n"
              << "    A.matmul(b), bf16 tensors         " << fmt("%14.2e", emm16) << "                (bf16 output)\n"
              << "    float32 matmul, same values       " << fmt("%14.2e", emm32) << "\n";
  }
  say("Accumulating in bf16 makes the error about 10^5 times larger than in float32 (2^16 is\n"
      "the ratio of the two formats' roundings): K roundings, each up to 2^-8 of the running sum. The bf16 matmul accumulates in float32 and\n"
      "rounds only its output, once: its error is that rounding (2^-8 of |a.b|, which is much\n"
      "smaller than sum |a b| for random signs). This is why the hardware that makes bf16 fast\n"
      "(tensor cores, AVX512-BF16's vdpbf16ps) multiplies bf16 pairs but adds into float32.");
}

// -----------------------------------------------------------------------------------------------

// How many casts of the parameter w the graph behind `out` holds: the ToCopyBackward0 nodes whose
// input is w itself (its AccumulateGrad).
int64_t casts_of(const Tensor& out, const Tensor& w) {
  std::vector<tt::autograd::Node*> stack;
  std::vector<tt::autograd::Node*> seen;
  if (out.grad_fn()) stack.push_back(out.grad_fn().get());
  int64_t casts = 0;
  while (!stack.empty()) {
    tt::autograd::Node* node = stack.back();
    stack.pop_back();
    if (std::find(seen.begin(), seen.end(), node) != seen.end()) continue;
    seen.push_back(node);
    for (const tt::autograd::Edge& e : node->next_edges) {
      if (!e.fn) continue;
      const auto* acc = dynamic_cast<const tt::autograd::AccumulateGrad*>(e.fn.get());
      if (node->name() == "ToCopyBackward0" && acc != nullptr && acc->variable.get() == w.unsafe_impl()) ++casts;
      stack.push_back(e.fn.get());
    }
  }
  return casts;
}

void step_5_autocast() {
  say("Mixed precision keeps what lives across steps in float32 (parameters, gradients, the\n"
      "optimizer's moments) and runs the matrix products, where the time goes, in bf16 with\n"
      "float32 accumulation. tt::AutocastGuard does it without touching the model: inside it,\n"
      "the ops of one list cast their inputs by a policy. The list (amp/autocast.h):");
  {
    std::cout << ">>> for each AutocastOp op: amp::op_name(op), amp::policy(op)\n";
    for (size_t i = 0; i < tt::amp::kNumAutocastOps; ++i) {
      const tt::AutocastOp op = tt::AutocastOp(i);
      const std::string name = tt::amp::op_name(op);
      std::cout << "    " << name << std::string(name.size() < 34 ? 34 - name.size() : 1, ' ')
                << (tt::amp::policy(op) == tt::CastPolicy::LowerPrecision ? "LowerPrecision: inputs to bf16"
                                                                           : "Float32: inputs to float32")
                << "\n";
    }
  }
  say("Every other op runs in its inputs' dtype, promoted as usual (bf16 with float32 gives\n"
      "float32). A small MLP, Linear(32, 64), ReLU, Linear(64, 10), cross-entropy, run once in\n"
      "float32 and once under the guard:");
  RUN(tt::manual_seed(5));
  RUN(nn::Linear fc1(32, 64));
  RUN(nn::Linear fc2(64, 10));
  RUN(Tensor x = tt::randn({128, 32}));
  RUN(Tensor y = tt::randint(10, {128}));
  std::vector<Tensor> ref_grads;
  double ref_loss = 0;
  {
    Tensor loss = tt::F::cross_entropy(fc2.forward(tt::relu(fc1.forward(x))), y);
    loss.backward();
    ref_loss = loss.item<double>();
    for (const Tensor& p : {fc1.weight, fc1.bias, fc2.weight, fc2.bias}) ref_grads.push_back(p.grad().clone());
    fc1.zero_grad();
    fc2.zero_grad();
  }
  std::cout << ">>> (the float32 run: loss " << fmt("%.6f", ref_loss) << ", its gradients kept)\n";
  Tensor loss;
  {
    RUN(tt::AutocastGuard autocast(tt::kCPU, tt::kBFloat16));
    RUN(Tensor h = fc1.forward(x));
    SHOW(h.dtype());
    RUN(Tensor a = tt::relu(h));
    SHOW(a.dtype());
    RUN(Tensor logits = fc2.forward(a));
    SHOW(logits.dtype());
    SHOW(tt::softmax(logits, 1).dtype());
    RUN(Tensor stream = tt::randn({128, 64}));
    SHOW((stream + h).dtype());
    RUN(loss = tt::F::cross_entropy(logits, y));
    SHOW(loss.dtype());
    SHOW(fc1.weight.dtype());
  }
  say("The input x and the weights are float32; linear casts them to bf16 at its entry, so h and\n"
      "the logits are bf16. ReLU is not listed: bf16 in, bf16 out. Softmax and cross-entropy are\n"
      "listed Float32: they exponentiate and add up a row, so they cast the bf16 logits up, and\n"
      "the loss is float32. A float32 residual stream plus a bf16 branch is float32. The model's\n"
      "parameters were never converted. The backward, outside the guard:");
  RUN(loss.backward());
  SHOW(fc1.weight.grad().dtype());
  SHOW(fc2.bias.grad().dtype());
  {
    std::vector<Tensor> grads = {fc1.weight.grad(), fc1.bias.grad(), fc2.weight.grad(), fc2.bias.grad()};
    const char* names[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
    std::cout << ">>> autocast against float32: |loss difference|, then max |grad - ref| / max |ref| per parameter\n"
              << "    loss " << fmt("%.6f", loss.item<double>()) << " vs " << fmt("%.6f", ref_loss) << ": "
              << fmt("%.2e", std::fabs(loss.item<double>() - ref_loss)) << "\n";
    for (size_t i = 0; i < grads.size(); ++i)
      std::cout << "    " << names[i] << std::string(12 - std::string(names[i]).size(), ' ')
                << fmt("%.2e", (grads[i] - ref_grads[i]).abs().max().item<double>() / ref_grads[i].abs().max().item<double>())
                << "\n";
  }
  say("The cast of a weight is an ordinary differentiable op (Tensor::to), so its gradient comes\n"
      "back through it converted to float32: the optimizer sees float32 gradients. fc2's are a\n"
      "few bf16 roundings away from the float32 run's. fc1's differ by more: count the ReLU units\n"
      "whose input changed sign between the two runs:");
  {
    tt::NoGradGuard no_grad;
    Tensor h32 = fc1.forward(x), h16;
    {
      tt::AutocastGuard autocast(tt::kCPU);
      h16 = fc1.forward(x).to(tt::kFloat32);
    }
    const int64_t flipped = ((h32 > 0) != (h16 > 0)).to(tt::kInt64).sum().item<int64_t>();
    std::cout << ">>> ((h32 > 0) != (h16 > 0)).sum()   (fc1's output in float32 and under autocast)\n    "
              << flipped << " of " << h32.numel() << "\n";
  }
  say("A pre-activation within a rounding of zero can change sign, and then its unit's whole\n"
      "term enters or leaves fc1's gradient: not a rounding error but a different, equally valid\n"
      "gradient at a point a rounding away. Training does not mind (the suite trains a GPT both\n"
      "ways and compares the losses); a test comparing gradients elementwise would, with ReLU, so\n"
      "the suite's uses GELU. Autocast is off during backward: each gradient takes the dtype of\n"
      "the forward value it belongs to.");
  say("Autocast keeps the casts of parameters (leaves that require grad) until the outermost guard\n"
      "closes: a weight that several listed ops read under one guard is converted once. A\n"
      "recurrent cell unrolled over 8 time steps reads its weight 8 times; counting the casts of\n"
      "cell.weight in the graph (ToCopyBackward0 nodes whose input is the weight):");
  RUN(nn::Linear cell(16, 16));
  RUN(Tensor xs = tt::randn({8, 4, 16}));
  {
    Tensor h = tt::zeros({4, 16});
    {
      tt::AutocastGuard autocast(tt::kCPU);
      for (int64_t t = 0; t < 8; ++t) h = tt::tanh(cell.forward(h) + xs[t]);
    }
    std::cout << ">>> { AutocastGuard autocast(kCPU); for 8 steps: h = tanh(cell.forward(h) + xs[t]); }\n"
              << "    casts_of(h, cell.weight): " << casts_of(h, cell.weight) << "\n";
    h = tt::zeros({4, 16});
    for (int64_t t = 0; t < 8; ++t) {
      tt::AutocastGuard autocast(tt::kCPU);
      h = tt::tanh(cell.forward(h) + xs[t]);
    }
    std::cout << ">>> for 8 steps: { AutocastGuard autocast(kCPU); h = tanh(cell.forward(h) + xs[t]); }\n"
              << "    casts_of(h, cell.weight): " << casts_of(h, cell.weight) << "\n";
  }
  say("One guard: one bf16 copy, read by all eight products. A guard per step: eight casts of the\n"
      "same weight. Module 14's GPT with its tied embedding and head is not such a case: the\n"
      "embedding lookup is not a listed op and reads the float32 weight as it is, so only the head\n"
      "casts it, once per forward, with the cache or without:");
  RUN(nn::GPT gpt(nn::GPTOptions(11, 16).n_layer(2).n_embd(64).n_head(4)));
  {
    Tensor ids = tt::randint(11, {4, 16}), logits;
    {
      tt::AutocastGuard autocast(tt::kCPU);
      logits = gpt(ids);
    }
    std::cout << ">>> { AutocastGuard autocast(kCPU); logits = gpt(ids); }\n"
              << "    casts_of(logits, gpt.tok_emb->weight): " << casts_of(logits, gpt.tok_emb->weight) << "\n";
  }
}

// -----------------------------------------------------------------------------------------------

// Fractions of the gradients g that a format loses after scaling by S and unscaling: flushed to 0,
// turned into inf, or off by more than 1%.
struct Damage {
  double zero = 0, inf = 0, off = 0;
};

template <typename Round>
Damage damage(const std::vector<double>& g, double S, Round round) {
  Damage d;
  const double n = double(g.size());
  for (double v : g) {
    const double r = round(v * S);
    if (std::isinf(r)) {
      d.inf += 1 / n;
    } else if (r == 0) {
      d.zero += 1 / n;
    } else if (std::fabs(r / S - v) > 0.01 * std::fabs(v)) {
      d.off += 1 / n;
    }
  }
  return d;
}

void step_6_loss_scaling() {
  say("float16 has 3 more bits of precision than bf16 but 5 exponent bits instead of 8: its\n"
      "normal numbers stop at 2^-14 = 6.1e-5, its subnormals (with fewer and fewer significant\n"
      "bits) at 2^-24 = 6.0e-8. Gradients are often smaller. A float16 simulated in this file\n"
      "(round_to_format: 10 mantissa bits, exponents down to -14, subnormals to 2^-24, inf past\n"
      "65504; checked first on bf16's widths against tt::BFloat16):");
  {
    tt::manual_seed(6);
    std::vector<float> xs = (tt::randn({100000}) * 1e-3).to_vector<float>();
    int64_t agree = 0;
    for (float x : xs) agree += round_to_format(x, 7, -126, 3.3895313892515355e38) == double(float(BFloat16(x))) ? 1 : 0;
    std::cout << ">>> round_to_format(x, 7, -126, bf16 max) == float(BFloat16(x)) for 100,000 randn x 1e-3\n    "
              << agree << " of 100000\n";
  }
  SHOW(to_half(1.0e-4));
  SHOW(to_half(3.0e-6));
  SHOW(to_half(2.0e-8));
  SHOW(to_half(70000.0));
  say("3e-6 survives as a subnormal with 6 significant bits (2.98e-6), 2e-8 becomes 0, 70000 inf.\n"
      "Take 100,000 gradient values whose magnitudes spread evenly over the decades from 2^-34\n"
      "(6e-11) to 2^-4 (0.06), random signs, as a network's gradients spread over many orders of\n"
      "magnitude. Stored in float16 directly, and after a loss scale S (multiply the loss by S,\n"
      "so every gradient is S times larger by the chain rule; divide by S in float32 before the\n"
      "step), against bf16 without any scale:");
  RUN(tt::manual_seed(7));
  RUN(Tensor u = tt::rand({100000}, tt::kFloat64));
  RUN(Tensor signs = tt::randint(2, {100000}).to(tt::kFloat64) * 2 - 1);
  RUN(Tensor g = signs * tt::exp((u * 30 - 34) * std::log(2.0)));  // |g| = 2^(-34 .. -4)
  {
    std::vector<double> gv = g.to_vector<double>();
    auto half = [](double v) { return to_half(v); };
    auto bf16 = [](double v) { return double(float(BFloat16(float(v)))); };
    std::cout << ">>> damage(g, S, format): fractions flushed to 0, overflowed to inf, off by > 1%\n"
              << "    format     loss scale S        zero       inf    off > 1%\n";
    auto row = [&](const char* name, const char* scale, Damage d) {
      std::cout << "    " << name << std::string(11 - std::string(name).size(), ' ') << scale
                << std::string(14 - std::string(scale).size(), ' ') << fmt("%10.1f%%", 100 * d.zero)
                << fmt("%9.1f%%", 100 * d.inf) << fmt("%11.1f%%", 100 * d.off) << "\n";
    };
    row("float16", "1", damage(gv, 1.0, half));
    row("float16", "2^8", damage(gv, 256.0, half));
    row("float16", "2^16", damage(gv, 65536.0, half));
    row("float16", "2^24", damage(gv, std::ldexp(1.0, 24), half));
    row("bf16", "1", damage(gv, 1.0, bf16));
  }
  say("Unscaled, float16 flushes every gradient below 2^-25 to zero (30% of these) and damages\n"
      "those between 2^-25 and 2^-14 (subnormals). A scale of 2^16 shifts the values up into\n"
      "float16's range. Too large a scale overflows the largest gradients: at 2^24, 0.06 x 2^24 =\n"
      "1e6 is past 65504. Dynamic loss scaling finds the scale as it goes: start high; when a\n"
      "step's gradients hold an inf or a NaN, skip the step and halve S; after N good steps (2,000\n"
      "in PyTorch's GradScaler), double it. Searching from 2^24 on these gradients:");
  {
    std::vector<double> gv = g.to_vector<double>();
    double S = std::ldexp(1.0, 24);
    std::cout << ">>> while (damage(g, S, to_half).inf > 0) S /= 2;   (one skipped step each)\n    ";
    int skipped = 0;
    while (damage(gv, S, [](double v) { return to_half(v); }).inf > 0) {
      std::cout << "2^" << int(std::log2(S)) << " overflows, ";
      S /= 2;
      ++skipped;
    }
    Damage d = damage(gv, S, [](double v) { return to_half(v); });
    std::cout << "2^" << int(std::log2(S)) << " fits: " << skipped << " skipped steps; then "
              << fmt("%.1f%%", 100 * d.zero) << " zero, " << fmt("%.1f%%", 100 * d.off) << " off by > 1%\n";
  }
  say("float16 spans 40 binades, 2^-24 to 2^16 (the lowest 10 of them subnormal, with fewer\n"
      "bits); these gradients span 30, so one scale can fit them, but it must be found, it moves\n"
      "as the gradients shrink during training, and every overflow costs a step. bf16 has\n"
      "float32's exponent: its normal numbers span float32's, 2^-126 to 2^128, and it keeps all\n"
      "of these gradients with no scale, nothing becomes zero and nothing is off by more than\n"
      "2^-8. Only at the very bottom does it lose what float32 keeps: float32's subnormals go down\n"
      "to 2^-149, bf16's, with 7 mantissa bits instead of 23, only to 2^-133 = 9.2e-41:");
  SHOW(float(tt::BFloat16(1.0e-39f)));
  SHOW(float(tt::BFloat16(1.0e-40f)));
  SHOW(float(tt::BFloat16(4.0e-41f)));
  say("1e-39 becomes 11 x 2^-133 (4 significant bits, 1% off), 1e-40 becomes 2^-133 (one bit,\n"
      "8% off), and anything at or below 2^-134 = 4.6e-41 rounds to 0. Gradients that small are\n"
      "not what training runs on, and no scaler is needed to keep the rest. That is what\n"
      "autocast's bf16 buys: no loss scaler, no skipped steps, no inf checks. AutocastGuard takes\n"
      "bf16 only, and says why:");
  SHOW_ERROR(tt::AutocastGuard(tt::kCPU, tt::kFloat32));
}

// -----------------------------------------------------------------------------------------------

void step_7_speed() {
  say("bf16 halves the bytes of every tensor it stores, and hardware with bf16 instructions does\n"
      "twice the multiply-adds per instruction: AVX512-BF16's vdpbf16ps multiplies 32 bf16 pairs\n"
      "and adds them, in pairs, into 16 float32 sums. Does this CPU have it, and does the bf16\n"
      "GEMM use it (backend/cpu/gemm_bf16.h)?");
  SHOW(tt::cpu::gemm_bf16_native());
  if (!tt::cpu::gemm_bf16_native())
    say("No: here the bf16 GEMM widens blocks of its operands to float32 and hands them to the\n"
        "same sgemm (the same math: a product of two bf16 values is exact in float32). Expect no\n"
        "gain below, only the widening's cost; the gain needs AVX512-BF16 (or a GPU).");
  say("A [n, n] x [n, n] product in float32 (OpenBLAS's sgemm) and in bf16, timed in turn\n"
      "(A B A B ..., so that both see the same machine), the best of each:");
  {
    std::cout << ">>> best_ms(a32.matmul(b32)), best_ms(a16.matmul(b16)), interleaved\n"
              << "       n     float32 ms   GFLOP/s      bf16 ms   GFLOP/s   float32 / bf16\n";
    for (int64_t n : {256, 512, 1024}) {
      tt::manual_seed(8);
      Tensor a32 = tt::randn({n, n}), b32 = tt::randn({n, n});
      Tensor a16 = a32.to(tt::kBFloat16), b16 = b32.to(tt::kBFloat16);
      a32.matmul(b32);
      a16.matmul(b16);  // warm up: threads, allocator
      double t32 = 1e30, t16 = 1e30;
      const int rounds = n >= 1024 ? 3 : 6;
      for (int r = 0; r < rounds; ++r) {
        t32 = std::min(t32, best_ms([&] { a32.matmul(b32); }, 1));
        t16 = std::min(t16, best_ms([&] { a16.matmul(b16); }, 1));
      }
      const double gflop = 2.0 * double(n) * double(n) * double(n) * 1e-9;
      std::cout << "    " << fmt("%4.0f", double(n)) << fmt("%15.2f", t32) << fmt("%10.1f", gflop / t32 * 1e3)
                << fmt("%13.2f", t16) << fmt("%10.1f", gflop / t16 * 1e3) << fmt("%14.2f", t32 / t16) << "x\n";
    }
    const int threads = tt::get_num_threads();
    const std::string kernels = blas_kernels();
    std::cout << "    (best of 6 runs each, 3 at n = 1024; " << threads << (threads == 1 ? " thread" : " threads")
              << (kernels.empty() ? "" : "; BLAS kernels " + kernels) << ")\n";
  }
  say("Arithmetic intensity: 2 n^3 FLOPs over the 3 n^2 numbers read and written (both operands\n"
      "and the result, once each) is n / 6 FLOPs per byte in float32 and n / 3 in bf16, " +
      fmt("%.0f", 1024.0 / 6) + " and\n" + fmt("%.0f", 1024.0 / 3) +
      " at n = 1024: far above what memory limits, so a large product is bound by arithmetic,\n"
      "and bf16 pays off by doing more of it per instruction, not by moving fewer bytes.");
  say("Bytes: a [1024, 1024] operand is 4 MiB in float32, 2 MiB in bf16. A whole training step is\n"
      "more than its products: under autocast each forward also casts every weight to bf16 (read\n"
      "4 bytes, write 2 per element) and the activations between listed and unlisted ops, and the\n"
      "backward converts the weights' gradients back. A GPT's training step, float32 against\n"
      "bf16 autocast, on the same model, interleaved, best of 3 each:");
  {
    std::cout << ">>> { AutocastGuard a(kCPU, kBFloat16, bf16); loss = cross_entropy(gpt(ids), t); } backward; step\n"
              << "    model                                   tokens   float32 ms    bf16 ms   float32 / bf16\n";
    struct Size {
      const char* name;
      int64_t layers, E, heads, B, T;
    };
    for (Size s : {Size{"milestone GPT: 2 blocks, E = 64 ", 2, 64, 4, 64, 16},
                   Size{"wider GPT:     2 blocks, E = 256", 2, 256, 4, 16, 64}}) {
      tt::manual_seed(9);
      const int64_t V = 64;
      nn::GPT gpt(nn::GPTOptions(V, s.T).n_layer(s.layers).n_embd(s.E).n_head(s.heads));
      tt::optim::AdamW opt(gpt.parameters(), tt::optim::AdamWOptions(1e-3));
      Tensor ids = tt::randint(V, {s.B, s.T}), targets = tt::randint(V, {s.B, s.T});
      auto step = [&](bool bf16) {
        Tensor loss;
        {
          tt::AutocastGuard autocast(tt::kCPU, tt::kBFloat16, bf16);
          loss = tt::F::cross_entropy(gpt(ids).reshape({-1, V}), targets.reshape({-1}));
        }
        opt.zero_grad();
        loss.backward();
        opt.step();
      };
      step(false);
      step(true);
      double t32 = 1e30, t16 = 1e30;
      for (int r = 0; r < 3; ++r) {
        t32 = std::min(t32, best_ms([&] { step(false); }, 1));
        t16 = std::min(t16, best_ms([&] { step(true); }, 1));
      }
      std::cout << "    " << s.name << fmt("%11.0f", double(s.B * s.T)) << fmt("%13.2f", t32) << fmt("%11.2f", t16)
                << fmt("%14.2f", t32 / t16) << "x\n";
    }
    std::cout << "    (" << best_of(3) << ")\n";
  }
  say("(Timings are from this machine, now; rerun to compare, with OMP_NUM_THREADS=1 on a busy\n"
      "machine: module 14, section 11.) Where the products are small the\n"
      "casts and the extra ops cost more than bf16 saves; the wider the model, the more of the step\n"
      "is large products, and the closer the step's speedup comes to the GEMM's. `tools/tt demo\n"
      "--precision bf16` trains the milestone's GPT this way; on a GPU, tensor cores make bf16\n"
      "products many times faster than float32 ones, and the same autocast applies.");
  if (!tt::cuda::is_available()) {
    say("No GPU here: on a CUDA build with a GPU this step also times a [4096, 4096] product on it,\n"
        "float32 (TF32 off) against bf16 on the tensor cores (cuBLAS, float32 accumulation).");
    return;
  }
  say("This machine has a GPU: a [4096, 4096] product on it, float32 (TF32 off: full float32)\n"
      "against bf16 on the tensor cores, each call synchronized, best of 10:");
  {
    const int64_t n = 4096;
    Tensor a32 = tt::randn({n, n}).cuda(), b32 = tt::randn({n, n}).cuda();
    Tensor a16 = a32.to(tt::kBFloat16), b16 = b32.to(tt::kBFloat16);
    const bool tf32 = tt::cuda::allow_tf32();
    tt::cuda::set_allow_tf32(false);
    auto timed = [](const Tensor& a, const Tensor& b) {
      a.matmul(b);
      tt::cuda::synchronize();
      return best_ms([&] {
        a.matmul(b);
        tt::cuda::synchronize();
      }, 10);
    };
    const double t32 = timed(a32, b32), t16 = timed(a16, b16);
    tt::cuda::set_allow_tf32(tf32);
    const double tflop = 2.0 * double(n) * double(n) * double(n) * 1e-12;
    std::cout << ">>> " << tt::cuda::device_description(0) << "\n    float32 " << fmt("%.3f", t32) << " ms ("
              << fmt("%.0f", tflop / t32 * 1e3) << " TFLOP/s), bf16 " << fmt("%.3f", t16) << " ms ("
              << fmt("%.0f", tflop / t16 * 1e3) << " TFLOP/s): " << fmt("%.1f", t32 / t16) << "x\n"
              << "    (best of 10; " << fmt("%.0f", n / 6.0) << " FLOP/byte in float32, " << fmt("%.0f", n / 3.0)
              << " in bf16)\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  narrate::Walkthrough w;
  w.name = "walkthrough_15";
  w.begin = [] {
    std::cout << "Module 15 - mixed precision: float32, TF32, bf16 and float16 bit by bit; rounding;\n"
                 "why sums stay in float32; autocast; loss scaling; and what bf16 buys in speed.\n";
    std::cout.precision(6);
  };
  w.steps = {
      {"1", "Four number formats, bit by bit", step_1_formats},
      {"2", "Rounding: to nearest, ties to even", step_2_rounding},
      {"3", "Sums: why accumulation stays in float32", step_3_sums},
      {"4", "Dot products", step_4_dot},
      {"5", "Autocast on a small MLP", step_5_autocast},
      {"6", "Loss scaling: what float16 needs and bf16 does not", step_6_loss_scaling},
      {"7", "Speed: a bf16 GEMM and a GPT step", step_7_speed},
  };
  w.end = [](double secs) {
    std::cout << "\nDone in " << fmt("%.2f", secs)
              << " s. bf16 stores, float32 adds: the two rules that make mixed precision safe.\n";
  };
  return narrate::run_walkthrough(argc, argv, w);
}
