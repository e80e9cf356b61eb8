// A one-line progress bar for the training examples: a bar, the step count, running metrics
// and the throughput in samples per second, redrawn in place on a terminal. When stdout is not a
// terminal (a log, CI), only the finished line of each phase is printed, so logs stay short.
//
//   ProgressBar bar("epoch 3/20", steps_per_epoch);
//   for (...) { ...; bar.step(batch_size, {{"loss", loss}, {"acc", 100 * acc}}); }
//   bar.finish();   // prints the final line (and a newline)
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace examples {

class ProgressBar {
 public:
  using Metrics = std::vector<std::pair<std::string, double>>;

  ProgressBar(std::string label, int64_t total_steps)
      : label_(std::move(label)), total_(total_steps), start_(Clock::now()), tty_(isatty(fileno(stdout)) != 0) {}

  // One step done, covering `samples` samples; metrics are shown as given (latest values).
  void step(int64_t samples, const Metrics& metrics) {
    ++done_;
    samples_ += samples;
    metrics_ = metrics;
    double now = seconds();
    if (tty_ && (now - last_draw_ > 0.05 || done_ == total_)) {
      last_draw_ = now;
      draw(false);
    }
  }

  // Replaces the shown metrics without counting a step (e.g. the epoch's final averages).
  void set_metrics(const Metrics& metrics) { metrics_ = metrics; }

  void finish() { draw(true); }

  double samples_per_second() const {
    double s = seconds();
    return s > 0 ? double(samples_) / s : 0.0;
  }

 private:
  using Clock = std::chrono::steady_clock;

  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  void draw(bool final_line) {
    const int width = 24;
    int filled = total_ > 0 ? int(width * done_ / total_) : width;
    std::string bar(size_t(filled), '#');
    bar += std::string(size_t(width - filled), '.');
    std::string text = label_ + " [" + bar + "] " + std::to_string(done_) + "/" + std::to_string(total_);
    char buf[64];
    for (const auto& [name, value] : metrics_) {
      std::snprintf(buf, sizeof buf, "  %s %.4g", name.c_str(), value);
      text += buf;
    }
    std::snprintf(buf, sizeof buf, "  %.0f samples/s", samples_per_second());
    text += buf;
    if (tty_) {
      std::printf("\r%s\033[K%s", text.c_str(), final_line ? "\n" : "");
    } else if (final_line) {
      std::printf("%s\n", text.c_str());
    }
    std::fflush(stdout);
  }

  std::string label_;
  int64_t total_, done_ = 0, samples_ = 0;
  Clock::time_point start_;
  double last_draw_ = -1.0;
  bool tty_;
  Metrics metrics_;
};

}  // namespace examples
