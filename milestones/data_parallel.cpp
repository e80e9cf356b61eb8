// Milestone 2017, synchronous data parallelism (Goyal et al., "Accurate, Large Minibatch SGD:
// Training ImageNet in 1 Hour", and every all-reduce trainer since): W ranks, each on its share of
// every global batch with the gradients averaged across ranks, train as one process on the whole
// batch. Under mpirun (`tools/tt milestone run data-parallel` starts 2 ranks) every rank builds the
// same GPT (same seed) and trains it on digit reversal (tt::data::SequenceTask) through
// nn::DistributedDataParallel, on its B rows of each global batch of W x B rows; every rank also
// trains a replica alone, without communicating, on all W x B rows, with the same optimizer
// (AdamW, warmup + cosine, gradients clipped to norm 1). After every step the two are compared:
// the verdict's number is the largest |DDP parameter - replica parameter| over all parameters,
// steps and ranks; it passes at <= 1e-6. The ranks must also start equal and end bit-identical.
// Rank 0 alone prints and saves the figures (data_parallel_loss.png: both loss curves;
// data_parallel_diff.png: the difference after each step). Started without mpirun it runs as a
// world of one (the DDP model on the whole batch: trivially equal to the replica) and says so.
//
// Note [why float64]: the parameters are float64 by default. DDP adds the shards' gradients in
// another order than one process does, which in float32 changes their last bits (relative 1e-7).
// That is all DDP changes, and float64 shows it: the two runs agree to about 1e-12 after 200 steps.
// In float32 (--dtype float32) the same last bits grow past 1e-6: Adam divides each gradient
// element by its own running size, so an element near AdamW's eps (1e-8) whose last bits differ
// moves its parameter by up to lr * (its relative difference), and training amplifies what it is
// given. Worst of all are the key projections' biases: softmax ignores what they add to a whole
// row of scores, so their gradient is 0 in exact arithmetic and both runs compute rounding noise
// (about 1e-11) there, which Adam scales up to steps of about 1e-6 each. Measured in float32 on 2
// ranks, 200 steps, seeds 0 to 2: 4.7e-4 to 5.3e-4, nearly all of it in those biases (the other
// parameters about 5e-7); a GPT without biases 0.5e-6 to 2.6e-6; SGD with momentum (lr 0.1)
// instead of AdamW 0.8e-6 to 1.9e-6. In float64 the same biases are the largest difference too.
//
//   milestone_data_parallel [--steps N] [--batch-size B] [--lr LR] [--dtype float64|float32]
//                           [--layers N] [--embd E] [--heads H] [--threshold X] [--out DIR] [--seed S]
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <tinytorch/viz/plot.h>

#include "milestone.h"

namespace {

namespace dist = tt::distributed;

struct Args {
  int64_t steps = 200;
  int64_t batch_size = 16;  // rows per rank and step
  int64_t length = 8;       // digits per row
  double lr = 3e-3;
  std::string dtype = "float64";  // Note [why float64]
  examples::GptSize model{/*layers=*/2, /*embd=*/64, /*heads=*/4};
  milestones::Common common{"runs/milestones/data-parallel"};
};

std::shared_ptr<tt::nn::GPT> make_model(const Args& args, const tt::data::SequenceTask& task) {
  tt::manual_seed(args.common.seed);  // the same weights on every rank and for the replica
  auto gpt = std::make_shared<tt::nn::GPT>(args.model.options(task.vocab_size(), task.sequence_length()));
  gpt->to(args.dtype == "float64" ? tt::kFloat64 : tt::kFloat32);
  return gpt;
}

// Rows [begin, end) of a batch.
tt::data::SequenceBatch rows(const tt::data::SequenceBatch& b, int64_t begin, int64_t end) {
  return {b.input.slice(0, begin, end), b.target.slice(0, begin, end), b.prompt.slice(0, begin, end),
          b.answer.slice(0, begin, end)};
}

// The mean next-token cross-entropy over a batch's answer tokens (the prompt's targets are -100),
// from the model's logits [rows, 2L, V].
tt::Tensor loss_of(const tt::Tensor& logits, const tt::data::SequenceBatch& batch) {
  return tt::F::cross_entropy(logits.reshape({-1, logits.size(-1)}), batch.target.reshape({-1}));
}

// max |a_i - b_i| over two lists of parameters.
double max_abs_diff(const std::vector<tt::Tensor>& a, const std::vector<tt::Tensor>& b) {
  TT_CHECK(a.size() == b.size(), "max_abs_diff: ", a.size(), " parameters against ", b.size());
  tt::NoGradGuard no_grad;
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

// A number from every rank reduced with `op` (itself in a world of one).
double over_ranks(double x, dist::ReduceOp op) {
  if (dist::get_world_size() == 1) return x;
  const tt::Tensor t = tt::tensor({x}, tt::kFloat64);
  dist::allreduce(t, op);
  return t.item<double>();
}

// The largest |p - p on rank 0| over the parameters and ranks: 0 when the ranks are bit-identical.
double spread_across_ranks(const std::vector<tt::Tensor>& params) {
  if (dist::get_world_size() == 1) return 0.0;
  tt::NoGradGuard no_grad;
  double d = 0;
  for (const tt::Tensor& p : params) {
    const tt::Tensor root = p.detach().clone();
    dist::broadcast(root, 0);
    d = std::max(d, (p - root).abs().max().item<double>());
  }
  return over_ranks(d, dist::ReduceOp::Max);
}

}  // namespace

int main(int argc, char** argv) {
  tt::relaunch_with_runtime_env(argv);  // OpenBLAS's kernels; each rank its share of the cores
  Args args;
  // Holds --threshold while the flags are read; the verdict below names the steps and ranks.
  milestones::Verdict flags("max |DDP parameter - one-process parameter| over all steps", 1e-6, milestones::kAtMost,
                            milestones::kPlain);
  examples::Cli cli("milestone_data_parallel",
                    "2017, synchronous data parallelism: W ranks (mpirun -np W) train a GPT through\n"
                    "DistributedDataParallel, each on its share of every global batch, and match one process\n"
                    "trained on the whole batch (every rank also trains that replica) to 1e-6 after every\n"
                    "step. Without mpirun: a world of one.\n");
  cli.option("--steps", args.steps, "N", "training steps");
  cli.option("--batch-size", args.batch_size, "B", "rows per rank and step (the global batch is W x B)");
  cli.option("--lr", args.lr, "LR", "AdamW's peak learning rate");
  args.model.add_options(cli);
  cli.choice("--dtype", args.dtype, {"float64", "float32"},
             "the parameters' dtype (float32: about 5e-4, its rounding amplified by AdamW; see the source)");
  flags.add_option(cli);
  args.common.add_options(cli);
  cli.parse(argc, argv);
  if (args.steps < 1 || args.batch_size < 1 || !args.model.positive() || !(args.lr > 0))
    cli.fail("--steps, --batch-size, the model sizes and --lr must be positive");
  args.model.check(cli);
  return examples::run_main("milestone_data_parallel", [&] {
    if (dist::launched_by_mpirun()) dist::init_process_group(dist::Backend::MPI);
    const int rank = dist::get_rank(), world = dist::get_world_size();
    const bool prints = rank == 0;
    const int64_t B = args.batch_size, steps = args.steps;
    const std::string ranks_label = world == 1 ? "as a world of one" : examples::format("on %d ranks", world);
    milestones::Verdict verdict(examples::format("max |DDP parameter - one-process parameter| over %lld steps %s",
                                                 (long long)steps, ranks_label.c_str()),
                                flags.threshold(), milestones::kAtMost, milestones::kPlain);

    tt::data::SequenceTask task(tt::data::SequenceTaskKind::kReverse, args.length, args.common.seed);
    const int64_t T = task.sequence_length();
    if (prints) {
      if (world == 1)
        std::printf("a world of one (not started by mpirun): the DDP model trains on the whole batch, so it\n"
                    "matches the replica trivially; tools/tt milestone run data-parallel starts 2 ranks\n");
      else
        std::printf("data parallel: %d ranks (MPI) x %lld rows = a global batch of %lld rows\n", world, (long long)B,
                    (long long)(world * B));
      std::printf("task: reverse %lld digits; model: %s, %lld parameters; %lld steps of AdamW (lr %g), "
                  "on %d thread(s) per rank\n",
                  (long long)args.length, args.model.describe(T).c_str(),
                  (long long)examples::count_parameters(*make_model(args, task)), (long long)steps, args.lr,
                  tt::get_num_threads());
    }

    // The data-parallel model, and this rank's replica of one process on the whole batch.
    std::shared_ptr<tt::nn::GPT> gpt = make_model(args, task);
    tt::nn::DistributedDataParallel<tt::nn::GPT> ddp(gpt);  // broadcasts rank 0's weights
    std::shared_ptr<tt::nn::GPT> replica = make_model(args, task);
    const auto options = tt::optim::AdamWOptions(args.lr).weight_decay(1e-2);
    tt::optim::AdamW opt(ddp.parameters(), options), replica_opt(replica->parameters(), options);
    const int64_t warmup = std::max<int64_t>(1, steps / 20);
    auto schedule = examples::warmup_cosine(opt, steps, warmup, args.lr / 20);
    auto replica_schedule = examples::warmup_cosine(replica_opt, steps, warmup, args.lr / 20);
    const double start_diff = over_ranks(max_abs_diff(ddp.parameters(), replica->parameters()), dist::ReduceOp::Max);

    std::vector<double> xs, ddp_loss, single_loss, diffs;
    double worst = start_diff;
    int64_t worst_step = 0;
    {
      std::unique_ptr<examples::ProgressBar> bar;
      if (prints) bar = std::make_unique<examples::ProgressBar>("train", steps, "tokens");
      ddp.train();
      replica->train();
      for (int64_t step = 1; step <= steps; ++step) {
        // The same global batch [W*B, 2L] on every rank (same seed); this rank trains on its B rows.
        const tt::data::SequenceBatch global = task.sample(world * B);
        const tt::data::SequenceBatch mine = rows(global, rank * B, (rank + 1) * B);
        const tt::Tensor shard_loss = loss_of(ddp(mine.input), mine);
        examples::compute_gradients(opt, shard_loss, /*max_norm=*/1.0);  // .grad: the average over the ranks
        opt.step();
        schedule->step();

        const tt::Tensor whole_loss = loss_of(replica->forward(global.input), global);  // one process, the whole batch
        examples::compute_gradients(replica_opt, whole_loss, /*max_norm=*/1.0);
        replica_opt.step();
        replica_schedule->step();

        const double d = over_ranks(max_abs_diff(ddp.parameters(), replica->parameters()), dist::ReduceOp::Max);
        const double mean_loss = over_ranks(shard_loss.item<double>(), dist::ReduceOp::Sum) / world;
        if (d > worst || std::isnan(d)) worst = d, worst_step = step;
        xs.push_back(double(step));
        ddp_loss.push_back(mean_loss);
        single_loss.push_back(whole_loss.item<double>());
        diffs.push_back(d);
        if (bar) bar->step(world * B * T, {{"loss", mean_loss}, {"one-process loss", single_loss.back()},
                                           {"max diff", worst}});
      }
      if (bar) bar->finish();
    }
    const double spread = spread_across_ranks(ddp.parameters());
    // What the training reached: held-out rows exactly right (one batched forward, teacher forcing).
    const tt::data::SequenceBatch test = task.held_out(500);
    auto accuracy = [&](tt::nn::GPT& model) {
      examples::EvalScope eval(model);
      return tt::data::sequence_accuracy(model(test.input), test.target).sequence;
    };
    const double ddp_acc = accuracy(*gpt), single_acc = accuracy(*replica);

    if (prints) {
      std::printf("\n%6s %14s %18s %22s\n", "step", "loss (DDP)", "loss (one process)", "max |DDP - one proc|");
      for (size_t i = 0; i < xs.size(); ++i) {
        if (i + 1 != xs.size() && (i + 1) % std::max<size_t>(1, xs.size() / 10) != 0 && i != 0) continue;
        std::printf("%6.0f %14.6f %18.6f %22.3g\n", xs[i], ddp_loss[i], single_loss[i], diffs[i]);
      }
      if (worst_step == 0)
        std::printf("\nbefore training and after every step: max |DDP - one process| = %g\n", worst);
      else
        std::printf("\nbefore training: max |DDP - one process| = %g; the worst step: %lld (%.3g)\n", start_diff,
                    (long long)worst_step, worst);
      if (world > 1) std::printf("the ranks at the end: max |p - p on rank 0| = %g (0: bit-identical)\n", spread);
      std::printf("held-out rows exactly right (teacher-forced): %.1f%% (DDP), %.1f%% (one process)\n", 100 * ddp_acc,
                  100 * single_acc);

      tt::viz::LinePlotOptions opt_loss;
      opt_loss.title = examples::format("2017 data parallelism: %d rank%s x %lld rows vs 1 process x %lld rows",
                                        world, world == 1 ? "" : "s", (long long)B, (long long)(world * B));
      opt_loss.x_label = "step";
      opt_loss.y_label = "training loss (answer tokens)";
      opt_loss.log_y = true;
      const std::string loss_png = args.common.path("data_parallel_loss.png");
      tt::viz::save_line_plot(loss_png,
                              {{"one process, whole batch", xs, single_loss},
                               {examples::format("DDP, %d rank%s (mean of ranks)", world, world == 1 ? "" : "s"), xs,
                                ddp_loss, true}},
                              opt_loss);

      constexpr double kFloor = 1e-18;  // a log axis cannot show 0 (float64 differences start near 1e-17)
      std::vector<double> shown(diffs.size());
      for (size_t i = 0; i < diffs.size(); ++i) shown[i] = std::max(diffs[i], kFloor);
      tt::viz::LinePlotOptions opt_diff;
      opt_diff.title = "max |DDP - one process| over the parameters, " + args.dtype;
      opt_diff.x_label = "step";
      opt_diff.y_label = "after the step (0 drawn at 1e-18)";
      opt_diff.log_y = true;
      const std::string diff_png = args.common.path("data_parallel_diff.png");
      tt::viz::save_line_plot(diff_png,
                              {{"measured", xs, shown},
                               {"threshold (" + milestones::format_value(verdict.threshold(), milestones::kPlain) + ")",
                                {xs.front(), xs.back()},
                                {std::max(verdict.threshold(), kFloor), std::max(verdict.threshold(), kFloor)}, true}},
                              opt_diff);
      std::printf("figures: %s, %s\n", loss_png.c_str(), diff_png.c_str());
    }
    verdict.require(spread == 0.0, examples::format("the ranks differ by %g at the end", spread));
    verdict.require(start_diff == 0.0, examples::format("the models differ by %g before training", start_diff));
    if (prints) return verdict.finish(worst);
    // The other ranks: rank 0's verdict, quietly (every number in it was reduced over the ranks).
    return spread == 0.0 && start_diff == 0.0 && milestones::passes(worst, verdict.threshold(), milestones::kAtMost)
               ? 0
               : 1;
  });
}
