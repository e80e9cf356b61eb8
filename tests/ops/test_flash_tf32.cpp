// The arithmetic of the tensor-core flash kernels, emulated on the CPU (tinytorch/backend/tf32.h):
// TF32 rounding as cvt.rna, the per-product error of 3xTF32 and 1xTF32, and an attention forward and
// backward computed with each mode against a float64 reference on random shapes, within the bounds
// that modules/13_flash_attention/README.md ("Tensor cores and their error") derives: 3xTF32 within
// the exact float32 path's 1e-5, 1xTF32 within 2e-3 (out) and 5e-3 (gradients).
#include "tinytorch/backend/tf32.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

using namespace tt;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// One attention problem for one (batch, head): q [Tq, D], k, v [Tk, D], dout [Tq, D] and an
// additive bias [Tq, Tk] (0, -inf where hidden, or random), causal on top.
struct Problem {
  int64_t Tq = 0, Tk = 0, D = 0;
  bool causal = false;
  std::vector<float> q, k, v, dout, bias;
};

// out, dq, dk, dv in float64, however they were computed.
struct Grads {
  std::vector<double> out, dq, dk, dv;
};

bool hidden(const Problem& p, int64_t i, int64_t j) {
  return (p.causal && j > i) || p.bias[size_t(i * p.Tk + j)] == -std::numeric_limits<float>::infinity();
}

// The reference: every step in float64 (exp, not exp2; no TF32).
Grads reference(const Problem& p) {
  const int64_t Tq = p.Tq, Tk = p.Tk, D = p.D;
  const double scale = 1.0 / std::sqrt(double(D));
  std::vector<double> P(size_t(Tq * Tk), 0.0);
  Grads r{std::vector<double>(size_t(Tq * D), 0.0), std::vector<double>(size_t(Tq * D), 0.0),
          std::vector<double>(size_t(Tk * D), 0.0), std::vector<double>(size_t(Tk * D), 0.0)};
  for (int64_t i = 0; i < Tq; ++i) {
    double m = -kInf;
    std::vector<double> s(size_t(Tk), -kInf);
    for (int64_t j = 0; j < Tk; ++j) {
      if (hidden(p, i, j)) continue;
      double dot = 0;
      for (int64_t d = 0; d < D; ++d) dot += double(p.q[size_t(i * D + d)]) * p.k[size_t(j * D + d)];
      s[size_t(j)] = dot * scale + p.bias[size_t(i * Tk + j)];
      m = std::max(m, s[size_t(j)]);
    }
    if (m == -kInf) continue;  // nothing visible: out 0, no gradient
    double l = 0;
    for (int64_t j = 0; j < Tk; ++j) l += std::exp(s[size_t(j)] - m);
    for (int64_t j = 0; j < Tk; ++j) P[size_t(i * Tk + j)] = std::exp(s[size_t(j)] - m) / l;
  }
  for (int64_t i = 0; i < Tq; ++i)
    for (int64_t j = 0; j < Tk; ++j)
      for (int64_t d = 0; d < D; ++d) r.out[size_t(i * D + d)] += P[size_t(i * Tk + j)] * p.v[size_t(j * D + d)];
  for (int64_t i = 0; i < Tq; ++i) {
    double dvec = 0;
    for (int64_t d = 0; d < D; ++d) dvec += double(p.dout[size_t(i * D + d)]) * r.out[size_t(i * D + d)];
    for (int64_t j = 0; j < Tk; ++j) {
      const double pij = P[size_t(i * Tk + j)];
      if (pij == 0) continue;
      double dp = 0;
      for (int64_t d = 0; d < D; ++d) dp += double(p.dout[size_t(i * D + d)]) * p.v[size_t(j * D + d)];
      const double ds = pij * (dp - dvec) * scale;
      for (int64_t d = 0; d < D; ++d) {
        r.dv[size_t(j * D + d)] += pij * p.dout[size_t(i * D + d)];
        r.dq[size_t(i * D + d)] += ds * p.k[size_t(j * D + d)];
        r.dk[size_t(j * D + d)] += ds * p.q[size_t(i * D + d)];
      }
    }
  }
  return r;
}

// The CUDA kernels' computation in float32 with the products of `mode` (tf32::dot): scores in
// base 2 (scale * log2 e folded in), exp2, out = (P~ V) / l, lse; backward from lse as
// flash_mma_backward.cu: P = exp2(s2 - lse2), Dvec = rowsum(dO * O) exactly, dS = P (dP - Dvec) scale.
Grads emulate(const Problem& p, tf32::Mode mode) {
  const int64_t Tq = p.Tq, Tk = p.Tk, D = p.D;
  const float scale = float(1.0 / std::sqrt(double(D))), log2e = 1.4426950408889634f, c2 = scale * log2e;
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> s2(size_t(Tq * Tk), ninf), pt(size_t(Tq * Tk), 0.f), lse2(size_t(Tq), ninf),
      out(size_t(Tq * D), 0.f);
  for (int64_t i = 0; i < Tq; ++i) {
    float m = ninf;
    for (int64_t j = 0; j < Tk; ++j) {
      if (hidden(p, i, j)) continue;
      const float dot = tf32::dot(mode, &p.q[size_t(i * D)], 1, &p.k[size_t(j * D)], 1, D);
      s2[size_t(i * Tk + j)] = dot * c2 + p.bias[size_t(i * Tk + j)] * log2e;
      m = std::max(m, s2[size_t(i * Tk + j)]);
    }
    if (m == ninf) continue;
    float l = 0.f;
    for (int64_t j = 0; j < Tk; ++j) {
      pt[size_t(i * Tk + j)] = std::exp2(s2[size_t(i * Tk + j)] - m);
      l += pt[size_t(i * Tk + j)];
    }
    lse2[size_t(i)] = m + std::log2(l);
    for (int64_t d = 0; d < D; ++d)
      out[size_t(i * D + d)] = tf32::dot(mode, &pt[size_t(i * Tk)], 1, &p.v[size_t(d)], D, Tk) * (1.f / l);
  }
  std::vector<float> P(size_t(Tq * Tk), 0.f), dS(size_t(Tq * Tk), 0.f);
  for (int64_t i = 0; i < Tq; ++i) {
    if (lse2[size_t(i)] == ninf) continue;
    float dvec = 0.f;
    for (int64_t d = 0; d < D; ++d) dvec = std::fmaf(p.dout[size_t(i * D + d)], out[size_t(i * D + d)], dvec);
    for (int64_t j = 0; j < Tk; ++j) {
      const float pij = std::exp2(s2[size_t(i * Tk + j)] - lse2[size_t(i)]);
      const float dp = tf32::dot(mode, &p.dout[size_t(i * D)], 1, &p.v[size_t(j * D)], 1, D);
      P[size_t(i * Tk + j)] = pij;
      dS[size_t(i * Tk + j)] = pij * (dp - dvec) * scale;
    }
  }
  Grads r{std::vector<double>(out.begin(), out.end()), std::vector<double>(size_t(Tq * D)),
          std::vector<double>(size_t(Tk * D)), std::vector<double>(size_t(Tk * D))};
  for (int64_t i = 0; i < Tq; ++i)
    for (int64_t d = 0; d < D; ++d)
      r.dq[size_t(i * D + d)] = tf32::dot(mode, &dS[size_t(i * Tk)], 1, &p.k[size_t(d)], D, Tk);
  for (int64_t j = 0; j < Tk; ++j)
    for (int64_t d = 0; d < D; ++d) {
      r.dv[size_t(j * D + d)] = tf32::dot(mode, &P[size_t(j)], Tk, &p.dout[size_t(d)], D, Tq);
      r.dk[size_t(j * D + d)] = tf32::dot(mode, &dS[size_t(j)], Tk, &p.q[size_t(d)], D, Tq);
    }
  return r;
}

// max |a - b| / max(max |b|, 1), as the CUDA flash tests measure; NaN in a gives NaN (fails).
double rel_err(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 1;
  for (size_t i = 0; i < a.size(); ++i) {
    const double e = std::abs(a[i] - b[i]);
    num = e > num || e != e ? e : num;
    den = std::max(den, std::abs(b[i]));
  }
  return num / den;
}

// Random problem: inputs standard normal; mask kind 0 none, 1 about 20% hidden (-inf), 2 a random
// float bias with some -inf, 3 a quarter of the rows hidden entirely.
Problem make_problem(std::mt19937& rng, int64_t Tq, int64_t Tk, int64_t D, bool causal, int mask_kind) {
  std::normal_distribution<float> n01;
  std::uniform_real_distribution<float> u01(0.f, 1.f);
  Problem p;
  p.Tq = Tq;
  p.Tk = Tk;
  p.D = D;
  p.causal = causal;
  auto fill = [&](std::vector<float>& x, int64_t count) {
    x.resize(size_t(count));
    for (float& e : x) e = n01(rng);
  };
  fill(p.q, Tq * D);
  fill(p.k, Tk * D);
  fill(p.v, Tk * D);
  fill(p.dout, Tq * D);
  p.bias.assign(size_t(Tq * Tk), 0.f);
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < Tq; ++i) {
    const bool row_hidden = mask_kind == 3 && u01(rng) < 0.25f;
    for (int64_t j = 0; j < Tk; ++j) {
      float& b = p.bias[size_t(i * Tk + j)];
      if (mask_kind == 1 && u01(rng) < 0.2f) b = ninf;
      if (mask_kind == 2) b = u01(rng) < 0.1f ? ninf : n01(rng);
      if (row_hidden) b = ninf;
    }
  }
  return p;
}

}  // namespace

TEST_CASE("tf32::round is cvt.rna: 10 mantissa bits, to nearest, ties away from zero", "[ops][flash][tf32]") {
  CHECK(tf32::round(1.f) == 1.f);
  CHECK(tf32::round(-3.5f) == -3.5f);
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: away from zero.
  CHECK(tf32::round(1.f + std::ldexp(1.f, -11)) == 1.f + std::ldexp(1.f, -10));
  CHECK(tf32::round(-(1.f + std::ldexp(1.f, -11))) == -(1.f + std::ldexp(1.f, -10)));
  // Just below halfway: down; just above: up.
  CHECK(tf32::round(1.f + std::ldexp(1.f, -11) - std::ldexp(1.f, -23)) == 1.f);
  CHECK(tf32::round(1.f + std::ldexp(1.f, -11) + std::ldexp(1.f, -23)) == 1.f + std::ldexp(1.f, -10));
  // A carry out of the mantissa: 2 - 2^-12 rounds to 2.
  CHECK(tf32::round(2.f - std::ldexp(1.f, -12)) == 2.f);
  CHECK(std::isinf(tf32::round(std::numeric_limits<float>::infinity())));
  CHECK(std::isnan(tf32::round(std::nanf(""))));
  // Past the largest TF32 value rounds to infinity, as round-to-nearest must.
  CHECK(std::isinf(tf32::round(std::numeric_limits<float>::max())));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-100.f, 100.f);
  for (int i = 0; i < 10000; ++i) {
    const float x = u(rng), r = tf32::round(x);
    CHECK((bits(r) & 0x1fffu) == 0u);
    CHECK(std::abs(double(r) - x) <= std::ldexp(std::abs(double(x)), -11));  // half a TF32 ulp, relative
    // r is the nearer of the two TF32 neighbours of x.
    const float lo = from_bits(bits(x) & 0xffffe000u), hi = from_bits((bits(x) & 0xffffe000u) + 0x2000u);
    CHECK(std::abs(double(r) - x) <= std::min(std::abs(double(lo) - x), std::abs(double(hi) - x)));
  }
}

TEST_CASE("3xTF32 products err by at most 3 * 2^-22 (1 + 2^-11), 1xTF32 by 2^-10 + 2^-22 (relative)",
          "[ops][flash][tf32]") {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> mant(1.f, 2.f);
  std::uniform_int_distribution<int> ex(-30, 30);
  double worst3 = 0, worst1 = 0;
  for (int i = 0; i < 200000; ++i) {
    const float a = std::ldexp(mant(rng), ex(rng)) * (i % 2 ? -1.f : 1.f), b = std::ldexp(mant(rng), ex(rng));
    const tf32::Split sa = tf32::split(a), sb = tf32::split(b);
    const double exact = double(a) * b;
    // Each partial product is exact in float32 (11 x 11 bits), so float64 sums them without error.
    const double x3 = double(sa.big) * sb.big + double(sa.big) * sb.small + double(sa.small) * sb.big;
    const double x1 = double(sa.big) * sb.big;
    CHECK(float(double(sa.small) * sb.big) == double(sa.small) * sb.big);
    worst3 = std::max(worst3, std::abs(x3 - exact) / std::abs(exact));
    worst1 = std::max(worst1, std::abs(x1 - exact) / std::abs(exact));
  }
  INFO("worst relative error: 3xTF32 " << worst3 << ", 1xTF32 " << worst1);
  CHECK(worst3 <= 3 * std::ldexp(1.0, -22) * (1 + std::ldexp(1.0, -11)));
  CHECK(worst1 <= std::ldexp(1.0, -10) + std::ldexp(1.0, -22));
  CHECK(worst3 > std::ldexp(1.0, -24));  // the bound is not vacuous: 3xTF32 is not exact float32 products
}

TEST_CASE("the float64 reference of the emulation equals tinytorch's float64 attention", "[ops][flash][tf32]") {
  std::mt19937 rng(7);
  const Problem p = make_problem(rng, 37, 53, 32, true, 2);
  const Grads want = reference(p);
  auto t64 = [](const std::vector<float>& x, Shape s) { return tensor(x, s).to(kFloat64); };
  Tensor q = t64(p.q, {1, 1, p.Tq, p.D}).requires_grad_(), k = t64(p.k, {1, 1, p.Tk, p.D}).requires_grad_(),
         v = t64(p.v, {1, 1, p.Tk, p.D}).requires_grad_();
  const Tensor bias = t64(p.bias, {p.Tq, p.Tk});
  Tensor out = scaled_dot_product_attention(q, k, v, bias, 0.0, p.causal);
  out.backward(t64(p.dout, {1, 1, p.Tq, p.D}));
  auto vec = [](const Tensor& t) {
    const Tensor c = t.contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  };
  CHECK(rel_err(vec(out.detach()), want.out) < 1e-12);
  CHECK(rel_err(vec(q.grad()), want.dq) < 1e-12);
  CHECK(rel_err(vec(k.grad()), want.dk) < 1e-12);
  CHECK(rel_err(vec(v.grad()), want.dv) < 1e-12);
}

TEST_CASE("emulated 3xTF32 attention stays within 1e-5 of float64, 1xTF32 within its bound", "[ops][flash][tf32]") {
  std::mt19937 rng(8);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  const int64_t dims[] = {32, 64, 128};
  double worst[3][4] = {};  // [mode][out, dq, dk, dv]
  for (int trial = 0; trial < 18; ++trial) {
    const int64_t D = dims[trial % 3], Tq = pick(1, 90), Tk = trial % 4 == 0 ? Tq : pick(1, 120);
    const bool causal = trial % 2 == 1;
    const int mask_kind = (trial / 2) % 4;
    const Problem p = make_problem(rng, Tq, Tk, D, causal, mask_kind);
    const Grads want = reference(p);
    INFO("trial " << trial << ": Tq " << Tq << " Tk " << Tk << " D " << D << " causal " << causal << " mask "
                  << mask_kind);
    const tf32::Mode modes[] = {tf32::Mode::Exact, tf32::Mode::X3, tf32::Mode::X1};
    for (int m = 0; m < 3; ++m) {
      const Grads got = emulate(p, modes[m]);
      const double e[4] = {rel_err(got.out, want.out), rel_err(got.dq, want.dq),
                           rel_err(got.dk, want.dk), rel_err(got.dv, want.dv)};
      for (int i = 0; i < 4; ++i) worst[m][i] = std::max(worst[m][i], e[i]);
    }
  }
  const char* names[] = {"exact", "3xTF32", "1xTF32"};
  for (int m = 0; m < 3; ++m)
    WARN(names[m] << " worst relative error: out " << worst[m][0] << ", dq " << worst[m][1] << ", dk " << worst[m][2]
                  << ", dv " << worst[m][3]);
  for (int i = 0; i < 4; ++i) {
    CHECK(worst[0][i] < 1e-5);  // exact FFMA
    CHECK(worst[1][i] < 1e-5);  // 3xTF32: the bound, the exact path's tolerance
  }
  CHECK(worst[2][0] < 2e-3);  // 1xTF32 forward
  for (int i = 1; i < 4; ++i) CHECK(worst[2][i] < 5e-3);  // 1xTF32 gradients
  // 1xTF32 is really coarser: its error is well above float32's.
  CHECK(worst[2][0] > 1e-5);
}

TEST_CASE("SDPBackend::FlashExact runs the flash kernel (exact on the CPU) and is refused as Flash is",
          "[ops][flash][tf32]") {
  manual_seed(9);
  const Tensor q = randn({2, 3, 40, 16}), k = randn({2, 3, 50, 16}), v = randn({2, 3, 50, 16});
  Tensor flash, exact;
  {
    SdpaKernelGuard g(SDPBackend::Flash);
    flash = scaled_dot_product_attention(q, k, v, {}, 0.0, true);
  }
  {
    SdpaKernelGuard g(SDPBackend::FlashExact);
    CHECK(sdpa_backend() == SDPBackend::FlashExact);
    Tensor qg = q.detach().requires_grad_();
    exact = scaled_dot_product_attention(qg, k, v, {}, 0.0, true);
    CHECK(std::string(exact.grad_fn()->name()) == "ScaledDotProductFlashAttentionBackward0");
    REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k, v, {}, 0.5, true),
                        Catch::Matchers::Contains("the flash kernel was forced"));
  }
  CHECK(sdpa_backend() == SDPBackend::Auto);
  CHECK(testing::allclose(exact.detach(), flash, 0.0, 0.0));  // the CPU has one arithmetic
}
