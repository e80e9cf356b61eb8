// Whole models on several threads (Note [threads] in autograd/node.cpp): generation from one
// shared GPT, and separate models trained side by side. Not here: the autograd accumulation
// path itself (test_shared_leaves.cpp).
#include <atomic>
#include <memory>
#include <vector>

#include "threads.h"

using namespace tt;
using namespace tt::testing;

namespace {
constexpr int kThreads = 4;

// Every module of the tree still in training mode (read from this thread, where no
// EvalModeGuard is active, so it reads the flags themselves).
bool all_training(nn::Module& root) {
  bool all = true;
  root.apply([&all](nn::Module& m) { all = all && m.is_training(); });
  return all;
}

std::vector<int64_t> tokens(const Tensor& t) { return t.to_vector<int64_t>(); }

std::shared_ptr<nn::Sequential> small_mlp() {
  return std::make_shared<nn::Sequential>(nn::Linear(6, 12), nn::Tanh(), nn::Linear(12, 3));
}
}  // namespace

TEST_CASE("generation from one shared GPT on several threads matches serial generation", "[concurrency]") {
  manual_seed(7);
  // Dropout makes a forward in training mode differ from one in eval mode, so a generation that
  // ran with dropout on (another thread having restored the flag) would give other tokens.
  nn::GPT gpt(nn::GPTOptions(11, 8).n_layer(2).n_embd(16).n_head(2).dropout(0.3));
  REQUIRE(gpt.is_training());
  auto prompt = [](int t) { return tensor({{t + 1, 2, 3}}); };  // int64 [1, 3]
  auto greedy = [&](int t) { return tokens(gpt.generate(prompt(t), 10, nn::GenerateOptions().greedy(true))); };
  auto sampled = [&](int t) {
    Generator g(100 + uint64_t(t));  // each thread draws from its own generator
    return tokens(gpt.generate(prompt(t), 10, nn::GenerateOptions().top_k(4).generator(&g)));
  };
  std::vector<std::vector<int64_t>> want_greedy(kThreads), want_sampled(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    want_greedy[size_t(t)] = greedy(t);
    want_sampled[size_t(t)] = sampled(t);
  }
  REQUIRE(all_training(gpt));

  constexpr int kRepeats = 3;
  std::vector<int> mismatches(kThreads, 0);
  std::atomic<int> running{kThreads};
  std::atomic<bool> saw_eval{false};
  run_threads(kThreads + 1, [&](int t) {
    if (t == kThreads) {  // a watcher: the flags must never change while the others generate
      while (running.load() > 0)
        if (!all_training(gpt)) saw_eval = true;
      return;
    }
    for (int r = 0; r < kRepeats; ++r) {
      if (greedy(t) != want_greedy[size_t(t)]) ++mismatches[size_t(t)];
      if (sampled(t) != want_sampled[size_t(t)]) ++mismatches[size_t(t)];
    }
    --running;
  });
  CHECK(mismatches == std::vector<int>(kThreads, 0));
  CHECK_FALSE(saw_eval);
  CHECK(all_training(gpt));
}

TEST_CASE("separate models trained on separate threads equal serial training bit for bit", "[concurrency]") {
  constexpr int kSteps = 20;
  // Two identical sets of models (same seeds), and each model's own data, all made up front.
  auto make_models = [] {
    std::vector<std::shared_ptr<nn::Sequential>> models;
    for (int t = 0; t < kThreads; ++t) {
      manual_seed(50 + uint64_t(t));
      models.push_back(small_mlp());
    }
    return models;
  };
  auto serial = make_models(), parallel = make_models();
  std::vector<Tensor> xs, ys;
  for (int t = 0; t < kThreads; ++t) {
    Generator g(900 + uint64_t(t));
    xs.push_back(randn({16, 6}, {}, &g));
    ys.push_back(randn({16, 3}, {}, &g));
  }
  auto train = [&](nn::Sequential& model, int t) {
    optim::SGD opt(model.parameters(), optim::SGDOptions(0.05).momentum(0.9));
    for (int s = 0; s < kSteps; ++s) {
      opt.zero_grad();
      nn::functional::mse_loss(model.forward(xs[size_t(t)]), ys[size_t(t)]).backward();
      opt.step();
    }
  };
  // The serial runs also happen on a thread of their own, one after another, so that both runs
  // see the same per-thread settings (OpenMP's team size is per thread).
  for (int t = 0; t < kThreads; ++t) run_threads(1, [&](int) { train(*serial[size_t(t)], t); });
  run_threads(kThreads, [&](int t) { train(*parallel[size_t(t)], t); });

  for (int t = 0; t < kThreads; ++t) {
    std::vector<Tensor> a = serial[size_t(t)]->parameters(), b = parallel[size_t(t)]->parameters();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(bitwise_equal(a[i], b[i]));
  }
}
