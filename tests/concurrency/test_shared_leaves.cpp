// Several threads using one leaf at once (Note [threads] in autograd/node.cpp): concurrent
// backward into one leaf, forward and backward through shared parameters, version counters of
// one storage bumped from several threads, grad mode per thread. Not here: whole models and
// generation (test_shared_models.cpp).
#include <algorithm>
#include <atomic>
#include <vector>

#include <omp.h>

#include "threads.h"

using namespace tt;
using namespace tt::testing;

namespace {
constexpr int kThreads = 4;
}  // namespace

TEST_CASE("concurrent backward into one leaf loses no update", "[concurrency]") {
  // Per round, 1000 backward passes, each adding exactly 1 to every element of w.grad. Each pass
  // builds a fresh graph, so every thread also looks up (or creates) w's grad accumulator over
  // and over while the others accumulate through it. w is large enough that two unguarded
  // additions into .grad overlap often (a lost update shows as an element short of 1000), and
  // each thread runs its kernels on itself alone (OpenMP's team size is a per-thread setting),
  // which is what makes them overlap: without the lock, rounds lost from 2 to 750 of the 1000
  // updates, in about half of them.
  constexpr int kRounds = 4, kPerThread = 250;
  constexpr int64_t kSize = 16384;
  for (int round = 0; round < kRounds; ++round) {
    Tensor w = zeros({kSize}, kFloat64).requires_grad_();
    run_threads(kThreads, [&](int) {
      omp_set_num_threads(1);
      for (int i = 0; i < kPerThread; ++i) (w * 1.0).sum().backward();
    });
    REQUIRE(w.grad().defined());
    std::vector<double> got = w.grad().to_vector<double>();
    INFO("round " << round);
    REQUIRE(*std::min_element(got.begin(), got.end()) == double(kThreads * kPerThread));
    REQUIRE(*std::max_element(got.begin(), got.end()) == double(kThreads * kPerThread));
  }
}

TEST_CASE("concurrent backward into a fresh leaf creates one grad accumulator", "[concurrency]") {
  // Every round starts from a leaf nobody has used: all threads race to create its accumulator.
  constexpr int kRounds = 100;
  std::vector<Tensor> leaves;
  for (int r = 0; r < kRounds; ++r) leaves.push_back(zeros({2}, kFloat64).requires_grad_());
  run_threads(kThreads, [&](int) {
    for (const Tensor& w : leaves) w.sum().backward();
  });
  for (const Tensor& w : leaves) {
    REQUIRE(w.grad().defined());
    CHECK(w.grad().to_vector<double>() == std::vector<double>(2, double(kThreads)));
  }
}

TEST_CASE("shared parameters: forward and backward from several threads add up", "[concurrency]") {
  // Every thread runs the same input through one shared MLP, so each backward adds the same
  // gradient g to every parameter. Adding equal terms gives the same sum in any order, so after
  // n passes the gradients equal those of n passes run one after another, bit for bit.
  constexpr int kPerThread = 8;
  manual_seed(1);
  nn::Sequential mlp(nn::Linear(8, 16), nn::Tanh(), nn::Linear(16, 4));
  mlp.to(kFloat64);
  Tensor x = randn({5, 8}, kFloat64), target = randn({5, 4}, kFloat64);
  auto pass = [&] { nn::functional::mse_loss(mlp.forward(x), target).backward(); };

  // The serial passes run on one thread of their own, as the concurrent ones do (OpenMP's team
  // size is a per-thread setting).
  run_threads(1, [&](int) {
    for (int i = 0; i < kThreads * kPerThread; ++i) pass();
  });
  std::vector<Tensor> serial;
  for (const Tensor& p : mlp.parameters()) serial.push_back(p.grad().clone());
  mlp.zero_grad();

  run_threads(kThreads, [&](int) {
    for (int i = 0; i < kPerThread; ++i) pass();
  });
  std::vector<Tensor> params = mlp.parameters();
  REQUIRE(params.size() == serial.size());
  for (size_t i = 0; i < params.size(); ++i) {
    REQUIRE(params[i].grad().defined());
    CHECK(bitwise_equal(params[i].grad(), serial[i]));
  }
}

TEST_CASE("in-place writes to disjoint views of one storage count every version bump", "[concurrency]") {
  constexpr int kPerThread = 500;
  Tensor x = zeros({kThreads, 4}, kFloat64);
  const uint64_t before = x.version();
  run_threads(kThreads, [&](int t) {
    Tensor row = x.select(0, t);  // each thread writes only its own row
    for (int i = 0; i < kPerThread; ++i) row.add_(1.0);
  });
  CHECK(x.version() == before + uint64_t(kThreads * kPerThread));
  CHECK(x.to_vector<double>() == std::vector<double>(size_t(kThreads * 4), double(kPerThread)));
}

TEST_CASE("grad mode is per thread", "[concurrency]") {
  Tensor w = ones({2}, kFloat64).requires_grad_();
  std::atomic<bool> off_is_set{false}, other_done{false};
  bool recorded_elsewhere = false, recorded_here = true;
  run_threads(2, [&](int t) {
    if (t == 0) {
      NoGradGuard no_grad;
      off_is_set = true;
      while (!other_done) std::this_thread::yield();  // stay in no-grad while thread 1 records
      recorded_here = (w * 2.0).requires_grad();
    } else {
      while (!off_is_set) std::this_thread::yield();
      recorded_elsewhere = (w * 2.0).requires_grad();
      other_done = true;
    }
  });
  CHECK(recorded_elsewhere);
  CHECK_FALSE(recorded_here);
  CHECK(GradMode::is_enabled());
}
