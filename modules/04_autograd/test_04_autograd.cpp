// Module 04 suite: the graph (leaves, grad_fn, edges, AccumulateGrad), the engine (order,
// shared subgraphs, deep chains), accumulation and clearing, broadcasting and views in the
// backward pass, the version counter, retain_graph and create_graph, grad(), NoGradGuard, hooks,
// the graph printers, and gradcheck of the differentiable ops of modules 01-03. It is the judge
// in exercise mode (`tools/tt exercise 04`): the cases tagged [exercise] lean on the engine's loop
// and the backward formulas a learner writes (Mul, Sum, Matmul, Softmax).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "test_util.h"

using Catch::Matchers::Contains;
using tt::Shape;
using tt::Tensor;
using tt::autograd::TensorList;

namespace {

tt::TensorOptions f64_grad() { return tt::TensorOptions().dtype(tt::kFloat64).requires_grad(true); }

// A float64 leaf that requires grad, with values from the seeded generator.
Tensor leaf(const Shape& shape, double scale = 1.0) {
  return (tt::randn(shape, tt::kFloat64) * scale).requires_grad_();
}

// A float64 leaf whose elements stay at least `gap` away from 0 (for ops with a kink there).
Tensor leaf_away_from_zero(const Shape& shape, double gap = 0.1) {
  Tensor r = tt::randn(shape, tt::kFloat64);
  Tensor sign = tt::where(r >= 0, tt::scalar_tensor(1.0, tt::kFloat64), tt::scalar_tensor(-1.0, tt::kFloat64));
  return (r + sign * gap).requires_grad_();
}

// A float64 leaf that is a transposed view ([shape[1], shape[0]], not contiguous).
Tensor leaf_t(const Shape& shape) { return tt::randn(shape, tt::kFloat64).t().requires_grad_(); }

// gradcheck that reports the library's message when it fails.
void check_grad(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  tt::autograd::GradcheckResult r = tt::autograd::gradcheck(fn, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

void check_gradgrad(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  tt::autograd::GradcheckResult r = tt::autograd::gradgradcheck(fn, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

// The walkthrough's network: x @ W1 + b1 -> relu -> @ w2 + b2 -> squared error with t.
struct TinyNet {
  Tensor x = tt::tensor({{1.0, 2.0}});
  Tensor W1 = tt::tensor({{0.5, -1.0}, {0.25, 0.2}}).requires_grad_();
  Tensor b1 = tt::tensor({0.1, 0.1}).requires_grad_();
  Tensor w2 = tt::tensor({2.0, -1.0}).view({2, 1}).requires_grad_();
  Tensor b2 = tt::tensor({0.3}).requires_grad_();
  Tensor t = tt::tensor({1.5}).view({1, 1});
  Tensor loss() const { return ((x.matmul(W1) + b1).relu().matmul(w2) + b2 - t).pow(2).mean(); }
};

}  // namespace

// --- the graph -------------------------------------------------------------------------------------

TEST_CASE("ops on tensors that require grad record nodes; leaves have none", "[module04]") {
  Tensor a = tt::ones({2}).requires_grad_();
  Tensor b = tt::ones({2});
  CHECK(a.is_leaf());
  CHECK(b.is_leaf());
  CHECK_FALSE(b.requires_grad());

  Tensor c = a * b;
  CHECK(c.requires_grad());
  CHECK_FALSE(c.is_leaf());
  REQUIRE(c.grad_fn());
  CHECK(c.grad_fn()->name() == "MulBackward0");
  REQUIRE(c.grad_fn()->next_edges.size() == 2);
  // Edge 0 leads to a's AccumulateGrad; b requires no grad, so edge 1 leads nowhere.
  REQUIRE(c.grad_fn()->next_edges[0].fn);
  CHECK(c.grad_fn()->next_edges[0].fn->name() == "AccumulateGrad");
  CHECK_FALSE(c.grad_fn()->next_edges[1].valid());

  // Nothing requires grad: nothing is recorded.
  Tensor d = b * b;
  CHECK_FALSE(d.requires_grad());
  CHECK_FALSE(d.grad_fn());
  // A leaf's uses share one AccumulateGrad.
  Tensor e = a + 1;
  CHECK(e.grad_fn()->next_edges[0].fn == c.grad_fn()->next_edges[0].fn);
}

TEST_CASE("node names of module 01-03 ops", "[module04]") {
  Tensor a = tt::ones({2, 2}).requires_grad_();
  CHECK((a + a).grad_fn()->name() == "AddBackward0");
  CHECK((a - 1).grad_fn()->name() == "SubBackward0");
  CHECK((a / 2).grad_fn()->name() == "DivBackward0");
  CHECK(a.exp().grad_fn()->name() == "ExpBackward0");
  CHECK(a.relu().grad_fn()->name() == "ReluBackward0");
  CHECK(a.sum().grad_fn()->name().rfind("SumBackward", 0) == 0);
  CHECK(a.matmul(a).grad_fn()->name().find("Backward") != std::string::npos);
  CHECK(tt::softmax(a, -1).grad_fn()->name() == "SoftmaxBackward0");
  CHECK(tt::log_softmax(a, -1).grad_fn()->name() == "LogSoftmaxBackward0");
}

TEST_CASE("softmax records one fused node, not a graph of small ops", "[module04]") {
  Tensor z = tt::ones({3, 4}).requires_grad_();
  Tensor p = tt::softmax(z, -1);
  REQUIRE(p.grad_fn());
  REQUIRE(p.grad_fn()->next_edges.size() == 1);
  CHECK(p.grad_fn()->next_edges[0].fn->name() == "AccumulateGrad");
}

TEST_CASE("requires_grad_ is for leaves; detach and NoGradGuard cut the graph", "[module04]") {
  Tensor a = tt::ones({2}).requires_grad_();
  Tensor b = a * 2;
  CHECK_THROWS_AS(b.requires_grad_(false), tt::Error);
  Tensor d = b.detach();
  CHECK(d.is_leaf());
  CHECK_FALSE(d.requires_grad());
  CHECK(d.storage().get() == b.storage().get());
  {
    tt::NoGradGuard guard;
    Tensor e = a * 2;
    CHECK_FALSE(e.requires_grad());
    CHECK_FALSE(e.grad_fn());
  }
  CHECK((a * 2).requires_grad());
}

// --- backward -------------------------------------------------------------------------------------

TEST_CASE("every gradient of the two-layer network, by hand", "[module04][exercise]") {
  TinyNet net;
  Tensor loss = net.loss();
  CHECK(loss.item<float>() == Approx(1.0f));
  loss.backward();
  CHECK_ALLCLOSE(net.b2.grad(), tt::tensor({2.0}), 1e-6, 1e-6);
  CHECK_ALLCLOSE(net.w2.grad(), tt::tensor({2.2, 0.0}).view({2, 1}), 1e-6, 1e-6);
  CHECK_ALLCLOSE(net.b1.grad(), tt::tensor({4.0, 0.0}), 1e-6, 1e-6);
  CHECK_ALLCLOSE(net.W1.grad(), tt::tensor({{4.0, 0.0}, {8.0, 0.0}}), 1e-6, 1e-6);
  CHECK(net.W1.grad().shape() == net.W1.shape());
  CHECK(net.b1.grad().shape() == net.b1.shape());
}

TEST_CASE("intermediate gradients: retain_grad and hooks", "[module04]") {
  Tensor x = tt::tensor({1.0, -2.0, 3.0}).requires_grad_();
  Tensor h = x * x;
  Tensor seen;
  h.retain_grad();
  h.register_hook([&seen](const Tensor& g) {
    seen = g;
    return Tensor();  // observe only
  });
  (h * 3).sum().backward();
  CHECK_ALLCLOSE(h.grad(), tt::full({3}, 3.0), 0, 0);
  CHECK_ALLCLOSE(seen, tt::full({3}, 3.0), 0, 0);
  CHECK_ALLCLOSE(x.grad(), tt::tensor({6.0, -12.0, 18.0}), 0, 0);

  // A hook that returns a tensor replaces the gradient flowing on.
  Tensor y = tt::tensor({1.0, 2.0}).requires_grad_();
  Tensor z = y * 1.0;
  z.register_hook([](const Tensor& g) { return g * 10; });
  z.sum().backward();
  CHECK_ALLCLOSE(y.grad(), tt::full({2}, 10.0), 0, 0);
  // Non-leaves keep no gradient unless asked.
  CHECK_FALSE(z.grad().defined());

  // A hook on a leaf, registered before the leaf is used, sees (and may replace) its gradient.
  Tensor w = tt::tensor({1.0, 2.0}).requires_grad_();
  int calls = 0;
  w.register_hook([&calls](const Tensor& g) {
    ++calls;
    return g * 2;
  });
  (w * 3).sum().backward();
  CHECK(calls == 1);
  CHECK_ALLCLOSE(w.grad(), tt::full({2}, 6.0), 0, 0);
}

TEST_CASE("a value used twice receives the sum of both contributions", "[module04][exercise]") {
  Tensor a = tt::tensor({1.5}, f64_grad());
  Tensor d = (a * 2) * (a * 3);  // 6 a^2
  d.backward();
  CHECK(a.grad().item<double>() == Approx(18.0));
  // A chain of diamonds: each level doubles the number of paths (2^30 in all), but each node runs once.
  Tensor b = tt::tensor({1.0}, f64_grad());
  Tensor v = b;
  for (int i = 0; i < 30; ++i) v = (v * 0.5) + (v * 0.5);
  v.backward();
  CHECK(b.grad().item<double>() == Approx(1.0));
}

TEST_CASE("a chain of 100,000 ops runs backward and is freed without recursion", "[module04][exercise]") {
  Tensor a = tt::tensor({2.0}).requires_grad_();
  {
    Tensor v = a;
    for (int i = 0; i < 100000; ++i) v = v * 1.0;
    v.backward();
  }
  CHECK(a.grad().item<float>() == 1.0f);
}

TEST_CASE("backward needs a scalar or an explicit gradient", "[module04]") {
  Tensor a = tt::ones({2, 3}).requires_grad_();
  Tensor y = a * 2;
  CHECK_THROWS_WITH(y.backward(), Contains("one-element"));
  y.backward(tt::full({2, 3}, 0.5));
  CHECK_ALLCLOSE(a.grad(), tt::ones({2, 3}), 0, 0);
  CHECK_THROWS_AS((a * 2).backward(tt::ones({3})), tt::Error);
  CHECK_THROWS_AS(tt::ones({1}).backward(), tt::Error);  // nothing requires grad
}

// --- accumulation ----------------------------------------------------------------------------------

TEST_CASE("gradients accumulate across backward calls until cleared", "[module04]") {
  Tensor x = tt::tensor({2.0}).requires_grad_();
  (x * x).backward();
  CHECK(x.grad().item<float>() == 4.0f);
  (x * x).backward();
  CHECK(x.grad().item<float>() == 8.0f);
  x.set_grad(Tensor());
  CHECK_FALSE(x.grad().defined());
  (x * x).backward();
  CHECK(x.grad().item<float>() == 4.0f);
  x.grad().zero_();
  CHECK(x.grad().item<float>() == 0.0f);
  (x * x).backward();
  CHECK(x.grad().item<float>() == 4.0f);
}

TEST_CASE("each leaf owns its gradient tensor", "[module04]") {
  Tensor a = tt::ones({3}).requires_grad_();
  Tensor b = tt::ones({3}).requires_grad_();
  (a + b).sum().backward();  // both receive the same upstream gradient
  a.grad().zero_();
  CHECK_ALLCLOSE(b.grad(), tt::ones({3}), 0, 0);
  b.grad().mul_(5);
  CHECK_ALLCLOSE(a.grad(), tt::zeros({3}), 0, 0);
  // The gradient passed to backward() is not stored as .grad: changing it later changes nothing.
  Tensor x = tt::zeros({2}).requires_grad_();
  Tensor seed = tt::ones({2});
  (x + 0).backward(seed);
  seed.fill_(7);
  CHECK_ALLCLOSE(x.grad(), tt::ones({2}), 0, 0);
}

TEST_CASE("autograd::grad returns gradients without touching .grad", "[module04]") {
  Tensor a = tt::tensor({1.0, 2.0}).requires_grad_();
  Tensor b = tt::tensor({3.0}).requires_grad_();
  Tensor y = (a * b).sum();
  TensorList g = tt::autograd::grad({y}, {a, b});
  CHECK_ALLCLOSE(g[0], tt::tensor({3.0, 3.0}), 0, 0);
  CHECK_ALLCLOSE(g[1], tt::tensor({3.0}), 0, 0);
  CHECK_FALSE(a.grad().defined());
  CHECK_FALSE(b.grad().defined());
  Tensor unused = tt::ones({1}).requires_grad_();
  CHECK_THROWS_WITH(tt::autograd::grad({(a * 2).sum()}, {unused}), Contains("allow_unused"));
  CHECK_FALSE(tt::autograd::grad({(a * 2).sum()}, {unused}, {}, false, false, /*allow_unused=*/true)[0].defined());
}

// --- broadcasting and views --------------------------------------------------------------------

TEST_CASE("broadcast inputs get gradients reduced to their own shape", "[module04][exercise]") {
  Tensor a = tt::tensor({1.0, 2.0, 3.0, 4.0}).view({4, 1}).requires_grad_();
  Tensor b = tt::tensor({10.0, 20.0, 30.0}).requires_grad_();
  Tensor y = a * b;  // [4, 3]
  CHECK(y.shape() == Shape{4, 3});
  y.sum().backward();
  CHECK(a.grad().shape() == Shape{4, 1});
  CHECK(b.grad().shape() == Shape{3});
  CHECK_ALLCLOSE(a.grad(), tt::full({4, 1}, 60.0), 0, 0);  // sum of b
  CHECK_ALLCLOSE(b.grad(), tt::full({3}, 10.0), 0, 0);     // sum of a

  tt::manual_seed(40);
  check_grad([](const TensorList& in) { return in[0] * in[1]; }, {leaf({4, 1}), leaf({3})});
  check_grad([](const TensorList& in) { return in[0] + in[1]; }, {leaf({2, 1, 3}), leaf({4, 1})});
  check_grad([](const TensorList& in) { return in[0] - in[1]; }, {leaf({3}), leaf({2, 3})});
  check_grad([](const TensorList& in) { return in[0] / in[1]; }, {leaf({2, 3}), leaf_away_from_zero({1, 3}, 0.5)});
  check_grad([](const TensorList& in) { return in[0] * 2.5 + in[0] * in[0]; }, {leaf({2, 2})});
}

TEST_CASE("gradients flow through views to the base tensor", "[module04]") {
  Tensor x = tt::arange(6, tt::kFloat32).view({2, 3}).detach().requires_grad_();
  (x.t() * tt::tensor({1.0, 2.0})).sum().backward();
  CHECK_ALLCLOSE(x.grad(), tt::tensor({{1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}}), 0, 0);
  x.set_grad(Tensor());
  x.slice(1, 1, 3).sum().backward();
  CHECK_ALLCLOSE(x.grad(), tt::tensor({{0.0, 1.0, 1.0}, {0.0, 1.0, 1.0}}), 0, 0);
  x.set_grad(Tensor());
  x.select(0, 1).unsqueeze(0).expand({4, 3}).sum().backward();
  CHECK_ALLCLOSE(x.grad(), tt::tensor({{0.0, 0.0, 0.0}, {4.0, 4.0, 4.0}}), 0, 0);

  tt::manual_seed(41);
  check_grad([](const TensorList& in) { return in[0].t().matmul(in[0]); }, {leaf({3, 2})});
  check_grad([](const TensorList& in) { return in[0].view({3, 2}).permute({1, 0}) * 2; }, {leaf({2, 3})});
  check_grad([](const TensorList& in) { return in[0].reshape({6}).slice(0, 1, 6, 2); }, {leaf({2, 3})});
  check_grad([](const TensorList& in) { return in[0].unsqueeze(1).expand({2, 4, 3}).contiguous(); }, {leaf({2, 3})});
}

// --- in place, retain_graph, create_graph ----------------------------------------------------------

TEST_CASE("modifying a saved tensor in place makes backward throw", "[module04]") {
  Tensor x = tt::ones({3}).requires_grad_();
  Tensor c = tt::tensor({1.0, 2.0, 3.0});
  Tensor y = (x * c).sum();
  const uint64_t v0 = c.version();
  c.add_(1);
  CHECK(c.version() == v0 + 1);
  CHECK_THROWS_WITH(y.backward(), Contains("modified by an inplace operation"));

  // exp saves its output: changing the output breaks exp's backward.
  Tensor e = x.exp();
  e.add_(1);
  CHECK_THROWS_WITH(e.sum().backward(), Contains("modified by an inplace operation"));

  // sin saves its input: changing sin's output is fine, and the in-place op is differentiated.
  Tensor s = x.sin();
  s.mul_(2);
  s.sum().backward();
  CHECK_ALLCLOSE(x.grad(), tt::full({3}, 2 * std::cos(1.0)), 1e-6, 1e-6);
}

TEST_CASE("in place on a leaf that requires grad is refused and changes nothing", "[module04]") {
  Tensor x = tt::ones({2}).requires_grad_();
  CHECK_THROWS_AS(x.add_(1), tt::Error);
  CHECK_ALLCLOSE(x.detach(), tt::ones({2}), 0, 0);
  {
    tt::NoGradGuard guard;  // an optimizer's update: allowed, not recorded
    x.sub_(0.5);
  }
  CHECK_ALLCLOSE(x.detach(), tt::full({2}, 0.5), 0, 0);
  CHECK(x.is_leaf());
}

TEST_CASE("a second backward needs retain_graph", "[module04]") {
  Tensor x = tt::tensor({2.0}).requires_grad_();
  Tensor y = x * x * x;
  y.backward();
  CHECK_THROWS_WITH(y.backward(), Contains("retain_graph"));

  x.set_grad(Tensor());
  Tensor z = x * x * x;
  z.backward(Tensor(), /*retain_graph=*/true);
  z.backward();
  CHECK(x.grad().item<float>() == 24.0f);  // 12 + 12
}

TEST_CASE("create_graph: second derivatives and a Hessian-vector product", "[module04]") {
  Tensor x = tt::tensor({3.0}, f64_grad());
  Tensor dy = tt::autograd::grad({x.pow(3)}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  CHECK(dy.item<double>() == Approx(27.0));
  REQUIRE(dy.grad_fn());
  Tensor d2y = tt::autograd::grad({dy}, {x})[0];
  CHECK(d2y.item<double>() == Approx(18.0));

  // f(v) = sum(v^3) + v0 v1: H = diag(6 v) + [[0, 1], [1, 0]] on the first two entries.
  Tensor v = tt::tensor({1.0, 2.0, 3.0}, f64_grad());
  Tensor w = tt::tensor({1.0, -1.0, 2.0}, tt::kFloat64);
  Tensor f = v.pow(3).sum() + v.select(0, 0) * v.select(0, 1);
  Tensor g = tt::autograd::grad({f}, {v}, {}, true, true)[0];
  Tensor hv = tt::autograd::grad({(g * w).sum()}, {v})[0];
  CHECK_ALLCLOSE(hv, tt::tensor({6.0 * 1 * 1 - 1, 6.0 * 2 * -1 + 1, 6.0 * 3 * 2}, tt::kFloat64), 1e-12, 1e-12);

  // Through backward() as well: the gradient stored in .grad has a graph of its own.
  Tensor u = tt::tensor({2.0}, f64_grad());
  u.pow(4).backward(Tensor(), /*retain_graph=*/false, /*create_graph=*/true);
  Tensor gu = u.grad();  // 4 u^3 = 32
  CHECK(gu.item<double>() == Approx(32.0));
  CHECK(tt::autograd::grad({gu}, {u})[0].item<double>() == Approx(48.0));  // 12 u^2
  u.set_grad(Tensor());  // u.grad's graph refers back to u: clearing it frees the cycle
}

// --- gradcheck of module 01-03 ops ------------------------------------------------------------------

TEST_CASE("gradcheck passes for elementwise ops", "[module04]") {
  tt::manual_seed(42);
  check_grad([](const TensorList& in) { return in[0].exp(); }, {leaf({2, 3})});
  check_grad([](const TensorList& in) { return in[0].abs().log(); }, {leaf_away_from_zero({2, 3}, 0.5)});
  check_grad([](const TensorList& in) { return (in[0].abs() + 0.5).sqrt(); }, {leaf_away_from_zero({5})});
  check_grad([](const TensorList& in) { return in[0].sin() * in[0].cos(); }, {leaf({4})});
  check_grad([](const TensorList& in) { return in[0].pow(3); }, {leaf({2, 2})});
  check_grad([](const TensorList& in) { return (in[0].abs() + 0.5).pow(in[1]); }, {leaf_away_from_zero({3}), leaf({3})});
  check_grad([](const TensorList& in) { return in[0].maximum(in[1]); }, {leaf({4}), leaf({4})});
  check_grad([](const TensorList& in) { return -in[0]; }, {leaf({3})});
}

TEST_CASE("gradcheck passes for reductions", "[module04][exercise]") {
  tt::manual_seed(43);
  check_grad([](const TensorList& in) { return in[0].sum(); }, {leaf({3, 4})});
  check_grad([](const TensorList& in) { return in[0].sum({1}); }, {leaf({3, 4})});
  check_grad([](const TensorList& in) { return in[0].sum({0, 2}, /*keepdim=*/true); }, {leaf({2, 3, 4})});
  check_grad([](const TensorList& in) { return in[0].sum({-1}); }, {leaf_t({4, 3})});
  check_grad([](const TensorList& in) { return in[0].mean({0}); }, {leaf({3, 4})});
  check_grad([](const TensorList& in) { return in[0].mean(); }, {leaf({5})});
  check_grad([](const TensorList& in) { return std::get<0>(in[0].max(1)); }, {leaf({3, 5})});
  check_grad([](const TensorList& in) { return in[0].var({1}); }, {leaf({3, 5})});
}

TEST_CASE("gradcheck passes for matmul in every form", "[module04][exercise]") {
  tt::manual_seed(44);
  auto mm = [](const TensorList& in) { return in[0].matmul(in[1]); };
  check_grad(mm, {leaf({3, 4}), leaf({4, 2})});           // [M, K] @ [K, N]
  check_grad(mm, {leaf({4}), leaf({4, 2})});              // [K] @ [K, N]
  check_grad(mm, {leaf({3, 4}), leaf({4})});              // [M, K] @ [K]
  check_grad(mm, {leaf({4}), leaf({4})});                 // dot
  check_grad(mm, {leaf({2, 3, 4}), leaf({2, 4, 2})});     // batched
  check_grad(mm, {leaf({2, 1, 3, 4}), leaf({5, 4, 2})});  // broadcast batch dims
  check_grad(mm, {leaf({3, 4}), leaf({2, 4, 2})});        // a matrix against a batch
  check_grad(mm, {leaf_t({4, 3}), leaf_t({2, 4})});   // transposed (non-contiguous) leaves
}

TEST_CASE("gradcheck passes for the activations of module 03", "[module04]") {
  tt::manual_seed(45);
  check_grad([](const TensorList& in) { return in[0].relu(); }, {leaf_away_from_zero({3, 4})});
  check_grad([](const TensorList& in) { return tt::leaky_relu(in[0], 0.1); }, {leaf_away_from_zero({3, 4})});
  check_grad([](const TensorList& in) { return in[0].sigmoid(); }, {leaf({3, 4}, 2.0)});
  check_grad([](const TensorList& in) { return in[0].tanh(); }, {leaf({3, 4}, 2.0)});
  check_grad([](const TensorList& in) { return tt::gelu(in[0]); }, {leaf({3, 4}, 2.0)});
  check_grad([](const TensorList& in) { return tt::gelu(in[0], "tanh"); }, {leaf({3, 4}, 2.0)});
  check_grad([](const TensorList& in) { return tt::silu(in[0]); }, {leaf({3, 4}, 2.0)});
}

TEST_CASE("gradcheck passes for softmax and log_softmax over every dim", "[module04][exercise]") {
  tt::manual_seed(46);
  for (int64_t dim : {0, 1, 2, -1}) {
    INFO("dim " << dim);
    check_grad([dim](const TensorList& in) { return tt::softmax(in[0], dim); }, {leaf({2, 3, 4}, 2.0)});
    check_grad([dim](const TensorList& in) { return tt::log_softmax(in[0], dim); }, {leaf({2, 3, 4}, 2.0)});
  }
  // Strided input, and large scores where the forward must be stable.
  check_grad([](const TensorList& in) { return tt::softmax(in[0], -1); }, {leaf_t({5, 3})});
  check_grad([](const TensorList& in) { return tt::softmax(in[0] * 1e3, -1); }, {leaf({2, 3}, 1e-3)});
  // The fused backward is p * (g - sum(g p)): check it against the formula directly.
  Tensor z = leaf({2, 5});
  Tensor p = tt::softmax(z, 1);
  Tensor g = tt::randn({2, 5}, tt::kFloat64);
  Tensor dz = tt::autograd::grad({p}, {z}, {g})[0];
  Tensor pd = p.detach();
  CHECK_ALLCLOSE(dz, pd * (g - (g * pd).sum({1}, true)), 1e-12, 1e-14);
}

TEST_CASE("masked softmax rows have finite gradients", "[module04]") {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor z = tt::tensor({{-inf, -inf, -inf}, {0.5, -inf, 1.0}}, f64_grad());
  Tensor p = tt::softmax(z, -1);
  (p * tt::tensor({{1.0, 2.0, 3.0}, {1.0, 2.0, 3.0}}, tt::kFloat64)).sum().backward();
  std::vector<double> g = z.grad().to_vector<double>();
  for (double v : g) CHECK(std::isfinite(v));
  CHECK(g[0] == 0.0);
  CHECK(g[4] == 0.0);  // a masked position gets no gradient
}

TEST_CASE("a composite expression: attention-like scores through softmax", "[module04]") {
  tt::manual_seed(47);
  // q: [B, T, D], k: [B, T, D], v: [B, T, D] -> softmax(q k^T / sqrt(D)) v
  auto attn = [](const TensorList& in) {
    Tensor s = in[0].matmul(in[1].transpose(-2, -1)) / std::sqrt(3.0);
    return tt::softmax(s, -1).matmul(in[2]);
  };
  check_grad(attn, {leaf({2, 4, 3}), leaf({2, 4, 3}), leaf({2, 4, 3})});
  // And the two-layer network with a cross-entropy by hand.
  auto net = [](const TensorList& in) {
    Tensor h = tt::gelu(in[0].matmul(in[1]) + in[2]);
    Tensor logp = tt::log_softmax(h.matmul(in[3]), -1);
    return -(logp * tt::tensor({{1.0, 0.0, 0.0}, {0.0, 0.0, 1.0}}, tt::kFloat64)).sum() / 2;
  };
  check_grad(net, {leaf({2, 4}), leaf({4, 5}), leaf({5}), leaf({5, 3})});
}

TEST_CASE("second derivatives are right for ops whose backward is differentiable", "[module04]") {
  tt::manual_seed(48);
  check_gradgrad([](const TensorList& in) { return in[0] * in[1]; }, {leaf({2, 3}), leaf({3})});
  check_gradgrad([](const TensorList& in) { return in[0].tanh(); }, {leaf({4})});
  check_gradgrad([](const TensorList& in) { return in[0].matmul(in[1]); }, {leaf({2, 3}), leaf({3, 2})});
  check_gradgrad([](const TensorList& in) { return tt::softmax(in[0], -1); }, {leaf({2, 4})});
  check_gradgrad([](const TensorList& in) { return tt::log_softmax(in[0], 0); }, {leaf({3, 2})});
}

TEST_CASE("gradcheck catches a wrong gradient and refuses float32", "[module04]") {
  tt::manual_seed(49);
  Tensor a = leaf({2, 3});
  auto off_by_a_little = [](const TensorList& in) {
    Tensor s = in[0] * 1.0;
    // gradcheck also calls fn with grad mode off (the finite differences): no graph, no hook.
    if (s.requires_grad()) s.register_hook([](const Tensor& g) { return g * 1.01; });  // a 1% error
    return s.exp();
  };
  tt::autograd::GradcheckResult r = tt::autograd::gradcheck(off_by_a_little, {a});
  CHECK_FALSE(r.ok);
  CHECK_FALSE(r.message.empty());
  CHECK_THROWS_AS(tt::autograd::gradcheck(off_by_a_little, {a}, 1e-6, 1e-5, 1e-3, /*raise_exception=*/true),
                  tt::autograd::GradcheckError);
  Tensor f32 = tt::ones({2}).requires_grad_();
  CHECK_THROWS_AS(tt::autograd::gradcheck([](const TensorList& in) { return in[0] * 2; }, {f32}), tt::Error);
}

// --- printing the graph -----------------------------------------------------------------------------

TEST_CASE("to_text and to_dot show the graph behind a loss", "[module04]") {
  TinyNet net;
  Tensor loss = net.loss();
  std::string text = tt::autograd::to_text(loss);
  CHECK_THAT(text, Contains("PowBackward0"));
  CHECK_THAT(text, Contains("ReluBackward0"));
  CHECK_THAT(text, Contains("AddBackward0"));
  CHECK_THAT(text, Contains("leaf"));
  std::string dot = tt::autograd::to_dot(loss);
  CHECK(dot.rfind("digraph", 0) == 0);
  CHECK_THAT(dot, Contains("ReluBackward0"));
  CHECK_THAT(dot, Contains("->"));
}
