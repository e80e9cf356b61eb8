// Milestone 1958, the perceptron: Rosenblatt's learning rule, written with module 01's tensors and
// no autograd, learns to split two clouds of points with a line (100% of the training points
// right), then fails on XOR, where no line can get more than 3 of the 4 corners right, and says so.
//
//   milestone_perceptron [--epochs N] [--threshold ACC] [--out DIR] [--seed S]
#include <cstdio>

#include "milestone.h"

namespace {

struct Args {
  int64_t epochs = 50;
  milestones::Common common{"runs/milestones/perceptron"};
};

// The perceptron: a weight per input and a bias; it answers 1 where w . x + b > 0, else 0.
struct Perceptron {
  tt::Tensor w = tt::zeros({2}), b = tt::zeros({});

  // points [P, 2] -> class ids [P] (int64): module 01's broadcasting multiply and row sums.
  tt::Tensor predict(const tt::Tensor& points) const { return ((points * w).sum(1) + b > 0).to(tt::kInt64); }

  // One pass of Rosenblatt's rule over the points in order: where a point is on the wrong side,
  // move the line toward it (w += y x, b += y, with y = +1 for class 1 and -1 for class 0).
  // Returns the number of mistakes made during the pass.
  int64_t epoch(const tt::Tensor& points, const std::vector<int64_t>& labels) {
    int64_t mistakes = 0;
    for (int64_t i = 0; i < points.size(0); ++i) {
      const tt::Tensor x = points.select(0, i);
      const double score = ((x * w).sum() + b).item<double>();
      const int64_t guess = score > 0 ? 1 : 0;
      if (guess == labels[size_t(i)]) continue;
      const double y = labels[size_t(i)] == 1 ? 1.0 : -1.0;
      w = w + x * y;
      b = b + y;
      ++mistakes;
    }
    return mistakes;
  }

  double accuracy(const tt::Tensor& points, const tt::Tensor& labels) const {
    return (predict(points) == labels).to(tt::kFloat64).mean().item<double>();
  }
};

std::vector<int64_t> to_vector(const tt::Tensor& labels) {
  const tt::Tensor c = labels.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// Two clouds of n points each around (-1.5, -1) and (1.5, 1); points closer than 0.25 to the line
// between them are drawn again, so that a line separates the classes with a margin.
std::pair<tt::Tensor, tt::Tensor> two_clouds(int64_t n, tt::Generator& gen) {
  std::vector<float> xy;
  std::vector<int64_t> labels;
  while (int64_t(labels.size()) < 2 * n) {
    const int64_t c = int64_t(labels.size()) % 2;
    const tt::Tensor p = tt::randn({2}, {}, &gen) * 0.7;
    const float x = p[0].item<float>() + (c ? 1.5f : -1.5f), y = p[1].item<float>() + (c ? 1.0f : -1.0f);
    const float side = (1.5f * x + 1.0f * y) / 1.8028f;  // signed distance to the line 1.5x + y = 0
    if ((c ? side : -side) < 0.25f) continue;
    xy.insert(xy.end(), {x, y});
    labels.push_back(c);
  }
  return {tt::tensor(xy, {2 * n, 2}), tt::tensor(labels, {2 * n})};
}

// XOR: noisy points around the four corners (0,0) (1,1) -> 0 and (0,1) (1,0) -> 1.
std::pair<tt::Tensor, tt::Tensor> xor_points(int64_t per_corner, tt::Generator& gen) {
  const tt::Tensor noise = tt::randn({4 * per_corner, 2}, {}, &gen) * 0.08;
  std::vector<float> corners;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < 4 * per_corner; ++i) {
    const int64_t a = i % 2, c = (i / 2) % 2;
    corners.insert(corners.end(), {float(a), float(c)});
    labels.push_back(a ^ c);
  }
  return {tt::tensor(corners, {4 * per_corner, 2}) + noise, tt::tensor(labels, {4 * per_corner})};
}

}  // namespace

int main(int argc, char** argv) {
  tt::relaunch_with_runtime_env(argv);  // OpenBLAS's kernels; a busy machine shared (Note [threading policy])
  Args args;
  milestones::Verdict verdict("training accuracy on two separable clouds", 1.0, milestones::kAtLeast,
                              milestones::kPercent);
  examples::Cli cli("milestone_perceptron",
                    "1958, Rosenblatt's perceptron: learns a line that splits two clouds of points (passes at 100%\n"
                    "of the training points), then fails on XOR, as Minsky and Papert showed it must.\n");
  cli.option("--epochs", args.epochs, "N", "passes of the learning rule over the points (each task)");
  verdict.add_option(cli);
  args.common.add_options(cli);
  cli.parse(argc, argv);
  if (args.epochs < 1) cli.fail("--epochs must be positive");
  return examples::run_main("milestone_perceptron", [&] {
    tt::Generator gen;
    gen.manual_seed(args.common.seed);
    auto [clouds, cloud_labels] = two_clouds(100, gen);
    auto [xor_x, xor_labels] = xor_points(25, gen);
    const std::vector<int64_t> cloud_list = to_vector(cloud_labels), xor_list = to_vector(xor_labels);

    Perceptron line;
    int64_t converged_at = 0;
    {
      examples::ProgressBar bar("two clouds", args.epochs, "points");
      for (int64_t e = 1; e <= args.epochs; ++e) {
        const int64_t mistakes = line.epoch(clouds, cloud_list);
        bar.step(clouds.size(0), {{"mistakes", double(mistakes)}});
        if (mistakes == 0) {
          converged_at = e;
          break;
        }
      }
      bar.finish();
    }
    const double cloud_acc = line.accuracy(clouds, cloud_labels);
    if (converged_at)
      std::printf("two clouds: a pass without a mistake after %lld epochs: the line w = (%.2f, %.2f), b = %.2f\n",
                  (long long)converged_at, line.w[0].item<double>(), line.w[1].item<double>(), line.b.item<double>());
    std::printf("two clouds: training accuracy %.2f%%\n", 100 * cloud_acc);

    Perceptron xor_line;
    double xor_best = 0;
    {
      examples::ProgressBar bar("XOR", args.epochs, "points");
      for (int64_t e = 1; e <= args.epochs; ++e) {
        const int64_t mistakes = xor_line.epoch(xor_x, xor_list);
        xor_best = std::max(xor_best, xor_line.accuracy(xor_x, xor_labels));
        bar.step(xor_x.size(0), {{"mistakes", double(mistakes)}});
      }
      bar.finish();
    }
    const double xor_last = xor_line.accuracy(xor_x, xor_labels);
    std::printf("XOR: still wrong after %lld epochs: %.2f%% right now, %.2f%% at best. No line puts (0,1) and\n"
                "(1,0) on one side and (0,0) and (1,1) on the other, so a perceptron gets 3 corners of 4 at most.\n"
                "That is Minsky and Papert's point (1969); a hidden layer trained by backpropagation (milestone\n"
                "xor) is the way out.\n",
                (long long)args.epochs, 100 * xor_last, 100 * xor_best);

    const std::string png = args.common.path("perceptron.png");
    milestones::save_decision_boundaries(
        png,
        {{examples::format("two clouds: %.0f%% right", 100 * cloud_acc), clouds, cloud_labels,
          [&](const tt::Tensor& p) { return line.predict(p); }},
         {examples::format("XOR: %.0f%% right (at best %.0f%%)", 100 * xor_last, 100 * xor_best), xor_x, xor_labels,
          [&](const tt::Tensor& p) { return xor_line.predict(p); }}},
        "1958: the perceptron learns a line");
    std::printf("figure: %s\n", png.c_str());
    verdict.require(xor_best <= 0.75 + 1e-9,
                    examples::format("XOR %.2f%% right, more than a line can get", 100 * xor_best));
    return verdict.finish(cloud_acc);
  });
}
