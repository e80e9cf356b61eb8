// What every milestone program shares: its verdict (one PASS/FAIL line with the measured number
// against the threshold, and the exit status), the common flags (--out, --threshold, --seed), and
// the figures a milestone saves (points with a decision boundary, a confusion matrix, a grid of
// small images). `tools/tt milestone` builds and runs the programs (tools/milestones.py holds their
// table, decides whose code runs and keeps the verdicts); see README.md's "Milestones" section.
//
//   milestones::Verdict v{"test accuracy", 0.95, milestones::kAtLeast, milestones::kPercent};
//   ... train ...
//   return v.finish(accuracy);   // prints "PASS: test accuracy 97.22% >= 95.00%", returns 0
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

#include "cli.h"
#include "progress.h"
#include "train_loop.h"

namespace milestones {

// Which side of the threshold passes.
enum Direction { kAtLeast, kAtMost };
// How the number is printed: a fraction as a percentage, bytes as KiB/MiB/GiB, or as it is.
enum Unit { kPercent, kBytes, kPlain };

// "97.22%", "12.5 MiB", "3.1e-07".
inline std::string format_value(double value, Unit unit) {
  if (unit == kPercent) return examples::format("%.2f%%", 100 * value);
  if (unit == kBytes) {
    const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    double v = value;
    while (std::fabs(v) >= 1024 && i < 4) v /= 1024, ++i;
    return i == 0 ? examples::format("%.0f B", v) : examples::format("%.1f %s", v, names[i]);
  }
  return examples::format("%.3g", value);
}

// Whether `value` passes `threshold` in `direction` (NaN never passes).
inline bool passes(double value, double threshold, Direction direction) {
  if (std::isnan(value)) return false;
  return direction == kAtLeast ? value >= threshold : value <= threshold;
}

// The verdict line: "PASS: what 97.22% >= 95.00%" or "FAIL: what 93.10% < 95.00% (note)".
inline std::string verdict_line(const std::string& what, double value, double threshold, Direction direction,
                                Unit unit, const std::string& note = "") {
  const bool ok = passes(value, threshold, direction);
  const char* op = direction == kAtLeast ? (ok ? ">=" : "<") : (ok ? "<=" : ">");
  std::string line = examples::format("%s: %s %s %s %s", ok ? "PASS" : "FAIL", what.c_str(),
                                      format_value(value, unit).c_str(), op, format_value(threshold, unit).c_str());
  if (!note.empty()) line += " (" + note + ")";
  return line;
}

// A milestone's one number and its threshold. finish() prints the verdict line and returns the
// exit status (0 pass, 1 fail). require() adds a condition that must also hold (a checkpoint, a
// second measurement): a failed one turns the verdict into FAIL and is named in the line.
class Verdict {
 public:
  Verdict(std::string what, double threshold, Direction direction, Unit unit)
      : what_(std::move(what)), threshold_(threshold), direction_(direction), unit_(unit) {}

  double threshold() const { return threshold_; }
  // --threshold: the tests force a failure with one no run can meet.
  void add_option(examples::Cli& cli) {
    cli.option("--threshold", threshold_, "X", "the number the milestone must reach (" + what_ + ")");
  }
  void require(bool holds, const std::string& failure) {
    if (!holds) failures_.push_back(failure);
  }
  // Whether `value` passes and every requirement held.
  bool ok(double value) const { return failures_.empty() && passes(value, threshold_, direction_); }
  // The verdict line for `value`: the number against the threshold, then the failed requirements
  // ("FAIL: accuracy 100.00% >= 100.00% (XOR was learned)": the number held, a requirement did not).
  std::string line(double value) const {
    std::string note;
    for (const std::string& f : failures_) note += (note.empty() ? "" : "; ") + f;
    std::string text = verdict_line(what_, value, threshold_, direction_, unit_, note);
    if (!ok(value) && text.rfind("PASS", 0) == 0) text.replace(0, 4, "FAIL");
    return text;
  }
  // Prints line(value) and returns the exit status: 0 pass, 1 fail.
  int finish(double value) const {
    std::printf("%s\n", line(value).c_str());
    std::fflush(stdout);
    return ok(value) ? 0 : 1;
  }

 private:
  std::string what_;
  double threshold_;
  Direction direction_;
  Unit unit_;
  std::vector<std::string> failures_;
};

// The flags every milestone takes besides its own: --out DIR (where the PNG goes) and --seed.
struct Common {
  std::string out;
  uint64_t seed = 0;
  void add_options(examples::Cli& cli) {
    cli.option("--out", out, "DIR", "where the figure goes");
    cli.option("--seed", seed, "S", "seed of the data and the weights");
  }
  // out/name, creating out.
  std::string path(const std::string& name) const;
};

// --- figures -------------------------------------------------------------------------------------

// Points of two or more classes in the plane, and the regions a classifier gives them: predict
// maps a batch of points [P, 2] (float32) to class ids [P] (int64).
struct ScatterPanel {
  std::string title;
  tt::Tensor points;  // [N, 2] float
  tt::Tensor labels;  // [N] int64
  std::function<tt::Tensor(const tt::Tensor&)> predict;
};
// One PNG with the panels side by side (each about 360 px square), regions shaded lightly in each
// class's colour, the points on top (a wrong prediction ringed in black). Each panel needs >= 1 point.
void save_decision_boundaries(const std::string& path, const std::vector<ScatterPanel>& panels,
                              const std::string& title);

// A confusion matrix (rows: true class, columns: predicted), counts written in the cells.
void save_confusion_matrix(const std::string& path, const tt::Tensor& truth, const tt::Tensor& predicted,
                           const std::vector<std::string>& class_names, const std::string& title);

// Small greyscale images [N, 1, H, W] (values in [0, 1]), N >= 1, in a grid, each captioned by the
// caller ("7"; digits writes "7 as 1" for a wrong answer), the captions flagged `wrong` in red.
void save_image_grid(const std::string& path, const tt::Tensor& images, const std::vector<std::string>& captions,
                     const std::vector<bool>& wrong, const std::string& title);

}  // namespace milestones
