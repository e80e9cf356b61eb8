// Pieces of the training loop the examples share: the GPT size flags, the parameter count, the
// warmup + cosine learning rate, the gradients of a step (with clipping), the running loss,
// evaluation as a scope, the checkpoint round trip (save, reload into a fresh model, compare;
// data-parallel aware) and the final OK/FAIL verdict with its exit status.
//
//   auto schedule = examples::warmup_cosine(optimizer, steps, warmup, lr / 20);
//   examples::RunningLoss loss_avg;
//   for (...) {
//     tt::Tensor loss = ...;
//     examples::compute_gradients(optimizer, loss, /*max_norm=*/1.0);
//     optimizer.step();
//     schedule->step();
//     loss_avg.add(loss);   // stays on the loss's device; loss_avg.value() reads it back
//   }
//   examples::Verdict verdict;
//   verdict.require(drop >= 0.3, examples::format("the loss fell by %.1f%% only", 100 * drop));
//   return verdict.finish("the loss fell enough");   // 0 when every requirement held, else 1
#pragma once

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "cli.h"

namespace examples {

// printf into a std::string.
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string out(size_t(n > 0 ? n : 0), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, again);
  va_end(again);
  return out;
}

// --- the model ---------------------------------------------------------------------------------

// The GPT both GPT examples train, and its flags: the size (--layers N --embd E --heads H), where
// positions come from (--positions learned|sinusoidal|rotary, module 14's section 11) and QK-norm
// (--qk-norm).
struct GptSize {
  int64_t layers, embd, heads;
  std::string positions = "learned";
  bool qk_norm = false;

  void add_options(Cli& cli) {
    cli.option("--layers", layers, "N", "transformer blocks");
    cli.option("--embd", embd, "E", "embedding width");
    cli.option("--heads", heads, "H", "attention heads per block");
    cli.choice("--positions", positions, {"learned", "sinusoidal", "rotary"},
               "a learned table, a fixed sin/cos one, or RoPE in attention");
    cli.flag("--qk-norm", qk_norm, "RMSNorm on each head's queries and keys");
  }
  bool positive() const { return layers >= 1 && embd >= 1 && heads >= 1; }
  // Checks what the flags alone cannot (after positive()): rotary needs an even head dim.
  void check(const Cli& cli) const {
    if (embd % heads != 0) cli.fail(format("--embd (%lld) must be divisible by --heads (%lld)", (long long)embd,
                                           (long long)heads));
    if (positions == "rotary" && (embd / heads) % 2 != 0)
      cli.fail(format("--positions rotary needs an even head dim, got --embd %lld / --heads %lld = %lld",
                      (long long)embd, (long long)heads, (long long)(embd / heads)));
  }
  tt::nn::GPTOptions options(int64_t vocab_size, int64_t context) const {
    return tt::nn::GPTOptions(vocab_size, context)
        .n_layer(layers)
        .n_embd(embd)
        .n_head(heads)
        .positions(tt::nn::position_encoding(positions))
        .qk_norm(qk_norm);
  }
  // "GPT, 2 layers, 4 heads, embedding 64, context 16", then ", rotary positions", ", QK-norm" when
  // they are not the defaults.
  std::string describe(int64_t context) const {
    return format("GPT, %lld layers, %lld heads, embedding %lld, context %lld%s%s", (long long)layers,
                  (long long)heads, (long long)embd, (long long)context,
                  positions == "learned" ? "" : (", " + positions + " positions").c_str(), qk_norm ? ", QK-norm" : "");
  }
};

// --precision fp32|bf16: bf16 runs each forward and loss under tt::AutocastGuard (the matrix
// products in bfloat16, softmax, norms and the loss in float32; parameters, gradients and the
// optimizer stay float32). See modules/15_mixed_precision.
struct Precision {
  std::string value = "fp32";

  void add_option(Cli& cli) {
    cli.choice("--precision", value, {"fp32", "bf16"}, "fp32, or bf16 autocast (mixed precision)");
  }
  bool bf16() const { return value == "bf16"; }
  // The guard for one forward: autocast for ops on `device` tensors when --precision bf16, a no-op
  // guard otherwise.
  tt::AutocastGuard autocast(tt::DeviceType device = tt::kCPU) const {
    return tt::AutocastGuard(device, tt::kBFloat16, bf16());
  }
};

// The number of scalars in a module's parameters.
inline int64_t count_parameters(const tt::nn::Module& model) {
  int64_t n = 0;
  for (const tt::Tensor& p : model.parameters()) n += p.numel();
  return n;
}

// --- the step ------------------------------------------------------------------------------------

// The learning rate of every example: a linear warmup from lr / 10 over `warmup` steps, then half
// a cosine down to `lr_min` over the rest of `steps` (at least one step). step() it after each
// optimizer step, or read its closed form lr_at(step, lr).
inline std::unique_ptr<tt::optim::LinearWarmup> warmup_cosine(tt::optim::Optimizer& optimizer, int64_t steps,
                                                              int64_t warmup, double lr_min = 0.0) {
  auto cosine = std::make_shared<tt::optim::CosineAnnealingLR>(optimizer, std::max<int64_t>(1, steps - warmup), lr_min);
  return std::make_unique<tt::optim::LinearWarmup>(optimizer, warmup, 0.1, cosine);
}

// tt::nn::utils::clip_grad_norm_(parameters, max_norm) (the 2-norm) with nothing read back to the
// host: the total norm stays a 0-d float32 tensor on the gradients' device, and every gradient is
// multiplied there by min(1, max_norm / (norm + 1e-6)), so a norm below max_norm leaves the
// gradients exactly as they were. (clip_grad_norm_ returns the norm as a double: one read, and
// on a GPU one synchronization, per gradient per step.) Returns the norm (undefined: no gradient).
inline tt::Tensor clip_grad_norm_on_device(const std::vector<tt::Tensor>& parameters, double max_norm) {
  tt::NoGradGuard no_grad;
  std::vector<tt::Tensor> grads;
  tt::Tensor sum_of_squares;  // [] float32
  for (const tt::Tensor& p : parameters) {
    const tt::Tensor g = p.grad();
    if (!g.defined()) continue;
    grads.push_back(g);
    const tt::Tensor s = (g * g).sum().to(tt::kFloat32);
    sum_of_squares = sum_of_squares.defined() ? sum_of_squares + s : s;
  }
  if (grads.empty()) return tt::Tensor();
  const tt::Tensor norm = sum_of_squares.sqrt();
  const tt::Tensor coef = tt::minimum(max_norm / (norm + 1e-6), tt::ones_like(norm));
  for (tt::Tensor g : grads) g.mul_(coef.to(g.dtype()));
  return norm;
}

// What comes before optimizer.step(): fresh gradients of `loss`, their total norm clipped to
// `max_norm` (no clipping when 0) where they live.
inline void compute_gradients(tt::optim::Optimizer& optimizer, const tt::Tensor& loss, double max_norm = 0.0) {
  optimizer.zero_grad();
  loss.backward();
  if (max_norm > 0) clip_grad_norm_on_device(optimizer.parameters(), max_norm);
}

// The training loss for the progress bar: an exponential moving average over about the last 20
// steps, starting at the first loss. add(double) keeps it on the host; add(tensor) keeps it where
// the loss lives (on a GPU: two small kernels queued, nothing read back), so a step costs no
// synchronization and value() reads the average back only when it is shown. Use one or the other.
class RunningLoss {
 public:
  double add(double loss) {
    value_ = count_++ == 0 ? loss : 0.95 * value_ + 0.05 * loss;
    return value_;
  }
  void add(const tt::Tensor& loss) {  // loss: a 0-d tensor, any device
    tt::NoGradGuard no_grad;
    const tt::Tensor l = loss.detach().to(tt::kFloat32);
    average_ = count_++ == 0 ? l.clone() : average_ * 0.95 + l * 0.05;
  }
  double value() const { return average_.defined() ? average_.item<double>() : value_; }

 private:
  double value_ = 0.0;
  tt::Tensor average_;  // add(tensor): the average, 0-d float32 on the loss's device
  int64_t count_ = 0;
};

// Evaluation as a scope: no autograd graph, the module in eval mode (no dropout), and its mode
// restored at the end.
class EvalScope {
 public:
  explicit EvalScope(tt::nn::Module& model) : model_(model), was_training_(model.is_training()) { model.eval(); }
  ~EvalScope() { model_.train(was_training_); }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  tt::NoGradGuard no_grad_;
  tt::nn::Module& model_;
  bool was_training_;
};

// --- the end of a run ------------------------------------------------------------------------------

// The outputs of the trained model and of its reloaded copy, and their largest difference (0 when
// the checkpoint reloads exactly).
struct ReloadCheck {
  tt::Tensor before, after;
  double max_diff;
};

// A module held by value or by shared_ptr.
template <class M>
M& module_of(M& model) {
  return model;
}
template <class M>
M& module_of(std::shared_ptr<M>& model) {
  return *model;
}

// Saves `model` to `path` (with `metadata`), builds a fresh model with make_model() under seed + 1
// (so that its own weights differ), loads the file into it, and compares outputs(model) with
// outputs(fresh model). make_model returns a module or a shared_ptr to one. In a data-parallel run
// (tt::distributed) rank 0 alone writes the file (tt::save writes a temporary file and renames it,
// so no reader ever sees half a file) and reloads it; the other ranks, which may be on machines
// that cannot see rank 0's disk, receive its verdict. Every rank builds the fresh model (the same
// random draws everywhere) and returns the same ReloadCheck.
template <class Model, class Make, class Outputs>
ReloadCheck checkpoint_round_trip(Model& model, const std::string& path,
                                  const std::map<std::string, std::string>& metadata, uint64_t seed, Make make_model,
                                  Outputs outputs) {
  ReloadCheck check;
  check.before = outputs(model);
  const bool writer = tt::distributed::get_rank() == 0;
  if (writer) tt::save(module_of(model), path, metadata);
  tt::manual_seed(seed + 1);  // a differently initialized model...
  auto fresh = make_model();
  auto& reloaded = module_of(fresh);
  if (writer) tt::load(reloaded, path);  // ...takes the saved weights
  check.after = outputs(reloaded);
  tt::Tensor diff = tt::full({1}, writer ? (check.after - check.before).abs().max().item<double>() : 0.0,
                             tt::kFloat64);
  tt::distributed::broadcast(diff, 0);  // rank 0's verdict on every rank (alone: unchanged)
  check.max_diff = diff.item<double>();
  return check;
}

// The verdict that ends a run: each requirement that does not hold prints "FAIL: <why>"; when all
// hold, finish() prints "OK: <summary>". The exit status is 0 or 1.
class Verdict {
 public:
  void require(bool holds, const std::string& failure) {
    if (holds) return;
    std::printf("FAIL: %s\n", failure.c_str());
    passed_ = false;
  }
  int finish(const std::string& success) const {
    if (!passed_) return 1;
    std::printf("OK: %s\n", success.c_str());
    return 0;
  }

 private:
  bool passed_ = true;
};

// The verdict of a run with an accuracy target and a checkpoint: fails when the reloaded model
// differs, or when `what` ("held-out accuracy") is below the target; both are percentages.
inline int accuracy_verdict(const std::string& what, double accuracy, double target, bool reloads_exactly) {
  Verdict verdict;
  verdict.require(reloads_exactly, "the reloaded model differs from the trained one");
  verdict.require(accuracy >= target,
                  format("%s %.2f%% is below the target %.2f%%", what.c_str(), 100 * accuracy, 100 * target));
  return verdict.finish(
      format("%s %.2f%% >= %.2f%%, checkpoint reloads exactly", what.c_str(), 100 * accuracy, 100 * target));
}

}  // namespace examples
