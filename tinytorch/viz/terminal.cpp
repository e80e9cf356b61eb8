// render_attention_terminal: an attention map as text, two terminal columns per weight, either
// as ANSI 256-colour backgrounds (viridis) or as five shade characters.
//
//         c  s                 <- key labels, written downwards, ending just above the map
//      t  a  a
//      h  t  t
//      e
//  the ██░░
//  cat ▓▓██
//  sat ░░▒▒██
//  shades: ' '<0.2 '░'<0.4 '▒'<0.6 '▓'<0.8 '█'  range [0, 1]
#include <algorithm>
#include <cmath>
#include <sstream>

#include "tinytorch/core/error.h"
#include "tinytorch/viz/colormap.h"
#include "tinytorch/viz/font.h"
#include "tinytorch/viz/heatmap.h"
#include "tinytorch/viz/labels.h"

namespace tt::viz {
namespace {

constexpr const char* kOp = "render_attention_terminal";
constexpr const char* kShades[] = {" ", "\u2591", "\u2592", "\u2593", "\u2588"};  // ' ' ░ ▒ ▓ █
constexpr int kNumShades = 5;
constexpr const char* kReset = "\x1b[0m";

std::string background(Color c) { return "\x1b[48;5;" + std::to_string(xterm256_index(c)) + "m"; }

// One weight as two terminal columns.
std::string cell(double t, bool color) {
  if (std::isnan(t)) return color ? std::string(kReset) + "??" : "??";
  if (color) return background(viridis(t)) + "  ";
  int level = std::min(kNumShades - 1, int(t * kNumShades));
  return std::string(kShades[level]) + kShades[level];
}

std::string pad_left(const std::string& s, int width) {
  int n = int(utf8_split(s).size());
  return std::string(size_t(std::max(0, width - n)), ' ') + s;
}

void rtrim(std::string& s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

}  // namespace

std::string render_attention_terminal(const Tensor& weights, const std::vector<std::string>& row_labels,
                                      const std::vector<std::string>& col_labels, const TerminalOptions& options) {
  TT_CHECK(weights.defined(), kOp, ": weights is an undefined tensor");
  TT_CHECK_DTYPE(weights.is_floating_point(), kOp, ": weights must be a floating tensor, got ", weights.dtype());
  TT_CHECK_SHAPE(weights.dim() == 2, kOp,
                 ": weights must be [Tq, Tk] (one head: pick one with weights.select(0, h)), got ", weights.shape());
  TT_CHECK(options.max_label_chars >= 1 && options.max_rows >= 1 && options.max_cols >= 1, kOp,
           ": max_label_chars, max_rows and max_cols must be at least 1, got ", options.max_label_chars, ", ",
           options.max_rows, ", ", options.max_cols);
  int64_t Tq = weights.size(0), Tk = weights.size(1);
  std::vector<std::string> rows = detail::resolve_labels(kOp, "row", row_labels, Tq, weights.shape());
  std::vector<std::string> cols = detail::resolve_labels(kOp, "column", col_labels, Tk, weights.shape());
  std::vector<float> values = weights.detach().to_vector<float>();
  ValueRange range = value_range(values, options.vmin, options.vmax);

  int64_t nr = std::min<int64_t>(Tq, options.max_rows), nc = std::min<int64_t>(Tk, options.max_cols);
  std::vector<std::vector<std::string>> col_chars;  // each shown key label, one code point each
  size_t label_lines = 0;
  for (int64_t j = 0; j < nc; ++j) {
    col_chars.push_back(utf8_split(detail::shorten(cols[j], options.max_label_chars, "\u2026")));
    label_lines = std::max(label_lines, col_chars.back().size());
  }
  int row_w = 0;
  for (int64_t i = 0; i < nr; ++i) {
    rows[i] = detail::shorten(rows[i], options.max_label_chars, "\u2026");
    row_w = std::max(row_w, int(utf8_split(rows[i]).size()));
  }

  std::ostringstream os;
  // Key labels: line k holds each label's code point k, counted so that every label ends on the
  // last line, right above its column.
  for (size_t k = 0; k < label_lines; ++k) {
    std::string line(size_t(row_w) + 1, ' ');
    for (const auto& chars : col_chars) {
      size_t skip = label_lines - chars.size();
      line += k >= skip ? chars[k - skip] : " ";
      line += ' ';
    }
    rtrim(line);
    os << line << '\n';
  }
  for (int64_t i = 0; i < nr; ++i) {
    os << pad_left(rows[i], row_w) << ' ';
    for (int64_t j = 0; j < nc; ++j) os << cell(range.normalize(values[size_t(i * Tk + j)]), options.color);
    if (options.color) os << kReset;
    os << '\n';
  }
  if (nr < Tq) os << pad_left("\u2026", row_w) << ' ' << (Tq - nr) << " more rows\n";

  if (options.color) {
    os << "colour: " << detail::format_number(range.lo) << ' ';
    for (int k = 0; k < 8; ++k) os << background(viridis(k / 7.0)) << "  ";
    os << kReset << ' ' << detail::format_number(range.hi);
  } else {
    os << "shades:";
    for (int k = 0; k < kNumShades; ++k) {
      os << " '" << kShades[k] << "'";
      if (k + 1 < kNumShades)
        os << '<' << detail::format_number(range.lo + (range.hi - range.lo) * (k + 1) / kNumShades);
    }
    os << "  range [" << detail::format_number(range.lo) << ", " << detail::format_number(range.hi) << ']';
  }
  if (nc < Tk) os << "  (" << (Tk - nc) << " more columns not shown)";
  os << '\n';
  return os.str();
}

}  // namespace tt::viz
