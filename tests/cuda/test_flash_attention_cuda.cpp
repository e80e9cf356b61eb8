// The CUDA flash-attention kernels (backend/cuda/flash_attention_*.cu, flash_mma_*.cu,
// flash_decode.cu) against the CPU flash kernel and the CUDA math path: random shapes across tile
// edges (odd lengths, Tq != Tk), every mask kind, causal, GQA/MQA, head dims 32/64/128 (tiled and
// tensor-core kernels) and others (generic), float64, each float32 mode (3xTF32 default, 1xTF32
// under TF32, exact FFMA under AttentionArgs::exact / SDPBackend::FlashExact) with the tolerance
// modules/13_flash_attention/README.md derives for it, split-K decode, rows with nothing to attend
// to, unaligned rows (fallback), and O(N) device memory at [1, 16, 16384, 64]. The kernels are also
// called directly with NaN-poisoned out and lse (and dk, dv where the kernel stores them), so an
// element a kernel forgets to write fails.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "flash_masks.h"
#include "test_util.h"
#include "tinytorch/backend/backend.h"

using namespace tt;

namespace {


const Device& gpu() {
  static const Device d(kCUDA, 0);
  return d;
}

// Sets TF32 mode for the scope.
class Tf32Scope {
 public:
  explicit Tf32Scope(bool on) : saved_(cuda::allow_tf32()) { cuda::set_allow_tf32(on); }
  ~Tf32Scope() { cuda::set_allow_tf32(saved_); }

 private:
  bool saved_;
};

struct Result {
  Tensor out, dq, dk, dv;
};

Result run(SDPBackend backend, const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& up,
           const Tensor& mask, bool causal, bool gqa) {
  SdpaKernelGuard guard(backend);
  Tensor q = q0.detach().requires_grad_(), k = k0.detach().requires_grad_(), v = v0.detach().requires_grad_();
  Tensor out = scaled_dot_product_attention(q, k, v, mask, 0.0, causal, std::nullopt, gqa);
  out.backward(up);
  return {out.detach().cpu(), q.grad().cpu(), k.grad().cpu(), v.grad().cpu()};
}

// max |a - b| / max(max |b|, 1) in float64 (as tests/ops/test_flash_attention.cpp).
double rel_err(const Tensor& a, const Tensor& b) {
  const Tensor a64 = a.cpu().to(kFloat64), b64 = b.cpu().to(kFloat64);
  return (a64 - b64).abs().max().item<double>() / std::max(b64.abs().max().item<double>(), 1.0);
}

bool no_nan(const Tensor& t) {
  const Tensor c = t.cpu();
  return eq(c, c).to(kInt64).sum().item<int64_t>() == c.numel();
}

using flash_masks::bias_of;
using flash_masks::make_mask;

struct Shape5 {
  int64_t B, Hkv, G, Tq, Tk, D, Dv;
};

// The float32 arithmetic of a run: the tensor cores' 3xTF32 (the default), 1xTF32 (under TF32),
// or exact FFMA (AttentionArgs::exact).
enum class Mode { X3, X1, Exact };

// The results of one backend's flash kernels called directly: out, lse, dq, dk, dv (on the CPU).
struct Direct {
  Tensor r[5];
};

// Calls a backend's flash forward and backward directly; on the GPU out and lse (and dk, dv where
// the tiled kernels store every element: D = Dv in {32, 64, 128}, float32) start as NaN.
Direct run_direct(const Device& d, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& up,
                  const Tensor& mask, const AttentionArgs& args, Mode mode) {
  Tf32Scope tf32(mode == Mode::X1);
  AttentionArgs a = args;
  a.exact = mode == Mode::Exact;
  const int64_t B = q.size(0), Hq = q.size(1), Tq = q.size(2), D = q.size(3), Hkv = k.size(1), Tk = k.size(2),
                Dv = v.size(3);
  const TensorOptions od = q.options().device(d);
  const Tensor qd = q.to(d), kd = k.to(d), vd = v.to(d), upd = up.to(d);
  const Tensor bias = bias_of(mask, q.dtype(), d, {B, Hq, Tq, Tk});  // stride 0 over the broadcast dims
  const bool gpu_side = d.type == kCUDA;
  const double poison = std::nan("");
  Tensor out = gpu_side ? full({B, Hq, Tq, Dv}, poison, od) : empty({B, Hq, Tq, Dv}, od);
  Tensor lse = gpu_side ? full({B, Hq, Tq}, poison, od) : empty({B, Hq, Tq}, od);
  Backend& be = backend_for(d);
  be.flash_attention_forward(out, lse, qd, kd, vd, bias, a);
  const bool stores_dkv = gpu_side && q.dtype() == kFloat32 && D == Dv && (D == 32 || D == 64 || D == 128);
  Tensor dq = zeros({B, Hq, Tq, D}, od);
  Tensor dk = stores_dkv ? full({B, Hkv, Tk, D}, poison, od) : zeros({B, Hkv, Tk, D}, od);
  Tensor dv = stores_dkv ? full({B, Hkv, Tk, Dv}, poison, od) : zeros({B, Hkv, Tk, Dv}, od);
  be.flash_attention_backward(dq, dk, dv, upd, qd, kd, vd, out, lse, bias, a);
  return {{out.cpu(), lse.cpu(), dq.cpu(), dk.cpu(), dv.cpu()}};
}

// got against want: lse to tol (-inf rows exactly), out to tol, the gradients to grad_tol, no NaN.
void compare(const Direct& got, const Direct& want, double tol, double grad_tol) {
  const char* names[] = {"out", "lse", "dq", "dk", "dv"};
  for (int i = 0; i < 5; ++i) {
    INFO(names[i]);
    if (i == 1) {
      CHECK(testing::allclose(got.r[1], want.r[1], tol, tol));  // -inf rows must match exactly
    } else {
      CHECK(no_nan(got.r[i]));
      CHECK(rel_err(got.r[i], want.r[i]) < (i == 0 ? tol : grad_tol));
    }
  }
}

// Calls both backends' flash kernels directly (out and lse poisoned with NaN on the GPU) and
// checks the CUDA results against the CPU's: out, lse, dq, dk, dv; with `exact_too`, the CUDA
// results of `mode` also against the CUDA exact kernels.
void check_kernels_direct(const Shape5& s, bool causal, int mask_kind, ScalarType dtype, double tol,
                          Mode mode = Mode::X3, double grad_tol = -1, bool exact_too = false) {
  if (grad_tol < 0) grad_tol = tol;
  const int64_t Hq = s.Hkv * s.G;
  const TensorOptions o = TensorOptions().dtype(dtype);
  const Tensor q = randn({s.B, Hq, s.Tq, s.D}, o), k = randn({s.B, s.Hkv, s.Tk, s.D}, o),
               v = randn({s.B, s.Hkv, s.Tk, s.Dv}, o), up = randn({s.B, Hq, s.Tq, s.Dv}, o);
  const Tensor mask = make_mask(mask_kind, s.B, s.Tq, s.Tk);
  AttentionArgs args;
  args.scale = 1.0 / std::sqrt(double(s.D));
  args.causal = causal;
  const Direct want = run_direct(Device(kCPU), q, k, v, up, mask, args, Mode::Exact);
  const Direct got = run_direct(gpu(), q, k, v, up, mask, args, mode);
  {
    INFO("against the CPU flash kernels");
    compare(got, want, tol, grad_tol);
  }
  if (exact_too) {
    INFO("against the CUDA exact kernels");
    compare(got, run_direct(gpu(), q, k, v, up, mask, args, Mode::Exact), tol, grad_tol);
  }
}

}  // namespace

TEST_CASE("cuda flash kernels (3xTF32 default) equal the CPU and the exact kernels (poisoned outputs)",
          "[cuda][attention][flash]") {
  TT_REQUIRE_CUDA();
  std::mt19937 rng(4321);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  const int64_t dims[] = {32, 64, 128};
  for (int trial = 0; trial < 30; ++trial) {
    const int64_t D = trial < 24 ? dims[trial % 3] : pick(1, 80);  // the last ones: the generic kernels
    const int64_t Dv = trial < 24 ? D : pick(1, 80);
    const int64_t Tq = trial % 7 == 0 ? pick(1, 4) : pick(1, 200), Tk = trial % 4 == 0 ? Tq : pick(1, 300);
    const Shape5 s{pick(1, 2), pick(1, 2), pick(1, 3), Tq, trial % 7 == 0 ? Tk + 600 : Tk, D, Dv};
    const bool causal = trial % 2 == 1;
    const int mask_kind = (trial / 2) % 5;
    manual_seed(uint64_t(100 + trial));
    INFO("trial " << trial << ": B " << s.B << " Hkv " << s.Hkv << " G " << s.G << " Tq " << s.Tq << " Tk " << s.Tk
                  << " D " << s.D << " Dv " << s.Dv << " causal " << causal << " mask " << mask_kind);
    check_kernels_direct(s, causal, mask_kind, kFloat32, 1e-5, Mode::X3, 1e-5, /*exact_too=*/true);
  }
}

TEST_CASE("cuda flash: exact FFMA kernels (AttentionArgs::exact) equal the CPU flash kernels",
          "[cuda][attention][flash]") {
  TT_REQUIRE_CUDA();
  std::mt19937 rng(4322);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  const int64_t dims[] = {32, 64, 128, 48};
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t D = dims[trial % 4], Tq = pick(1, 200), Tk = trial % 3 == 0 ? Tq : pick(1, 300);
    const Shape5 s{pick(1, 2), pick(1, 2), pick(1, 3), Tq, Tk, D, D};
    const bool causal = trial % 2 == 0;
    const int mask_kind = trial % 5;
    manual_seed(uint64_t(300 + trial));
    INFO("trial " << trial << ": Tq " << Tq << " Tk " << Tk << " D " << D << " causal " << causal << " mask "
                  << mask_kind);
    check_kernels_direct(s, causal, mask_kind, kFloat32, 1e-5, Mode::Exact);
  }
}

TEST_CASE("cuda flash: the tensor-core kernels at tile edges, every mask kind, GQA, zero rows",
          "[cuda][attention][flash]") {
  TT_REQUIRE_CUDA();
  // Lengths around the tiles (64 queries, 32/64 keys forward; 64 keys, 16/32/64 queries backward).
  const int64_t lengths[] = {1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129};
  int trial = 0;
  for (int64_t D : {32, 64, 128})
    for (int mask_kind = 0; mask_kind < 5; ++mask_kind)
      for (bool causal : {false, true}) {
        const int64_t Tq = lengths[trial % 13], Tk = lengths[(trial * 5 + 3) % 13];
        const Shape5 s{1 + trial % 2, 1 + trial % 3 / 2, 1 + trial % 4, Tq, Tk, D, D};  // G up to 4 (GQA, MQA)
        manual_seed(uint64_t(500 + trial));
        INFO("trial " << trial << ": Tq " << Tq << " Tk " << Tk << " D " << D << " G " << s.G << " causal "
                      << causal << " mask " << mask_kind);
        check_kernels_direct(s, causal, mask_kind, kFloat32, 1e-5, Mode::X3, 1e-5, /*exact_too=*/true);
        ++trial;
      }
}

TEST_CASE("cuda flash: unaligned rows fall back to the FFMA kernels and agree", "[cuda][attention][flash]") {
  TT_REQUIRE_CUDA();
  manual_seed(12);
  // q, k, v as the first 64 columns of [.., 65] tensors: rows 65 floats apart, not 16-byte aligned.
  auto cut = [](const Shape& s) { return randn(s).to(gpu()).narrow(3, 0, 64); };
  const Tensor q = cut({1, 2, 70, 65}), k = cut({1, 2, 90, 65}), v = cut({1, 2, 90, 65}), up = randn({1, 2, 70, 64});
  REQUIRE(q.stride(2) == 65);
  AttentionArgs args;
  args.scale = 0.125;
  args.causal = true;
  const Direct want = run_direct(Device(kCPU), q, k, v, up, Tensor(), args, Mode::Exact);
  for (Mode mode : {Mode::X3, Mode::X1, Mode::Exact}) {
    INFO("mode " << int(mode));
    compare(run_direct(gpu(), q, k, v, up, Tensor(), args, mode), want, mode == Mode::X1 ? 2e-3 : 1e-5,
            mode == Mode::X1 ? 5e-3 : 1e-5);
  }
}

TEST_CASE("cuda flash kernels in float64 (generic and decode paths)", "[cuda][attention][flash]") {
  TT_REQUIRE_CUDA();
  manual_seed(7);
  check_kernels_direct({2, 2, 2, 77, 130, 24, 40}, true, 1, kFloat64, 1e-10);
  check_kernels_direct({1, 2, 3, 70, 45, 64, 64}, false, 4, kFloat64, 1e-10);
  check_kernels_direct({2, 1, 4, 3, 1500, 64, 64}, false, 2, kFloat64, 1e-10);  // split-K decode
}

TEST_CASE("cuda flash: split-K decode, one query against a long KV cache", "[cuda][attention][flash]") {
  TT_REQUIRE_CUDA();
  manual_seed(8);
  for (int mask_kind : {0, 2, 3, 4}) {
    INFO("mask " << mask_kind);
    check_kernels_direct({2, 4, 1, 1, 5000, 64, 64}, false, mask_kind, kFloat32, 1e-5);
    check_kernels_direct({1, 2, 4, 4, 3000, 128, 128}, mask_kind == 0, mask_kind, kFloat32, 1e-5);
    check_kernels_direct({1, 1, 8, 2, 2049, 40, 24}, false, mask_kind, kFloat32, 1e-5);  // MQA, generic D
  }
}

TEST_CASE("cuda flash: 1xTF32 mode (allow_tf32) within 2e-3 (out) and 5e-3 (gradients) of the CPU and exact",
          "[cuda][attention][flash]") {
  TT_REQUIRE_CUDA();
  manual_seed(9);
  const int64_t dims[] = {32, 64, 128};
  for (int trial = 0; trial < 9; ++trial) {
    const int64_t D = dims[trial % 3];
    INFO("trial " << trial << " D " << D);
    check_kernels_direct({1, 2, 1 + trial % 2, 65 + 31 * trial, 100 + 47 * trial, D, D}, trial % 2 == 0,
                         trial % 5, kFloat32, 2e-3, Mode::X1, 5e-3, /*exact_too=*/true);
  }
}

TEST_CASE("cuda flash equals the cuda math path through scaled_dot_product_attention", "[cuda][attention][flash]") {
  TT_REQUIRE_CUDA();
  std::mt19937 rng(99);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t B = pick(1, 2), Hkv = pick(1, 2), G = pick(1, 3), Hq = Hkv * G;
    const int64_t D = trial % 4 == 3 ? 48 : 32 << (trial % 3);
    const int64_t Tq = pick(1, 190), Tk = trial % 3 == 0 ? Tq : pick(1, 260);
    const bool causal = trial % 2 == 0;
    const int mask_kind = trial % 5;
    manual_seed(uint64_t(200 + trial));
    const Tensor q = randn({B, Hq, Tq, D}), k = randn({B, Hkv, Tk, D}), v = randn({B, Hkv, Tk, D});
    const Tensor up = randn({B, Hq, Tq, D});
    const Tensor mask = make_mask(mask_kind, B, Tq, Tk);
    const Tensor mask_gpu = mask.defined() ? mask.to(gpu()) : mask;
    INFO("trial " << trial << ": q " << q.shape() << " k " << k.shape() << " causal " << causal << " mask "
                  << mask_kind);
    const Result cpu = run(SDPBackend::Flash, q, k, v, up, mask, causal, G > 1);
    const Result math = run(SDPBackend::Math, q.to(gpu()), k.to(gpu()), v.to(gpu()), up.to(gpu()), mask_gpu, causal,
                            G > 1);
    const Result got = run(SDPBackend::Flash, q.to(gpu()), k.to(gpu()), v.to(gpu()), up.to(gpu()), mask_gpu, causal,
                           G > 1);
    const Result exact = run(SDPBackend::FlashExact, q.to(gpu()), k.to(gpu()), v.to(gpu()), up.to(gpu()), mask_gpu,
                             causal, G > 1);
    CHECK(rel_err(exact.out, math.out) < 1e-5);
    CHECK(rel_err(exact.dq, math.dq) < 1e-5);
    CHECK(rel_err(exact.dk, math.dk) < 1e-5);
    CHECK(rel_err(exact.dv, math.dv) < 1e-5);
    CHECK(rel_err(got.out, exact.out) < 1e-5);
    CHECK(rel_err(got.dk, exact.dk) < 1e-5);
    CHECK(rel_err(got.out, cpu.out) < 1e-5);
    CHECK(rel_err(got.out, math.out) < 1e-5);
    CHECK(rel_err(got.dq, math.dq) < 1e-5);
    CHECK(rel_err(got.dk, math.dk) < 1e-5);
    CHECK(rel_err(got.dv, math.dv) < 1e-5);
    CHECK(rel_err(got.dq, cpu.dq) < 1e-5);
    for (const Tensor& t : {got.out, got.dq, got.dk, got.dv}) CHECK(no_nan(t));
  }
}

TEST_CASE("cuda flash: rows with nothing to attend to give zeros and lse -inf", "[cuda][attention][flash]") {
  TT_REQUIRE_CUDA();
  const TensorOptions o = TensorOptions().device(gpu());
  const Tensor q = randn({1, 2, 70, 64}).to(gpu()), k = randn({1, 2, 90, 64}).to(gpu()),
               v = randn({1, 2, 90, 64}).to(gpu());
  std::vector<float> b(70 * 90, 0.f);
  for (int64_t i = 0; i < 70; i += 3)  // rows 0, 3, 6, ... hidden
    for (int64_t j = 0; j < 90; ++j) b[size_t(i * 90 + j)] = -std::numeric_limits<float>::infinity();
  const Tensor full_bias = expand(tensor(b, {70, 90}).to(gpu()), {1, 2, 70, 90});
  AttentionArgs args;
  args.scale = 0.125;
  Tensor out = full({1, 2, 70, 64}, std::nan(""), o), lse = full({1, 2, 70}, std::nan(""), o);
  backend_for(gpu()).flash_attention_forward(out, lse, q, k, v, full_bias, args);
  const Tensor oc = out.cpu(), lc = lse.cpu();
  CHECK(no_nan(oc));
  for (int64_t i = 0; i < 70; i += 3) {
    CHECK(oc.select(2, i).abs().max().item<float>() == 0.f);
    CHECK(lc.select(2, i).max().item<float>() == -std::numeric_limits<float>::infinity());
  }
  Tensor dq = zeros({1, 2, 70, 64}, o), dk = zeros({1, 2, 90, 64}, o), dv = zeros({1, 2, 90, 64}, o);
  backend_for(gpu()).flash_attention_backward(dq, dk, dv, randn({1, 2, 70, 64}).to(gpu()), q, k, v, out, lse,
                                              full_bias, args);
  for (const Tensor& t : {dq, dk, dv}) CHECK(no_nan(t));
  for (int64_t i = 0; i < 70; i += 3) CHECK(dq.cpu().select(2, i).abs().max().item<float>() == 0.f);
}

TEST_CASE("cuda flash: device memory stays linear at [1, 16, 16384, 64]", "[cuda][attention][flash][slow]") {
  TT_REQUIRE_CUDA();
  const int64_t B = 1, H = 16, N = 16384, D = 64;
  const int64_t io_bytes = B * H * N * D * 4;  // one of q, k, v, dout, out, dq, dk, dv
  manual_seed(11);
  const Tensor q0 = randn({B, H, N, D}).to(gpu()), k0 = randn({B, H, N, D}).to(gpu()),
               v0 = randn({B, H, N, D}).to(gpu()), up = randn({B, H, N, D}).to(gpu());
  for (SDPBackend backend : {SDPBackend::Flash, SDPBackend::FlashExact}) {  // tensor cores, then FFMA
    INFO("backend " << (backend == SDPBackend::Flash ? "Flash (3xTF32)" : "FlashExact"));
    const Tensor q = q0.detach().requires_grad_(), k = k0.detach().requires_grad_(),
                 v = v0.detach().requires_grad_();
    SdpaKernelGuard guard(backend);
    cuda::synchronize();
    memory::reset_peak_stats(gpu());
    const int64_t before = memory::stats(gpu()).allocated_bytes;
    {
      Tensor out = scaled_dot_product_attention(q, k, v, {}, 0.0, false);
      out.backward(up);
      cuda::synchronize();
    }
    const int64_t peak_extra = memory::stats(gpu()).peak_allocated_bytes - before;
    // out and the three gradients, the logsumexp [B, H, N], and 64 MB for the rest (the math path
    // would hold B*H*N*N*4 = 16 GiB of weights).
    const int64_t bound = 4 * io_bytes + B * H * N * 4 + (int64_t(64) << 20);
    INFO("peak beyond the inputs: " << peak_extra << " bytes, bound " << bound << " bytes");
    CHECK(peak_extra <= bound);
    CHECK(peak_extra >= 4 * io_bytes);
    CHECK(no_nan(q.grad().sum()));
    CHECK(no_nan(k.grad().sum()));
  }
}
