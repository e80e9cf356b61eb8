// Milestone 1986, an MLP reads handwritten digits: the 1,797 8x8 digits scikit-learn ships (from
// UCI's optdigits; Debian's python3-sklearn), split 80/20, learned by a multi-layer perceptron
// trained with backpropagation and minibatches. Modules 01-08, the data loader's shuffle included.
//
//   milestone_digits [--epochs N] [--hidden H] [--batch-size B] [--lr LR] [--data PATH]
//                    [--threshold ACC] [--out DIR] [--seed S]
#include <cstdio>

#include "milestone.h"

namespace {

struct Args {
  int64_t epochs = 30;
  int64_t hidden = 64;
  int64_t batch_size = 32;
  double lr = 3e-3;
  std::string data = tt::data::kDigitsPath;
  milestones::Common common{"runs/milestones/digits"};
};

}  // namespace

int main(int argc, char** argv) {
  tt::relaunch_with_runtime_env(argv);
  Args args;
  milestones::Verdict verdict("test accuracy on the 8x8 digits", 0.95, milestones::kAtLeast, milestones::kPercent);
  examples::Cli cli("milestone_digits",
                    "1986, an MLP on handwritten digits: 64 pixels -> H -> H -> 10 (ReLU), AdamW, minibatches of\n"
                    "B shuffled each epoch; passes at 95% on the held-out fifth. Saves a confusion matrix and\n"
                    "the first test digits with the model's answers.\n");
  cli.option("--epochs", args.epochs, "N", "passes over the training set");
  cli.option("--hidden", args.hidden, "H", "units per hidden layer");
  cli.option("--batch-size", args.batch_size, "B", "examples per step");
  cli.option("--lr", args.lr, "LR", "AdamW's learning rate");
  cli.option("--data", args.data, "PATH", "the digits file (Debian: python3-sklearn)");
  verdict.add_option(cli);
  args.common.add_options(cli);
  cli.parse(argc, argv);
  if (args.epochs < 1 || args.hidden < 1 || args.batch_size < 1 || !(args.lr > 0))
    cli.fail("--epochs, --hidden, --batch-size and --lr must be positive");
  return examples::run_main("milestone_digits", [&] {
    tt::manual_seed(args.common.seed);
    const tt::data::ImageSet digits = tt::data::load_digits(args.data);
    const int64_t n = digits.images.size(0);
    tt::data::TensorDataset all(digits.images.reshape({n, 64}), digits.labels);
    const tt::data::TrainTestSplit split = tt::data::train_test_split(all, 0.2, args.common.seed);
    std::printf("data: %s: %lld images of 8x8, %zu to train on, %zu held out\n", args.data.c_str(), (long long)n,
                split.train->size(), split.test->size());
    tt::data::DataLoader loader(
        split.train, tt::data::DataLoaderOptions().batch_size(args.batch_size).shuffle(true).seed(args.common.seed));

    using namespace tt::nn;
    auto model = std::make_shared<Sequential>(Linear(64, args.hidden), ReLU(), Linear(args.hidden, args.hidden), ReLU(),
                                              Linear(args.hidden, 10));
    tt::optim::AdamW optimizer(model->parameters(), tt::optim::AdamWOptions(args.lr).weight_decay(1e-4));
    const tt::Tensor test_x = split.test->data(), test_y = split.test->targets();
    auto predict = [&](const tt::Tensor& x) {
      examples::EvalScope eval(*model);
      return model->forward(x).argmax(1);
    };
    double test_acc = 0;
    for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
      examples::ProgressBar bar(examples::format("epoch %lld/%lld", (long long)epoch, (long long)args.epochs),
                                int64_t(loader.size()));
      double loss_sum = 0, seen = 0;
      for (const tt::data::Batch& batch : loader) {
        const tt::Tensor loss = tt::F::cross_entropy(model->forward(batch.data), batch.target);
        examples::compute_gradients(optimizer, loss);
        optimizer.step();
        const double rows = double(batch.data.size(0));
        loss_sum += loss.item<double>() * rows;
        seen += rows;
        bar.step(int64_t(rows), {{"loss", loss_sum / seen}});
      }
      test_acc = (predict(test_x) == test_y).to(tt::kFloat64).mean().item<double>();
      bar.set_metrics({{"loss", loss_sum / seen}, {"test_acc", 100 * test_acc}});
      bar.finish();
    }

    const tt::Tensor predicted = predict(test_x);
    const std::string confusion = args.common.path("digits_confusion.png");
    milestones::save_confusion_matrix(confusion, test_y, predicted, digits.class_names,
                                      examples::format("1986: an MLP reads digits, %.1f%% of %zu held out", 100 * test_acc,
                                                       split.test->size()));
    const int64_t shown = std::min<int64_t>(40, test_x.size(0));
    std::vector<std::string> captions;
    std::vector<bool> wrong;
    for (int64_t i = 0; i < shown; ++i) {
      const int64_t truth = test_y[i].item<int64_t>(), guess = predicted[i].item<int64_t>();
      captions.push_back(truth == guess ? std::to_string(guess)
                                        : std::to_string(truth) + " as " + std::to_string(guess));
      wrong.push_back(truth != guess);
    }
    const std::string grid = args.common.path("digits_samples.png");
    milestones::save_image_grid(grid, test_x.slice(0, 0, shown).reshape({shown, 1, 8, 8}), captions, wrong,
                                "the first held-out digits and the model's answers");
    std::printf("figures: %s, %s\n", confusion.c_str(), grid.c_str());
    return verdict.finish(test_acc);
  });
}
