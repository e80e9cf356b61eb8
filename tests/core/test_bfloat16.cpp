// bfloat16 through the core: the conversion's bits (ties to even, NaN, overflow), the dtype's name,
// size and promotion, factories, printing, views, indexing, joins, elementwise ops, reductions,
// comparisons, GEMM, gradients, optimizers and safetensors. Each computing op on bf16 must equal
// the float32 op on the same values rounded once to bf16 (Note [bf16 compute]); GEMM and sums
// must stay within bf16's rounding bound of the float32 result.
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <tuple>
#include <limits>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {

// The float32 result of `f` on bf16 inputs' values, rounded once to bf16: what a bf16 kernel
// that computes in float32 must give exactly.
template <typename F>
Tensor reference(F f, const Tensor& x) {
  return f(x.to(kFloat32)).to(kBFloat16);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
  return true;
}

bool all_true(const Tensor& b) { return b.to(kInt64).sum().item<int64_t>() == b.numel(); }

// max |a - b| / (|b| + floor), elementwise.
double max_rel(const Tensor& a, const Tensor& b, double floor = 1e-3) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]) / (std::fabs(y[i]) + floor));
  return m;
}

}  // namespace

TEST_CASE("bf16 conversion rounds to nearest even, keeps NaN and overflows to inf", "[core][bf16]") {
  CHECK(BFloat16(1.0f).bits == 0x3F80);
  CHECK(BFloat16(-2.0f).bits == 0xC000);
  CHECK(BFloat16(0.1f).bits == 0x3DCD);  // 0x3DCCCCCD rounds up
  // Exact halves go to the even neighbour.
  auto from_u32 = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  CHECK(BFloat16(from_u32(0x3F808000u)).bits == 0x3F80);  // tie, 0x3F80 is even
  CHECK(BFloat16(from_u32(0x3F818000u)).bits == 0x3F82);  // tie, 0x3F81 is odd: up
  CHECK(BFloat16(from_u32(0x3F808001u)).bits == 0x3F81);  // above the tie: up
  CHECK(std::isnan(float(BFloat16(std::nanf("")))));
  CHECK(std::isnan(float(BFloat16(from_u32(0x7F800001u)))));  // a NaN that would round to inf
  CHECK(float(BFloat16(std::numeric_limits<float>::infinity())) == std::numeric_limits<float>::infinity());
  CHECK(float(BFloat16(std::numeric_limits<float>::max())) == std::numeric_limits<float>::infinity());
  // Below bf16's largest finite value (3.3895e38): finite, within half a spacing (2^-9 relative).
  CHECK(std::isfinite(float(BFloat16(3.0e38f))));
  CHECK(std::fabs(float(BFloat16(3.0e38f)) / 3.0e38f - 1.0f) <= std::ldexp(1.0f, -9));
  CHECK(float(BFloat16::from_bits(0x0001)) > 0.0f);  // subnormals are kept
  // Every bf16 value survives float32 and back.
  for (uint32_t b = 0; b < 0x10000; b += 7) {
    BFloat16 v = BFloat16::from_bits(uint16_t(b));
    if (!std::isnan(float(v))) CHECK(BFloat16(float(v)).bits == v.bits);
  }
}

TEST_CASE("the bf16 dtype: name, size, promotion and result_type", "[core][bf16]") {
  CHECK(std::string(dtype_name(kBFloat16)) == "bfloat16");
  CHECK(element_size(kBFloat16) == 2);
  CHECK(is_floating_point(kBFloat16));
  CHECK(compute_dtype(kBFloat16) == kFloat32);
  CHECK(compute_dtype(kFloat64) == kFloat64);
  static_assert(dtype_of<BFloat16>::value == kBFloat16, "BFloat16 is bfloat16");
  CHECK(promote_types(kBFloat16, kFloat32) == kFloat32);
  CHECK(promote_types(kFloat32, kBFloat16) == kFloat32);
  CHECK(promote_types(kBFloat16, kFloat64) == kFloat64);
  CHECK(promote_types(kBFloat16, kInt64) == kBFloat16);
  CHECK(promote_types(kBool, kBFloat16) == kBFloat16);
  Tensor h = ones({2}, kBFloat16);
  CHECK(result_type(h, ones({2})) == kFloat32);             // both dimensioned: float32
  CHECK(result_type(h, scalar_tensor(1.5)) == kBFloat16);   // a 0-d float32 does not widen
  CHECK(result_type(h, Scalar(2.5)) == kBFloat16);          // nor does a Python-like scalar
  CHECK(result_type(ones({2}, kInt64), scalar_tensor(1.5, kBFloat16)) == kBFloat16);
  CHECK((h + ones({2})).dtype() == kFloat32);
  CHECK((h * 3).dtype() == kBFloat16);
  CHECK((ones({2}, kInt64) / 2).dtype() == kFloat32);
}

TEST_CASE("bf16 factories, printing and item", "[core][bf16]") {
  CHECK(zeros({3}, kBFloat16).dtype() == kBFloat16);
  CHECK(same_bits(full({2}, 0.1, kBFloat16), tensor({0.10009765625, 0.10009765625}).to(kBFloat16)));
  CHECK(arange(0, 5, 1, kBFloat16).to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(linspace(0, 1, 5, kBFloat16).to_vector<float>() == std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1});
  CHECK(eye(2, kBFloat16).to_vector<float>() == std::vector<float>{1, 0, 0, 1});
  Tensor r = randn({1000}, kBFloat16);
  CHECK(r.dtype() == kBFloat16);
  CHECK(std::fabs(r.to(kFloat32).mean().item<double>()) < 0.15);
  Tensor ints = randint(0, 5, {100}, kBFloat16);  // as a float32 tensor draws them, in bf16
  CHECK(ints.dtype() == kBFloat16);
  CHECK(ints.to(kFloat32).min().item<double>() >= 0.0);
  CHECK(ints.to(kFloat32).max().item<double>() <= 4.0);
  CHECK(all_true(ints.to(kFloat32) == ints.to(kFloat32).to(kInt64).to(kFloat32)));  // whole numbers
  Tensor u = rand({1000}, kBFloat16);
  CHECK(u.to(kFloat32).min().item<double>() >= 0.0);
  CHECK(u.to(kFloat32).max().item<double>() <= 1.0);
  REQUIRE_THROWS_WITH(full({1}, 1e39, kBFloat16), Contains("cannot be converted to type bfloat16 without overflow"));
  // 1/3 has 8 significant bits in bf16: 0.333984375.
  Tensor t = tensor({1.0, 1.0 / 3, -2.5}).to(kBFloat16);
  CHECK(t.select(0, 0).item<double>() == 1.0);
  CHECK(t.select(0, 1).item<double>() == 0.333984375);
  std::ostringstream os;
  os << t;
  CHECK(os.str() == "tensor([ 1.0000,  0.3340, -2.5000], dtype=bfloat16)");
}

TEST_CASE("bf16 views, indexing and joins move the bits unchanged", "[core][bf16]") {
  Tensor a = randn({3, 4}).to(kBFloat16);
  Tensor f = a.to(kFloat32);
  CHECK(same_bits(a.t().contiguous(), f.t().contiguous().to(kBFloat16)));
  CHECK(same_bits(a.slice(1, 1, 3).contiguous(), f.slice(1, 1, 3).contiguous().to(kBFloat16)));
  CHECK(same_bits(a.reshape({4, 3}), f.reshape({4, 3}).to(kBFloat16)));
  Tensor idx = tensor({2, 0}, kInt64);
  CHECK(same_bits(a.index_select(0, idx), f.index_select(0, idx).to(kBFloat16)));
  Tensor g = tensor(std::vector<int64_t>{0, 3, 1, 2}, Shape{1, 4}).expand({3, 4}).contiguous();
  CHECK(same_bits(gather(a, 1, g), gather(f, 1, g).to(kBFloat16)));
  Tensor mask = a.to(kFloat32) > 0;
  CHECK(same_bits(a.masked_fill(mask, 0.5), f.masked_fill(mask, 0.5).to(kBFloat16)));
  CHECK(same_bits(where(mask, a, a * 2), where(mask, f, f * 2).to(kBFloat16)));
  CHECK(same_bits(cat({a, a}, 0), cat({f, f}, 0).to(kBFloat16)));
  CHECK(same_bits(stack({a, a}, 1), stack({f, f}, 1).to(kBFloat16)));
  CHECK(cat({a, f}, 0).dtype() == kFloat32);  // joins promote
  CHECK(a.to(kFloat64).to(kBFloat16).to(kFloat32).to_vector<float>() == f.to_vector<float>());
}

TEST_CASE("bf16 elementwise ops and reductions equal float32 rounded once", "[core][bf16]") {
  manual_seed(3);
  Tensor x = randn({64, 33}).to(kBFloat16);
  Tensor pos = (x.abs() + 0.5).to(kBFloat16);
  Tensor y = randn({33}).to(kBFloat16);
  CHECK(same_bits(exp(x), reference([](const Tensor& t) { return exp(t); }, x)));
  CHECK(same_bits(log(pos), reference([](const Tensor& t) { return log(t); }, pos)));
  CHECK(same_bits(tanh(x), reference([](const Tensor& t) { return tanh(t); }, x)));
  CHECK(same_bits(relu(x), reference([](const Tensor& t) { return relu(t); }, x)));
  CHECK(same_bits(gelu(x), reference([](const Tensor& t) { return gelu(t); }, x)));
  CHECK(same_bits(x * y, (x.to(kFloat32) * y.to(kFloat32)).to(kBFloat16)));
  CHECK(same_bits(x / pos, (x.to(kFloat32) / pos.to(kFloat32)).to(kBFloat16)));
  CHECK(same_bits(pow(pos, 1.5), pow(pos.to(kFloat32), 1.5).to(kBFloat16)));
  CHECK(same_bits(maximum(x, y), maximum(x.to(kFloat32), y.to(kFloat32)).to(kBFloat16)));
  CHECK(same_bits(x.sum(1), x.to(kFloat32).sum(1).to(kBFloat16)));  // summed in float32
  CHECK(same_bits(x.sum(), x.to(kFloat32).sum().to(kBFloat16)));
  CHECK(same_bits(x.mean(0), x.to(kFloat32).mean(0).to(kBFloat16)));
  CHECK(same_bits(x.max(), x.to(kFloat32).max().to(kBFloat16)));
  CHECK(x.argmax(1).to_vector<int64_t>() == x.to(kFloat32).argmax(1).to_vector<int64_t>());
  CHECK(same_bits(softmax(x, 1), softmax(x.to(kFloat32), 1).to(kBFloat16)));
  CHECK(same_bits(log_softmax(x, 1), log_softmax(x.to(kFloat32), 1).to(kBFloat16)));
  Tensor w = ones({33}, kBFloat16), b = zeros({33}, kBFloat16);
  CHECK(same_bits(layer_norm(x, {33}, w, b),
                  layer_norm(x.to(kFloat32), {33}, w.to(kFloat32), b.to(kFloat32)).to(kBFloat16)));
  // Comparisons give bool, as for every dtype.
  CHECK((x > y).dtype() == kBool);
  CHECK((x > y).to_vector<bool>() == (x.to(kFloat32) > y.to(kFloat32)).to_vector<bool>());
  CHECK(all_true(x == x));
}

TEST_CASE("a bf16 sum accumulates in float32, not in bf16", "[core][bf16]") {
  // 4096 ones: a bf16 accumulator stops at 256 (256 + 1 rounds back to 256).
  CHECK(ones({4096}, kBFloat16).sum().item<double>() == 4096.0);
  Tensor small = full({1000}, 0.01, kBFloat16);
  double exact = 1000 * 0.010009765625;
  CHECK(std::fabs(small.sum().item<double>() - exact) <= exact * std::ldexp(1.0, -8));
}

TEST_CASE("bf16 matmul accumulates in float32 within bf16's rounding bound", "[core][bf16]") {
  manual_seed(5);
  for (auto [M, K, N] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {3, 17, 5}, {64, 127, 33}, {130, 64, 257}}) {
    Tensor a = randn({M, K}).to(kBFloat16), b = randn({K, N}).to(kBFloat16);
    Tensor ref = matmul(a.to(kFloat64), b.to(kFloat64));
    Tensor scale = matmul(a.to(kFloat64).abs(), b.to(kFloat64).abs());  // sum |a||b| per element
    for (const Tensor& got : {matmul(a, b), matmul(a.t().contiguous().t(), b), matmul(a, b.t().contiguous().t())}) {
      REQUIRE(got.dtype() == kBFloat16);
      // One rounding of the output (2^-9 of it) plus float32 accumulation error.
      Tensor err = (got.to(kFloat64) - ref).abs();
      Tensor bound = ref.abs() * std::ldexp(1.0, -8) + scale * (1e-6 * double(K));
      CHECK(all_true(err <= bound));
    }
  }
  Tensor batch = randn({2, 3, 8, 16}).to(kBFloat16), w = randn({16, 4}).to(kBFloat16);
  CHECK(max_rel(matmul(batch, w).to(kFloat32), matmul(batch.to(kFloat32), w.to(kFloat32)), 0.05) < 0.02);
  CHECK(matmul(zeros({2, 0}, kBFloat16), zeros({0, 3}, kBFloat16)).to_vector<float>() == std::vector<float>(6, 0.0f));
  REQUIRE_THROWS_WITH(matmul(ones({2, 2}, kBFloat16), ones({2, 2})), Contains("matmul"));
}

TEST_CASE("bf16 gradients match float32 gradients within bf16's bound", "[core][bf16][autograd]") {
  manual_seed(7);
  Tensor x32 = randn({8, 16}), w32 = randn({16, 4});
  Tensor x = x32.to(kBFloat16).requires_grad_(), w = w32.to(kBFloat16).requires_grad_();
  Tensor xr = x.detach().to(kFloat32).requires_grad_(), wr = w.detach().to(kFloat32).requires_grad_();
  (tanh(matmul(x, w)) * 2).sum().backward();
  (tanh(matmul(xr, wr)) * 2).sum().backward();
  REQUIRE(x.grad().dtype() == kBFloat16);
  REQUIRE(w.grad().dtype() == kBFloat16);
  // Every op of the chain rounds to bf16 (2^-9 relative each), and 1 - tanh^2 cancels where tanh
  // is near 1: the bound is 2^-5 of the gradient's largest entry (measured: about 2^-7).
  auto err = [](const Tensor& got, const Tensor& ref) {
    return (got.to(kFloat32) - ref).abs().max().item<double>() / ref.abs().max().item<double>();
  };
  INFO("x.grad error " << err(x.grad(), xr.grad()) << ", w.grad error " << err(w.grad(), wr.grad()));
  CHECK(err(x.grad(), xr.grad()) <= std::ldexp(1.0, -5));
  CHECK(err(w.grad(), wr.grad()) <= std::ldexp(1.0, -5));
  // A cast is differentiable: the gradient comes back in the source dtype.
  Tensor p = randn({5}).requires_grad_();
  (p.to(kBFloat16) * 3).sum().backward();
  REQUIRE(p.grad().dtype() == kFloat32);
  CHECK(p.grad().to_vector<float>() == std::vector<float>(5, 3.0f));
}

TEST_CASE("a bf16 model trains with SGD and Adam on bf16 parameters", "[core][bf16][optim]") {
  manual_seed(11);
  nn::Linear lin(8, 1);
  lin.to(kBFloat16);
  REQUIRE(lin.weight.dtype() == kBFloat16);
  Tensor x = randn({64, 8}).to(kBFloat16);
  Tensor y = (x.to(kFloat32).sum(1, true) * 0.5).to(kBFloat16);
  optim::Adam opt(lin.parameters(), optim::AdamOptions(0.05));
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    Tensor loss = mse_loss(lin.forward(x), y);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  CHECK(last < 0.1 * first);
  REQUIRE(lin.weight.dtype() == kBFloat16);
}

TEST_CASE("safetensors stores bf16 as BF16 and reads it back bit for bit", "[core][bf16][io]") {
  nn::StateDict sd;
  Tensor t = randn({3, 5}).to(kBFloat16);
  sd.insert("w", t);
  tt::testing::TempDir dir;
  const std::string path = dir.file("bf16.safetensors");
  save(sd, path);
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(bytes.find("\"dtype\":\"BF16\"") != std::string::npos);
  nn::StateDict back = load(path);
  REQUIRE(back.find("w") != nullptr);
  CHECK(back.find("w")->dtype() == kBFloat16);
  CHECK(same_bits(*back.find("w"), t));
}
