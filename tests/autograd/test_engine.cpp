// The backward engine: deep graphs, retain_graph, create_graph (second derivatives,
// Hessian-vector products), autograd::grad, grad mode, broadcasting, views, the version check on
// saved tensors, in-place ops, and the errors of a bad backward call. The per-tensor API (detach,
// requires_grad_, hooks, retain_grad, .grad) is in test_tensor_autograd.cpp.
#include <cmath>
#include <vector>

#include "custom_ops.h"
#include "grad_util.h"

using namespace tt;
using namespace tt::testing;
using Catch::Matchers::Contains;

namespace {
Tensor vec64(std::initializer_list<double> v) { return tensor(v, kFloat64); }
}  // namespace

TEST_CASE("backward through a chain of 100,000 ops does not overflow the stack", "[autograd][engine]") {
  constexpr int kOps = 100000;
  SECTION("backward, then destroy") {
    Tensor x = leaf(vec64({1.5}));
    Tensor y = x;
    for (int i = 0; i < kOps; ++i) y = y + 1.0;
    y.backward();
    CHECK(x.grad().item<double>() == 1.0);
    CHECK(y.item<double>() == 1.5 + kOps);
  }
  SECTION("with saved tensors") {
    Tensor x = leaf(vec64({2.0}));
    Tensor c = vec64({1.0});
    Tensor y = x;
    for (int i = 0; i < kOps; ++i) y = y * c;
    y.backward();
    CHECK(x.grad().item<double>() == 1.0);
  }
  SECTION("destroyed without a backward") {
    Tensor x = leaf(vec64({1.0}));
    {
      Tensor y = x;
      for (int i = 0; i < kOps; ++i) y = y * 1.0;
      CHECK(y.requires_grad());
    }  // the chain is freed here
    CHECK(x.grad().defined() == false);
  }
  SECTION("every op uses its input twice") {
    // Two edges to the same node: the destructor must not leave the child to the second edge's
    // release, or freeing the chain recurses 100,000 deep.
    Tensor x = leaf(vec64({1.0}));
    {
      Tensor y = x;
      for (int i = 0; i < kOps; ++i) y = (y + y) * 0.5;
      y.backward();
    }
    CHECK(x.grad().item<double>() == 1.0);
    {
      Tensor y = x;
      for (int i = 0; i < kOps; ++i) y = y * y;
    }  // freed without a backward
  }
  SECTION("custom ops") {
    Tensor x = leaf(vec64({3.0}));
    Tensor c = vec64({0.0});
    Tensor y = x;
    for (int i = 0; i < kOps; ++i) y = pair(y, c);
    y.backward();
    CHECK(x.grad().item<double>() == 1.0);
  }
}

TEST_CASE("a second backward through a freed graph throws, retain_graph allows it", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0, 2.0, 3.0}));
  SECTION("freed") {
    Tensor y = (x * x).sum();
    y.backward();
    CHECK_ALLCLOSE(x.grad(), vec64({2.0, 4.0, 6.0}));
    CHECK_THROWS_AS(y.backward(), Error);
    CHECK_THROWS_WITH(y.backward(), Contains("second time") && Contains("retain_graph"));
  }
  SECTION("retained, and the gradients add up") {
    Tensor y = (x * x).sum();
    y.backward(Tensor(), /*retain_graph=*/true);
    y.backward();
    CHECK_ALLCLOSE(x.grad(), vec64({4.0, 8.0, 12.0}));
  }
  SECTION("autograd::grad frees the graph too") {
    Tensor y = (x.exp()).sum();
    autograd::grad({y}, {x});
    CHECK_THROWS_WITH(autograd::grad({y}, {x}), Contains("second time"));
  }
}

TEST_CASE("create_graph: d2/dx2 of x^3 is 6x", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.5, -2.0, 0.25}));
  SECTION("x * x * x") {
    Tensor y = (x * x * x).sum();
    Tensor g = autograd::grad({y}, {x}, {}, /*retain_graph=*/false, /*create_graph=*/true)[0];
    CHECK_ALLCLOSE(g, vec64({3 * 2.25, 3 * 4.0, 3 * 0.0625}));
    REQUIRE(g.requires_grad());
    Tensor gg = autograd::grad({g.sum()}, {x})[0];
    CHECK_ALLCLOSE(gg, vec64({9.0, -12.0, 1.5}));
  }
  SECTION("pow(x, 3), through backward(create_graph)") {
    Tensor y = x.pow(3).sum();
    y.backward(Tensor(), false, /*create_graph=*/true);
    Tensor g = x.grad();
    CHECK_ALLCLOSE(g, vec64({6.75, 12.0, 0.1875}));
    REQUIRE(g.requires_grad());
    x.set_grad(Tensor());
    g.sum().backward();
    CHECK_ALLCLOSE(x.grad(), vec64({9.0, -12.0, 1.5}));
  }
}

TEST_CASE("create_graph: Hessian-vector products match the analytic Hessian", "[autograd][engine]") {
  SECTION("f = x0^2 x1 + x1^3 + x0 x2 + exp(x2)") {
    double x0 = 0.7, x1 = -1.3, x2 = 0.4;
    Tensor x = leaf(vec64({x0, x1, x2}));
    Tensor a = x.select(0, 0), b = x.select(0, 1), c = x.select(0, 2);
    Tensor f = a * a * b + b.pow(3) + a * c + c.exp();
    Tensor g = autograd::grad({f}, {x}, {}, false, /*create_graph=*/true)[0];
    CHECK_ALLCLOSE(g, vec64({2 * x0 * x1 + x2, x0 * x0 + 3 * x1 * x1, x0 + std::exp(x2)}));
    std::vector<double> v = {0.3, -0.5, 2.0};
    Tensor hv = autograd::grad({g}, {x}, {vec64({v[0], v[1], v[2]})})[0];
    double H[3][3] = {{2 * x1, 2 * x0, 1}, {2 * x0, 6 * x1, 0}, {1, 0, std::exp(x2)}};
    std::vector<double> expected(3, 0.0);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) expected[i] += H[i][j] * v[j];
    CHECK_ALLCLOSE(hv, vec64({expected[0], expected[1], expected[2]}));
  }
  SECTION("f = 0.5 x^T A x + sin(x).sum() has Hessian A - diag(sin x)") {
    manual_seed(7);
    Tensor m = randn({4, 4}, kFloat64);
    Tensor A = m + m.t();
    Tensor x = randn64({4});
    Tensor f = (x.matmul(A).matmul(x)) * 0.5 + x.sin().sum();
    Tensor g = autograd::grad({f}, {x}, {}, false, true)[0];
    Tensor v = randn({4}, kFloat64);
    Tensor hv = autograd::grad({(g * v).sum()}, {x})[0];
    Tensor expected;
    {
      NoGradGuard ng;
      expected = A.matmul(v) - x.sin() * v;
    }
    CHECK_ALLCLOSE(hv, expected, 1e-10, 1e-12);
  }
}

TEST_CASE("autograd::grad returns gradients without touching .grad", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0, 2.0}));
  Tensor z = leaf(vec64({5.0}));
  SECTION("basic, with a grad_output for a non-scalar output") {
    Tensor y = x * 3.0;
    TensorList g = autograd::grad({y}, {x}, {vec64({1.0, -2.0})});
    REQUIRE(g.size() == 1);
    CHECK_ALLCLOSE(g[0], vec64({3.0, -6.0}));
    CHECK_FALSE(x.grad().defined());
  }
  SECTION("an unused input is an error unless allow_unused") {
    Tensor y = (x * 2.0).sum();
    CHECK_THROWS_WITH(autograd::grad({y}, {x, z}, {}, true), Contains("allow_unused"));
    TensorList g = autograd::grad({y}, {x, z}, {}, false, false, /*allow_unused=*/true);
    CHECK_ALLCLOSE(g[0], vec64({2.0, 2.0}));
    CHECK_FALSE(g[1].defined());
  }
  SECTION("an input that does not require grad is an error") {
    Tensor c = vec64({1.0});
    Tensor y = (x * 2.0).sum();
    CHECK_THROWS_WITH(autograd::grad({y}, {c}), Contains("does not require grad"));
  }
  SECTION("several outputs add up") {
    Tensor y1 = (x * 2.0).sum(), y2 = (x * x).sum();
    TensorList g = autograd::grad({y1, y2}, {x});
    CHECK_ALLCLOSE(g[0], vec64({4.0, 6.0}));
  }
  SECTION("with respect to a non-leaf") {
    Tensor h = x * 2.0;
    Tensor y = (h * h).sum();
    TensorList g = autograd::grad({y}, {h});
    CHECK_ALLCLOSE(g[0], vec64({4.0, 8.0}));
  }
}

TEST_CASE("NoGradGuard stops recording and restores the mode", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0, 2.0}));
  REQUIRE(GradMode::is_enabled());
  {
    NoGradGuard g;
    CHECK_FALSE(GradMode::is_enabled());
    Tensor y = x * 2.0;
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
    {
      NoGradGuard inner;
      AutoGradMode on(true);
      CHECK(GradMode::is_enabled());
      CHECK((x * 2.0).requires_grad());
    }
    CHECK_FALSE(GradMode::is_enabled());
  }
  CHECK(GradMode::is_enabled());
  Tensor y = x * 2.0;
  CHECK(y.requires_grad());
  CHECK(y.grad_fn() != nullptr);
}

TEST_CASE("a leaf used twice gets the sum of both paths", "[autograd][engine]") {
  Tensor x = leaf(vec64({3.0}));
  Tensor y = x * 2.0;
  Tensor z = y * y + y;  // diamond: y feeds two ops
  z.backward();
  CHECK(x.grad().item<double>() == Approx((2 * 6.0 + 1) * 2));
  Tensor w = leaf(vec64({-2.0}));
  (w * w).backward();
  CHECK(w.grad().item<double>() == Approx(-4.0));
}

TEST_CASE("broadcasting reduces gradients to the input shapes", "[autograd][engine]") {
  manual_seed(11);
  Tensor a = randn64({3, 1});
  Tensor b = randn64({1, 4});
  Tensor c = randn64({4});
  Tensor s = leaf(scalar_tensor(2.0, kFloat64));
  (a * b + c * s).sum().backward();
  REQUIRE(a.grad().shape() == Shape{3, 1});
  REQUIRE(b.grad().shape() == Shape{1, 4});
  REQUIRE(c.grad().shape() == Shape{4});
  REQUIRE(s.grad().shape() == Shape{});
  NoGradGuard ng;
  CHECK_ALLCLOSE(a.grad(), full({3, 1}, b.sum().item<double>(), kFloat64));
  CHECK_ALLCLOSE(b.grad(), full({1, 4}, a.sum().item<double>(), kFloat64));
  CHECK_ALLCLOSE(c.grad(), full({4}, 3 * 2.0, kFloat64));
  CHECK(s.grad().item<double>() == Approx(3 * c.sum().item<double>()));
}

TEST_CASE("gradients flow through views to the base", "[autograd][engine]") {
  SECTION("chained views of a leaf") {
    Tensor x = leaf(arange(12).to(kFloat64).reshape({3, 4}));
    Tensor v = x.transpose(0, 1).slice(0, 1, 3).select(1, 2);  // x[2, 1:3]
    (v * vec64({10.0, 20.0})).sum().backward();
    Tensor expected = zeros({3, 4}, kFloat64);
    expected.select(0, 2).slice(0, 1, 3).copy_(vec64({10.0, 20.0}));
    CHECK_ALLCLOSE(x.grad(), expected);
  }
  SECTION("a view of a non-leaf") {
    Tensor x = leaf(ones({3, 4}, kFloat64));
    Tensor b = x * 2.0;
    Tensor w = arange(12).to(kFloat64);
    (b.view({12}) * w).sum().backward();
    CHECK_ALLCLOSE(x.grad(), (w * 2.0).view({3, 4}));
  }
  SECTION("an expanded leaf sums over the broadcast dims") {
    Tensor x = leaf(vec64({1.0, 2.0, 3.0}));
    x.unsqueeze(0).expand({4, 3}).sum().backward();
    CHECK_ALLCLOSE(x.grad(), vec64({4.0, 4.0, 4.0}));
  }
}

TEST_CASE("an in-place change to a tensor saved for backward is detected", "[autograd][engine]") {
  Tensor x = leaf(vec64({0.5, 1.0}));
  SECTION("an input saved by sin") {
    Tensor a = x * 1.0;
    Tensor b = a.sin();
    a.mul_(2.0);
    CHECK_THROWS_WITH(b.sum().backward(), Contains("modified by an inplace operation"));
  }
  SECTION("an output saved by exp") {
    Tensor e = x.exp();
    Tensor y = e.sum();
    e.add_(1.0);
    CHECK_THROWS_WITH(y.backward(), Contains("modified by an inplace operation"));
  }
  SECTION("through a view of the saved tensor") {
    Tensor a = x * 1.0;
    Tensor b = a * a;
    {
      NoGradGuard ng;  // only the version counter is under test here
      a.slice(0, 0, 1).fill_(3.0);
    }
    CHECK_THROWS_WITH(b.sum().backward(), Contains("modified by an inplace operation"));
  }
  SECTION("an in-place change to a tensor that was not saved is fine") {
    Tensor a = x * 1.0;
    Tensor b = a + 1.0;  // add saves nothing
    a.mul_(2.0);
    b.sum().backward();
    CHECK_ALLCLOSE(x.grad(), vec64({1.0, 1.0}));
  }
}

TEST_CASE("in-place ops record the graph", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0, 2.0}));
  Tensor y = x * 1.0;
  y.mul_(3.0);
  y.add_(x);
  CHECK(y.requires_grad());
  y.sum().backward();
  CHECK_ALLCLOSE(x.grad(), vec64({4.0, 4.0}));
  SECTION("an in-place op on a leaf that requires grad is refused") {
    CHECK_THROWS_AS(x.add_(1.0), Error);
  }
  SECTION("in-place on a leaf is fine under NoGradGuard") {
    NoGradGuard ng;
    x.sub_(x.grad() * 0.5);  // an optimizer step
    CHECK_ALLCLOSE(x.detach(), vec64({-1.0, 0.0}));
  }
}

TEST_CASE("bad backward calls throw clear errors", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0, 2.0}));
  SECTION("a non-scalar root without a gradient") {
    CHECK_THROWS_WITH((x * 2.0).backward(), Contains("one-element"));
  }
  SECTION("a gradient of the wrong shape") {
    CHECK_THROWS_AS((x * 2.0).backward(vec64({1.0, 2.0, 3.0})), ShapeError);
  }
  SECTION("a root that does not require grad") {
    CHECK_THROWS_WITH(vec64({1.0}).backward(), Contains("does not require grad"));
  }
  SECTION("with a gradient, a non-scalar root works") {
    (x * 2.0).backward(vec64({1.0, -1.0}));
    CHECK_ALLCLOSE(x.grad(), vec64({2.0, -2.0}));
  }
}

TEST_CASE("backward of several roots at once", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0, 2.0}));
  Tensor a = (x * 2.0).sum(), b = (x * x).sum();
  autograd::backward({a, b});
  CHECK_ALLCLOSE(x.grad(), vec64({4.0, 6.0}));
}

TEST_CASE("float32 gradients stay float32", "[autograd][engine]") {
  Tensor x = leaf(tensor({1.0, 2.0}));
  (x * x).sum().backward();
  CHECK(x.grad().dtype() == kFloat32);
  CHECK_ALLCLOSE(x.grad(), tensor({2.0, 4.0}));
}

TEST_CASE("save_output keeps an op's output only after set_history points it at its node", "[autograd][engine]") {
  Tensor x = leaf(tensor({0.5, 1.5}, kFloat64));
  Tensor y = x.exp();  // ExpBackward0 saves y through save_output
  REQUIRE(y.grad_fn());
  const autograd::Node& node = *y.grad_fn();
  CHECK_NOTHROW(autograd::save_output(y, node));
  // The same values without the history: saving them would keep the node alive from its own
  // saved output, a reference cycle. The call throws instead.
  REQUIRE_THROWS_WITH(autograd::save_output(y.detach(), node),
                      Contains("ExpBackward0") && Contains("set_history"));
  y.sum().backward();
  CHECK_ALLCLOSE(x.grad(), tensor({std::exp(0.5), std::exp(1.5)}, kFloat64));
}
