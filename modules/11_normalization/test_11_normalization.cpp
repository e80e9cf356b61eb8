// Module 11 suite: LayerNorm and RMSNorm. Values by hand; zero mean and unit variance per row, each
// row on its own; invariance to the shift and scale of a row (and RMSNorm's lack of shift
// invariance); agreement with the same math written as small ops, over several normalized dims;
// the backward by hand (dx sums to 0 and is orthogonal to xhat, dweight and dbias as sums over
// rows), against autograd through the small ops for every combination of inputs that require
// grad, under gradcheck, and its second derivatives; the gradient's 1/a scaling; the variance of
// 1e4 + small noise in float32; what the fused op allocates against the graph of small ops; deep
// stacks whose scale drifts without normalization and holds with it (pre- and post-norm); the
// layers, their options, printing and errors. It is the judge in exercise mode (`tools/tt exercise
// 11`): the cases tagged [exercise] lean on the bodies a learner writes (the CPU row kernels of
// both norms, forward and backward, and the differentiable backward used for second derivatives).
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

using Catch::Matchers::Contains;
using tt::Shape;
using tt::Tensor;
using tt::autograd::TensorList;

namespace nn = tt::nn;

namespace {

Tensor f64(std::initializer_list<double> v) { return tt::tensor(v, tt::kFloat64); }

// A float64 leaf that requires grad.
Tensor leaf(const Shape& shape) { return tt::randn(shape, tt::kFloat64).requires_grad_(); }

double max_abs(const Tensor& t) { return t.abs().max().item<double>(); }

void check_grad(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  tt::autograd::GradcheckResult r = tt::autograd::gradcheck(fn, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

void check_gradgrad(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  tt::autograd::GradcheckResult r = tt::autograd::gradgradcheck(tt::autograd::GradcheckFn(fn), inputs);
  INFO(r.message);
  CHECK(r.ok);
}

// The product of the last k dims of x's shape: the number of elements normalized together.
int64_t trailing(const Tensor& x, int k) {
  int64_t c = 1;
  for (int i = 0; i < k; ++i) c *= x.size(x.dim() - 1 - i);
  return c;
}

// LayerNorm written with small ops over the last k dims (flattened to one row); w, b: [those dims].
Tensor layer_norm_by_ops(const Tensor& x, int k, const Tensor& w, const Tensor& b, double eps) {
  Shape rows(x.shape().begin(), x.shape().end() - k);
  rows.push_back(trailing(x, k));
  Tensor x2 = x.reshape(rows);
  Tensor xc = x2 - x2.mean({-1}, true);
  Tensor y = (xc * ((xc * xc).mean({-1}, true) + eps).rsqrt()).reshape(x.shape());
  if (w.defined()) y = y * w;
  if (b.defined()) y = y + b;
  return y;
}

// RMSNorm written with small ops over the last dim.
Tensor rms_norm_by_ops(const Tensor& x, const Tensor& w, double eps) {
  Tensor y = x * ((x * x).mean({-1}, true) + eps).rsqrt();
  return w.defined() ? y * w : y;
}

// Peak bytes allocated above what was live before `f` ran.
template <typename F>
int64_t peak_bytes(F f) {
  const int64_t before = tt::memory::stats().allocated_bytes;
  tt::memory::reset_peak_stats();
  f();
  return tt::memory::stats().peak_allocated_bytes - before;
}

// The std of the activations after each of `depth` blocks (width C, batch B, seeded weights of
// std weight_std), for block(h, W).
std::vector<double> stack_stds(int depth, double weight_std, const std::function<Tensor(const Tensor&, const Tensor&)>& block) {
  const int64_t C = 128, B = 64;
  tt::manual_seed(1150);
  std::vector<Tensor> W;
  for (int l = 0; l < depth; ++l) W.push_back(tt::randn({C, C}) * weight_std);
  Tensor h = tt::randn({B, C});
  std::vector<double> out;
  for (int l = 0; l < depth; ++l) {
    h = block(h, W[size_t(l)]);
    out.push_back(h.to(tt::kFloat64).std().item<double>());
  }
  return out;
}

}  // namespace

// --- LayerNorm forward -----------------------------------------------------------------------------

TEST_CASE("layer_norm by hand: (x - mean) / sqrt(var + eps) * weight + bias", "[module11][exercise]") {
  // x = [1, 2, 3, 4]: mean 2.5, biased variance 1.25.
  Tensor x = f64({1, 2, 3, 4});
  const double s = std::sqrt(1.25);
  CHECK_ALLCLOSE(tt::layer_norm(x, {4}, {}, {}, 0.0), f64({-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s}), 1e-12, 1e-12);
  // eps is added to the variance; weight scales and bias shifts each feature.
  Tensor w = f64({1, 2, 3, 4}), b = f64({0.5, 0, -0.5, 1});
  const double r = 1 / std::sqrt(1.25 + 0.25);
  CHECK_ALLCLOSE(tt::layer_norm(x, {4}, w, b, 0.25), f64({-1.5 * r + 0.5, -1.0 * r, 1.5 * r - 0.5, 6.0 * r + 1.0}),
                 1e-12, 1e-12);
  // Weight only, bias only.
  CHECK_ALLCLOSE(tt::layer_norm(x, {4}, w, {}, 0.0), f64({-1.5 / s, -1.0 / s, 1.5 / s, 6.0 / s}), 1e-12, 1e-12);
  CHECK_ALLCLOSE(tt::layer_norm(x, {4}, {}, b, 0.0), f64({-1.5 / s + 0.5, -0.5 / s, 0.5 / s - 0.5, 1.5 / s + 1}),
                 1e-12, 1e-12);
  // float32 in, float32 out, the same numbers.
  Tensor y32 = tt::layer_norm(x.to(tt::kFloat32), {4}, {}, {}, 0.0);
  CHECK(y32.dtype() == tt::kFloat32);
  CHECK_ALLCLOSE(y32, f64({-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s}), 1e-6, 1e-6);
  // A constant row has nothing to normalize: eps keeps it finite and it comes out 0.
  CHECK_ALLCLOSE(tt::layer_norm(tt::full({5}, 3.0), {5}), tt::zeros({5}), 0, 0);
  // The node is PyTorch's.
  Tensor xr = x.reshape({1, 4}).detach().requires_grad_();
  CHECK(tt::layer_norm(xr, {4}).grad_fn()->name() == "NativeLayerNormBackward0");
  CHECK(tt::rms_norm(xr, {4}).grad_fn()->name() == "RmsNormBackward0");
}

TEST_CASE("layer_norm gives each row zero mean and unit variance, on its own", "[module11][exercise]") {
  tt::manual_seed(1100);
  Tensor x = tt::randn({4, 6, 32}, tt::kFloat64) * 5.0 + 3.0;
  Tensor y = tt::layer_norm(x, {32}, {}, {}, 0.0);
  CHECK_ALLCLOSE(y.mean({-1}), tt::zeros({4, 6}, tt::kFloat64), 0, 1e-12);
  CHECK_ALLCLOSE(y.var({-1}, /*correction=*/0), tt::ones({4, 6}, tt::kFloat64), 1e-12, 1e-12);
  // Rows are independent: changing one row changes only that row's output.
  Tensor x2 = x.clone();
  x2.select(0, 2).select(0, 3).copy_(tt::randn({32}, tt::kFloat64));
  Tensor y2 = tt::layer_norm(x2, {32}, {}, {}, 0.0);
  CHECK(max_abs(y2.select(0, 2).select(0, 3) - y.select(0, 2).select(0, 3)) > 0.1);
  CHECK_ALLCLOSE(y2.select(0, 1), y.select(0, 1), 0, 0);
  CHECK_ALLCLOSE(y2.select(0, 2).select(0, 4), y.select(0, 2).select(0, 4), 0, 0);
  // Invariant to the shift and the (positive) scale of each row.
  CHECK_ALLCLOSE(tt::layer_norm(x * 1000.0 - 42.0, {32}, {}, {}, 0.0), y, 1e-10, 1e-10);
  // With eps, the variance is var / (var + eps): just below 1.
  Tensor small = tt::randn({3, 16}, tt::kFloat64) * 0.01;
  Tensor v = small.var({-1}, 0);
  CHECK_ALLCLOSE(tt::layer_norm(small, {16}).var({-1}, 0), v / (v + 1e-5), 1e-10, 1e-12);
}

TEST_CASE("layer_norm equals the same math as small ops, over one or several trailing dims", "[module11][exercise]") {
  tt::manual_seed(1101);
  for (Shape s : {Shape{7}, Shape{3, 5}, Shape{2, 3, 4}, Shape{2, 2, 3, 5}}) {
    for (int k = 1; k <= s.size(); ++k) {
      Shape ns(s.begin() + (s.size() - k), s.end());
      INFO("input " << s << ", normalized_shape " << ns);
      Tensor x = tt::randn(s, tt::kFloat64) * 3.0 + 1.0;
      Tensor w = tt::randn(ns, tt::kFloat64), b = tt::randn(ns, tt::kFloat64);
      CHECK_ALLCLOSE(tt::layer_norm(x, ns, w, b), layer_norm_by_ops(x, k, w, b, 1e-5), 1e-10, 1e-12);
      CHECK_ALLCLOSE(tt::layer_norm(x.to(tt::kFloat32), ns, w.to(tt::kFloat32), b.to(tt::kFloat32)),
                     layer_norm_by_ops(x, k, w, b, 1e-5), 1e-5, 1e-5);
    }
  }
  // Long rows (more than one block of the kernel's reductions) and many rows.
  Tensor x = tt::randn({300, 1000}) * 2.0 - 1.0;
  CHECK_ALLCLOSE(tt::layer_norm(x, {1000}), layer_norm_by_ops(x.to(tt::kFloat64), 1, {}, {}, 1e-5), 1e-5, 1e-5);
  // A transposed (non-contiguous) input gives what its contiguous copy gives.
  Tensor xt = tt::randn({6, 9}, tt::kFloat64).t();
  CHECK_ALLCLOSE(tt::layer_norm(xt, {6}), tt::layer_norm(xt.contiguous(), {6}), 0, 0);
}

// --- LayerNorm backward ----------------------------------------------------------------------------

TEST_CASE("layer_norm backward by hand: dx = r (g - mean(g) - xhat mean(g xhat))", "[module11][exercise]") {
  Tensor x = f64({1, 2, 3, 4});
  Tensor xl = x.clone().requires_grad_();
  Tensor dy = f64({1, 0, 0, 0});
  tt::layer_norm(xl, {4}, {}, {}, 0.0).backward(dy);
  const double r = 1 / std::sqrt(1.25);
  Tensor xhat = (x - 2.5) * r;
  Tensor expect = r * (dy - dy.mean() - xhat * (dy * xhat).mean());
  CHECK_ALLCLOSE(xl.grad(), expect, 1e-12, 1e-12);
  // r (1 - 1/4 - (-1.5 r)(-1.5 r)/4) for the first element, worked out: 0.26833...
  CHECK(xl.grad().select(0, 0).item<double>() == Approx(r * (0.75 - 2.25 * r * r / 4)).epsilon(1e-12));
  // dx removes what would move the mean or the scale: it sums to 0 and is orthogonal to xhat.
  CHECK(std::fabs(xl.grad().sum().item<double>()) < 1e-12);
  CHECK(std::fabs((xl.grad() * xhat).sum().item<double>()) < 1e-12);
  // With a weight, g = dy * weight reaches xhat.
  Tensor xw = x.clone().requires_grad_();
  Tensor w = f64({2, -1, 0.5, 3});
  tt::layer_norm(xw, {4}, w, {}, 0.0).backward(dy * 3.0 + 1.0);
  Tensor g = (dy * 3.0 + 1.0) * w;
  CHECK_ALLCLOSE(xw.grad(), r * (g - g.mean() - xhat * (g * xhat).mean()), 1e-12, 1e-12);
}

TEST_CASE("layer_norm's weight and bias gradients are sums over rows", "[module11][exercise]") {
  tt::manual_seed(1102);
  Tensor x = tt::randn({5, 3, 8}, tt::kFloat64);
  Tensor w = leaf({8}), b = leaf({8});
  Tensor dy = tt::randn({5, 3, 8}, tt::kFloat64);
  tt::layer_norm(x, {8}, w, b).backward(dy);
  Tensor xhat = tt::layer_norm(x, {8});
  CHECK_ALLCLOSE(w.grad(), (dy * xhat).sum({0, 1}), 1e-10, 1e-12);
  CHECK_ALLCLOSE(b.grad(), dy.sum({0, 1}), 1e-10, 1e-12);
}

TEST_CASE("layer_norm backward equals autograd through small ops, whichever inputs need grad",
          "[module11][exercise]") {
  tt::manual_seed(1103);
  // 200 rows: more than one of the kernel's blocks of rows for the weight and bias sums.
  const Tensor x0 = tt::randn({4, 50, 24}, tt::kFloat64) * 2.0 + 0.5;
  const Tensor w0 = tt::randn({24}, tt::kFloat64), b0 = tt::randn({24}, tt::kFloat64);
  const Tensor dy = tt::randn({4, 50, 24}, tt::kFloat64);
  struct Case {
    const char* name;
    bool x, w, b, with_w, with_b;
  };
  for (const Case& c : {Case{"all", true, true, true, true, true}, Case{"x only, frozen affine", true, false, false, true, true},
                        Case{"weight and bias only", false, true, true, true, true}, Case{"weight only", false, true, false, true, true},
                        Case{"bias only", false, false, true, true, true}, Case{"x, no affine", true, false, false, false, false},
                        Case{"x and weight, no bias", true, true, false, true, false},
                        Case{"x and bias, no weight", true, false, true, false, true}}) {
    INFO(c.name);
    Tensor x1 = x0.clone().requires_grad_(c.x), x2 = x0.clone().requires_grad_(c.x);
    Tensor w1, w2, b1, b2;
    if (c.with_w) {
      w1 = w0.clone().requires_grad_(c.w);
      w2 = w0.clone().requires_grad_(c.w);
    }
    if (c.with_b) {
      b1 = b0.clone().requires_grad_(c.b);
      b2 = b0.clone().requires_grad_(c.b);
    }
    tt::layer_norm(x1, {24}, w1, b1).backward(dy);
    layer_norm_by_ops(x2, 1, w2, b2, 1e-5).backward(dy);
    if (c.x) CHECK_ALLCLOSE(x1.grad(), x2.grad(), 1e-9, 1e-11);
    if (c.with_w && c.w) CHECK_ALLCLOSE(w1.grad(), w2.grad(), 1e-9, 1e-10);
    if (c.with_b && c.b) CHECK_ALLCLOSE(b1.grad(), b2.grad(), 1e-9, 1e-10);
  }
  // float32: the fused backward against float64 small ops.
  Tensor x32 = x0.to(tt::kFloat32).requires_grad_(), w32 = w0.to(tt::kFloat32).requires_grad_();
  Tensor x64 = x0.clone().requires_grad_(), w64 = w0.clone().requires_grad_();
  tt::layer_norm(x32, {24}, w32).backward(dy.to(tt::kFloat32));
  layer_norm_by_ops(x64, 1, w64, {}, 1e-5).backward(dy);
  CHECK_ALLCLOSE(x32.grad(), x64.grad(), 1e-4, 1e-5);
  CHECK_ALLCLOSE(w32.grad(), w64.grad(), 1e-4, 1e-4);
}

TEST_CASE("gradcheck passes for layer_norm in float64", "[module11][exercise]") {
  tt::manual_seed(1104);
  check_grad([](const TensorList& in) { return tt::layer_norm(in[0], {5}, in[1], in[2]); },
             {leaf({3, 5}), leaf({5}), leaf({5})});
  check_grad([](const TensorList& in) { return tt::layer_norm(in[0], {2, 3}); }, {leaf({2, 2, 3})});
  check_grad([](const TensorList& in) { return tt::layer_norm(in[0], {4}, in[1]); }, {leaf({4}), leaf({4})});
}

TEST_CASE("second derivatives of layer_norm and rms_norm", "[module11][exercise]") {
  tt::manual_seed(1105);
  check_gradgrad([](const TensorList& in) { return tt::layer_norm(in[0], {5}, in[1], in[2]); },
                 {leaf({3, 5}), leaf({5}), leaf({5})});
  check_gradgrad([](const TensorList& in) { return tt::layer_norm(in[0], {4}); }, {leaf({2, 4})});
  check_gradgrad([](const TensorList& in) { return tt::rms_norm(in[0], {5}, in[1], 1e-6); }, {leaf({3, 5}), leaf({5})});
  check_gradgrad([](const TensorList& in) { return tt::rms_norm(in[0], {4}); }, {leaf({2, 4})});
  // A gradient taken with create_graph (the differentiable backward) has the same values as the
  // fused one.
  Tensor x = leaf({6, 7}), w = leaf({7}), b = leaf({7});
  Tensor dy = tt::randn({6, 7}, tt::kFloat64);
  TensorList fused = tt::autograd::grad({tt::layer_norm(x, {7}, w, b)}, {x, w, b}, {dy});
  TensorList graph = tt::autograd::grad({tt::layer_norm(x, {7}, w, b)}, {x, w, b}, {dy}, /*retain_graph=*/true,
                                        /*create_graph=*/true);
  for (size_t i = 0; i < 3; ++i) CHECK_ALLCLOSE(graph[i], fused[i], 1e-10, 1e-12);
  TensorList rfused = tt::autograd::grad({tt::rms_norm(x, {7}, w)}, {x, w}, {dy});
  TensorList rgraph = tt::autograd::grad({tt::rms_norm(x, {7}, w)}, {x, w}, {dy}, true, true);
  for (size_t i = 0; i < 2; ++i) CHECK_ALLCLOSE(rgraph[i], rfused[i], 1e-10, 1e-12);
}

TEST_CASE("a row a times larger gets a gradient a times smaller", "[module11]") {
  tt::manual_seed(1106);
  Tensor x = tt::randn({3, 10}, tt::kFloat64);
  Tensor dy = tt::randn({3, 10}, tt::kFloat64);
  for (double a : {0.1, 10.0, 1000.0}) {
    Tensor x1 = x.clone().requires_grad_(), xa = (x * a).detach().requires_grad_();
    tt::layer_norm(x1, {10}, {}, {}, 0.0).backward(dy);
    tt::layer_norm(xa, {10}, {}, {}, 0.0).backward(dy);
    CHECK_ALLCLOSE(xa.grad() * a, x1.grad(), 1e-9, 1e-12);
    Tensor r1 = x.clone().requires_grad_(), ra = (x * a).detach().requires_grad_();
    tt::rms_norm(r1, {10}, {}, 0.0).backward(dy);
    tt::rms_norm(ra, {10}, {}, 0.0).backward(dy);
    CHECK_ALLCLOSE(ra.grad() * a, r1.grad(), 1e-9, 1e-12);
  }
}

// --- RMSNorm ---------------------------------------------------------------------------------------

TEST_CASE("rms_norm by hand: x / sqrt(mean(x^2) + eps) * weight", "[module11][exercise]") {
  // mean(x^2) of [3, 4] is 12.5.
  CHECK_ALLCLOSE(tt::rms_norm(f64({3, 4}), {2}, {}, 0.0), f64({3 / std::sqrt(12.5), 4 / std::sqrt(12.5)}), 1e-12, 1e-12);
  CHECK_ALLCLOSE(tt::rms_norm(f64({3, 4}), {2}, f64({2, -1}), 0.5), f64({6 / std::sqrt(13.0), -4 / std::sqrt(13.0)}),
                 1e-12, 1e-12);
  CHECK_ALLCLOSE(tt::rms_norm(tt::tensor({3.0, 4.0}), {2}, {}, 0.0), f64({3 / std::sqrt(12.5), 4 / std::sqrt(12.5)}),
                 1e-6, 1e-6);
  // Each row comes out with mean square 1 (up to eps).
  tt::manual_seed(1107);
  Tensor x = tt::randn({5, 40}, tt::kFloat64) * 4.0 + 2.0;
  CHECK_ALLCLOSE(tt::rms_norm(x, {40}).pow(2.0).mean({-1}), tt::ones({5}, tt::kFloat64), 1e-10, 1e-12);
  CHECK_ALLCLOSE(tt::rms_norm(x, {40}, {}, 1e-6), rms_norm_by_ops(x, {}, 1e-6), 1e-10, 1e-12);
  CHECK_ALLCLOSE(tt::rms_norm(x, {5, 40}), x / (x.pow(2.0).mean() + std::numeric_limits<double>::epsilon()).sqrt(),
                 1e-10, 1e-12);
  // Scale invariant, but not shift invariant: no centering.
  CHECK_ALLCLOSE(tt::rms_norm(x * 50.0, {40}, {}, 0.0), tt::rms_norm(x, {40}, {}, 0.0), 1e-10, 1e-12);
  CHECK(max_abs(tt::rms_norm(x + 10.0, {40}) - tt::rms_norm(x, {40})) > 0.1);
  // A constant row stays constant: +-1.
  CHECK_ALLCLOSE(tt::rms_norm(f64({-3, -3, -3}), {3}), f64({-1, -1, -1}), 1e-12, 1e-12);
  // eps defaults to the machine epsilon of the dtype (PyTorch 2.4), visible on tiny rows.
  Tensor tiny = f64({1e-9, 1e-9});
  const double e64 = 1e-9 / std::sqrt(1e-18 + std::numeric_limits<double>::epsilon());
  const double e32 = 1e-9 / std::sqrt(1e-18 + double(std::numeric_limits<float>::epsilon()));
  CHECK_ALLCLOSE(tt::rms_norm(tiny, {2}), f64({e64, e64}), 1e-10, 0);
  CHECK_ALLCLOSE(tt::rms_norm(tiny.to(tt::kFloat32), {2}), f64({e32, e32}), 1e-5, 0);
}

TEST_CASE("rms_norm backward: dx = r (g - xhat mean(g xhat)), dweight = sum of dy xhat", "[module11][exercise]") {
  Tensor x = f64({1, 2, 3, 4});
  Tensor xl = x.clone().requires_grad_();
  Tensor dy = f64({1, 0, 0, 0});
  tt::rms_norm(xl, {4}, {}, 0.0).backward(dy);
  const double r = 1 / std::sqrt(7.5);
  Tensor xhat = x * r;
  CHECK_ALLCLOSE(xl.grad(), r * (dy - xhat * (dy * xhat).mean()), 1e-12, 1e-12);
  CHECK(std::fabs((xl.grad() * xhat).sum().item<double>()) < 1e-12);  // orthogonal to xhat...
  CHECK(std::fabs(xl.grad().sum().item<double>()) > 0.01);             // ...but not summing to 0
  // Against autograd through small ops, with and without the weight, on 150 rows.
  tt::manual_seed(1108);
  const Tensor x0 = tt::randn({150, 12}, tt::kFloat64) + 0.3;
  const Tensor w0 = tt::randn({12}, tt::kFloat64), g0 = tt::randn({150, 12}, tt::kFloat64);
  Tensor x1 = x0.clone().requires_grad_(), w1 = w0.clone().requires_grad_();
  Tensor x2 = x0.clone().requires_grad_(), w2 = w0.clone().requires_grad_();
  tt::rms_norm(x1, {12}, w1, 1e-6).backward(g0);
  rms_norm_by_ops(x2, w2, 1e-6).backward(g0);
  CHECK_ALLCLOSE(x1.grad(), x2.grad(), 1e-9, 1e-11);
  CHECK_ALLCLOSE(w1.grad(), w2.grad(), 1e-9, 1e-10);
  Tensor x3 = x0.clone().requires_grad_(), x4 = x0.clone().requires_grad_();
  tt::rms_norm(x3, {12}, {}, 1e-6).backward(g0);
  rms_norm_by_ops(x4, {}, 1e-6).backward(g0);
  CHECK_ALLCLOSE(x3.grad(), x4.grad(), 1e-9, 1e-11);
  Tensor w5 = w0.clone().requires_grad_(), w6 = w0.clone().requires_grad_();  // weight only
  tt::rms_norm(x0, {12}, w5, 1e-6).backward(g0);
  rms_norm_by_ops(x0, w6, 1e-6).backward(g0);
  CHECK_ALLCLOSE(w5.grad(), w6.grad(), 1e-9, 1e-10);
  // float32 against float64.
  Tensor x32 = x0.to(tt::kFloat32).requires_grad_();
  tt::rms_norm(x32, {12}, w0.to(tt::kFloat32), 1e-6).backward(g0.to(tt::kFloat32));
  Tensor x64 = x0.clone().requires_grad_();
  rms_norm_by_ops(x64, w0, 1e-6).backward(g0);
  CHECK_ALLCLOSE(x32.grad(), x64.grad(), 1e-4, 1e-5);
}

TEST_CASE("gradcheck passes for rms_norm in float64", "[module11][exercise]") {
  tt::manual_seed(1109);
  check_grad([](const TensorList& in) { return tt::rms_norm(in[0], {5}, in[1], 1e-6); }, {leaf({3, 5}), leaf({5})});
  check_grad([](const TensorList& in) { return tt::rms_norm(in[0], {2, 3}); }, {leaf({2, 2, 3})});
}

// --- numerics and costs ----------------------------------------------------------------------------

TEST_CASE("float32 rows of 1e4 plus small noise keep their small variance", "[module11][exercise]") {
  tt::manual_seed(1110);
  Tensor big = tt::randn({8, 1024}) * 0.1 + 1e4;  // float32: neighbours near 1e4 are 0.001 apart
  Tensor big64 = big.to(tt::kFloat64);              // the same values, exactly
  const double truth = big64.select(0, 0).var({-1}, 0).item<double>();
  // The one-pass formula E[x^2] - E[x]^2 in float32 loses the variance entirely.
  Tensor r0 = big.select(0, 0);
  const double one_pass = ((r0 * r0).mean() - r0.mean() * r0.mean()).item<double>();
  INFO("variance " << truth << ", one-pass float32 " << one_pass);
  CHECK(std::fabs(one_pass - truth) > 0.5 * truth);
  // layer_norm in float32 agrees with float64 to float32 precision, forward and backward.
  Tensor ref = tt::layer_norm(big64, {1024});
  CHECK(max_abs(tt::layer_norm(big, {1024}).to(tt::kFloat64) - ref) < 1e-5);
  Tensor x32 = big.clone().requires_grad_(), x64 = big64.clone().requires_grad_();
  Tensor dy = tt::randn({8, 1024});
  tt::layer_norm(x32, {1024}).backward(dy);
  tt::layer_norm(x64, {1024}).backward(dy.to(tt::kFloat64));
  CHECK_ALLCLOSE(x32.grad(), x64.grad(), 1e-3, 1e-2);  // gradients of size ~10 (1 / std)
  // rms_norm is centred on 0, not on the mean: at 1e4 + noise it is ~1 everywhere.
  CHECK_ALLCLOSE(tt::rms_norm(big, {1024}), tt::rms_norm(big64, {1024}), 1e-6, 1e-6);
}

TEST_CASE("the fused layer_norm keeps no intermediate tensors, the graph of small ops does", "[module11]") {
  tt::manual_seed(1111);
  const int64_t R = 256, C = 512, bytes = R * C * 4;
  Tensor x = tt::randn({R, C}).requires_grad_();
  Tensor w = tt::randn({C}).requires_grad_(), b = tt::randn({C}).requires_grad_();
  Tensor dy = tt::randn({R, C});
  auto fused = [&] {
    tt::layer_norm(x, {C}, w, b).backward(dy);
    for (Tensor* t : {&x, &w, &b}) t->set_grad(Tensor());
  };
  auto graph = [&] {
    layer_norm_by_ops(x, 1, w, b, 1e-5).backward(dy);
    for (Tensor* t : {&x, &w, &b}) t->set_grad(Tensor());
  };
  const int64_t p_fused = peak_bytes(fused), p_graph = peak_bytes(graph);
  INFO("peak above the inputs: fused " << p_fused << " bytes, small ops " << p_graph << " bytes, input " << bytes);
  // The output and dx are unavoidable; the fused op adds only per-row and per-feature vectors.
  CHECK(p_fused <= 2 * bytes + 64 * 1024);
  CHECK(p_graph >= 3 * bytes);
  // And forward only, without grad: the output alone (and two float64 numbers per row).
  Tensor y;
  {
    tt::NoGradGuard no_grad;
    const int64_t p = peak_bytes([&] { y = tt::layer_norm(x, {C}, w, b); });
    CHECK(p <= bytes + 64 * 1024);
  }
}

// --- deep stacks -----------------------------------------------------------------------------------

TEST_CASE("through a deep stack the scale drifts without normalization and holds with it", "[module11]") {
  const int depth = 50;
  const double C = 128, dflt = 1 / std::sqrt(3 * C), big = 1.1 * std::sqrt(2 / C);
  auto lin = [](const Tensor& h, const Tensor& W) { return h.matmul(W.t()); };
  auto ln = [](const Tensor& h) { return tt::layer_norm(h, {h.size(-1)}); };
  // Plain stacks: PyTorch's default init fades, weights 10% above the ReLU init grow.
  std::vector<double> fade = stack_stds(depth, dflt, [&](const Tensor& h, const Tensor& W) { return lin(h, W).relu(); });
  std::vector<double> grow = stack_stds(depth, big, [&](const Tensor& h, const Tensor& W) { return lin(h, W).relu(); });
  INFO("after " << depth << " blocks: default " << fade.back() << ", kaiming x 1.1 " << grow.back());
  CHECK(fade.back() < 1e-8);
  CHECK(grow.back() > 5.0);
  // With LayerNorm before each ReLU: the same scale at every depth, whatever the weights' scale.
  std::vector<double> ln_dflt = stack_stds(depth, dflt, [&](const Tensor& h, const Tensor& W) { return ln(lin(h, W)).relu(); });
  std::vector<double> ln_big = stack_stds(depth, big, [&](const Tensor& h, const Tensor& W) { return ln(lin(h, W)).relu(); });
  for (int l = 0; l < depth; ++l) {
    INFO("block " << l + 1);
    CHECK(ln_dflt[size_t(l)] > 0.5);
    CHECK(ln_dflt[size_t(l)] < 0.7);
    CHECK(ln_big[size_t(l)] == Approx(ln_dflt[size_t(l)]).epsilon(1e-4));
  }
  // Residual stacks: h + f(h) grows; post-norm pins the stream to 1; pre-norm grows slowly.
  std::vector<double> res = stack_stds(depth, dflt, [&](const Tensor& h, const Tensor& W) { return h + lin(h.relu(), W); });
  std::vector<double> post = stack_stds(depth, dflt, [&](const Tensor& h, const Tensor& W) { return ln(h + lin(h.relu(), W)); });
  std::vector<double> pre = stack_stds(depth, dflt, [&](const Tensor& h, const Tensor& W) { return h + lin(ln(h).relu(), W); });
  INFO("after " << depth << " blocks: residual " << res.back() << ", post-norm " << post.back() << ", pre-norm " << pre.back());
  for (double s : post) CHECK(s == Approx(1.0).epsilon(1e-3));
  CHECK(res.back() > 5.0);
  CHECK(pre.back() > 1.5);
  CHECK(pre.back() < 0.5 * res.back());
}

// --- the layers ------------------------------------------------------------------------------------

TEST_CASE("LayerNorm and RMSNorm layers: parameters, options, printing", "[module11]") {
  nn::LayerNorm ln(nn::LayerNormOptions({8}));
  CHECK(ln.named_parameters().keys() == std::vector<std::string>{"weight", "bias"});
  CHECK_ALLCLOSE(ln.weight, tt::ones({8}), 0, 0);
  CHECK_ALLCLOSE(ln.bias, tt::zeros({8}), 0, 0);
  CHECK(ln.num_parameters() == 16);
  CHECK(ln.extra_repr() == "(8,), eps=1e-05, elementwise_affine=True");
  tt::manual_seed(1112);
  Tensor x = tt::randn({2, 3, 8});
  CHECK_ALLCLOSE(ln(x), tt::layer_norm(x, {8}), 0, 0);
  // The parameters train: a step moves them and the output with them.
  {
    tt::NoGradGuard no_grad;
    ln.weight.fill_(2.0);
    ln.bias.fill_(-1.0);
  }
  CHECK_ALLCLOSE(ln(x), tt::layer_norm(x, {8}) * 2.0 - 1.0, 1e-6, 1e-6);
  ln.reset_parameters();
  CHECK_ALLCLOSE(ln.weight, tt::ones({8}), 0, 0);
  // No affine, no bias, several dims.
  CHECK(nn::LayerNorm(nn::LayerNormOptions({8}).elementwise_affine(false)).parameters().empty());
  nn::LayerNorm no_bias(nn::LayerNormOptions({8}).bias(false));
  CHECK(no_bias.named_parameters().keys() == std::vector<std::string>{"weight"});
  nn::LayerNorm two(nn::LayerNormOptions({3, 8}).eps(1e-6));
  CHECK(two.weight.shape() == Shape{3, 8});
  CHECK(two.extra_repr() == "(3, 8), eps=1e-06, elementwise_affine=True");
  CHECK_ALLCLOSE(two(x), tt::layer_norm(x, {3, 8}, {}, {}, 1e-6), 0, 0);
  // RMSNorm: one weight, eps None by default.
  nn::RMSNorm rms(nn::RMSNormOptions({8}));
  CHECK(rms.named_parameters().keys() == std::vector<std::string>{"weight"});
  CHECK(rms.extra_repr() == "(8,), eps=None, elementwise_affine=True");
  CHECK(nn::RMSNorm(nn::RMSNormOptions({8}).eps(1e-6)).extra_repr() == "(8,), eps=1e-06, elementwise_affine=True");
  CHECK_ALLCLOSE(rms(x), tt::rms_norm(x, {8}), 0, 0);
  std::ostringstream os;
  os << ln;
  CHECK_THAT(os.str(), Contains("LayerNorm((8,), eps=1e-05, elementwise_affine=True)"));
  // A model's state dict carries them by name.
  nn::Sequential seq(nn::Linear(8, 8), nn::LayerNorm(nn::LayerNormOptions({8})), nn::ReLU());
  CHECK(seq.state_dict().keys() ==
        std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"});
}

TEST_CASE("normalization refuses bad shapes, dtypes and options with messages that name them", "[module11]") {
  Tensor x = tt::randn({2, 3, 8});
  REQUIRE_THROWS_AS(tt::layer_norm(x, {3}), tt::ShapeError);
  REQUIRE_THROWS_WITH(tt::layer_norm(x, {3}), "layer_norm: normalized_shape must equal the last 1 dims of the input, "
                                               "got normalized_shape [3] and input of shape [2, 3, 8]");
  REQUIRE_THROWS_WITH(tt::rms_norm(x, {8, 3}), Contains("rms_norm") && Contains("[8, 3]"));
  REQUIRE_THROWS_WITH(tt::layer_norm(x, {8}, tt::ones({4})), Contains("weight must have shape normalized_shape [8], got [4]"));
  REQUIRE_THROWS_WITH(tt::layer_norm(x, {8}, {}, tt::ones({8}, tt::kFloat64)), Contains("bias must have the input's dtype"));
  REQUIRE_THROWS_AS(tt::layer_norm(tt::ones({2, 8}, tt::kInt64), {8}), tt::DtypeError);
  REQUIRE_THROWS_WITH(tt::rms_norm(tt::ones({2, 8}, tt::kInt64), {8}), Contains("floating-point"));
  REQUIRE_THROWS_WITH(tt::layer_norm(x, {8}, {}, {}, -1.0), Contains("eps must be >= 0"));
  REQUIRE_THROWS_AS(nn::LayerNorm(nn::LayerNormOptions({})), tt::Error);
  REQUIRE_THROWS_AS(nn::RMSNorm(nn::RMSNormOptions({8}).eps(-1.0)), tt::Error);
  nn::LayerNorm ln(nn::LayerNormOptions({8}));
  REQUIRE_THROWS_AS(ln(tt::randn({2, 7})), tt::ShapeError);
}
