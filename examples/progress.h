// A one-line progress bar for the training examples: a bar, the step count, running metrics,
// the throughput (samples per second, or another unit), the time left and the device the run
// trains on, redrawn in place on a terminal. When stdout is not a terminal (a log, CI), only the
// lines passed to log() and the finished line are printed, so logs stay short.
//
//   ProgressBar bar("epoch 3/20", steps_per_epoch);          // or ("train", steps, "tokens")
//   bar.set_device(examples::device_label(device));          // "  on cuda:0 (NVIDIA H100 ...)"
//   for (...) { ...; bar.step(batch_size, {{"loss", loss}, {"acc", 100 * acc}}); }
//   bar.finish();   // prints the final line (and a newline), with the time taken
//
// Metrics that live on a GPU cost a synchronization to read (loss.item() waits for every queued
// kernel). Pass them as a function instead: it runs only when the line is redrawn (at most every
// 50 ms on a terminal, never between log() calls in a log), so the host reads them that rarely:
//
//   bar.step(batch_size, [&] { return ProgressBar::Metrics{{"loss", running_loss.value()}}; });
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace examples {

class ProgressBar {
 public:
  using Metrics = std::vector<std::pair<std::string, double>>;

  // unit: what step() counts, shown as "<unit>/s".
  ProgressBar(std::string label, int64_t total_steps, std::string unit = "samples")
      : label_(std::move(label)),
        unit_(std::move(unit)),
        total_(total_steps),
        start_(Clock::now()),
        tty_(isatty(fileno(stdout)) != 0) {}

  // One step done, covering `samples` samples; metrics are shown as given (latest values).
  void step(int64_t samples, const Metrics& metrics) {
    ++done_;
    samples_ += samples;
    metrics_ = metrics;
    if (due()) draw(false);
  }

  // One step done; metrics() (a callable returning Metrics) is called only when the line is
  // redrawn now. Before log() or finish(), set_metrics() the values they should show.
  template <class MetricsFn, class = decltype(Metrics(std::declval<MetricsFn&>()()))>
  void step(int64_t samples, MetricsFn&& metrics) {
    ++done_;
    samples_ += samples;
    if (!due()) return;
    metrics_ = metrics();
    draw(false);
  }

  // Shown at the end of every line: where the run trains ("cpu", "cuda:0 (NVIDIA H100 ...)").
  void set_device(std::string device) { device_ = std::move(device); }

  // Training also stops after `seconds` (a time budget): the time left is then the smaller of
  // the two estimates.
  void set_time_limit(double seconds) { time_limit_ = seconds; }

  // Replaces the shown metrics without counting a step (e.g. the epoch's final averages).
  void set_metrics(const Metrics& metrics) { metrics_ = metrics; }

  // Prints the current line for good (terminal and log alike) and keeps counting: a record of
  // the run so far, e.g. after an evaluation.
  void log() { draw(true); }

  void finish() {
    finished_ = true;
    draw(true);
  }

  double samples_per_second() const {
    double s = seconds();
    return s > 0 ? double(samples_) / s : 0.0;
  }

 private:
  using Clock = std::chrono::steady_clock;

  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  // After a step: whether the terminal line is redrawn now (50 ms since the last draw, or the last
  // step). Marks the draw.
  bool due() {
    if (!tty_) return false;
    const double now = seconds();
    if (now - last_draw_ <= 0.05 && done_ != total_) return false;
    last_draw_ = now;
    return true;
  }

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
    std::snprintf(buf, sizeof buf, "  %.0f %s/s", samples_per_second(), unit_.c_str());
    text += buf;
    // Time left from the mean step time so far; the time taken once finished.
    const double elapsed = seconds();
    if (finished_ || done_ >= total_) {
      text += "  " + format_duration(elapsed);
    } else if (done_ > 0) {
      double left = elapsed / double(done_) * double(total_ - done_);
      if (time_limit_ > 0) left = std::max(0.0, std::min(left, time_limit_ - elapsed));
      text += "  " + format_duration(left) + " left";
    }
    if (!device_.empty()) text += "  on " + device_;
    if (tty_) {
      std::printf("\r%s\033[K%s", text.c_str(), final_line ? "\n" : "");
    } else if (final_line) {
      std::printf("%s\n", text.c_str());
    }
    std::fflush(stdout);
  }

  // 42s, 3m05s, 1h02m
  static std::string format_duration(double s) {
    char buf[32];
    long t = long(s + 0.5);
    if (t < 60) std::snprintf(buf, sizeof buf, "%lds", t);
    else if (t < 3600) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
    else std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    return buf;
  }

  std::string label_, unit_, device_;
  int64_t total_, done_ = 0, samples_ = 0;
  Clock::time_point start_;
  double last_draw_ = -1.0, time_limit_ = 0.0;
  bool tty_, finished_ = false;
  Metrics metrics_;
};

}  // namespace examples
