// train_char_lm: a character-level GPT on any text file (default: the curriculum's module READMEs,
// modules/*/README.md, concatenated). Each Unicode character is a token; the first 90% of the text
// is for training, the rest for validation. Trains on random windows with AdamW, warmup + cosine
// and gradient clipping for a bounded number of steps or seconds (whichever ends first), with a
// progress bar (loss, validation loss, tokens per second, time left), then samples text from a
// prompt with a temperature and top-k. Exits with status 1 if the validation loss did not drop by
// at least --min-drop (a fraction of the loss before training). The model, the windows, the loss
// and its running average live on --device; the host reads the average back only to draw the bar.
//
//   train_char_lm [--text PATH] [--steps N] [--time SECONDS] [--batch-size B] [--context T]
//                 [--layers N] [--embd E] [--heads H] [--positions learned|sinusoidal|rotary]
//                 [--qk-norm] [--precision fp32|bf16] [--lr LR] [--eval-every N] [--seed S]
//                 [--prompt TEXT] [--temperature X] [--top-k K] [--sample-length N] [--min-drop F]
//                 [--device cpu|cuda|auto]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "cli.h"
#include "progress.h"
#include "train_loop.h"

namespace {

struct Args {
  std::string text;  // empty: the module READMEs
  int64_t steps = 3000;
  double time = 75.0;
  int64_t batch_size = 32;
  int64_t context = 64;
  examples::GptSize model{/*layers=*/3, /*embd=*/128, /*heads=*/4};
  examples::Precision precision;
  double lr = 3e-3;
  int64_t eval_every = 100;
  uint64_t seed = 0;
  std::string prompt = "The ";
  double temperature = 0.8;
  int64_t top_k = 20;
  int64_t sample_length = 300;
  double min_drop = 0.3;
  std::string device_flag = "cpu";
  tt::Device device;  // what --device resolved to
};

Args parse(int argc, char** argv) {
  Args a;
  examples::Cli cli(
      "train_char_lm",
      "Trains a character-level GPT on a text file (default: the module READMEs) for at most N steps\n"
      "(default 3000) or SECONDS (default 75; 0 = no limit), then samples text after the prompt\n"
      "(temperature 0.8, top-k 20). Exits 1 if the validation loss fell by less than F (default\n"
      "0.3, a fraction of the loss before training).\n");
  cli.option("--text", a.text, "PATH", "the text to learn (default: the module READMEs)");
  cli.option("--steps", a.steps, "N", "the most training steps");
  cli.option("--time", a.time, "SECONDS", "the most training time in seconds, 0 for no limit");
  cli.option("--batch-size", a.batch_size, "B", "windows per step");
  cli.option("--context", a.context, "T", "characters per window, the model's context");
  a.model.add_options(cli);
  a.precision.add_option(cli);
  cli.option("--lr", a.lr, "LR", "AdamW's peak learning rate");
  cli.option("--eval-every", a.eval_every, "N", "steps between validation losses");
  cli.option("--seed", a.seed, "S", "seed of the weights, the windows and the sample");
  cli.option("--prompt", a.prompt, "TEXT", "what the sample starts with");
  cli.option("--temperature", a.temperature, "X", "sampling temperature");
  cli.option("--top-k", a.top_k, "K", "sample among the K likeliest characters, 0 for all");
  cli.option("--sample-length", a.sample_length, "N", "characters sampled after the prompt");
  cli.option("--min-drop", a.min_drop, "F", "the validation loss must fall by this fraction");
  cli.device_option(a.device_flag);
  cli.parse(argc, argv);
  if (a.steps < 1 || a.batch_size < 1 || a.context < 2 || !a.model.positive() || a.eval_every < 1 ||
      a.sample_length < 0 || a.top_k < 0 || !(a.lr > 0) || !(a.temperature > 0) || !(a.time >= 0))
    cli.fail("sizes, --lr and --temperature must be positive");
  a.model.check(cli);
  if (a.prompt.empty()) cli.fail("--prompt must not be empty");
  a.device = cli.device(a.device_flag);
  return a;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  TT_CHECK_T(tt::IOError, in.good(), "cannot read ", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The text to learn and where it came from.
std::pair<std::string, std::string> load_text(const std::string& path) {
  if (!path.empty()) return {read_file(path), path};
  std::vector<std::filesystem::path> files;
  const std::filesystem::path modules = std::filesystem::path(TT_SOURCE_DIR) / "modules";
  if (std::filesystem::is_directory(modules)) {
    for (const auto& entry : std::filesystem::directory_iterator(modules)) {
      std::filesystem::path readme = entry.path() / "README.md";
      if (entry.is_directory() && std::filesystem::is_regular_file(readme)) files.push_back(readme);
    }
  }
  std::sort(files.begin(), files.end());
  TT_CHECK_T(tt::IOError, !files.empty(), "no modules/*/README.md under ", modules.string(),
             "; pass --text PATH");
  std::string text;
  for (const auto& f : files) text += read_file(f) + "\n\n";
  return {text, std::to_string(files.size()) + " module READMEs (" + modules.string() + "/*/README.md)"};
}

// One token per Unicode character (code point): the sorted distinct characters of the text.
struct CharVocab {
  std::vector<std::string> chars;
  std::map<std::string, int64_t> ids;

  explicit CharVocab(const std::vector<std::string>& text_chars) {
    for (const std::string& c : text_chars) ids.emplace(c, 0);
    for (auto& [c, id] : ids) {
      id = int64_t(chars.size());
      chars.push_back(c);
    }
  }
  int64_t size() const { return int64_t(chars.size()); }
  std::vector<int64_t> encode(const std::string& text) const {
    std::vector<int64_t> out;
    for (const std::string& c : tt::viz::utf8_split(text)) {
      auto it = ids.find(c);
      TT_CHECK(it != ids.end(), "--prompt: the character '", c, "' does not occur in the training text");
      out.push_back(it->second);
    }
    return out;
  }
  std::string decode(const std::vector<int64_t>& ids_) const {
    std::string s;
    for (int64_t id : ids_) s += chars[size_t(id)];
    return s;
  }
};

// Windows of context + 1 tokens starting at `starts`: input [B, T] and the next tokens [B, T],
// on `device`.
std::pair<tt::Tensor, tt::Tensor> windows(const std::vector<int64_t>& tokens, const std::vector<int64_t>& starts,
                                          int64_t T, const tt::Device& device) {
  std::vector<int64_t> x, y;
  for (int64_t s : starts) {
    x.insert(x.end(), tokens.begin() + s, tokens.begin() + s + T);
    y.insert(y.end(), tokens.begin() + s + 1, tokens.begin() + s + T + 1);
  }
  const int64_t B = int64_t(starts.size());
  return {tt::tensor(x, tt::Shape{B, T}, tt::kInt64).to(device), tt::tensor(y, tt::Shape{B, T}, tt::kInt64).to(device)};
}

// Mean next-character loss over fixed windows of the validation text, in eval mode (summed where
// the model lives, read back once).
double validation_loss(tt::nn::GPT& gpt, const std::vector<std::pair<tt::Tensor, tt::Tensor>>& batches) {
  examples::EvalScope eval(gpt);
  tt::Tensor sum;
  for (const auto& [x, y] : batches) {
    tt::Tensor logits = gpt(x);
    tt::Tensor loss = tt::F::cross_entropy(logits.reshape({-1, logits.size(2)}), y.reshape({-1})).to(tt::kFloat64);
    sum = sum.defined() ? sum + loss : loss;
  }
  return sum.item<double>() / double(batches.size());
}

}  // namespace

int train(const Args& args) {
  tt::manual_seed(args.seed);

  // --- text: characters as tokens, 90% train / 10% validation ------------------------------------
  auto [text, source] = load_text(args.text);
  const std::vector<std::string> chars = tt::viz::utf8_split(text);
  const CharVocab vocab(chars);
  std::vector<int64_t> tokens;
  for (const std::string& c : chars) tokens.push_back(vocab.ids.at(c));
  const int64_t T = args.context, n = int64_t(tokens.size()), n_train = n * 9 / 10;
  TT_CHECK(n - n_train > T + 1, "the text (", n, " characters) is too short for a context of ", T,
           " (the validation tenth needs more than ", T + 1, ")");
  const std::vector<int64_t> train_tokens(tokens.begin(), tokens.begin() + n_train);
  const std::vector<int64_t> val_tokens(tokens.begin() + n_train, tokens.end());
  std::printf("text: %s, %lld characters (%lld distinct); %lld for training, %lld for validation\n", source.c_str(),
              (long long)n, (long long)vocab.size(), (long long)train_tokens.size(), (long long)val_tokens.size());
  const std::vector<int64_t> prompt = vocab.encode(args.prompt);  // fail early on an unknown character

  // Fixed validation windows, spread evenly over the validation text.
  std::vector<std::pair<tt::Tensor, tt::Tensor>> val_batches;
  {
    const int64_t n_windows = std::min<int64_t>(4 * args.batch_size, int64_t(val_tokens.size()) - T - 1);
    std::vector<int64_t> starts;
    for (int64_t i = 0; i < n_windows; ++i) starts.push_back(i * (int64_t(val_tokens.size()) - T - 1) / n_windows);
    for (size_t i = 0; i < starts.size(); i += size_t(args.batch_size)) {
      std::vector<int64_t> part(starts.begin() + int64_t(i),
                                starts.begin() + int64_t(std::min(starts.size(), i + size_t(args.batch_size))));
      val_batches.push_back(windows(val_tokens, part, T, args.device));
    }
  }

  // --- model, optimizer, schedule ---------------------------------------------------------------
  tt::nn::GPT gpt(args.model.options(vocab.size(), T));
  gpt.to(args.device);
  const std::string device = examples::device_label(args.device);
  std::printf("model: %s: %lld parameters, on %s\n", args.model.describe(T).c_str(),
              (long long)examples::count_parameters(gpt), device.c_str());
  tt::optim::AdamW optimizer(gpt.parameters(), tt::optim::AdamWOptions(args.lr).weight_decay(1e-2));
  // Warmup, then cosine down to lr / 10 over the run. The run ends at args.steps or args.time,
  // whichever comes first, so the schedule follows progress = the larger of the two fractions
  // done (its closed form lr_at, evaluated at that point of the step budget).
  const auto schedule = examples::warmup_cosine(
      optimizer, args.steps, std::max<int64_t>(1, std::min<int64_t>(100, args.steps / 10)), args.lr / 10);
  auto set_lr = [&](int64_t step, double seconds) {
    double progress = double(step) / double(args.steps);
    if (args.time > 0) progress = std::max(progress, seconds / args.time);
    const int64_t at = std::min(args.steps, std::max(step, int64_t(progress * double(args.steps))));
    for (auto& group : optimizer.param_groups()) group.options().lr(schedule->lr_at(at, args.lr));
  };

  // --- train on random windows for at most args.steps steps or args.time seconds --------------------
  auto val_loss = [&] {
    auto autocast = args.precision.autocast(args.device.type);
    return validation_loss(gpt, val_batches);
  };
  const double initial_val = val_loss();
  std::printf("validation loss before training: %.3f (a uniform guess: ln %lld = %.3f)\n", initial_val,
              (long long)vocab.size(), std::log(double(vocab.size())));
  tt::data::RandomStream rng(args.seed, 0);
  gpt.train();
  examples::ProgressBar bar("train", args.steps, "tokens");
  bar.set_device(device);
  if (args.time > 0) bar.set_time_limit(args.time);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&start] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  examples::RunningLoss loss_avg;
  double val = initial_val;
  int64_t step = 0;
  while (step < args.steps && (args.time <= 0 || elapsed() < args.time)) {
    ++step;
    std::vector<int64_t> starts;
    for (int64_t b = 0; b < args.batch_size; ++b) {
      starts.push_back(int64_t(rng.uniform_below(uint64_t(n_train - T - 1))));
    }
    auto [x, y] = windows(train_tokens, starts, T, args.device);
    tt::Tensor loss;
    {
      auto autocast = args.precision.autocast(args.device.type);  // --precision bf16: the forward in mixed precision
      tt::Tensor logits = gpt(x);
      loss = tt::F::cross_entropy(logits.reshape({-1, vocab.size()}), y.reshape({-1}));
    }
    examples::compute_gradients(optimizer, loss, /*max_norm=*/1.0);
    set_lr(step - 1, elapsed());
    optimizer.step();
    loss_avg.add(loss);  // on the device: no synchronization here
    const bool eval_now = step % args.eval_every == 0;
    if (eval_now) val = val_loss();
    bar.step(args.batch_size * T,
             [&] { return examples::ProgressBar::Metrics{{"loss", loss_avg.value()}, {"val loss", val}}; });
    if (eval_now && step != args.steps) {
      bar.set_metrics({{"loss", loss_avg.value()}, {"val loss", val}});
      bar.log();
    }
  }
  val = val_loss();
  bar.set_metrics({{"loss", loss_avg.value()}, {"val loss", val}});
  bar.finish();
  std::printf("trained %lld steps in %.1f s%s; validation loss %.3f -> %.3f\n", (long long)step, elapsed(),
              step < args.steps ? " (time limit)" : "", initial_val, val);

  // --- sample: the prompt, then sample_length characters drawn one at a time -------------------------
  tt::Generator gen(args.seed);
  tt::Tensor ids = tt::tensor(prompt, tt::Shape{1, int64_t(prompt.size())}, tt::kInt64).to(args.device);
  tt::Tensor out = gpt.generate(
      ids, args.sample_length,
      tt::nn::GenerateOptions().temperature(args.temperature).top_k(args.top_k).generator(&gen));
  std::vector<int64_t> all = out.select(0, 0).cpu().to_vector<int64_t>();
  const std::string continuation = vocab.decode(std::vector<int64_t>(all.begin() + int64_t(prompt.size()), all.end()));
  const bool tty = isatty(fileno(stdout)) != 0;
  std::printf("\nsample (temperature %g, top-k %lld; the prompt %s):\n", args.temperature, (long long)args.top_k,
              tty ? "in bold" : "between [ ]");
  std::printf("%s%s%s%s\n\n", tty ? "\033[1m" : "[", args.prompt.c_str(), tty ? "\033[0m" : "]", continuation.c_str());

  const double drop = (initial_val - val) / initial_val;
  examples::Verdict verdict;
  verdict.require(drop >= args.min_drop, examples::format("the validation loss fell by %.1f%%, less than %.1f%%",
                                                          100 * drop, 100 * args.min_drop));
  return verdict.finish(
      examples::format("the validation loss fell by %.1f%% (>= %.1f%%)", 100 * drop, 100 * args.min_drop));
}

int main(int argc, char** argv) {
  tt::relaunch_with_runtime_env(argv);  // OpenBLAS's kernels; a busy machine shared (Note [threading policy])
  const Args args = parse(argc, argv);
  // A tt::Error (an unreadable --text, say) ends the run with its message and status 2.
  return examples::run_main("train_char_lm", [&] { return train(args); });
}
