// Milestone 2017, attention is all you need: a two-block GPT (module 14, built from the
// embeddings, norms and attention of modules 10-12) learns to reverse 8 digits, a task where each
// answer token must look at one far-away position, and answers held-out rows it never saw by greedy
// generation. Saves the attention map of the head that learned to look back, and the loss curve.
//
//   milestone_attention [--steps N] [--length L] [--batch-size B] [--lr LR] [--eval-size N]
//                       [--threshold ACC] [--out DIR] [--seed S]
#include <cstdio>

#include "milestone.h"

namespace {

struct Args {
  int64_t steps = 300;
  int64_t length = 8;
  int64_t batch_size = 64;
  double lr = 3e-3;
  int64_t eval_size = 1000;
  milestones::Common common{"runs/milestones/attention"};
};

// Exact-match rate of greedy answers on the held-out rows, and the first rows' answers as text.
double greedy_accuracy(tt::nn::GPT& gpt, const tt::data::SequenceTask& task, const tt::data::SequenceBatch& test,
                       std::vector<std::string>* shown) {
  examples::EvalScope eval(gpt);
  const int64_t L = task.length();
  const tt::Tensor seq = gpt.generate(test.prompt, L, tt::nn::GenerateOptions().greedy(true));
  const tt::Tensor answers = seq.slice(1, L + 1, 2 * L + 1);
  const tt::Tensor right = (answers == test.answer).to(tt::kInt64).sum(1) == L;
  for (int64_t i = 0; shown && i < std::min<int64_t>(5, test.prompt.size(0)); ++i)
    shown->push_back(task.decode(test.prompt.select(0, i)) + task.decode(answers.select(0, i)) +
                     (right[i].item<bool>() ? "  right" : "  WRONG, should be " + task.decode(test.answer.select(0, i))));
  return right.to(tt::kFloat64).mean().item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  tt::relaunch_with_runtime_env(argv);
  Args args;
  milestones::Verdict verdict("held-out rows reversed exactly", 0.99, milestones::kAtLeast, milestones::kPercent);
  examples::Cli cli("milestone_attention",
                    "2017, attention: a GPT (2 blocks, 4 heads, embedding 64) learns to reverse L digits; passes\n"
                    "when greedy generation gets 99% of the held-out rows exactly right. Saves the attention map\n"
                    "of its sharpest head and the loss curve.\n");
  cli.option("--steps", args.steps, "N", "training steps");
  cli.option("--length", args.length, "L", "digits per row");
  cli.option("--batch-size", args.batch_size, "B", "rows per step");
  cli.option("--lr", args.lr, "LR", "AdamW's peak learning rate");
  cli.option("--eval-size", args.eval_size, "N", "held-out rows");
  verdict.add_option(cli);
  args.common.add_options(cli);
  cli.parse(argc, argv);
  if (args.steps < 1 || args.length < 1 || args.batch_size < 1 || args.eval_size < 1 || !(args.lr > 0))
    cli.fail("--steps, --length, --batch-size, --eval-size and --lr must be positive");
  return examples::run_main("milestone_attention", [&] {
    tt::manual_seed(args.common.seed);
    tt::data::SequenceTask task(tt::data::SequenceTaskKind::kReverse, args.length, args.common.seed);
    const int64_t T = task.sequence_length(), V = task.vocab_size(), L = task.length();
    const tt::data::SequenceBatch test = task.held_out(args.eval_size);
    auto gpt = std::make_shared<tt::nn::GPT>(tt::nn::GPTOptions(V, T).n_layer(2).n_embd(64).n_head(4));
    std::printf("model: GPT, 2 blocks, 4 heads, embedding 64: %lld parameters; task: reverse %lld digits, e.g. %s%s\n",
                (long long)examples::count_parameters(*gpt), (long long)L, task.decode(test.prompt.select(0, 0)).c_str(),
                task.decode(test.answer.select(0, 0)).c_str());
    tt::optim::AdamW optimizer(gpt->parameters(), tt::optim::AdamWOptions(args.lr).weight_decay(1e-2));
    auto schedule = examples::warmup_cosine(optimizer, args.steps, std::max<int64_t>(1, args.steps / 20), args.lr / 20);
    std::vector<double> steps, losses;
    examples::RunningLoss running;
    examples::ProgressBar bar("train", args.steps, "tokens");
    gpt->train();
    for (int64_t s = 1; s <= args.steps; ++s) {
      const tt::data::SequenceBatch batch = task.sample(args.batch_size);
      const tt::Tensor logits = (*gpt)(batch.input);
      const tt::Tensor loss = tt::F::cross_entropy(logits.reshape({-1, V}), batch.target.reshape({-1}));
      examples::compute_gradients(optimizer, loss, /*max_norm=*/1.0);
      optimizer.step();
      schedule->step();
      steps.push_back(double(s));
      losses.push_back(running.add(loss.item<double>()));
      bar.step(args.batch_size * T, {{"loss", losses.back()}});
    }
    bar.finish();

    std::vector<std::string> shown;
    const double acc = greedy_accuracy(*gpt, task, test, &shown);
    std::printf("held-out: %.2f%% of %lld rows exactly right by greedy generation; the first ones:\n", 100 * acc,
                (long long)args.eval_size);
    for (const std::string& s : shown) std::printf("  %s\n", s.c_str());

    // The attention of one held-out row, every head of every block; the sharpest head is drawn.
    const tt::data::SequenceBatch one = task.make_batch(test.prompt.slice(0, 0, 1).slice(1, 0, L));
    std::vector<tt::nn::TransformerBlock*> blocks;
    for (size_t l = 0; l < gpt->blocks->size(); ++l) {
      blocks.push_back(gpt->blocks->ptr<tt::nn::TransformerBlock>(int64_t(l)).get());
      blocks.back()->record_attention(true);
    }
    {
      examples::EvalScope eval(*gpt);
      (*gpt)(one.input);
    }
    size_t best_layer = 0;
    int64_t best_head = 0;
    double best_peak = -1;
    for (size_t l = 0; l < blocks.size(); ++l) {
      const tt::Tensor maps = blocks[l]->last_attention().select(0, 0);  // [H, T, T]
      for (int64_t h = 0; h < maps.size(0); ++h) {
        const double peak = std::get<0>(maps.select(0, h).slice(0, L, T).max(1)).mean().item<double>();
        if (peak > best_peak) best_layer = l, best_head = h, best_peak = peak;
      }
    }
    const tt::Tensor map = blocks[best_layer]->last_attention().select(0, 0).select(0, best_head).cpu();
    for (tt::nn::TransformerBlock* b : blocks) b->record_attention(false);
    const std::vector<std::string> labels = task.tokens(one.input.select(0, 0));
    tt::viz::HeatmapOptions heat;
    heat.title = examples::format("reverse: block %zu, head %lld", best_layer, (long long)best_head);
    const std::string png = args.common.path("attention_map.png");
    tt::viz::save_attention_heatmap(png, map, labels, labels, heat);
    tt::viz::LinePlotOptions plot;
    plot.title = "training loss (running mean)";
    plot.x_label = "step";
    plot.y_label = "cross-entropy";
    plot.log_y = true;
    const std::string curve = args.common.path("attention_loss.png");
    tt::viz::save_line_plot(curve, {{"loss", steps, losses}}, plot);
    std::printf("figures: %s, %s\n", png.c_str(), curve.c_str());
    return verdict.finish(acc);
  });
}
