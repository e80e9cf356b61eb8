// The bfloat16 flash-attention kernels on the GPU (backend/cuda/flash_mma_bf16_*.cu) against the
// CPU's bf16 path (float32 inside, the reference: tests/ops/test_flash_attention_bf16.cpp) and the
// float32 CUDA path: random shapes across tile edges (odd lengths, Tq != Tk, one query), every mask
// kind, causal, GQA/MQA, head dims 32, 64 and 128 (tensor cores) and the fallback (other D, D != Dv,
// rows not 16-byte aligned), rows with nothing to attend to. The kernels are called directly with
// NaN-poisoned out, lse, dq, dk and dv (the bf16 paths write every element of each), so a skipped
// element fails.
//
// Note [bf16 kernel error bounds]: the GPU kernels round P to bf16 before P V and P^T dO, and dS
// before dS K and dS^T Q (relative error u = 2^-8 per element, as FlashAttention-2); the CPU path
// keeps both in float32. Given the same out and lse (the backward is fed the CPU forward's), the
// difference of each result is at most, elementwise (|.|: absolute values, products in float64):
//   out: u |P| |V| + u (|got| + |ref|)          dV: u sum_group |P|^T |dO| + u (|got| + |ref|)
//   dQ:  u |dS| |K| + u (|got| + |ref|)         dK: u sum_group |dS|^T |Q| + u (|got| + |ref|)
// (the last term: each side rounds its result to bf16 once), plus 2e-5 max(max |ref|, 1) for
// float32 sums in different orders. The fallback keeps P and dS in float32 and is inside the same
// bound.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "flash_masks.h"
#include "test_util.h"
#include "tinytorch/backend/backend.h"

using namespace tt;
using Catch::Matchers::Contains;

namespace {

constexpr double kU = 1.0 / 256;  // bf16's unit roundoff
constexpr double kInf = std::numeric_limits<double>::infinity();

const Device& gpu() {
  static const Device d(kCUDA, 0);
  return d;
}

TensorOptions f64() { return TensorOptions().dtype(kFloat64); }

bool no_nan(const Tensor& t) {
  const Tensor c = t.cpu().to(kFloat64);
  return eq(c, c).to(kInt64).sum().item<int64_t>() == c.numel();
}

// max |a - b| / max(max |b|, 1) in float64.
double rel_err(const Tensor& a, const Tensor& b) {
  const Tensor a64 = a.cpu().to(kFloat64), b64 = b.cpu().to(kFloat64);
  return (a64 - b64).abs().max().item<double>() / std::max(b64.abs().max().item<double>(), 1.0);
}

// max over elements of |got - ref| - bound (<= 0 when the bound holds); got may be bf16 anywhere.
double over_bound(const Tensor& got, const Tensor& ref, const Tensor& terms) {
  const Tensor g = got.cpu().to(kFloat64), r = ref.cpu().to(kFloat64);
  const double e32 = 2e-5 * std::max(r.abs().max().item<double>(), 1.0);
  const Tensor bound = terms * kU + (g.abs() + r.abs()) * kU + e32;
  return ((g - r).abs() - bound).max().item<double>();
}

using flash_masks::bias_of;
using flash_masks::make_mask;

// [B, Hkv, T, X] -> [B, Hkv * G, T, X], each head repeated G times in place.
Tensor repeat_heads(const Tensor& t, int64_t G) {
  const int64_t B = t.size(0), H = t.size(1), T = t.size(2), X = t.size(3);
  return reshape(expand(reshape(t, {B, H, 1, T, X}), {B, H, G, T, X}), {B, H * G, T, X});
}

// [B, Hkv * G, T, X] -> [B, Hkv, T, X], summed over each group.
Tensor sum_groups(const Tensor& t, int64_t G) {
  const int64_t B = t.size(0), H = t.size(1) / G, T = t.size(2), X = t.size(3);
  return sum(reshape(t, {B, H, G, T, X}), Shape{2});
}

struct Shape7 {
  int64_t B, Hkv, G, Tq, Tk, D, Dv;
};

// t (bf16, CPU) on the GPU, with rows that are not 16-byte aligned when `misalign` (a view that
// starts one element into a wider buffer).
Tensor to_gpu(const Tensor& t, bool misalign) {
  if (!misalign) return t.to(gpu());
  Shape wide = t.shape();
  wide[3] += 1;
  Tensor buf = zeros(wide, TensorOptions().dtype(kBFloat16).device(gpu()));
  Tensor view = narrow(buf, 3, 1, t.size(3));
  backend_for(gpu()).copy(view, t.to(gpu()));
  return view;
}

// Both backends' flash kernels called directly on the same bf16 inputs; the GPU's outputs
// poisoned with NaN; the GPU backward fed the CPU forward's out and lse. Checks every result
// against the CPU's within Note [bf16 kernel error bounds].
void check_direct(const Shape7& s, bool causal, int mask_kind, bool misalign = false) {
  const int64_t Hq = s.Hkv * s.G;
  const TensorOptions bf = TensorOptions().dtype(kBFloat16);
  const Tensor q = randn({s.B, Hq, s.Tq, s.D}).to(kBFloat16), k = randn({s.B, s.Hkv, s.Tk, s.D}).to(kBFloat16),
               v = randn({s.B, s.Hkv, s.Tk, s.Dv}).to(kBFloat16), up = randn({s.B, Hq, s.Tq, s.Dv}).to(kBFloat16);
  const Tensor mask = make_mask(mask_kind, s.B, s.Tq, s.Tk, kBFloat16);
  const Shape scores{s.B, Hq, s.Tq, s.Tk};
  AttentionArgs args;
  args.scale = 1.0 / std::sqrt(double(s.D));
  args.causal = causal;
  // the CPU reference
  Backend& cpu = backend_for(Device(kCPU));
  const Tensor bias_c = bias_of(mask, kBFloat16, Device(kCPU), scores);
  Tensor out_c = empty({s.B, Hq, s.Tq, s.Dv}, bf), lse_c = empty({s.B, Hq, s.Tq});
  cpu.flash_attention_forward(out_c, lse_c, q, k, v, bias_c, args);
  Tensor dq_c = zeros({s.B, Hq, s.Tq, s.D}, bf), dk_c = zeros({s.B, s.Hkv, s.Tk, s.D}, bf),
         dv_c = zeros({s.B, s.Hkv, s.Tk, s.Dv}, bf);
  cpu.flash_attention_backward(dq_c, dk_c, dv_c, up, q, k, v, out_c, lse_c, bias_c, args);
  // the GPU, poisoned
  Backend& be = backend_for(gpu());
  const TensorOptions bg = bf.device(gpu());
  const Tensor qg = to_gpu(q, misalign), kg = to_gpu(k, misalign), vg = to_gpu(v, misalign), upg = up.to(gpu());
  const Tensor bias_g = bias_of(mask, kBFloat16, gpu(), scores);
  Tensor out_g = full({s.B, Hq, s.Tq, s.Dv}, std::nan(""), bg);
  Tensor lse_g = full({s.B, Hq, s.Tq}, std::nan(""), TensorOptions().device(gpu()));
  be.flash_attention_forward(out_g, lse_g, qg, kg, vg, bias_g, args);
  Tensor dq_g = full({s.B, Hq, s.Tq, s.D}, std::nan(""), bg), dk_g = full({s.B, s.Hkv, s.Tk, s.D}, std::nan(""), bg),
         dv_g = full({s.B, s.Hkv, s.Tk, s.Dv}, std::nan(""), bg);
  be.flash_attention_backward(dq_g, dk_g, dv_g, upg, qg, kg, vg, out_c.to(gpu()), lse_c.to(gpu()), bias_g, args);
  // the bounds' terms in float64
  const Tensor q64 = q.to(kFloat64), k64 = repeat_heads(k.to(kFloat64), s.G), v64 = repeat_heads(v.to(kFloat64), s.G);
  const Tensor up64 = up.to(kFloat64), lse64 = unsqueeze(lse_c.to(kFloat64), -1);
  Tensor S = matmul(q64, transpose(k64, -2, -1)) * args.scale;
  if (mask.defined()) S = S + bias_of(mask, kFloat64, Device(kCPU), scores);
  if (causal) {
    const Tensor i = reshape(arange(s.Tq, TensorOptions().dtype(kInt64)), {s.Tq, 1});
    const Tensor j = reshape(arange(s.Tk, TensorOptions().dtype(kInt64)), {1, s.Tk});
    S = masked_fill(S, gt(j, i), -kInf);
  }
  const Tensor P = where(expand(lse64 > -kInf, scores), exp(S - lse64), zeros({}, f64()));
  const Tensor Dvec = sum(out_c.to(kFloat64) * up64, Shape{-1}, true);
  const Tensor dS = P * (matmul(up64, transpose(v64, -2, -1)) - Dvec) * args.scale;
  const Tensor aP = P.abs(), adS = dS.abs();
  const char* names[] = {"out", "dq", "dk", "dv"};
  const Tensor got[] = {out_g, dq_g, dk_g, dv_g}, want[] = {out_c, dq_c, dk_c, dv_c};
  const Tensor terms[] = {matmul(aP, v64.abs()), matmul(adS, k64.abs()),
                          sum_groups(matmul(transpose(adS, -2, -1), q64.abs()), s.G),
                          sum_groups(matmul(transpose(aP, -2, -1), up64.abs()), s.G)};
  for (int r = 0; r < 4; ++r) {
    INFO(names[r]);
    CHECK(got[r].dtype() == kBFloat16);
    CHECK(no_nan(got[r]));
    CHECK(over_bound(got[r], want[r], terms[r]) <= 0.0);
  }
  // lse: float32 on both sides, the same float32 math up to order
  const Tensor lg = lse_g.cpu();
  CHECK(lg.dtype() == kFloat32);
  CHECK(testing::allclose(lg, lse_c, 1e-5, 1e-5));  // -inf rows must match exactly
}

}  // namespace

TEST_CASE("cuda bf16 flash kernels within the rounding bound of the CPU bf16 path (poisoned outputs)",
          "[cuda][attention][flash][bf16]") {
  TT_REQUIRE_CUDA();
  std::mt19937 rng(2468);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (int trial = 0; trial < 30; ++trial) {
    const int64_t dims[] = {64, 128, 32};
    const int64_t D = dims[trial % 3];
    const int64_t Tq = trial % 7 == 0 ? pick(1, 4) : pick(1, 300), Tk = trial % 4 == 0 ? Tq : pick(1, 300);
    const Shape7 s{pick(1, 2), pick(1, 2), trial % 5 == 4 ? 4 : pick(1, 3), Tq, Tk, D, D};
    const bool causal = (trial / 2) % 2 == 1;
    const int mask_kind = (trial / 4) % 5;
    manual_seed(uint64_t(300 + trial));
    INFO("trial " << trial << ": B " << s.B << " Hkv " << s.Hkv << " G " << s.G << " Tq " << s.Tq << " Tk " << s.Tk
                  << " D " << s.D << " causal " << causal << " mask " << mask_kind);
    check_direct(s, causal, mask_kind);
  }
}

TEST_CASE("cuda bf16 flash: the fallback (other head dims, D != Dv, unaligned rows)",
          "[cuda][attention][flash][bf16]") {
  TT_REQUIRE_CUDA();
  manual_seed(31);
  check_direct({2, 2, 2, 77, 130, 48, 48}, true, 1);
  check_direct({1, 2, 3, 70, 45, 40, 40}, false, 4);
  check_direct({1, 1, 2, 65, 129, 64, 32}, false, 2);
  check_direct({2, 1, 2, 100, 100, 96, 96}, true, 0);
  check_direct({1, 2, 1, 90, 150, 64, 64}, true, 3, /*misalign=*/true);
  check_direct({1, 1, 4, 130, 70, 128, 128}, false, 1, /*misalign=*/true);
  check_direct({1, 2, 2, 33, 80, 32, 32}, true, 2, /*misalign=*/true);
}

TEST_CASE("cuda bf16 flash: one query against a long KV cache, and long sequences",
          "[cuda][attention][flash][bf16][slow]") {
  TT_REQUIRE_CUDA();
  manual_seed(32);
  check_direct({2, 4, 1, 1, 3000, 64, 64}, false, 3);
  check_direct({1, 1, 8, 2, 2049, 128, 128}, false, 2);  // MQA
  check_direct({1, 2, 1, 1000, 1000, 64, 64}, true, 0);
  check_direct({1, 1, 2, 513, 1100, 128, 128}, true, 4);
}

TEST_CASE("cuda bf16 flash: rows with nothing to attend to give zeros and lse -inf",
          "[cuda][attention][flash][bf16]") {
  TT_REQUIRE_CUDA();
  for (int64_t D : {32, 64, 128}) {
    const TensorOptions o = TensorOptions().dtype(kBFloat16).device(gpu());
    const Tensor q = randn({1, 2, 70, D}).to(kBFloat16).to(gpu()), k = randn({1, 2, 90, D}).to(kBFloat16).to(gpu()),
                 v = randn({1, 2, 90, D}).to(kBFloat16).to(gpu());
    std::vector<float> b(70 * 90, 0.f);
    for (int64_t i = 0; i < 70; i += 3)  // rows 0, 3, 6, ... hidden
      for (int64_t j = 0; j < 90; ++j) b[size_t(i * 90 + j)] = -std::numeric_limits<float>::infinity();
    const Tensor bias = expand(tensor(b, {70, 90}).to(kBFloat16).to(gpu()), {1, 2, 70, 90});
    AttentionArgs args;
    args.scale = 1.0 / std::sqrt(double(D));
    Tensor out = full({1, 2, 70, D}, std::nan(""), o);
    Tensor lse = full({1, 2, 70}, std::nan(""), TensorOptions().device(gpu()));
    backend_for(gpu()).flash_attention_forward(out, lse, q, k, v, bias, args);
    const Tensor oc = out.cpu().to(kFloat32), lc = lse.cpu();
    CHECK(no_nan(oc));
    for (int64_t i = 0; i < 70; i += 3) {
      CHECK(oc.select(2, i).abs().max().item<float>() == 0.f);
      CHECK(lc.select(2, i).max().item<float>() == -std::numeric_limits<float>::infinity());
    }
    Tensor dq = full({1, 2, 70, D}, std::nan(""), o), dk = full({1, 2, 90, D}, std::nan(""), o),
           dv = full({1, 2, 90, D}, std::nan(""), o);
    backend_for(gpu()).flash_attention_backward(dq, dk, dv, randn({1, 2, 70, D}).to(kBFloat16).to(gpu()), q, k, v,
                                                out, lse, bias, args);
    for (const Tensor& t : {dq, dk, dv}) CHECK(no_nan(t));
    for (int64_t i = 0; i < 70; i += 3) CHECK(dq.cpu().to(kFloat32).select(2, i).abs().max().item<float>() == 0.f);
  }
}

TEST_CASE("cuda bf16 flash: a bf16 call needs a float32 lse", "[cuda][attention][flash][bf16]") {
  TT_REQUIRE_CUDA();
  const TensorOptions o = TensorOptions().dtype(kBFloat16).device(gpu());
  const Tensor q = zeros({1, 1, 8, 64}, o);
  Tensor out = empty({1, 1, 8, 64}, o), lse = empty({1, 1, 8}, o);
  AttentionArgs args;
  REQUIRE_THROWS_WITH(backend_for(gpu()).flash_attention_forward(out, lse, q, q, q, Tensor(), args),
                      Contains("a bf16 call keeps lse in float32, got bfloat16"));
}

TEST_CASE("cuda bf16 scaled_dot_product_attention against float32 on the GPU and bf16 on the CPU",
          "[cuda][attention][flash][bf16]") {
  TT_REQUIRE_CUDA();
  std::mt19937 rng(97);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (int trial = 0; trial < 10; ++trial) {
    const int64_t B = pick(1, 2), Hkv = pick(1, 2), G = pick(1, 3), Hq = Hkv * G;
    const int64_t D = trial % 5 == 4 ? 48 : trial % 3 == 0 ? 32 : trial % 3 == 1 ? 64 : 128;
    const int64_t Tq = pick(1, 260), Tk = trial % 3 == 0 ? Tq : pick(1, 260);
    const bool causal = trial % 2 == 1;
    const int mask_kind = trial % 5;
    manual_seed(uint64_t(400 + trial));
    // bf16 values, also held in float32 (exactly)
    const Tensor q = randn({B, Hq, Tq, D}).to(kBFloat16), k = randn({B, Hkv, Tk, D}).to(kBFloat16),
                 v = randn({B, Hkv, Tk, D}).to(kBFloat16), up = randn({B, Hq, Tq, D}).to(kBFloat16);
    const Tensor mask = make_mask(mask_kind, B, Tq, Tk, kBFloat16);
    const Tensor mask32 = mask.defined() && mask.dtype() != kBool ? mask.to(kFloat32) : mask;
    INFO("trial " << trial << ": q " << q.shape() << " k " << k.shape() << " causal " << causal << " mask "
                  << mask_kind);
    auto run = [&](const Device& d, ScalarType dtype, const Tensor& m) {
      SdpaKernelGuard guard(SDPBackend::Flash);
      Tensor qq = q.to(dtype).to(d).requires_grad_(), kk = k.to(dtype).to(d).requires_grad_(),
             vv = v.to(dtype).to(d).requires_grad_();
      Tensor out = scaled_dot_product_attention(qq, kk, vv, m.defined() ? m.to(d) : m, 0.0, causal, std::nullopt,
                                                G > 1);
      out.backward(up.to(dtype).to(d));
      return std::vector<Tensor>{out.detach().cpu(), qq.grad().cpu(), kk.grad().cpu(), vv.grad().cpu()};
    };
    const auto got = run(gpu(), kBFloat16, mask), cpu = run(Device(kCPU), kBFloat16, mask),
               f32 = run(gpu(), kFloat32, mask32);
    // Normwise, a loose check of the whole op (the tight one is check_direct): bf16 P and dS (u
    // each, random signs: about u of the result's scale), and the bf16 out inside Dvec =
    // rowsum(dO * O): it moves dS by P |scale| u sum_d |O dO|, which a row with one visible key
    // (causal row 0) turns into dq = -scale dDvec K_0 ~ 0.02 at three sigma where float32 has 0.
    for (int r = 0; r < 4; ++r) {
      INFO("result " << r);
      CHECK(got[r].dtype() == kBFloat16);
      CHECK(no_nan(got[r]));
      CHECK(rel_err(got[r], f32[r]) < 16 * kU);
      CHECK(rel_err(got[r], cpu[r]) < 16 * kU);
    }
  }
}

TEST_CASE("cuda bf16 scaled_dot_product_attention takes the flash kernels under Auto at every size",
          "[cuda][attention][flash][bf16]") {
  TT_REQUIRE_CUDA();
  const TensorOptions o = TensorOptions().dtype(kBFloat16).device(gpu());
  for (int64_t T : {1, 8, 200}) {
    const Tensor q = randn({2, 3, T, 64}, o).requires_grad_(), k = randn({2, 3, T, 64}, o), v = randn({2, 3, T, 64}, o);
    const Tensor out = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, T > 1);
    REQUIRE(out.grad_fn() != nullptr);
    CHECK(out.grad_fn()->name() == "ScaledDotProductFlashAttentionBackward0");
  }
}
