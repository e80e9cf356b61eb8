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
//                  [--seed S] [--out DIR] [--device cpu|cuda|auto] [--ddp]
//
// --device: where the model, the batches, the loss and the optimizer state live (auto: the GPU
// when one is usable, else the CPU). The loss stays there too: the bar's running average is read
// back only when the bar is redrawn.
//
// Data parallel (module 16): started by mpirun, every process is a rank of tt::distributed (MPI on
// the CPU, NCCL with --device cuda, or auto where a GPU is usable: one GPU per rank, its local
// rank's) and trains through DistributedDataParallel.
// --batch-size is per rank, as in PyTorch: each step every rank draws the same global batch of
// W * B rows (same seed) and trains on its own B of them, so W ranks take the steps one process
// takes with --batch-size W*B. Rank 0 alone prints and writes files, and reloads the checkpoint
// (the other ranks may be on machines without its disk; they get its verdict). An error on one
// rank ends the job ("rank R: ..."). --ddp starts the group without mpirun (a world of one: the
// same numbers as without it; tools/gpu/nccl_check.sh uses it).
//
//   mpirun -np 2 build/examples/train_gpt_task        # as root: OMPI_ALLOW_RUN_AS_ROOT=1 and
//                                                     # OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
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
  std::string device = "cpu";
  bool cuda = false;  // --device resolved: cuda, or auto where a GPU is usable
  bool ddp = false;
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
  cli.device_option(a.device, "where it trains (data parallel: MPI or NCCL)");
  cli.flag("--ddp", a.ddp, "train through DistributedDataParallel even without mpirun (a world of one)");
  cli.parse(argc, argv);
  if (a.length < 1 || a.steps < 1 || a.batch_size < 1 || !a.model.positive() || a.eval_size < 1 || a.eval_every < 1 ||
      !(a.lr > 0))
    cli.fail("sizes, counts and --lr must be positive");
  a.model.check(cli);
  // The type only: a data-parallel rank takes its local rank's GPU once its group is up. Every rank
  // resolves auto alike (the same build, the same machine's GPUs); data parallel on GPUs needs
  // NCCL, so there auto means the GPU only in a build with NCCL.
  a.cuda = cli.device(a.device).is_cuda();
  const bool data_parallel = tt::distributed::launched_by_mpirun() || a.ddp;
  if (a.device == "auto" && data_parallel && !tt::distributed::is_available(tt::distributed::Backend::NCCL))
    a.cuda = false;
  return a;
}

// Rank 0 prints; the other ranks of a data-parallel run are quiet (their errors still reach stderr).
bool g_prints = true;
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
void say(const char* fmt, ...) {
  if (!g_prints) return;
  va_list args;
  va_start(args, fmt);
  std::vprintf(fmt, args);
  va_end(args);
}

std::shared_ptr<tt::nn::GPT> make_model(const Args& args, const tt::data::SequenceTask& task,
                                        const tt::Device& device) {
  auto gpt = std::make_shared<tt::nn::GPT>(args.model.options(task.vocab_size(), task.sequence_length()));
  gpt->to(device);
  return gpt;
}

// The batch's tensors on `device`.
tt::data::SequenceBatch to_device(const tt::data::SequenceBatch& b, const tt::Device& device) {
  return {b.input.to(device), b.target.to(device), b.prompt.to(device), b.answer.to(device)};
}

// Rows [begin, end) of the batch.
tt::data::SequenceBatch rows(const tt::data::SequenceBatch& b, int64_t begin, int64_t end) {
  return {b.input.slice(0, begin, end), b.target.slice(0, begin, end), b.prompt.slice(0, begin, end),
          b.answer.slice(0, begin, end)};
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
    tt::Tensor w = blocks[l]->last_attention().select(0, 0).cpu();  // [H, T, T]
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
  // --- data parallel: every rank of an mpirun job (or, with --ddp, a world of one) ---------------
  const bool cuda = args.cuda;
  if (tt::distributed::launched_by_mpirun() || args.ddp) {
    tt::distributed::init_process_group(cuda ? tt::distributed::Backend::NCCL : tt::distributed::Backend::MPI);
  }
  const int rank = tt::distributed::get_rank(), world = tt::distributed::get_world_size();
  // One GPU per rank: the local rank (this rank's number on its machine) picks it.
  const int local_rank = tt::distributed::get_local_rank();
  TT_CHECK(!cuda || local_rank < tt::cuda::device_count(), "--device ", args.device, ": local rank ", local_rank,
           " has no GPU of its own (this machine shows ", tt::cuda::device_count(),
           "); start at most that many ranks per machine, or pass --device cpu");
  const tt::Device device = cuda ? tt::Device(tt::kCUDA, local_rank) : tt::Device(tt::kCPU);
  g_prints = rank == 0;
  if (tt::distributed::is_initialized()) {
    const std::string backend = tt::distributed::to_string(tt::distributed::default_group()->backend());
    say("data parallel: %d rank%s × batch %lld = global batch %lld (%s)\n", world, world == 1 ? "" : "s",
        (long long)args.batch_size, (long long)(world * args.batch_size), backend == "mpi" ? "MPI" : "NCCL");
  }

  tt::manual_seed(args.seed);
  if (rank == 0) std::filesystem::create_directories(args.out);  // fails now, not after training, if it cannot
  const tt::data::SequenceTaskKind kind = tt::data::sequence_task_kind(args.task);
  tt::data::SequenceTask task(kind, args.length, args.seed);
  const int64_t L = task.length(), T = task.sequence_length(), V = task.vocab_size();
  const tt::data::SequenceBatch test_cpu = task.held_out(args.eval_size);
  const tt::data::SequenceBatch test = to_device(test_cpu, device);
  {
    tt::data::SequenceBatch example = task.make_batch(test_cpu.prompt.slice(0, 0, 1).slice(1, 0, L));
    say("task: %s %lld digits, e.g. %s%s; %lld held-out rows never trained on\n", args.task.c_str(), (long long)L,
        task.decode(example.prompt.select(0, 0)).c_str(), task.decode(example.answer.select(0, 0)).c_str(),
        (long long)args.eval_size);
  }

  // --- model, optimizer, schedule ---------------------------------------------------------------
  // Every rank builds the same model from the same seed; DDP also broadcasts rank 0's weights.
  std::shared_ptr<tt::nn::GPT> gpt = make_model(args, task, device);
  tt::nn::DistributedDataParallel<tt::nn::GPT> ddp(gpt);  // a plain wrapper without a group
  const std::string device_label = examples::device_label(device);
  // On the CPU, the threads too: the cores a quiet machine has, fewer on a busy one (Note [threading policy]).
  const int threads = tt::get_num_threads();
  const std::string threads_label =
      device.is_cpu() ? " (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)") : "";
  say("model: %s, vocabulary %lld: %lld parameters, precision %s, on %s%s\n", args.model.describe(T).c_str(),
      (long long)V, (long long)examples::count_parameters(*gpt), args.precision.value.c_str(),
      device_label.c_str(), threads_label.c_str());
  tt::optim::AdamW optimizer(ddp.parameters(), tt::optim::AdamWOptions(args.lr).weight_decay(1e-2));
  auto schedule = examples::warmup_cosine(optimizer, args.steps, std::max<int64_t>(1, args.steps / 20), args.lr / 20);

  // --- train: next-token cross-entropy on the answer positions (the prompt's targets are -100) -----
  ddp.train();
  examples::ProgressBar bar("train", args.steps, "tokens");
  bar.set_device(world == 1 ? device_label : device_label + " ×" + std::to_string(world));
  examples::RunningLoss loss_avg;  // kept on the device (add(tensor))
  double test_acc = 0.0;
  tt::Tensor last_loss;  // the last step's (global batch) loss, [1] on the device
  const int64_t B = args.batch_size;
  for (int64_t step = 1; step <= args.steps; ++step) {
    // The same global batch [W*B, 2L] on every rank (same seed); this rank trains on its B rows.
    tt::data::SequenceBatch global = task.sample(B * world);
    tt::data::SequenceBatch batch = to_device(world == 1 ? global : rows(global, rank * B, (rank + 1) * B), device);
    tt::Tensor loss;
    {
      auto autocast = args.precision.autocast(device.type);  // --precision bf16: the forward in mixed precision
      tt::Tensor logits = ddp(batch.input);
      // The mean over this rank's answer tokens; DDP averages the gradients over the ranks, which
      // is the gradient of the mean over the global batch (every row has L answer tokens).
      loss = tt::F::cross_entropy(logits.reshape({-1, V}), batch.target.reshape({-1}));
    }
    examples::compute_gradients(optimizer, loss, /*max_norm=*/1.0);  // clips the averaged gradients
    optimizer.step();
    schedule->step();
    tt::Tensor step_loss = loss.detach().to(tt::kFloat32).clone().reshape({1});
    if (world > 1) {  // the global batch's loss, for the bar (every rank takes part)
      // Unchecked: with NCCL it only orders the collective on the GPU's stream, no host wait.
      tt::distributed::default_group()->allreduce_unchecked(step_loss, tt::distributed::ReduceOp::Avg)->wait();
    }
    loss_avg.add(step_loss.reshape({}));
    last_loss = step_loss;
    const bool eval_now = step % args.eval_every == 0 || step == args.steps;
    if (eval_now) {  // every rank: same weights, same result; rank 0 shows it
      auto autocast = args.precision.autocast(device.type);
      test_acc = tt::data::sequence_accuracy(eval_logits(*gpt, test), test.target).sequence;
    }
    if (rank == 0) {  // the running loss is read back only when the bar is drawn
      auto metrics = [&] {
        return examples::ProgressBar::Metrics{{"loss", loss_avg.value()}, {"held-out acc%", 100 * test_acc}};
      };
      bar.step(world * B * T, metrics);
      if (eval_now && step != args.steps) {
        bar.set_metrics(metrics());
        bar.log();
      }
    }
  }
  if (rank == 0) {
    bar.set_metrics({{"loss", loss_avg.value()}, {"held-out acc%", 100 * test_acc}});
    bar.finish();
  }
  {  // exact numbers, for comparing runs (tools/gpu/nccl_check.sh)
    auto autocast = args.precision.autocast(device.type);
    const double logits_sum = eval_logits(*gpt, test).to(tt::kFloat64).sum().item<double>();
    say("last step: loss %.9g; held-out logits sum %.9g\n", last_loss.item<double>(), logits_sum);
  }

  // --- greedy decoding of the held-out prompts (every rank, so every rank's verdict agrees) -------
  tt::Tensor pred;
  {
    auto autocast = args.precision.autocast(device.type);
    pred = greedy_answers(*gpt, test, L).cpu();
  }
  std::vector<bool> ok = rows_equal(pred, test_cpu.answer);
  const double greedy_acc = double(std::count(ok.begin(), ok.end(), true)) / double(ok.size());
  say("held-out: %.2f%% of %lld sequences exactly right by greedy decoding (one batched forward: %.2f%%)\n",
      100 * greedy_acc, (long long)args.eval_size, 100 * test_acc);
  say("samples (prompt -> prediction):\n");
  for (int64_t i = 0; i < std::min<int64_t>(6, args.eval_size); ++i) {
    std::string line = "  " + task.decode(test_cpu.prompt.select(0, i)) + " -> " + task.decode(pred.select(0, i)) +
                       (ok[size_t(i)] ? "  ✓" : "  ✗ (want " + task.decode(test_cpu.answer.select(0, i)) + ")");
    say("%s\n", line.c_str());
  }
  for (int64_t i = 6, shown = 0; i < args.eval_size && shown < 3; ++i) {  // a few mistakes, if any
    if (ok[size_t(i)]) continue;
    say("  %s -> %s  ✗ (want %s)\n", task.decode(test_cpu.prompt.select(0, i)).c_str(),
        task.decode(pred.select(0, i)).c_str(), task.decode(test_cpu.answer.select(0, i)).c_str());
    ++shown;
  }

  // --- attention maps of the first held-out sample (rank 0) ----------------------------------------
  if (rank == 0) {
    tt::data::SequenceBatch first =
        to_device(task.make_batch(test_cpu.prompt.slice(0, 0, 1).slice(1, 0, L)), device);
    std::vector<tt::Tensor> maps = save_attention_maps(*gpt, task, first, args.out);
    Sharpest s = sharpest_head(maps, L);
    std::vector<std::string> labels = task.tokens(first.input.select(0, 0));
    say("\nattention of layer %zu, head %lld for %s (rows: queries, columns: keys; its answer rows put\n"
        "%.0f%% of their weight on one key on average):\n",
        s.layer, (long long)s.head, task.decode(first.prompt.select(0, 0)).c_str(), 100 * s.peak);
    tt::viz::TerminalOptions term;
    term.color = isatty(fileno(stdout)) != 0;
    say("%s\n", tt::viz::render_attention_terminal(maps[s.layer].select(0, s.head), labels, labels, term).c_str());
    say("attention maps (every head and their mean, per layer): %s/attention_layer{0..%lld}.png\n",
        args.out.c_str(), (long long)args.model.layers - 1);
  }

  // --- checkpoint: rank 0 saves, reloads into a fresh model and compares; every rank gets the verdict --
  const std::string ckpt = (std::filesystem::path(args.out) / "gpt_task.safetensors").string();
  const examples::ReloadCheck reload = examples::checkpoint_round_trip(
      *gpt, ckpt, {{"example", "train_gpt_task"}, {"task", args.task}, {"length", std::to_string(L)}}, args.seed,
      [&] { return make_model(args, task, device); }, [&](tt::nn::GPT& m) { return eval_logits(m, test); });
  const double max_diff = reload.max_diff;
  say("checkpoint: %s; reloaded model: max |logit diff| %g on the held-out rows\n", ckpt.c_str(), max_diff);

  if (rank != 0) return greedy_acc >= args.target && max_diff == 0.0 ? 0 : 1;  // rank 0's verdict, quietly
  return examples::accuracy_verdict("held-out exact-sequence accuracy", greedy_acc, args.target, max_diff == 0.0);
}

int main(int argc, char** argv) {
  tt::relaunch_with_runtime_env(argv);  // OpenBLAS's kernels; a busy machine shared (Note [threading policy])
  const Args args = parse(argc, argv);
  // A tt::Error (an unwritable --out, say) ends the run with its message and status 2.
  return examples::run_main("train_gpt_task", [&] { return train(args); });
}
