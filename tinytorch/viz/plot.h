// Line plots as PNG: a few named series of (x, y) points on linear or logarithmic axes, with
// ticks, grid lines and a legend. Made for cost curves such as "bytes vs sequence length".
#pragma once

#include <string>
#include <vector>

namespace tt::viz {

struct LineSeries {
  std::string name;       // shown in the legend
  std::vector<double> x;  // as many x as y, at least one point
  std::vector<double> y;
  bool dashed = false;  // e.g. theory dashed, measurements solid
};

enum class TickFormat {
  kNumber,  // 128, 4096, 1.5e+06
  kBytes,   // 512 B, 64 KiB, 1.5 GiB
};

struct LinePlotOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;  // logarithmic axes: every value on them must be > 0
  bool log_y = false;
  TickFormat x_format = TickFormat::kNumber;
  TickFormat y_format = TickFormat::kNumber;
  int width = 800;  // pixels
  int height = 500;
};

// Writes the plot to `path` as PNG (atomically; IOError on failure). Error when there is no
// series, a series has no points or x and y of different lengths, a value is not finite, or a
// log axis gets a value <= 0.
void save_line_plot(const std::string& path, const std::vector<LineSeries>& series,
                    const LinePlotOptions& options = {});

// A tick label in `format` ("4096", "1.5 MiB").
std::string format_tick(double v, TickFormat format);

}  // namespace tt::viz
