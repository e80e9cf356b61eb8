// train_gpt_task: the main job (`tools/tt demo`). A tiny GPT learns a sequence task that needs
// attention (reverse a row of digits by default; sort or copy: data/sequence_tasks.h), as a causal
// language model scored on the answer tokens only, with AdamW, warmup + cosine and gradient
// clipping. Shows a progress bar (loss, held-out accuracy, tokens per second, time left), then
// decodes held-out prompts greedily and prints a few (prompt -> prediction, ✓/✗), saves the
// attention maps of one sample per layer as PNGs (one panel per head plus their mean, token
// labels), prints the sharpest head in the terminal, and saves a checkpoint that it reloads into
// a fresh model to check the logits are identical. Exits with status 1 if held-out exact-sequence
// accuracy is below the target (99%) or the reload differs.
//
//   train_gpt_task [--task reverse|sort|copy] [--length L] [--steps N] [--batch-size B] [--lr LR]
//                  [--layers N] [--embd E] [--heads H] [--positions learned|sinusoidal|rotary]
//                  [--qk-norm] [--precision fp32|bf16] [--eval-size N] [--eval-every N] [--target ACC]
//                  [--seed S] [--out DIR]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "cli.h"
#include "progress.h"
#include "train_loop.h"

namespace {

struct Args {
  std::string task = "reverse";
  int64_t length = 8;
  int64_t steps = 600;
  int64_t batch_size = 64;
  double lr = 3e-3;
  examples::GptSize model{/*layers=*/2, /*embd=*/64, /*heads=*/4};
  examples::Precision precision;
  int64_t eval_size = 1000;
  int64_t eval_every = 100;
  double target = 0.99;
  uint64_t seed = 0;
  std::string out = "runs/gpt_task";
};

Args parse(int argc, char** argv) {
  Args a;
  examples::Cli cli("train_gpt_task",
                    "Trains a tiny GPT to answer a digit-sequence task (default: reverse 8 digits), prints\n"
                    "sample predictions and an attention map, writes the attention maps (PNG) and a checkpoint\n"
                    "into DIR (default runs/gpt_task); exits 1 if held-out exact-sequence accuracy < target\n"
                    "(default 0.99).\n");
  cli.choice("--task", a.task, {"reverse", "sort", "copy"}, "what the model learns to do with the digits");
  cli.option("--length", a.length, "L", "digits per row");
  cli.option("--steps", a.steps, "N", "training steps");
  cli.option("--batch-size", a.batch_size, "B", "rows per step");
  cli.option("--lr", a.lr, "LR", "AdamW's peak learning rate");
  a.model.add_options(cli);
  a.precision.add_option(cli);
  cli.option("--eval-size", a.eval_size, "N", "held-out rows, never trained on");
  cli.option("--eval-every", a.eval_every, "N", "steps between held-out evaluations");
  cli.option("--target", a.target, "ACC", "held-out exact-sequence accuracy to reach");
  cli.option("--seed", a.seed, "S", "seed of the data and the weights");
  cli.option("--out", a.out, "DIR", "where the attention maps and the checkpoint go");
  cli.parse(argc, argv);
  if (a.length < 1 || a.steps < 1 || a.batch_size < 1 || !a.model.positive() || a.eval_size < 1 || a.eval_every < 1 ||
      !(a.lr > 0))
    cli.fail("sizes, counts and --lr must be positive");
  a.model.check(cli);
  return a;
}

tt::nn::GPT make_model(const Args& args, const tt::data::SequenceTask& task) {
  return tt::nn::GPT(args.model.options(task.vocab_size(), task.sequence_length()));
}

// Logits [B, 2L, V] of the model for a batch, in eval mode and without grad.
tt::Tensor eval_logits(tt::nn::GPT& gpt, const tt::data::SequenceBatch& batch) {
  examples::EvalScope eval(gpt);
  return gpt(batch.input);
}

// Greedy answers [B, L]: the model writes L tokens after each prompt, one at a time.
tt::Tensor greedy_answers(tt::nn::GPT& gpt, const tt::data::SequenceBatch& batch, int64_t L) {
  tt::Tensor seq = gpt.generate(batch.prompt, L, tt::nn::GenerateOptions().greedy(true));
  return seq.slice(1, L + 1, 2 * L + 1);
}

// The rows of `pred` equal to the rows of `answer`, both [B, L], as flags.
std::vector<bool> rows_equal(const tt::Tensor& pred, const tt::Tensor& answer) {
  std::vector<int64_t> p = pred.contiguous().to_vector<int64_t>(), a = answer.to_vector<int64_t>();
  const size_t L = size_t(answer.size(1));
  std::vector<bool> ok;
  for (size_t b = 0; b < size_t(answer.size(0)); ++b) {
    ok.push_back(std::equal(p.begin() + b * L, p.begin() + (b + 1) * L, a.begin() + b * L));
  }
  return ok;
}

// Saves one PNG per layer with the attention of the given sample (its full input, as in
// training) and returns the maps [H, T, T] per layer.
std::vector<tt::Tensor> save_attention_maps(tt::nn::GPT& gpt, const tt::data::SequenceTask& task,
                                            const tt::data::SequenceBatch& sample, const std::string& dir) {
  std::vector<tt::nn::TransformerBlock*> blocks;
  for (size_t l = 0; l < gpt.blocks->size(); ++l) {
    blocks.push_back(gpt.blocks->ptr<tt::nn::TransformerBlock>(int64_t(l)).get());
    blocks.back()->record_attention(true);
  }
  eval_logits(gpt, sample);
  std::vector<std::string> labels = task.tokens(sample.input.select(0, 0));
  std::vector<tt::Tensor> maps;
  for (size_t l = 0; l < blocks.size(); ++l) {
    tt::Tensor w = blocks[l]->last_attention().select(0, 0);  // [H, T, T]
    blocks[l]->record_attention(false);
    tt::viz::HeatmapOptions opts;
    opts.title = "layer " + std::to_string(l) + ": " + to_string(task.kind()) + " " +
                 task.decode(sample.prompt.select(0, 0));
    std::string path = (std::filesystem::path(dir) / ("attention_layer" + std::to_string(l) + ".png")).string();
    tt::viz::save_attention_heatmap(path, w, labels, labels, opts);
    maps.push_back(w);
  }
  return maps;
}

// The head whose answer-position queries (rows L .. 2L-1) put the most weight on a single key,
// on average: the one worth showing. Returns {layer, head, mean peak weight}.
struct Sharpest {
  size_t layer = 0;
  int64_t head = 0;
  double peak = 0.0;
};
Sharpest sharpest_head(const std::vector<tt::Tensor>& maps, int64_t L) {
  Sharpest best;
  for (size_t l = 0; l < maps.size(); ++l) {
    for (int64_t h = 0; h < maps[l].size(0); ++h) {
      tt::Tensor rows = maps[l].select(0, h).slice(0, L, 2 * L);  // [L, T]
      double peak = std::get<0>(rows.max(1)).mean().item<double>();
      if (peak > best.peak) best = {l, h, peak};
    }
  }
  return best;
}

}  // namespace

int train(const Args& args) {
  tt::manual_seed(args.seed);
  std::filesystem::create_directories(args.out);  // fails now, not after training, if it cannot
  const tt::data::SequenceTaskKind kind = tt::data::sequence_task_kind(args.task);
  tt::data::SequenceTask task(kind, args.length, args.seed);
  const int64_t L = task.length(), T = task.sequence_length(), V = task.vocab_size();
  const tt::data::SequenceBatch test = task.held_out(args.eval_size);
  {
    tt::data::SequenceBatch example = task.make_batch(test.prompt.slice(0, 0, 1).slice(1, 0, L));
    std::printf("task: %s %lld digits, e.g. %s%s; %lld held-out rows never trained on\n", args.task.c_str(),
                (long long)L, task.decode(example.prompt.select(0, 0)).c_str(),
                task.decode(example.answer.select(0, 0)).c_str(), (long long)args.eval_size);
  }

  // --- model, optimizer, schedule ---------------------------------------------------------------
  tt::nn::GPT gpt = make_model(args, task);
  std::printf("model: %s, vocabulary %lld: %lld parameters, precision %s\n", args.model.describe(T).c_str(),
              (long long)V, (long long)examples::count_parameters(gpt), args.precision.value.c_str());
  tt::optim::AdamW optimizer(gpt.parameters(), tt::optim::AdamWOptions(args.lr).weight_decay(1e-2));
  auto schedule = examples::warmup_cosine(optimizer, args.steps, std::max<int64_t>(1, args.steps / 20), args.lr / 20);

  // --- train: next-token cross-entropy on the answer positions (the prompt's targets are -100) -----
  gpt.train();
  examples::ProgressBar bar("train", args.steps, "tokens");
  examples::RunningLoss loss_avg;
  double test_acc = 0.0;
  for (int64_t step = 1; step <= args.steps; ++step) {
    tt::data::SequenceBatch batch = task.sample(args.batch_size);
    tt::Tensor loss;
    {
      auto autocast = args.precision.autocast();  // --precision bf16: the forward in mixed precision
      tt::Tensor logits = gpt(batch.input);
      loss = tt::F::cross_entropy(logits.reshape({-1, V}), batch.target.reshape({-1}));
    }
    examples::compute_gradients(optimizer, loss, /*max_norm=*/1.0);
    optimizer.step();
    schedule->step();
    loss_avg.add(loss.item<double>());
    const bool eval_now = step % args.eval_every == 0 || step == args.steps;
    if (eval_now) {
      auto autocast = args.precision.autocast();
      test_acc = tt::data::sequence_accuracy(eval_logits(gpt, test), test.target).sequence;
    }
    bar.step(args.batch_size * T, {{"loss", loss_avg.value()}, {"held-out acc%", 100 * test_acc}});
    if (eval_now && step != args.steps) bar.log();
  }
  bar.finish();

  // --- greedy decoding of the held-out prompts ------------------------------------------------------
  tt::Tensor pred;
  {
    auto autocast = args.precision.autocast();
    pred = greedy_answers(gpt, test, L);
  }
  std::vector<bool> ok = rows_equal(pred, test.answer);
  const double greedy_acc = double(std::count(ok.begin(), ok.end(), true)) / double(ok.size());
  std::printf("held-out: %.2f%% of %lld sequences exactly right by greedy decoding (one batched forward: %.2f%%)\n",
              100 * greedy_acc, (long long)args.eval_size, 100 * test_acc);
  std::printf("samples (prompt -> prediction):\n");
  for (int64_t i = 0; i < std::min<int64_t>(6, args.eval_size); ++i) {
    std::string line = "  " + task.decode(test.prompt.select(0, i)) + " -> " + task.decode(pred.select(0, i)) +
                       (ok[size_t(i)] ? "  ✓" : "  ✗ (want " + task.decode(test.answer.select(0, i)) + ")");
    std::printf("%s\n", line.c_str());
  }
  for (int64_t i = 6, shown = 0; i < args.eval_size && shown < 3; ++i) {  // a few mistakes, if any
    if (ok[size_t(i)]) continue;
    std::printf("  %s -> %s  ✗ (want %s)\n", task.decode(test.prompt.select(0, i)).c_str(),
                task.decode(pred.select(0, i)).c_str(), task.decode(test.answer.select(0, i)).c_str());
    ++shown;
  }

  // --- attention maps of the first held-out sample -------------------------------------------------
  tt::data::SequenceBatch first = task.make_batch(test.prompt.slice(0, 0, 1).slice(1, 0, L));
  std::vector<tt::Tensor> maps = save_attention_maps(gpt, task, first, args.out);
  Sharpest s = sharpest_head(maps, L);
  std::vector<std::string> labels = task.tokens(first.input.select(0, 0));
  std::printf("\nattention of layer %zu, head %lld for %s (rows: queries, columns: keys; its answer rows put\n"
              "%.0f%% of their weight on one key on average):\n",
              s.layer, (long long)s.head, task.decode(first.prompt.select(0, 0)).c_str(), 100 * s.peak);
  tt::viz::TerminalOptions term;
  term.color = isatty(fileno(stdout)) != 0;
  std::printf("%s\n", tt::viz::render_attention_terminal(maps[s.layer].select(0, s.head), labels, labels, term).c_str());
  std::printf("attention maps (every head and their mean, per layer): %s/attention_layer{0..%lld}.png\n",
              args.out.c_str(), (long long)args.model.layers - 1);

  // --- checkpoint: save, reload into a fresh model, compare ----------------------------------------
  const std::string ckpt = (std::filesystem::path(args.out) / "gpt_task.safetensors").string();
  const examples::ReloadCheck reload = examples::checkpoint_round_trip(
      gpt, ckpt, {{"example", "train_gpt_task"}, {"task", args.task}, {"length", std::to_string(L)}}, args.seed,
      [&] { return make_model(args, task); }, [&](tt::nn::GPT& m) { return eval_logits(m, test); });
  std::printf("checkpoint: %s; reloaded model: max |logit diff| %g on the held-out rows\n", ckpt.c_str(),
              reload.max_diff);

  return examples::accuracy_verdict("held-out exact-sequence accuracy", greedy_acc, args.target,
                                    reload.max_diff == 0.0);
}

int main(int argc, char** argv) {
  tt::relaunch_with_runtime_env(argv);  // OpenBLAS's kernels; a busy machine shared (Note [threading policy])
  const Args args = parse(argc, argv);
  // A tt::Error (an unwritable --out, say) ends the run with its message and status 2.
  return examples::run_main("train_gpt_task", [&] { return train(args); });
}
