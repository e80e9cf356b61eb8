// linear's backward through one fused weight-and-bias gradient call (Note [fused linear backward]
// in ops/linalg.cpp), and split/chunk as one multi-output node whose backward is one cat (Note
// [split backward] in ops/join.cpp): known values, the fused path against the differentiable one
// (create_graph), gradcheck and gradgradcheck in float64, and the q/k/v split of an attention
// projection against three slices.
#include <vector>

#include "grad_util.h"

using namespace tt;
using namespace tt::testing;

namespace {
using L = const TensorList&;

std::vector<double> values(const Tensor& t) { return t.to(kFloat64).contiguous().to_vector<double>(); }
}  // namespace

TEST_CASE("fused linear backward: known values for x, w and b", "[autograd][linalg][linear]") {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    INFO(dt);
    Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}).to(dt).requires_grad_();
    Tensor w = tensor({{1.0, 0.0, -1.0}, {2.0, 1.0, 0.0}}).to(dt).requires_grad_();
    Tensor b = tensor({10.0, 20.0}).to(dt).requires_grad_();
    Tensor y = linear(x, w, b);
    CHECK(values(y) == std::vector<double>{8, 24, 8, 33});
    CHECK(y.grad_fn()->name() == "LinearBackward0");
    y.backward(tensor({{1.0, 2.0}, {3.0, 4.0}}).to(dt));
    CHECK(values(x.grad()) == std::vector<double>{5, 2, -1, 11, 4, -3});  // g w
    CHECK(values(w.grad()) == std::vector<double>{13, 17, 21, 18, 24, 30});  // g^T x
    CHECK(values(b.grad()) == std::vector<double>{4, 6});  // the sums of g's columns
    CHECK(b.grad().shape() == Shape{2});
  }
}

TEST_CASE("fused linear backward: batched, strided and expanded inputs match the differentiable formulas",
          "[autograd][linalg][linear]") {
  manual_seed(23);
  struct Case {
    const char* what;
    Tensor x, w, b;
  };
  std::vector<Case> cases{
      {"[2, 3, 5] input", randn64({2, 3, 5}), randn64({4, 5}), randn64({4})},
      {"transposed input and weight", randn64_t({6, 5}), randn64_t({4, 5}), randn64({4})},
      {"strided input and bias", randn64_strided({6, 5}), randn64({4, 5}), randn64_strided({4})},
      {"1-D input", randn64({5}), randn64({4, 5}), randn64({4})},
      {"no bias", randn64({6, 5}), randn64({4, 5}), Tensor()},
  };
  for (Case& c : cases) {
    INFO(c.what);
    Tensor y = linear(c.x, c.w, c.b);
    Tensor g = randn(y.shape(), kFloat64);
    TensorList inputs{c.x, c.w};
    if (c.b.defined()) inputs.push_back(c.b);
    // create_graph = false: the fused backend call; true: matmul and sum (Note [fused linear backward]).
    TensorList fused = autograd::grad({y}, inputs, {g}, /*retain_graph=*/true, /*create_graph=*/false);
    TensorList plain = autograd::grad({y}, inputs, {g}, /*retain_graph=*/true, /*create_graph=*/true);
    REQUIRE(fused.size() == plain.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      INFO("gradient of input " << i);
      CHECK(fused[i].shape() == inputs[i].shape());
      CHECK_ALLCLOSE(fused[i], plain[i].detach(), 1e-12, 1e-12);
    }
  }
  // The upstream gradient of y.sum() is an expanded (stride-0) tensor: made BLAS-ready first.
  Tensor x = randn64({3, 5}), w = randn64({4, 5}), b = randn64({4});
  linear(x, w, b).sum().backward();
  CHECK_ALLCLOSE(b.grad(), full({4}, 3.0, kFloat64));
  CHECK_ALLCLOSE(w.grad(), x.detach().sum({0}).unsqueeze(0).expand({4, 5}));
}

TEST_CASE("fused linear backward: only some inputs need a gradient, and empty sizes", "[autograd][linalg][linear]") {
  Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Tensor w = tensor({{1.0, 0.0, -1.0}, {2.0, 1.0, 0.0}});
  Tensor b = tensor({10.0, 20.0}).requires_grad_();  // the bias alone: its gradient without a GEMM
  linear(x, w, b).backward(tensor({{1.0, 2.0}, {3.0, 4.0}}));
  CHECK(values(b.grad()) == std::vector<double>{4, 6});

  // No rows: zero gradients for the weight and bias. No input features: a bias-only layer.
  Tensor w0 = randn({2, 3}).requires_grad_(), b0 = randn({2}).requires_grad_();
  linear(empty({0, 3}), w0, b0).sum().backward();
  CHECK(values(w0.grad()) == std::vector<double>(6, 0.0));
  CHECK(values(b0.grad()) == std::vector<double>{0, 0});
  Tensor w1 = empty({2, 0}).requires_grad_(), b1 = tensor({1.0, -1.0}).requires_grad_();
  Tensor y1 = linear(empty({3, 0}), w1, b1);
  CHECK(values(y1) == std::vector<double>{1, -1, 1, -1, 1, -1});
  y1.sum().backward();
  CHECK(w1.grad().shape() == Shape{2, 0});
  CHECK(values(b1.grad()) == std::vector<double>{3, 3});
}

TEST_CASE("gradcheck: fused linear backward, float64, first and second order", "[autograd][gradcheck][linear]") {
  manual_seed(505);
  auto lin = [](L x) { return linear(x[0], x[1], x[2]); };
  expect_grad("[4, 3] x [5, 3] + [5]", lin, {randn64({4, 3}), randn64({5, 3}), randn64({5})});
  expect_grad("[2, 2, 3] input, transposed weight", lin, {randn64({2, 2, 3}), randn64_t({5, 3}), randn64({5})});
  expect_grad("the weight alone", [](L x) { return linear(x[0], x[1], x[2]); },
              {randn({3, 3}, kFloat64), randn64({2, 3}), randn({2}, kFloat64)});
}

TEST_CASE("split: the pieces are outputs of one node, whose backward is one cat", "[autograd][split]") {
  Tensor t = arange(12, kFloat64).reshape({2, 6}).detach().requires_grad_();
  std::vector<Tensor> p = split(t, std::vector<int64_t>{1, 2, 3}, 1);
  REQUIRE(p.size() == 3);
  for (size_t i = 0; i < p.size(); ++i) {
    CHECK(p[i].grad_fn() == p[0].grad_fn());
    CHECK(p[i].unsafe_impl()->output_nr == uint32_t(i));
  }
  CHECK(p[0].grad_fn()->name() == "SplitWithSizesBackward0");
  CHECK(t.split(2, 1)[0].grad_fn()->name() == "SplitBackward0");
  CHECK(t.chunk(3, 1)[2].grad_fn()->name() == "SplitBackward0");
  // The pieces are still views of t.
  CHECK(p[2].data_ptr<double>() == t.data_ptr<double>() + 3);

  (p[0].sum() + 2.0 * p[1].sum() + 3.0 * p[2].sum()).backward();
  CHECK(values(t.grad()) == std::vector<double>{1, 2, 2, 3, 3, 3, 1, 2, 2, 3, 3, 3});
}

TEST_CASE("split: unused pieces get zeros, a piece used twice sums, empty pieces", "[autograd][split]") {
  Tensor t = arange(7, kFloat64).detach().requires_grad_();
  std::vector<Tensor> p = t.split(3);  // sizes 3, 3, 1
  (p[1] * p[1]).sum().backward();     // d/dt of sum(t[3:6]^2): 2 t there, 0 elsewhere
  CHECK(values(t.grad()) == std::vector<double>{0, 0, 0, 6, 8, 10, 0});

  Tensor u = arange(6, kFloat64).reshape({2, 3}).detach().requires_grad_();
  std::vector<Tensor> q = split(u, std::vector<int64_t>{0, 3, 0}, 1);
  CHECK(q[0].shape() == Shape{2, 0});
  (q[1] * 2.0).sum().backward();
  CHECK(values(u.grad()) == std::vector<double>(6, 2.0));

  Tensor e = empty({0, 4}, kFloat64).requires_grad_();
  std::vector<Tensor> r = e.chunk(2, 1);
  (r[0].sum() + r[1].sum()).backward();
  CHECK(e.grad().shape() == Shape{0, 4});
}

TEST_CASE("split: every piece a root of one backward or grad call", "[autograd][split]") {
  // The pieces share one node: the engine must run it once and still count what it feeds once.
  Tensor t = arange(5, kFloat64).detach().requires_grad_();
  std::vector<Tensor> p = t.split(2);
  std::vector<Tensor> seeds{full({2}, 1.0, kFloat64), full({2}, 2.0, kFloat64), full({1}, 3.0, kFloat64)};
  autograd::backward(p, seeds);
  CHECK(values(t.grad()) == std::vector<double>{1, 1, 2, 2, 3});
  TensorList g = autograd::grad(t.chunk(2), {t}, {full({3}, 4.0, kFloat64), full({2}, 5.0, kFloat64)});
  REQUIRE(g[0].defined());
  CHECK(values(g[0]) == std::vector<double>{4, 4, 4, 5, 5});
  // The same tensor twice as a root: its gradients add.
  Tensor u = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = u * 3.0;
  autograd::backward({y, y}, {ones_like(y), ones_like(y)});
  CHECK(values(u.grad()) == std::vector<double>{6, 6});
}

TEST_CASE("gradcheck: split and chunk, float64, first and second order", "[autograd][gradcheck][split]") {
  manual_seed(606);
  // Every piece as an output: gradcheck backpropagates one piece at a time (the others undefined).
  auto pieces = [](L x) { return TensorList(split(x[0], std::vector<int64_t>{2, 1, 3}, -1)); };
  CHECK(autograd::gradcheck(pieces, {randn64({3, 6})}).ok);
  CHECK(autograd::gradgradcheck(pieces, {randn64({3, 6})}).ok);
  expect_grad("pieces multiplied", [](L x) {
    std::vector<Tensor> p = x[0].chunk(3, 0);
    return p[0] * p[1].exp() + p[2] * p[0];
  }, {randn64({6, 2})});
  expect_grad("a transposed input split along its strided dim", [](L x) {
    std::vector<Tensor> p = x[0].split(2, 1);
    return p[0] * p[1];
  }, {randn64_t({3, 4})});
}

TEST_CASE("split: the q/k/v pieces of one projection give the gradients three slices give", "[autograd][split]") {
  manual_seed(707);
  const int64_t B = 2, T = 3, E = 4, kv = 2;
  Tensor x = randn64({B, T, E}), w = randn64({E + 2 * kv, E}), b = randn64({E + 2 * kv});
  auto loss_of = [&](bool one_split) {
    Tensor qkv = linear(x, w, b);
    Tensor q, k, v;
    if (one_split) {
      std::vector<Tensor> p = split(qkv, std::vector<int64_t>{E, kv, kv}, 2);
      q = p[0], k = p[1], v = p[2];
    } else {
      q = qkv.slice(2, 0, E), k = qkv.slice(2, E, E + kv), v = qkv.slice(2, E + kv, E + 2 * kv);
    }
    return (q.sum(-1) * (k * k).sum(-1) + v.exp().sum(-1)).sum();
  };
  TensorList one = autograd::grad({loss_of(true)}, {x, w, b});
  TensorList three = autograd::grad({loss_of(false)}, {x, w, b});
  for (size_t i = 0; i < one.size(); ++i) CHECK_ALLCLOSE(one[i], three[i], 1e-12, 1e-12);
}
