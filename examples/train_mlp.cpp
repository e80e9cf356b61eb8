// train_mlp: module 08's milestone, a model that learns. Trains a small MLP on a built-in dataset
// (three interleaved spirals by default, or the digits-like pattern set) with AdamW, a warmup +
// cosine learning rate and cross-entropy; shows a progress bar with loss, accuracy and samples per
// second; saves a checkpoint, reloads it into a fresh model and checks that the reloaded model
// gives bit-identical outputs and the same accuracy. Exits with status 1 if the held-out
// accuracy is below the target (97%) or the reload differs. The model, each batch, the loss and
// the running sums the bar shows live on --device; the host reads them back only to draw the bar.
//
//   train_mlp [--data spirals|digits] [--epochs N] [--batch-size B] [--lr LR] [--hidden H]
//             [--seed S] [--checkpoint PATH] [--target ACC] [--precision fp32|bf16]
//             [--device cpu|cuda|auto]
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <tinytorch/tinytorch.h>

#include "cli.h"
#include "progress.h"
#include "train_loop.h"

namespace {

struct Args {
  std::string data = "spirals";
  int epochs = 40;
  int64_t batch_size = 64;
  double lr = 1e-2;
  int64_t hidden = 128;
  uint64_t seed = 0;
  std::string checkpoint = "train_mlp.safetensors";
  double target = 0.97;
  examples::Precision precision;
  std::string device_flag = "cpu";
  tt::Device device;  // what --device resolved to
};

Args parse(int argc, char** argv) {
  Args a;
  examples::Cli cli("train_mlp",
                    "Trains an MLP on a built-in dataset, saves a checkpoint, reloads it and checks the\n"
                    "reloaded model; exits 1 if held-out accuracy < target (default 0.97).\n");
  cli.choice("--data", a.data, {"spirals", "digits"}, "the dataset");
  cli.option("--epochs", a.epochs, "N", "passes over the training set");
  cli.option("--batch-size", a.batch_size, "B", "examples per step");
  cli.option("--lr", a.lr, "LR", "AdamW's peak learning rate");
  cli.option("--hidden", a.hidden, "H", "width of the two hidden layers");
  cli.option("--seed", a.seed, "S", "seed of the data, the split, the weights and the shuffling");
  cli.option("--checkpoint", a.checkpoint, "PATH", "where to save the trained model");
  cli.option("--target", a.target, "ACC", "held-out accuracy to reach");
  a.precision.add_option(cli);
  cli.device_option(a.device_flag);
  cli.parse(argc, argv);
  if (a.epochs < 1 || a.batch_size < 1 || a.hidden < 1 || !(a.lr > 0))
    cli.fail("--epochs, --batch-size, --hidden and --lr must be positive");
  a.device = cli.device(a.device_flag);
  return a;
}

// in -> hidden -> hidden -> classes, ReLU between, on `device`.
std::shared_ptr<tt::nn::Sequential> make_model(int64_t in, int64_t hidden, int64_t classes, const tt::Device& device) {
  using namespace tt::nn;
  auto model = std::make_shared<Sequential>(Linear(in, hidden), ReLU(), Linear(hidden, hidden), ReLU(),
                                            Linear(hidden, classes));
  model->to(device);
  return model;
}

// The number of rows where argmax(logits) [N, C] equals labels [N], as a 0-d float64 tensor on
// their device (nothing read back).
tt::Tensor correct_count(const tt::Tensor& logits, const tt::Tensor& labels) {
  return (logits.argmax(1) == labels).to(tt::kFloat64).sum();
}

// Accuracy of argmax(logits) against labels (read back to the host).
double accuracy(const tt::Tensor& logits, const tt::Tensor& labels) {
  return correct_count(logits, labels).item<double>() / double(labels.size(0));
}

}  // namespace

int train(const Args& args) {
  tt::manual_seed(args.seed);

  // --- data: a seeded dataset, split into train and held-out test ------------------------------
  std::shared_ptr<tt::data::TensorDataset> full = args.data == "spirals"
                                                      ? tt::data::make_spirals(1000, 3, 0.05, args.seed)
                                                      : tt::data::make_digits(300, 0.1, args.seed);
  tt::data::TrainTestSplit split = tt::data::train_test_split(*full, 0.2, args.seed);
  const int64_t features = full->data().size(1);
  const int64_t classes = full->targets().max().item<int64_t>() + 1;
  tt::data::DataLoader loader(split.train,
                              tt::data::DataLoaderOptions().batch_size(args.batch_size).shuffle(true).seed(args.seed));
  std::printf("data: %s, %zu train / %zu test examples, %lld features, %lld classes\n", args.data.c_str(),
              split.train->size(), split.test->size(), (long long)features, (long long)classes);

  // --- model, optimizer, schedule ---------------------------------------------------------------
  auto model = make_model(features, args.hidden, classes, args.device);
  std::cout << *model << "\n";
  tt::optim::AdamW optimizer(model->parameters(), tt::optim::AdamWOptions(args.lr).weight_decay(1e-4));
  const int64_t steps = int64_t(loader.size()) * args.epochs;
  auto schedule = examples::warmup_cosine(optimizer, steps, std::max<int64_t>(1, steps / 10));

  // --- train --------------------------------------------------------------------------------------
  const tt::Tensor test_x = split.test->data().to(args.device);
  const tt::Tensor test_y = split.test->targets().to(args.device);
  auto test_logits = [&](tt::nn::Sequential& m) {
    examples::EvalScope eval(m);
    auto autocast = args.precision.autocast(args.device.type);
    return m.forward(test_x);
  };
  const std::string device = examples::device_label(args.device);
  std::printf("device: %s\n", device.c_str());
  double test_acc = 0.0;
  model->train();
  for (int epoch = 1; epoch <= args.epochs; ++epoch) {
    examples::ProgressBar bar("epoch " + std::to_string(epoch) + "/" + std::to_string(args.epochs),
                              int64_t(loader.size()));
    bar.set_device(device);
    // The epoch's sums of loss * rows and of right answers, 0-d on the device; `seen` on the host.
    tt::Tensor loss_sum = tt::zeros({}, tt::TensorOptions().dtype(tt::kFloat64).device(args.device));
    tt::Tensor correct = loss_sum.clone();
    double seen = 0.0;
    for (const tt::data::Batch& batch : loader) {
      const tt::Tensor x = batch.data.to(args.device), y = batch.target.to(args.device);
      tt::Tensor logits, loss;
      {
        auto autocast = args.precision.autocast(args.device.type);  // --precision bf16: the forward in bf16
        logits = model->forward(x);
        loss = tt::F::cross_entropy(logits, y);
      }
      examples::compute_gradients(optimizer, loss);
      optimizer.step();
      schedule->step();
      const double n = double(x.size(0));
      {
        tt::NoGradGuard no_grad;
        loss_sum = loss_sum + loss.detach().to(tt::kFloat64) * n;
        correct = correct + correct_count(logits.detach(), y);
      }
      seen += n;
      bar.step(int64_t(n), [&] {  // read back only when the bar is redrawn
        return examples::ProgressBar::Metrics{{"loss", loss_sum.item<double>() / seen},
                                              {"acc", correct.item<double>() / seen},
                                              {"lr", schedule->get_last_lr()[0]}};
      });
    }
    test_acc = accuracy(test_logits(*model), test_y);
    bar.set_metrics(
        {{"loss", loss_sum.item<double>() / seen}, {"acc", correct.item<double>() / seen}, {"test_acc", test_acc}});
    bar.finish();
  }

  // --- checkpoint: save, reload into a fresh model, compare ----------------------------------------
  const examples::ReloadCheck reload = examples::checkpoint_round_trip(
      *model, args.checkpoint, {{"example", "train_mlp"}, {"data", args.data}}, args.seed,
      [&] { return make_model(features, args.hidden, classes, args.device); }, test_logits);
  const double reloaded_acc = accuracy(reload.after, test_y);
  std::printf("checkpoint: %s; reloaded model: test accuracy %.2f%% (before saving %.2f%%), max |logit diff| %g\n",
              args.checkpoint.c_str(), 100 * reloaded_acc, 100 * test_acc, reload.max_diff);

  return examples::accuracy_verdict("held-out accuracy", test_acc, args.target,
                                    reload.max_diff == 0.0 && reloaded_acc == test_acc);
}

int main(int argc, char** argv) {
  tt::relaunch_with_runtime_env(argv);  // OpenBLAS's kernels; a busy machine shared (Note [threading policy])
  const Args args = parse(argc, argv);
  // A tt::Error (a bad checkpoint path, say) ends the run with its message and status 2.
  return examples::run_main("train_mlp", [&] { return train(args); });
}
