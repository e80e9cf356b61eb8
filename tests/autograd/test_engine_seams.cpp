// The engine's seams for distributed training, useful beyond it: post-accumulate-grad hooks on
// leaves, AccumulateGrad running as soon as it is ready, and callbacks queued to run when backward
// ends (Note [post-accumulate hooks], Note [engine order]).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

TEST_CASE("a post-accumulate-grad hook sees the summed .grad, after the addition", "[autograd][hooks]") {
  tt::Tensor w = tt::tensor({1.0, 2.0}).requires_grad_();
  std::vector<std::vector<float>> seen;
  tt::HookHandle h = w.register_post_accumulate_grad_hook([&](const tt::Tensor& leaf) {
    REQUIRE(leaf.is_same(w));
    seen.push_back(leaf.grad().to_vector<float>());
  });
  ((w * 3.0).sum() + (w * w).sum()).backward();  // two uses: one call, with 3 + 2w
  REQUIRE(seen == std::vector<std::vector<float>>{{5.f, 7.f}});
  (w * 3.0).sum().backward();  // a new graph: the hook is kept on the tensor, and .grad accumulates
  REQUIRE(seen.size() == 2);
  REQUIRE(seen[1] == std::vector<float>{8.f, 10.f});
  h.remove();
  h.remove();  // twice is fine
  (w * 3.0).sum().backward();
  REQUIRE(seen.size() == 2);
}

TEST_CASE("post-accumulate-grad hooks: only on leaves that require grad; not run by autograd::grad",
          "[autograd][hooks]") {
  tt::Tensor w = tt::tensor({1.0}).requires_grad_();
  REQUIRE_THROWS_WITH(tt::tensor({1.0}).register_post_accumulate_grad_hook([](const tt::Tensor&) {}),
                      Catch::Contains("does not require grad"));
  REQUIRE_THROWS_WITH((w * 2.0).register_post_accumulate_grad_hook([](const tt::Tensor&) {}),
                      Catch::Contains("is not a leaf"));
  int calls = 0;
  w.register_post_accumulate_grad_hook([&](const tt::Tensor&) { ++calls; });
  tt::autograd::grad({(w * 2.0).sum()}, {w});  // returns the gradient, writes no .grad
  REQUIRE(calls == 0);
  REQUIRE_FALSE(w.grad().defined());
  tt::HookHandle orphan;
  {
    tt::Tensor tmp = tt::ones({1}).requires_grad_();
    orphan = tmp.register_post_accumulate_grad_hook([](const tt::Tensor&) {});
  }
  orphan.remove();  // after the tensor is gone: nothing to do
}

TEST_CASE("AccumulateGrad runs as soon as its gradient is complete, not in creation order",
          "[autograd][engine]") {
  // a's AccumulateGrad is made first (by `early`) and kept alive, so by creation order alone it
  // would run after every node of the long chain below.
  tt::Tensor a = tt::tensor({2.0}).requires_grad_();
  tt::Tensor x = tt::tensor({3.0}).requires_grad_();
  tt::Tensor early = a * 1.0;
  tt::Tensor c = x;
  for (int i = 0; i < 50; ++i) c = c * 1.01;
  std::vector<std::string> order;
  a.register_post_accumulate_grad_hook([&](const tt::Tensor&) { order.push_back("a"); });
  x.register_post_accumulate_grad_hook([&](const tt::Tensor&) { order.push_back("x"); });
  (c * a).sum().backward();
  REQUIRE(order == std::vector<std::string>{"a", "x"});
  REQUIRE(early.requires_grad());
}

TEST_CASE("queue_callback runs after every gradient is written, in order, once per backward",
          "[autograd][engine]") {
  tt::Tensor a = tt::tensor({1.0}).requires_grad_(), b = tt::tensor({1.0}).requires_grad_();
  std::vector<std::string> log;
  a.register_post_accumulate_grad_hook([&](const tt::Tensor&) {
    log.push_back("hook");
    tt::autograd::queue_callback([&] {
      REQUIRE(a.grad().defined());
      REQUIRE(b.grad().defined());  // b's AccumulateGrad ran too before any callback
      log.push_back("first");
      tt::autograd::queue_callback([&] { log.push_back("queued by a callback"); });
    });
    tt::autograd::queue_callback([&] { log.push_back("second"); });
  });
  (a * 2.0 + b * 3.0).sum().backward();
  REQUIRE(log == std::vector<std::string>{"hook", "first", "second", "queued by a callback"});
  log.clear();
  (a * 2.0).sum().backward();  // the queue belonged to the last backward: only this one's run
  REQUIRE(log == std::vector<std::string>{"hook", "first", "second", "queued by a callback"});
}

TEST_CASE("queue_callback: outside backward it throws; a callback's exception ends backward with it",
          "[autograd][engine]") {
  REQUIRE_THROWS_WITH(tt::autograd::queue_callback([] {}), Catch::Contains("no backward pass is running"));
  tt::Tensor a = tt::tensor({1.0}).requires_grad_();
  a.register_post_accumulate_grad_hook([](const tt::Tensor&) {
    tt::autograd::queue_callback([] { TT_CHECK(false, "callback failed on purpose"); });
  });
  REQUIRE_THROWS_WITH((a * 2.0).sum().backward(), Catch::Contains("callback failed on purpose"));
  REQUIRE_THROWS_WITH(tt::autograd::queue_callback([] {}), Catch::Contains("no backward pass is running"));
}
