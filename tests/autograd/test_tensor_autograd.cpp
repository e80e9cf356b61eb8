// The autograd API of a Tensor: detach, requires_grad_, register_hook on leaves and non-leaves,
// retain_grad, and .grad itself (accumulation across calls, clearing, in-place updates).
#include <vector>

#include "grad_util.h"

using namespace tt;
using namespace tt::testing;
using Catch::Matchers::Contains;

namespace {
Tensor vec64(std::initializer_list<double> v) { return tensor(v, kFloat64); }
}  // namespace

TEST_CASE("detach shares storage and cuts the graph", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0, 2.0, 3.0}));
  Tensor d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK(d.data_ptr<double>() == x.data_ptr<double>());
  Tensor y = (x.detach() * x).sum();  // only the second factor carries a gradient
  y.backward();
  CHECK_ALLCLOSE(x.grad(), vec64({1.0, 2.0, 3.0}));
  Tensor h = x * 2.0;
  Tensor hd = h.detach();
  CHECK(hd.is_leaf());
  CHECK(hd.grad_fn() == nullptr);
}

TEST_CASE("requires_grad_ works on leaves only, and on floating point only", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0}));
  Tensor y = x * 2.0;
  CHECK_FALSE(y.is_leaf());
  CHECK_THROWS_WITH(y.requires_grad_(false), Contains("leaf"));
  CHECK_THROWS_AS(tensor({1, 2}).requires_grad_(), DtypeError);
  Tensor z = vec64({1.0});
  z.requires_grad_();
  CHECK(z.requires_grad());
  z.requires_grad_(false);
  CHECK_FALSE(z.requires_grad());
}

TEST_CASE("hooks observe and replace gradients", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0, 2.0}));
  SECTION("leaf: observe") {
    Tensor seen;
    x.register_hook([&seen](const Tensor& g) {
      seen = g.clone();
      return Tensor();
    });
    (x * 3.0).sum().backward();
    CHECK_ALLCLOSE(seen, vec64({3.0, 3.0}));
    CHECK_ALLCLOSE(x.grad(), vec64({3.0, 3.0}));
  }
  SECTION("leaf: replace, and the hook stays for later graphs") {
    x.register_hook([](const Tensor& g) { return g * 2.0; });
    (x * 3.0).sum().backward();
    CHECK_ALLCLOSE(x.grad(), vec64({6.0, 6.0}));
    (x * 1.0).sum().backward();
    CHECK_ALLCLOSE(x.grad(), vec64({8.0, 8.0}));
  }
  SECTION("leaf: registered after the graph was built") {
    Tensor y = (x * 3.0).sum();
    x.register_hook([](const Tensor& g) { return g * 2.0; });
    y.backward();
    CHECK_ALLCLOSE(x.grad(), vec64({6.0, 6.0}));
  }
  SECTION("non-leaf: observe and replace, upstream sees the replacement") {
    Tensor h = x * x;
    Tensor seen;
    h.register_hook([&seen](const Tensor& g) {
      seen = g.clone();
      return g * 10.0;
    });
    (h * 3.0).sum().backward();
    CHECK_ALLCLOSE(seen, vec64({3.0, 3.0}));
    CHECK_ALLCLOSE(x.grad(), vec64({60.0, 120.0}));  // 10 * 3 * 2x
  }
  SECTION("hooks run in the order registered") {
    std::vector<int> order;
    x.register_hook([&order](const Tensor&) {
      order.push_back(1);
      return Tensor();
    });
    x.register_hook([&order](const Tensor& g) {
      order.push_back(2);
      return g;
    });
    x.sum().backward();
    CHECK(order == std::vector<int>{1, 2});
  }
  SECTION("a tensor without grad refuses a hook") {
    CHECK_THROWS_AS(vec64({1.0}).register_hook([](const Tensor& g) { return g; }), Error);
  }
}

TEST_CASE("a hook that changes a gradient's shape or dtype is refused where it returns", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0, 2.0, 3.0}));
  SECTION("leaf hook, shape") {
    x.register_hook([](const Tensor& g) { return g.sum(); });
    Tensor y = (x * 2.0).sum();
    REQUIRE_THROWS_AS(y.backward(), ShapeError);
    REQUIRE_THROWS_WITH((x * 2.0).sum().backward(),
                        "register_hook: a hook on a leaf of shape [3] has changed the shape of the gradient: "
                        "expected [3], got []; a hook may return new values, not a new shape");
    CHECK_FALSE(x.grad().defined());  // nothing was accumulated
  }
  SECTION("non-leaf hook, dtype") {
    Tensor h = x * x;
    h.register_hook([](const Tensor& g) { return g.to(kFloat32); });
    Tensor y = (h * 3.0).sum();
    REQUIRE_THROWS_AS(y.backward(Tensor(), /*retain_graph=*/true), DtypeError);
    REQUIRE_THROWS_WITH(y.backward(), Contains("register_hook: a hook on output 0 of ") &&
                                          Contains("has changed the dtype of the gradient: expected float64, got float32"));
    CHECK_FALSE(x.grad().defined());
  }
  SECTION("a hook that keeps shape and dtype is still free to change values") {
    x.register_hook([](const Tensor& g) { return g * 0.5; });
    (x * 2.0).sum().backward();
    CHECK_ALLCLOSE(x.grad(), vec64({1.0, 1.0, 1.0}));
  }
}

TEST_CASE("set_grad checks shape, dtype and identity where the gradient is assigned", "[autograd][engine]") {
  Tensor w = leaf(tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, kFloat64));
  w.set_grad(ones({2, 3}, kFloat64));
  REQUIRE_THROWS_AS(w.set_grad(ones({3}, kFloat64)), ShapeError);
  REQUIRE_THROWS_WITH(w.set_grad(ones({3, 2}, kFloat64)),
                      "set_grad: assigned grad has a different shape: expected [2, 3] (the tensor's shape), got [3, 2]");
  REQUIRE_THROWS_AS(w.set_grad(ones({2, 3}, kFloat32)), DtypeError);
  REQUIRE_THROWS_WITH(w.set_grad(ones({2, 3}, kFloat32)),
                      "set_grad: assigned grad has a different dtype: expected float64 (the tensor's dtype), got float32");
  REQUIRE_THROWS_WITH(w.set_grad(w), "set_grad: a tensor cannot be its own gradient");
  // A refused gradient changes nothing.
  CHECK_ALLCLOSE(w.grad(), ones({2, 3}, kFloat64));
  w.set_grad(Tensor());
  CHECK_FALSE(w.grad().defined());
}

TEST_CASE("retain_grad keeps a non-leaf's gradient", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0, 2.0}));
  Tensor h = x * 2.0;
  Tensor k = x * 3.0;
  h.retain_grad();
  ((h * h).sum() + k.sum()).backward();
  CHECK_ALLCLOSE(h.grad(), vec64({4.0, 8.0}));  // 2h
  CHECK_FALSE(k.grad().defined());
  CHECK_ALLCLOSE(x.grad(), vec64({11.0, 19.0}));  // 2 * 2h + 3
  x.retain_grad();                                 // a no-op on a leaf
}

TEST_CASE("gradients accumulate across backward calls until cleared", "[autograd][engine]") {
  Tensor x = leaf(vec64({1.0, -1.0}));
  (x * 2.0).sum().backward();
  (x * 2.0).sum().backward();
  CHECK_ALLCLOSE(x.grad(), vec64({4.0, 4.0}));
  x.set_grad(Tensor());
  CHECK_FALSE(x.grad().defined());
  (x * 2.0).sum().backward();
  CHECK_ALLCLOSE(x.grad(), vec64({2.0, 2.0}));
  x.grad().zero_();
  (x * 5.0).sum().backward();
  CHECK_ALLCLOSE(x.grad(), vec64({5.0, 5.0}));
  CHECK_THROWS_AS(x.set_grad(vec64({1.0})), ShapeError);
}

TEST_CASE("leaf gradients are their own tensors, safe to update in place", "[autograd][engine]") {
  // Optimizers and clip_grad_norm_ write into .grad in place (grad.mul_(c), grad.zero_()), as in
  // PyTorch, whose AccumulateGrad never stores an expanded view or a tensor the caller still holds.
  Tensor x = leaf(vec64({1.0, 2.0, 3.0}));
  SECTION("after sum, whose backward expands") {
    x.sum().backward();
    REQUIRE(x.grad().defined());
    CHECK_NOTHROW(x.grad().mul_(0.5));
    CHECK_ALLCLOSE(x.grad(), vec64({0.5, 0.5, 0.5}));
    CHECK_NOTHROW(x.grad().add_(1.0));
    CHECK_ALLCLOSE(x.grad(), vec64({1.5, 1.5, 1.5}));
  }
  SECTION("after backward with a gradient the caller keeps") {
    Tensor seed = vec64({1.0, 1.0, 1.0});
    x.backward(seed);
    seed.mul_(5.0);
    CHECK_ALLCLOSE(x.grad(), vec64({1.0, 1.0, 1.0}));
  }
}
