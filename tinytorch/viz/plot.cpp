// save_line_plot: axes (linear or log) fitted to the data, "nice" ticks, grid, series and legend.
#include "tinytorch/viz/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tinytorch/core/error.h"
#include "tinytorch/viz/font.h"
#include "tinytorch/viz/image.h"

namespace tt::viz {
namespace {

constexpr const char* kOp = "save_line_plot";
constexpr int kMargin = 12;
constexpr int kTickLen = 4;
constexpr int kMaxLogTicks = 8;
constexpr Color kPalette[] = {{31, 119, 180}, {255, 127, 14},  {44, 160, 44},   {214, 39, 40},  {148, 103, 189},
                              {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

// One axis: the data range it shows and whether it is logarithmic.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  // Where v falls along the axis, 0 at lo and 1 at hi.
  double fraction(double v) const {
    return log ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (v - lo) / (hi - lo);
  }
};

// The axis over [lo, hi] (the data's extent), widened by a margin of 5% of its length.
Axis make_axis(double lo, double hi, bool log) {
  Axis a{lo, hi, log};
  if (log) {
    if (lo == hi) {
      a.lo = lo / 2;
      a.hi = hi * 2;
    }
    double pad = std::pow(a.hi / a.lo, 0.05);
    a.lo /= pad;
    a.hi *= pad;
  } else {
    if (lo == hi) {
      double d = std::max(1.0, std::abs(lo) * 0.1);
      a.lo = lo - d;
      a.hi = hi + d;
    }
    double pad = (a.hi - a.lo) * 0.05;
    a.lo -= pad;
    a.hi += pad;
  }
  return a;
}

// About six ticks at multiples of 1, 2 or 5 times a power of ten.
std::vector<double> linear_ticks(double lo, double hi) {
  double raw = (hi - lo) / 6;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return out;
}

// Ticks at powers of a base (2 for bytes and short ranges, 10 for ranges of two decades or more),
// skipping exponents so that there are at most kMaxLogTicks; linear ticks when fewer than two fit.
std::vector<double> log_ticks(double lo, double hi, TickFormat format) {
  double base = format == TickFormat::kNumber && hi / lo >= 100 ? 10 : 2;
  int first = int(std::ceil(std::log(lo) / std::log(base) - 1e-9));
  int last = int(std::floor(std::log(hi) / std::log(base) + 1e-9));
  int count = last - first + 1;
  std::vector<double> out;
  if (count >= 2) {
    int step = (count + kMaxLogTicks - 1) / kMaxLogTicks;
    for (int e = first; e <= last; e += step) out.push_back(std::pow(base, e));
    return out;
  }
  for (double v : linear_ticks(lo, hi))
    if (v > 0) out.push_back(v);
  return out;
}

std::vector<double> ticks_for(const Axis& a, TickFormat format) {
  return a.log ? log_ticks(a.lo, a.hi, format) : linear_ticks(a.lo, a.hi);
}

void check_series(const std::vector<LineSeries>& series, const LinePlotOptions& o) {
  TT_CHECK(!series.empty(), kOp, ": there is no series to plot");
  for (const LineSeries& s : series) {
    TT_CHECK(!s.x.empty() && s.x.size() == s.y.size(), kOp, ": series '", s.name,
             "' needs as many x as y values, at least one, got ", s.x.size(), " x and ", s.y.size(), " y");
    for (size_t i = 0; i < s.x.size(); ++i) {
      TT_CHECK(std::isfinite(s.x[i]) && std::isfinite(s.y[i]), kOp, ": series '", s.name,
               "' has a value that is not finite at point ", i, ": (", s.x[i], ", ", s.y[i], ")");
      TT_CHECK(!o.log_x || s.x[i] > 0, kOp, ": log_x needs x > 0, series '", s.name, "' has x[", i, "] = ", s.x[i]);
      TT_CHECK(!o.log_y || s.y[i] > 0, kOp, ": log_y needs y > 0, series '", s.name, "' has y[", i, "] = ", s.y[i]);
    }
  }
  TT_CHECK(o.width >= 200 && o.width <= kMaxImageSide && o.height >= 150 && o.height <= kMaxImageSide, kOp,
           ": width must be in [200, ", kMaxImageSide, "] and height in [150, ", kMaxImageSide, "], got ", o.width,
           " x ", o.height);
}

}  // namespace

std::string format_tick(double v, TickFormat format) {
  char buf[32];
  if (format == TickFormat::kBytes) {
    static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (std::abs(v) >= 1024 && u < 5) {
      v /= 1024;
      ++u;
    }
    std::snprintf(buf, sizeof(buf), "%.3g %s", v, kUnits[u]);
  } else if (v == std::round(v) && std::abs(v) < 1e6) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  }
  return buf;
}

void save_line_plot(const std::string& path, const std::vector<LineSeries>& series, const LinePlotOptions& options) {
  check_series(series, options);
  double x_lo = series[0].x[0], x_hi = x_lo, y_lo = series[0].y[0], y_hi = y_lo;
  for (const LineSeries& s : series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]);
      y_hi = std::max(y_hi, s.y[i]);
    }
  }
  Axis ax = make_axis(x_lo, x_hi, options.log_x), ay = make_axis(y_lo, y_hi, options.log_y);
  std::vector<double> x_ticks = ticks_for(ax, options.x_format), y_ticks = ticks_for(ay, options.y_format);

  // --- layout: the plot area is what the title, the labels and the tick labels leave ----------------
  int y_tick_w = 0;
  for (double t : y_ticks) y_tick_w = std::max(y_tick_w, text_width(format_tick(t, options.y_format)));
  int left = kMargin + (options.y_label.empty() ? 0 : text_height() + 8) + y_tick_w + kTickLen + 4;
  int top = kMargin + (options.title.empty() ? 0 : text_height(2) + 10);
  int bottom = kMargin + kTickLen + 4 + text_height() + (options.x_label.empty() ? 0 : text_height() + 8);
  int right = kMargin + 8;
  int pw = options.width - left - right, ph = options.height - top - bottom;
  TT_CHECK(pw >= 50 && ph >= 50, kOp, ": a ", options.width, " x ", options.height,
           " image leaves no room for the plot; make it larger");
  Image img(options.width, options.height);
  auto px = [&](double x) { return left + int(std::lround(ax.fraction(x) * (pw - 1))); };
  auto py = [&](double y) { return top + ph - 1 - int(std::lround(ay.fraction(y) * (ph - 1))); };

  if (!options.title.empty())
    img.draw_text(std::max(kMargin, (options.width - text_width(options.title, 2)) / 2), kMargin, options.title, kBlack,
                  2);
  if (!options.y_label.empty())
    img.draw_text_vertical(kMargin, top + std::max(0, (ph - text_width(options.y_label)) / 2), options.y_label, kBlack);
  if (!options.x_label.empty())
    img.draw_text(left + std::max(0, (pw - text_width(options.x_label)) / 2), options.height - kMargin - text_height(),
                  options.x_label, kBlack);

  // --- grid, ticks and their labels ------------------------------------------------------------------
  int last_label_end = -1000;
  for (double t : x_ticks) {
    int x = px(t);
    img.fill_rect(x, top, 1, ph, kLightGrey);
    img.fill_rect(x, top + ph, 1, kTickLen, kBlack);
    std::string s = format_tick(t, options.x_format);
    int lx = x - text_width(s) / 2;
    if (lx > last_label_end + 6) {  // skip a label that would touch the one before
      img.draw_text(lx, top + ph + kTickLen + 4, s, kBlack);
      last_label_end = lx + text_width(s);
    }
  }
  for (double t : y_ticks) {
    int y = py(t);
    img.fill_rect(left, y, pw, 1, kLightGrey);
    img.fill_rect(left - kTickLen, y, kTickLen, 1, kBlack);
    std::string s = format_tick(t, options.y_format);
    img.draw_text(left - kTickLen - 4 - text_width(s), y - text_height() / 2, s, kBlack);
  }
  img.draw_rect(left - 1, top - 1, pw + 2, ph + 2, kBlack);

  // --- series --------------------------------------------------------------------------------------
  for (size_t k = 0; k < series.size(); ++k) {
    const LineSeries& s = series[k];
    Color c = kPalette[k % kPaletteSize];
    for (size_t i = 0; i + 1 < s.x.size(); ++i)
      img.draw_line(px(s.x[i]), py(s.y[i]), px(s.x[i + 1]), py(s.y[i + 1]), c, 2, s.dashed ? 6 : 0);
    for (size_t i = 0; i < s.x.size(); ++i) img.fill_rect(px(s.x[i]) - 2, py(s.y[i]) - 2, 5, 5, c);
  }

  // --- legend, in the top-left corner of the plot area ---------------------------------------------
  int name_w = 0;
  for (const LineSeries& s : series) name_w = std::max(name_w, text_width(s.name));
  int lx = left + 8, ly = top + 8, lw = 24 + 6 + name_w + 12, lh = int(series.size()) * (kLineHeight + 6) + 8;
  img.fill_rect(lx, ly, lw, lh, kWhite);
  img.draw_rect(lx, ly, lw, lh, kGrey);
  for (size_t k = 0; k < series.size(); ++k) {
    int y = ly + 6 + int(k) * (kLineHeight + 6) + text_height() / 2;
    Color c = kPalette[k % kPaletteSize];
    img.draw_line(lx + 6, y, lx + 30, y, c, 2, series[k].dashed ? 6 : 0);
    img.draw_text(lx + 36, y - text_height() / 2, series[k].name, kBlack);
  }
  img.save_png(path);
}

}  // namespace tt::viz
