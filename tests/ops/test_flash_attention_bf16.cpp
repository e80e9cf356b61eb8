// bfloat16 flash attention on the CPU, the reference of the GPU's bf16 kernels
// (tests/cuda/test_flash_attention_bf16_cuda.cpp): bf16 inputs computed in float32 (Bf16Compute over
// cpu/flash_attention.cpp), lse kept in float32, out and gradients rounded to bf16 once. Checked
// against float64 with bounds derived from bf16's rounding (Note [bf16 attention error bounds]).
//
// Note [bf16 attention error bounds]: bf16 keeps 8 significant bits, so rounding x to bf16 moves
// it by at most u |x| with u = 2^-8 (round to nearest). Two comparisons:
//   1. Against float64 on the same bf16 values (out, lse, and gradients from the same bf16 out and
//      dout): the only differences are float32 arithmetic inside and one rounding of each result,
//      so |got - ref| <= u |ref| + e32, e32 = 2e-5 max(max |ref|, 1) (the float32 flash path is
//      checked to 1e-5 elsewhere). lse is float32, so it must be within e32 (a bf16 lse would be
//      off by up to |lse| 2^-9).
//   2. out against float64 on the float inputs before rounding: rounding q and k moves each score
//      s_ij = scale q_i . k_j by at most d = |scale| sum_d |q_id k_jd| (2u + u^2); a row's weights
//      then change by at most a factor exp(+-2d) each, so sum_j |dP_ij| <= exp(2 d_max) - 1, and
//      rounding v adds u max |v|: |got - ref| <= u |ref| + (exp(2 d_max) - 1 + u) max |v| + e32.
#include <cmath>
#include <limits>
#include <random>

#include "test_util.h"
#include "tinytorch/backend/backend.h"

using namespace tt;

namespace {

constexpr double kU = 1.0 / 256;  // bf16's unit roundoff, 2^-8
constexpr double kInf = std::numeric_limits<double>::infinity();

// max over elements of |got - ref| - u |ref| (<= slack when the bound holds), in float64.
double excess(const Tensor& got, const Tensor& ref) {
  const Tensor g = got.to(kFloat64), r = ref.to(kFloat64);
  return ((g - r).abs() - r.abs() * kU).max().item<double>();
}

double slack(const Tensor& ref) { return 2e-5 * std::max(ref.to(kFloat64).abs().max().item<double>(), 1.0); }

// The mask kinds of the flash suites: 0 none, 1 bool [Tq, Tk], 2 float [B, 1, Tq, Tk] with -inf
// (in `dtype`), 3 bool key padding [B, 1, 1, Tk].
Tensor make_mask(int kind, int64_t B, int64_t Tq, int64_t Tk, ScalarType dtype) {
  if (kind == 1) return rand({Tq, Tk}) > 0.2;
  if (kind == 2) return masked_fill(randn({B, 1, Tq, Tk}), rand({B, 1, Tq, Tk}) > 0.8, -kInf).to(dtype);
  if (kind == 3) return rand({B, 1, 1, Tk}) > 0.1;
  return Tensor();
}

// The mask as the kernels' additive bias in `dtype`, expanded to `shape`.
Tensor bias_of(const Tensor& mask, ScalarType dtype, const Shape& shape) {
  if (!mask.defined()) return Tensor();
  const Tensor zero = zeros({}, TensorOptions().dtype(dtype));
  const Tensor b = mask.dtype() == kBool ? where(mask, zero, -kInf) : mask.to(dtype);
  return expand(b, shape);
}

}  // namespace

TEST_CASE("bf16 flash attention on the CPU: one rounding from float64 on the same values",
          "[ops][attention][flash][bf16]") {
  std::mt19937 rng(77);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (int trial = 0; trial < 10; ++trial) {
    const int64_t B = pick(1, 2), Hkv = pick(1, 2), G = pick(1, 3), Hq = Hkv * G;
    const int64_t D = trial % 3 == 0 ? 64 : trial % 3 == 1 ? 128 : pick(1, 40);
    const int64_t Tq = pick(1, 300), Tk = trial % 4 == 0 ? Tq : pick(1, 300);
    const bool causal = trial % 2 == 1;
    const int mask_kind = trial % 4;
    manual_seed(uint64_t(500 + trial));
    const Tensor q = randn({B, Hq, Tq, D}).to(kBFloat16), k = randn({B, Hkv, Tk, D}).to(kBFloat16),
                 v = randn({B, Hkv, Tk, D}).to(kBFloat16), up = randn({B, Hq, Tq, D}).to(kBFloat16);
    const Tensor mask = make_mask(mask_kind, B, Tq, Tk, kBFloat16);
    INFO("trial " << trial << ": q " << q.shape() << " k " << k.shape() << " causal " << causal << " mask "
                  << mask_kind);
    // the op: bf16 in, bf16 out and gradients
    SdpaKernelGuard flash(SDPBackend::Flash);
    Tensor qg = q.detach().requires_grad_(), kg = k.detach().requires_grad_(), vg = v.detach().requires_grad_();
    const Tensor out = scaled_dot_product_attention(qg, kg, vg, mask, 0.0, causal, std::nullopt, G > 1);
    out.backward(up);
    REQUIRE(out.dtype() == kBFloat16);
    REQUIRE(qg.grad().dtype() == kBFloat16);
    // float64 on the same values, through the backend's flash kernels (lse from float64)
    AttentionArgs args;
    args.scale = 1.0 / std::sqrt(double(D));
    args.causal = causal;
    const Tensor q64 = q.to(kFloat64), k64 = k.to(kFloat64), v64 = v.to(kFloat64), up64 = up.to(kFloat64);
    const Tensor bias64 = bias_of(mask, kFloat64, {B, Hq, Tq, Tk});
    Backend& be = backend_for(Device(kCPU));
    const TensorOptions f64 = TensorOptions().dtype(kFloat64);
    Tensor out64 = empty({B, Hq, Tq, D}, f64), lse64 = empty({B, Hq, Tq}, f64);
    be.flash_attention_forward(out64, lse64, q64, k64, v64, bias64, args);
    CHECK(excess(out, out64) <= slack(out64));
    // lse straight from the bf16 kernel call: float32, to float32 accuracy
    Tensor out_b = empty({B, Hq, Tq, D}, TensorOptions().dtype(kBFloat16)), lse32 = empty({B, Hq, Tq});
    be.flash_attention_forward(out_b, lse32, q, k, v, bias_of(mask, kBFloat16, {B, Hq, Tq, Tk}), args);
    const Tensor finite = lse64 > -kInf, zero = zeros({}, TensorOptions().dtype(kFloat64));
    CHECK(eq(lse32 > -kInf, finite).to(kInt64).sum().item<int64_t>() == lse64.numel());  // -inf rows match
    const double lse_scale = std::max(1.0, where(finite, lse64.abs(), zero).max().item<double>());
    CHECK(where(finite, (lse32.to(kFloat64) - lse64).abs(), zero).max().item<double>() <= 2e-5 * lse_scale);
    // gradients: float64 from the same bf16 out (Dvec = rowsum(dO * O) reads the stored out)
    Tensor dq = zeros({B, Hq, Tq, D}, f64), dk = zeros({B, Hkv, Tk, D}, f64), dv = zeros({B, Hkv, Tk, D}, f64);
    be.flash_attention_backward(dq, dk, dv, up64, q64, k64, v64, out.detach().to(kFloat64), lse64, bias64, args);
    CHECK(excess(qg.grad(), dq) <= slack(dq));
    CHECK(excess(kg.grad(), dk) <= slack(dk));
    CHECK(excess(vg.grad(), dv) <= slack(dv));
  }
}

TEST_CASE("bf16 flash attention on the CPU: within the rounding bound of float64 on float inputs",
          "[ops][attention][flash][bf16]") {
  for (int trial = 0; trial < 6; ++trial) {
    const int64_t B = 1, H = 2, Tq = 37 + 50 * trial, Tk = 200 - 20 * trial, D = trial % 2 == 0 ? 64 : 128;
    const bool causal = trial % 3 == 1;
    manual_seed(uint64_t(600 + trial));
    const Tensor q = randn({B, H, Tq, D}, TensorOptions().dtype(kFloat64)),
                 k = randn({B, H, Tk, D}, TensorOptions().dtype(kFloat64)),
                 v = randn({B, H, Tk, D}, TensorOptions().dtype(kFloat64));
    const Tensor mask = trial % 3 == 2 ? rand({Tq, Tk}) > 0.3 : Tensor();
    INFO("trial " << trial << ": Tq " << Tq << " Tk " << Tk << " D " << D << " causal " << causal);
    SdpaKernelGuard flash(SDPBackend::Flash);
    const Tensor got = scaled_dot_product_attention(q.to(kBFloat16), k.to(kBFloat16), v.to(kBFloat16), mask, 0.0,
                                                    causal);
    const Tensor ref = scaled_dot_product_attention(q, k, v, mask, 0.0, causal);
    const double scale = 1.0 / std::sqrt(double(D));
    const double d_max = scale * matmul(q.abs(), transpose(k.abs(), -2, -1)).max().item<double>() * (2 * kU + kU * kU);
    const double vmax = v.abs().max().item<double>();
    const double bound_v = (std::exp(2 * d_max) - 1 + kU) * vmax + slack(ref);
    const double err = excess(got, ref);
    INFO("excess " << err << ", bound " << bound_v << " (score perturbation " << d_max << ")");
    CHECK(err <= bound_v);
    CHECK((got.to(kFloat64) - ref).abs().max().item<double>() > 0.0);  // bf16 did round something
  }
}
