// Milestone 1986, XOR solved by backpropagation: the problem a perceptron cannot learn (milestone
// perceptron), learned by a two-layer MLP whose hidden layer is trained through the chain rule
// (Rumelhart, Hinton and Williams). Modules 01-08: tensors, matmul, activations, autograd, layers,
// the loss, the optimizer and the loop.
//
//   milestone_xor [--steps N] [--hidden H] [--lr LR] [--threshold ACC] [--out DIR] [--seed S]
#include <cstdio>

#include "milestone.h"

namespace {

struct Args {
  int64_t steps = 300;
  int64_t hidden = 4;
  double lr = 0.05;
  milestones::Common common{"runs/milestones/xor"};
};

}  // namespace

int main(int argc, char** argv) {
  tt::relaunch_with_runtime_env(argv);
  Args args;
  milestones::Verdict verdict("accuracy on the four XOR points", 1.0, milestones::kAtLeast, milestones::kPercent);
  examples::Cli cli("milestone_xor",
                    "1986, backpropagation: a 2-layer MLP (2 -> H -> 2, tanh) learns XOR with Adam on the four\n"
                    "points; passes when all four are right. Saves its decision regions and loss curve.\n");
  cli.option("--steps", args.steps, "N", "full-batch training steps");
  cli.option("--hidden", args.hidden, "H", "hidden units");
  cli.option("--lr", args.lr, "LR", "Adam's learning rate");
  verdict.add_option(cli);
  args.common.add_options(cli);
  cli.parse(argc, argv);
  if (args.steps < 1 || args.hidden < 1 || !(args.lr > 0)) cli.fail("--steps, --hidden and --lr must be positive");
  return examples::run_main("milestone_xor", [&] {
    tt::manual_seed(args.common.seed);
    const tt::Tensor x = tt::tensor({{0.0, 0.0}, {0.0, 1.0}, {1.0, 0.0}, {1.0, 1.0}});
    const tt::Tensor y = tt::tensor({0, 1, 1, 0});
    using namespace tt::nn;
    auto model = std::make_shared<Sequential>(Linear(2, args.hidden), Tanh(), Linear(args.hidden, 2));
    tt::optim::Adam optimizer(model->parameters(), tt::optim::AdamOptions(args.lr));
    std::vector<double> steps, losses;
    double acc = 0;
    examples::ProgressBar bar("XOR", args.steps, "points");
    for (int64_t s = 1; s <= args.steps; ++s) {
      const tt::Tensor logits = model->forward(x);
      const tt::Tensor loss = tt::F::cross_entropy(logits, y);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      acc = (logits.argmax(1) == y).to(tt::kFloat64).mean().item<double>();
      steps.push_back(double(s));
      losses.push_back(loss.item<double>());
      bar.step(4, {{"loss", losses.back()}, {"acc", 100 * acc}});
    }
    bar.finish();
    auto predict = [&](const tt::Tensor& p) {
      tt::NoGradGuard no_grad;
      return model->forward(p).argmax(1);
    };
    acc = (predict(x) == y).to(tt::kFloat64).mean().item<double>();
    const tt::Tensor probs = tt::F::softmax(model->forward(x).detach(), 1);
    for (int64_t i = 0; i < 4; ++i)
      std::printf("  %g xor %g = %lld: the model says %lld (p = %.3f)\n", x[i][0].item<double>(),
                  x[i][1].item<double>(), (long long)y[i].item<int64_t>(), (long long)predict(x)[i].item<int64_t>(),
                  probs[i][y[i].item<int64_t>()].item<double>());

    // The figure: the regions the hidden layer carves (no line could), and the loss going down.
    tt::Generator gen;
    gen.manual_seed(args.common.seed);
    const tt::Tensor cloud = x.unsqueeze(0).expand({25, 4, 2}).reshape({100, 2}) + tt::randn({100, 2}, {}, &gen) * 0.08;
    const tt::Tensor cloud_labels = y.unsqueeze(0).expand({25, 4}).reshape({100});
    const std::string png = args.common.path("xor.png");
    milestones::save_decision_boundaries(
        png, {{examples::format("%.0f%% of the 4 points right (drawn 25 times each, with noise)", 100 * acc), cloud,
               cloud_labels, predict}},
        "1986: backpropagation learns XOR");
    const std::string curve = args.common.path("xor_loss.png");
    tt::viz::LinePlotOptions plot;
    plot.title = "XOR: cross-entropy while training";
    plot.x_label = "step";
    plot.y_label = "loss";
    plot.log_y = true;
    tt::viz::save_line_plot(curve, {{"training loss", steps, losses}}, plot);
    std::printf("figures: %s, %s\n", png.c_str(), curve.c_str());
    return verdict.finish(acc);
  });
}
