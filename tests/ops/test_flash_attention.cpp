// The flash kernel of scaled_dot_product_attention (backend/cpu/flash_attention.cpp) against the
// materializing math kernel on random shapes that cross tile edges (odd lengths, Tq != Tk, every
// mask kind, GQA, decoding one query), gradcheck in float64 across several tiles, and the O(N)
// memory claim measured with the allocator's peak at [1, 8, 8192, 64].
#include <omp.h>

#include <cmath>
#include <limits>
#include <random>

#include "test_util.h"

using namespace tt;
using Catch::Matchers::Contains;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Result {
  Tensor out, dq, dk, dv;
};

Result run(SDPBackend backend, const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& up,
           const Tensor& mask, bool causal, bool gqa) {
  SdpaKernelGuard guard(backend);
  Tensor q = q0.detach().requires_grad_(), k = k0.detach().requires_grad_(), v = v0.detach().requires_grad_();
  Tensor out = scaled_dot_product_attention(q, k, v, mask, 0.0, causal, std::nullopt, gqa);
  out.backward(up);
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

// max |a - b| / max |b|, in float64: the error relative to the tensor's scale. The scale is
// floored at 1 (allclose with rtol = atol) so that a gradient that is exactly 0 in exact
// arithmetic (a single visible key gives dq = dk = 0) compares by absolute error: float32 leaves
// ~1e-7 * |dO . V| of cancellation noise there (FlashAttention-2's dS = P * (dP - rowsum(dO * O))
// subtracts two equal sums).
double rel_err(const Tensor& a, const Tensor& b) {
  const Tensor a64 = a.to(kFloat64), b64 = b.to(kFloat64);
  return (a64 - b64).abs().max().item<double>() / std::max(b64.abs().max().item<double>(), 1.0);
}

}  // namespace

TEST_CASE("flash attention equals the math kernel on random shapes", "[ops][attention][flash]") {
  std::mt19937 rng(1234);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (int trial = 0; trial < 24; ++trial) {
    const int64_t B = pick(1, 2), Hkv = pick(1, 2), G = pick(1, 3), Hq = Hkv * G;
    const int64_t Tq = trial % 6 == 0 ? 1 : pick(1, 700), Tk = trial % 3 == 0 ? Tq : pick(1, 700);
    const int64_t D = pick(1, 40), Dv = pick(1, 40);
    const bool causal = trial % 2 == 1;
    // Mask kinds, each with and without causal: none, bool [Tq, Tk], float [B, 1, Tq, Tk] with
    // -inf, bool key padding.
    const int mask_kind = (trial / 2) % 4;
    manual_seed(uint64_t(trial));
    const Tensor q = randn({B, Hq, Tq, D}), k = randn({B, Hkv, Tk, D}), v = randn({B, Hkv, Tk, Dv});
    const Tensor up = randn({B, Hq, Tq, Dv});
    Tensor mask;
    if (mask_kind == 1) mask = rand({Tq, Tk}) > 0.2;
    if (mask_kind == 2) mask = masked_fill(randn({B, 1, Tq, Tk}), rand({B, 1, Tq, Tk}) > 0.8, -kInf);
    if (mask_kind == 3) mask = rand({B, 1, 1, Tk}) > 0.1;
    INFO("trial " << trial << ": q " << q.shape() << " k " << k.shape() << " v " << v.shape() << " causal " << causal
                  << " mask kind " << mask_kind);
    // The reference: the math kernel in float64; both float32 kernels are held to the same bound.
    const Tensor mask64 = mask.defined() && mask.dtype() != kBool ? mask.to(kFloat64) : mask;
    const Result want = run(SDPBackend::Math, q.to(kFloat64), k.to(kFloat64), v.to(kFloat64), up.to(kFloat64), mask64,
                            causal, G > 1);
    const Result math = run(SDPBackend::Math, q, k, v, up, mask, causal, G > 1);
    const Result got = run(SDPBackend::Flash, q, k, v, up, mask, causal, G > 1);
    CHECK(rel_err(math.out, want.out) < 1e-5);
    CHECK(rel_err(got.out, want.out) < 1e-5);
    CHECK(rel_err(got.dq, want.dq) < 1e-5);
    CHECK(rel_err(got.dk, want.dk) < 1e-5);
    CHECK(rel_err(got.dv, want.dv) < 1e-5);
    for (const Tensor& t : {got.out, got.dq, got.dk, got.dv})
      CHECK(eq(t, t).to(kInt64).sum().item<int64_t>() == t.numel());  // no NaN
  }
}

TEST_CASE("flash attention: gradcheck in float64 across several tiles", "[ops][attention][flash]") {
  manual_seed(9);
  SdpaKernelGuard guard(SDPBackend::Flash);
  // 135 queries and 300 keys: 2 x 2 forward tiles (128 x 256) and 2 backward key tiles (256), with
  // one key/value head, so the backward also splits its key tiles across threads. Query panels of
  // the backward (512 rows) are crossed by the random shapes above, up to 700 queries.
  const Tensor q = randn({1, 2, 135, 1}, kFloat64).requires_grad_();
  const Tensor k = randn({1, 1, 300, 1}, kFloat64).requires_grad_();
  const Tensor v = randn({1, 1, 300, 1}, kFloat64).requires_grad_();
  const Tensor mask = rand({135, 300}) > 0.1;
  auto f = [&](const autograd::TensorList& in) {
    return scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, true, std::nullopt, true);
  };
  CHECK(autograd::gradcheck(f, {q, k, v}).message == "");
}

TEST_CASE("flash attention: one query against a long KV cache", "[ops][attention][flash]") {
  manual_seed(10);
  const Tensor q = randn({2, 4, 1, 32}), k = randn({2, 4, 1000, 32}), v = randn({2, 4, 1000, 32});
  Tensor flash, math;
  {
    SdpaKernelGuard g(SDPBackend::Flash);
    flash = scaled_dot_product_attention(q, k, v);
  }
  {
    SdpaKernelGuard g(SDPBackend::Math);
    math = scaled_dot_product_attention(q, k, v);
  }
  CHECK(rel_err(flash, math) < 1e-5);
}

TEST_CASE("flash attention backward splits one head's keys across threads (MQA at batch 1)",
          "[ops][attention][flash]") {
  // One (batch, key/value head) pair and four threads: the backward hands each thread its own key
  // tiles and sums the per-thread dQ buffers afterwards (backward_chunks in cpu/flash_attention.cpp).
  struct Threads {
    int saved = omp_get_max_threads();
    Threads() { omp_set_num_threads(4); }
    ~Threads() { omp_set_num_threads(saved); }
  } four_threads;
  manual_seed(21);
  const Tensor q = randn({1, 4, 700, 32}), k = randn({1, 1, 700, 32}), v = randn({1, 1, 700, 32});
  const Tensor up = randn({1, 4, 700, 32});
  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    const Result got = run(SDPBackend::Flash, q, k, v, up, {}, causal, true);
    const Result want = run(SDPBackend::Math, q.to(kFloat64), k.to(kFloat64), v.to(kFloat64), up.to(kFloat64), {},
                            causal, true);
    CHECK(rel_err(got.out, want.out) < 1e-5);
    CHECK(rel_err(got.dq, want.dq) < 1e-5);
    CHECK(rel_err(got.dk, want.dk) < 1e-5);
    CHECK(rel_err(got.dv, want.dv) < 1e-5);
  }
}

TEST_CASE("flash attention: memory stays linear at [1, 8, 8192, 64] causal", "[ops][attention][flash][slow]") {
  const int64_t B = 1, H = 8, N = 8192, D = 64;
  const int64_t io_bytes = B * H * N * D * 4;  // one of q, k, v, dout, out, dq, dk, dv
  manual_seed(11);
  const Tensor q = randn({B, H, N, D}).requires_grad_(), k = randn({B, H, N, D}).requires_grad_(),
               v = randn({B, H, N, D}).requires_grad_();
  const Tensor up = randn({B, H, N, D});
  SdpaKernelGuard guard(SDPBackend::Flash);
  memory::reset_peak_stats();
  const int64_t before = memory::stats().allocated_bytes;
  {
    Tensor out = scaled_dot_product_attention(q, k, v, {}, 0.0, true);
    out.backward(up);
  }
  const int64_t peak_extra = memory::stats().peak_allocated_bytes - before;
  // Allowed beyond the inputs: the output and the three gradients, the logsumexp [B, H, N], and
  // 64 MB for everything else. The math kernel would hold the weights alone: B*H*N*N*4 = 2 GiB.
  const int64_t bound = 4 * io_bytes + B * H * N * 4 + (int64_t(64) << 20);
  INFO("peak beyond the inputs: " << peak_extra << " bytes, bound " << bound << " bytes");
  CHECK(peak_extra <= bound);
  CHECK(peak_extra >= 4 * io_bytes);  // the measurement sees the outputs at least
  CHECK(q.grad().defined());
}
