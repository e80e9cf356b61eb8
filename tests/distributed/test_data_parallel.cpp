// DistributedDataParallel: W ranks on batch B each equal one process on batch W·B (an MLP and a
// tiny GPT, several AdamW steps); parameters identical across ranks; broadcast at construction;
// no_sync; unused parameters; buckets and their order; a rank-0 checkpoint loaded on every rank.
#include <catch2/catch.hpp>

#include <filesystem>

#include "dist_util.h"

using namespace tt_test;
namespace dist = tt::distributed;
using tt::nn::DistributedDataParallel;
using tt::nn::DistributedDataParallelOptions;

namespace {

// Rows [rank·B, (rank+1)·B) of a global batch.
tt::Tensor shard(const tt::Tensor& global, int64_t B) { return global.slice(0, rank() * B, (rank() + 1) * B); }

}  // namespace

TEST_CASE("DDP on an MLP: W ranks x batch B equal one process on batch W*B", "[distributed][ddp]") {
  const int64_t B = 4, steps = 6, W = world();
  tt::manual_seed(11);
  tt::Tensor X = tt::randn({steps, W * B, 4}), Y = tt::randn({steps, W * B, 2});

  tt::manual_seed(100);
  auto reference = std::make_shared<Mlp>();  // one process, whole batch
  tt::manual_seed(100 + rank());             // differently seeded: DDP must broadcast rank 0's weights
  auto model = std::make_shared<Mlp>();
  DistributedDataParallel<Mlp> ddp(model, DistributedDataParallelOptions().bucket_cap_mb(0.0002));
  REQUIRE(max_param_diff(*model, *reference) == 0.0);

  tt::optim::AdamW opt_ref(reference->parameters(), tt::optim::AdamWOptions(1e-2));
  tt::optim::AdamW opt(ddp.parameters(), tt::optim::AdamWOptions(1e-2));
  for (int64_t s = 0; s < steps; ++s) {
    opt_ref.zero_grad();
    tt::F::mse_loss(reference->forward(X[s]), Y[s]).backward();
    opt_ref.step();
    opt.zero_grad();
    tt::F::mse_loss(ddp.forward(shard(X[s], B)), shard(Y[s], B)).backward();
    INFO("step " << s);
    REQUIRE(max_grad_rel_diff(*model, *reference) < 1e-5);  // as in the GPT case below
    opt.step();
    REQUIRE(max_param_diff(*model, *reference) < 1e-6);
    REQUIRE(identical_on_every_rank(*model));
  }
}

TEST_CASE("DDP on a tiny GPT: W ranks x batch B equal one process on batch W*B", "[distributed][ddp]") {
  const int64_t B = 2, T = 8, V = 11, steps = 4, W = world();
  auto options = tt::nn::GPTOptions(V, T).n_layer(2).n_embd(16).n_head(2);
  tt::manual_seed(5);
  tt::Tensor ids = tt::randint(0, V, {steps, W * B, T}), targets = tt::randint(0, V, {steps, W * B, T});
  tt::manual_seed(200);
  auto reference = std::make_shared<tt::nn::GPT>(options);
  tt::manual_seed(200 + rank());
  auto model = std::make_shared<tt::nn::GPT>(options);
  DistributedDataParallel<tt::nn::GPT> ddp(model, DistributedDataParallelOptions().bucket_cap_mb(0.01));
  REQUIRE((ddp.reducer() == nullptr || ddp.reducer()->bucket_indices().size() > 1));
  tt::optim::AdamW opt_ref(reference->parameters(), tt::optim::AdamWOptions(1e-3));
  tt::optim::AdamW opt(ddp.parameters(), tt::optim::AdamWOptions(1e-3));
  auto loss_of = [&](const tt::Tensor& logits, const tt::Tensor& y) {
    return tt::F::cross_entropy(logits.reshape({-1, V}), y.reshape({-1}));
  };
  for (int64_t s = 0; s < steps; ++s) {
    opt_ref.zero_grad();
    loss_of(reference->forward(ids[s]), targets[s]).backward();
    opt_ref.step();
    opt.zero_grad();
    loss_of(ddp.forward(shard(ids[s], B)), shard(targets[s], B)).backward();
    INFO("step " << s);
    // The averaged gradients equal the whole batch's up to float32 summation order: a few ulp of
    // the model's largest gradient (W partial sums instead of one).
    REQUIRE(max_grad_rel_diff(*model, *reference) < 1e-5);
    opt.step();
    // Adam divides each gradient by its own running size, so a gradient element near 0 whose last
    // bits differ moves its parameter by up to ~lr * (its relative difference): the parameters are
    // held to 1% of one step (lr 1e-3). Measured up to 1.0e-6 at step 3 (ASan's -O1 build).
    REQUIRE(max_param_diff(*model, *reference) < 1e-5);
    REQUIRE(identical_on_every_rank(*model));
  }
}

TEST_CASE("no_sync over k micro-batches then one synced batch equals one process over all of them",
          "[distributed][ddp]") {
  const int64_t B = 3, k = 2, W = world();
  tt::manual_seed(21);
  tt::Tensor X = tt::randn({k + 1, W * B, 4}), Y = tt::randn({k + 1, W * B, 2});
  tt::manual_seed(300);
  auto reference = std::make_shared<Mlp>();
  auto model = std::make_shared<Mlp>();
  reference->load_state_dict(model->state_dict());
  DistributedDataParallel<Mlp> ddp(model);
  // One process: the mean over all (k+1)·W·B rows.
  tt::F::mse_loss(reference->forward(X.reshape({-1, 4})), Y.reshape({-1, 2})).backward();
  {
    auto guard = ddp.no_sync();
    for (int64_t j = 0; j < k; ++j) (tt::F::mse_loss(ddp(shard(X[j], B)), shard(Y[j], B)) / double(k + 1)).backward();
    if (world() > 1) {  // still local: the ranks' gradients differ
      tt::Tensor g = gather(model->fc1->weight.grad());
      REQUIRE((g.select(0, 0) - g.select(0, 1)).abs().max().item<double>() > 0);
    }
  }
  (tt::F::mse_loss(ddp(shard(X[k], B)), shard(Y[k], B)) / double(k + 1)).backward();
  std::vector<tt::Tensor> pr = reference->parameters(), pm = model->parameters();
  for (size_t i = 0; i < pr.size(); ++i) REQUIRE((pr[i].grad() - pm[i].grad()).abs().max().item<double>() < 1e-6);
}

TEST_CASE("buckets: reverse parameter order, closed at the cap, started in order during backward",
          "[distributed][ddp]") {
  auto model = std::make_shared<Mlp>(16);  // fc1.weight 64, fc1.bias 16, fc2.weight 32, fc2.bias 2 floats
  std::vector<tt::Tensor> params = model->parameters();
  REQUIRE(dist::assign_buckets(params, 1 << 20) == std::vector<std::vector<size_t>>{{3, 2, 1, 0}});
  REQUIRE(dist::assign_buckets(params, 4) == std::vector<std::vector<size_t>>{{3}, {2}, {1}, {0}});
  REQUIRE(dist::assign_buckets(params, 34 * 4) == std::vector<std::vector<size_t>>{{3, 2}, {1, 0}});
  REQUIRE_THROWS_WITH(dist::assign_buckets(params, 0), Catch::Contains("bucket size must be positive"));
  if (!dist::is_initialized()) return;
  DistributedDataParallel<Mlp> ddp(model, DistributedDataParallelOptions().bucket_cap_mb(34 * 4 / 1048576.0));
  REQUIRE(ddp.reducer()->bucket_indices() == std::vector<std::vector<size_t>>{{3, 2}, {1, 0}});
  tt::F::mse_loss(ddp(tt::randn({5, 4})), tt::zeros({5, 2})).backward();
  REQUIRE(ddp.reducer()->last_backward().buckets == 2);
  // fc2's bucket is complete before fc1's gradients exist, so it starts while backward runs.
  REQUIRE(ddp.reducer()->last_backward().buckets_started_during_backward >= 1);
}

TEST_CASE("parameters that get no gradient: an error naming them, or handled with find_unused_parameters",
          "[distributed][ddp]") {
  tt::manual_seed(1);
  auto m1 = std::make_shared<TwoHeads>();
  DistributedDataParallel<TwoHeads> strict(m1, on_some_group());
  REQUIRE_THROWS_WITH(strict(tt::randn({3, 4}), false).sum().backward(),
                      Catch::Contains("2 parameter(s) received no gradient") && Catch::Contains("'b.weight'") &&
                          Catch::Contains("find_unused_parameters(true)"));
  // The reducer is usable again after the error.
  strict(tt::randn({3, 4}), true).sum().backward();
  REQUIRE(m1->b->weight.grad().defined());

  auto m2 = std::make_shared<TwoHeads>();
  DistributedDataParallel<TwoHeads> relaxed(m2, on_some_group().find_unused_parameters(true));
  relaxed(tt::randn({3, 4}), false).sum().backward();  // b unused on every rank: its .grad stays undefined
  REQUIRE(m2->a->weight.grad().defined());
  REQUIRE_FALSE(m2->b->weight.grad().defined());
  m2->a->weight.set_grad(tt::Tensor());
  m2->a->bias.set_grad(tt::Tensor());
  // b used on the last rank only: every rank gets the same average (its sum / W).
  tt::Tensor x = tt::ones({1, 4});
  relaxed(x, rank() == world() - 1).sum().backward();
  REQUIRE(m2->b->bias.grad().defined());
  REQUIRE(dist_to(m2->b->bias.grad(), 1.0 / world()) < 1e-7);
  REQUIRE(identical_on_every_rank(*m2));
}

TEST_CASE("a parameter unused on one rank only: without find_unused_parameters every rank throws, and the "
          "ranks stay in step", "[distributed][ddp]") {
  tt::manual_seed(2);
  auto model = std::make_shared<TwoHeads>();
  DistributedDataParallel<TwoHeads> ddp(model, on_some_group());
  REQUIRE_THROWS_WITH(ddp(tt::randn({3, 4}), rank() != 0).sum().backward(),
                      Catch::Contains("received no gradient in this backward on at least one rank") &&
                          Catch::Contains("'b.weight'"));
  // Every rank started the same collectives, so the next step pairs up and averages.
  for (auto& p : model->parameters()) p.set_grad(tt::Tensor());
  tt::Tensor x = tt::full({1, 4}, double(rank() + 1));
  ddp(x, true).sum().backward();
  const double mean_rank = (world() + 1) / 2.0;  // the mean of rank + 1 over the ranks
  REQUIRE(dist_to(model->a->weight.grad(), mean_rank) < 1e-6);
  REQUIRE(identical_on_every_rank(*model));
}

TEST_CASE("no_sync with find_unused_parameters: what a parameter accumulated under no_sync is averaged even if "
          "the synced backward leaves it out", "[distributed][ddp]") {
  const int64_t B = 2, W = world();
  tt::manual_seed(31);
  tt::Tensor X = tt::randn({3, W * B, 4});
  tt::manual_seed(32);
  auto reference = std::make_shared<TwoHeads>();
  auto model = std::make_shared<TwoHeads>();
  model->load_state_dict(reference->state_dict());
  // One process: micro-batches 0 and 1 use both heads, micro-batch 2 only a.
  for (int64_t j = 0; j < 3; ++j) (reference->forward(X[j], j < 2).pow(2).mean() / 3.0).backward();
  DistributedDataParallel<TwoHeads> ddp(model, on_some_group().find_unused_parameters(true));
  {
    auto guard = ddp.no_sync();
    for (int64_t j = 0; j < 2; ++j) (ddp(shard(X[j], B), true).pow(2).mean() / 3.0).backward();
  }
  (ddp(shard(X[2], B), false).pow(2).mean() / 3.0).backward();
  std::vector<tt::Tensor> pr = reference->parameters(), pm = model->parameters();
  for (size_t i = 0; i < pr.size(); ++i) {
    INFO("parameter " << i);
    REQUIRE(pm[i].grad().defined());
    REQUIRE((pr[i].grad() - pm[i].grad()).abs().max().item<double>() < 1e-6);
  }
}

TEST_CASE("an exception in the middle of backward: the next forward says so once, then training goes on",
          "[distributed][ddp]") {
  tt::manual_seed(3);
  auto model = std::make_shared<Mlp>();
  DistributedDataParallel<Mlp> ddp(model, on_some_group().bucket_cap_mb(1e-6));  // a bucket per tensor
  auto fail = std::make_shared<bool>(true);
  // Runs on fc1.weight's gradient: after fc2's gradients (and their buckets), before fc1.weight's.
  model->fc1->weight.register_hook([fail](const tt::Tensor& g) {
    TT_CHECK(!*fail, "a hook failing on purpose");
    return g;
  });
  REQUIRE_THROWS_WITH(ddp(tt::randn({4, 4})).sum().backward(), Catch::Contains("a hook failing on purpose"));
  REQUIRE_THROWS_WITH(ddp(tt::randn({4, 4})), Catch::Contains("the previous backward did not finish"));
  *fail = false;
  for (auto& p : model->parameters()) p.set_grad(tt::Tensor());
  ddp(tt::full({2, 4}, double(rank()))).sum().backward();
  for (const tt::Tensor& p : model->parameters()) {
    tt::Tensor all = gather(p.grad());
    for (int r = 1; r < world(); ++r) REQUIRE(dist_to(all.select(0, r) - all.select(0, 0), 0.0) == 0);
  }
}

TEST_CASE("a parameter shape mismatch throws on every rank, naming the parameter and both shapes",
          "[distributed][ddp]") {
  if (world() == 1) return;
  auto model = std::make_shared<Mlp>(rank() == 0 ? 8 : 9);
  REQUIRE_THROWS_WITH(DistributedDataParallel<Mlp>(model),
                      Catch::Contains("parameter 'fc1.weight' has shape [8, 4] float32 on rank 0 but "
                                      "[9, 4] float32 on rank 1"));
  auto extra = std::make_shared<tt::nn::Sequential>();
  for (int k = 0; k <= rank(); ++k) extra->push_back(std::make_shared<tt::nn::Linear>(2, 2));
  REQUIRE_THROWS_WITH(DistributedDataParallel<tt::nn::Sequential>(extra),
                      Catch::Contains("different numbers of trainable parameters (rank 0: 2, rank 1: 4"));
}

TEST_CASE("a checkpoint saved by rank 0 loads bit-identically on every rank, leaving no temporary file",
          "[distributed][ddp]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tt_ddp_checkpoint_test";
  if (rank() == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  dist::barrier();
  tt::manual_seed(400 + rank());
  auto model = std::make_shared<Mlp>();
  DistributedDataParallel<Mlp> ddp(model);
  tt::F::mse_loss(ddp(tt::randn({4, 4})), tt::zeros({4, 2})).backward();
  const std::string path = (dir / "mlp.safetensors").string();
  if (rank() == 0) tt::save(ddp.module(), path);  // atomic: a temporary file, then rename
  dist::barrier();
  auto fresh = std::make_shared<Mlp>(8);
  tt::load(*fresh, path);  // names without a "module." prefix
  REQUIRE(max_param_diff(*fresh, *model) == 0.0);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    REQUIRE(e.path().filename() == "mlp.safetensors");
  }
  REQUIRE(files == 1);
  dist::barrier();
  if (rank() == 0) std::filesystem::remove_all(dir);
}
