// save_attention_heatmap: lays attention weights out as a grid of labelled panels (one per head,
// plus their mean) with one colour bar for all of them, and writes the PNG.
//
//   title
//   caption                     head 0          head 1        |colour bar|
//                               <key labels>    <key labels>  |          | - 1
//                   <query>     [ Tq x Tk ]     [ Tq x Tk ]   |          | - 0.5 ...
#include "tinytorch/viz/heatmap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tinytorch/core/error.h"
#include "tinytorch/viz/colormap.h"
#include "tinytorch/viz/font.h"
#include "tinytorch/viz/image.h"
#include "tinytorch/viz/labels.h"

namespace tt::viz {
namespace {

constexpr const char* kOp = "save_attention_heatmap";
constexpr int kMargin = 12;        // around the figure
constexpr int kGap = 20;           // between panels, and before the colour bar
constexpr int kLabelPad = 4;       // between a label and its map
constexpr int kAutoPanelPx = 320;  // what cell_size = 0 aims a panel's map at
constexpr int kMaxAutoCell = 40;
constexpr int kMaxCellSize = 256;
constexpr int kBarWidth = 14;
constexpr int kNumTicks = 5;

struct Panel {
  std::string title;
  std::vector<float> values;  // [Tq * Tk], row-major
};

// Splits weights into panels: [Tq, Tk] one untitled panel, [H, Tq, Tk] or [1, H, Tq, Tk] one per
// head plus the mean over heads.
std::vector<Panel> make_panels(const Tensor& weights, bool mean_panel, int64_t& Tq, int64_t& Tk) {
  TT_CHECK(weights.defined(), kOp, ": weights is an undefined tensor");
  TT_CHECK_DTYPE(weights.is_floating_point(), kOp, ": weights must be a floating tensor, got ", weights.dtype());
  const Shape& s = weights.shape();
  TT_CHECK_SHAPE(s.size() >= 2 && s.size() <= 4, kOp, ": weights must be [Tq, Tk], [H, Tq, Tk] or [1, H, Tq, Tk], got ",
                 s);
  TT_CHECK_SHAPE(s.size() < 4 || s[0] == 1, kOp, ": a 4-D weights tensor must have batch size 1, got ", s,
                 " (pick one sample with weights.select(0, b))");
  Tq = s[s.size() - 2];
  Tk = s[s.size() - 1];
  int64_t H = s.size() == 2 ? 1 : s[s.size() - 3];
  TT_CHECK_SHAPE(Tq > 0 && Tk > 0 && H > 0, kOp, ": weights must not be empty, got ", s);

  std::vector<float> all = weights.detach().to_vector<float>();
  size_t per = size_t(Tq * Tk);
  std::vector<Panel> panels;
  for (int64_t h = 0; h < H; ++h) {
    Panel p;
    if (s.size() > 2) p.title = "head " + std::to_string(h);
    p.values.assign(all.begin() + h * per, all.begin() + (h + 1) * per);
    panels.push_back(std::move(p));
  }
  if (H > 1 && mean_panel) {
    Panel mean{"mean", std::vector<float>(per)};
    for (size_t i = 0; i < per; ++i) {
      double sum = 0;
      for (int64_t h = 0; h < H; ++h) sum += panels[h].values[i];
      mean.values[i] = float(sum / double(H));
    }
    panels.push_back(std::move(mean));
  }
  return panels;
}

// Draws every stride-th label so that labels never overlap: a label needs kLineHeight pixels
// across, and each position has cell pixels.
int label_stride(int cell) { return (kLineHeight + 2 + cell - 1) / cell; }

int max_label_width(const std::vector<std::string>& labels, int stride) {
  int w = 0;
  for (size_t i = 0; i < labels.size(); i += size_t(stride)) w = std::max(w, text_width(labels[i]));
  return w;
}

// Perceived lightness in [0, 1] (Rec. 601 weights): picks dark or light text over a cell.
double luminance(Color c) { return (0.299 * c.r + 0.587 * c.g + 0.114 * c.b) / 255.0; }

}  // namespace

void save_attention_heatmap(const std::string& path, const Tensor& weights, const std::vector<std::string>& row_labels,
                            const std::vector<std::string>& col_labels, const HeatmapOptions& options) {
  TT_CHECK(options.cell_size >= 0 && options.cell_size <= kMaxCellSize, kOp, ": cell_size must be in [0, ",
           kMaxCellSize, "], got ", options.cell_size);
  TT_CHECK(options.max_label_chars >= 1, kOp, ": max_label_chars must be at least 1, got ", options.max_label_chars);
  TT_CHECK(options.panels_per_row >= 0, kOp, ": panels_per_row must be >= 0, got ", options.panels_per_row);
  int64_t Tq = 0, Tk = 0;
  std::vector<Panel> panels = make_panels(weights, options.mean_panel, Tq, Tk);
  std::vector<std::string> rows = detail::resolve_labels(kOp, "row", row_labels, Tq, weights.shape());
  std::vector<std::string> cols = detail::resolve_labels(kOp, "column", col_labels, Tk, weights.shape());
  for (auto& l : rows) l = detail::shorten(l, options.max_label_chars, "~");
  for (auto& l : cols) l = detail::shorten(l, options.max_label_chars, "~");

  std::vector<float> every;
  for (const Panel& p : panels) every.insert(every.end(), p.values.begin(), p.values.end());
  ValueRange range = value_range(every, options.vmin, options.vmax);

  // --- layout --------------------------------------------------------------------------------------
  int64_t longest = std::max(Tq, Tk);
  int cell =
      options.cell_size > 0 ? options.cell_size : int(std::clamp<int64_t>(kAutoPanelPx / longest, 1, kMaxAutoCell));
  int row_stride = label_stride(cell), col_stride = label_stride(cell);
  int row_label_w = max_label_width(rows, row_stride) + kLabelPad;
  int col_label_h = max_label_width(cols, col_stride) + kLabelPad;
  bool any_title = std::any_of(panels.begin(), panels.end(), [](const Panel& p) { return !p.title.empty(); });
  int title_h = any_title ? kLineHeight + kLabelPad : 0;
  int64_t map_w = Tk * cell, map_h = Tq * cell;
  int64_t panel_w = row_label_w + map_w, panel_h = title_h + col_label_h + map_h;
  int n = int(panels.size());
  int per_row =
      options.panels_per_row > 0 ? std::min(options.panels_per_row, n) : int(std::ceil(std::sqrt(double(n)) - 1e-9));
  int grid_rows = (n + per_row - 1) / per_row;

  std::vector<std::string> ticks;
  for (int k = 0; k < kNumTicks; ++k)
    ticks.push_back(detail::format_number(range.lo + (range.hi - range.lo) * k / (kNumTicks - 1)));
  int tick_w = max_label_width(ticks, 1);
  int bar_h = int(std::max<int64_t>(map_h, 100));

  int header_h = (options.title.empty() ? 0 : text_height(2) + 6) + kLineHeight + 6;
  int64_t grid_w = per_row * panel_w + (per_row - 1) * kGap;
  int64_t grid_h = grid_rows * panel_h + (grid_rows - 1) * kGap;
  int64_t width = kMargin + grid_w + kGap + kBarWidth + 4 + tick_w + kMargin;
  int64_t height = kMargin + header_h + std::max(grid_h, int64_t(title_h + col_label_h + bar_h)) + kMargin;
  TT_CHECK(width <= kMaxImageSide && height <= kMaxImageSide, kOp, ": the figure would be ", width, " x ", height,
           " pixels, more than ", kMaxImageSide, " on a side (weights ", weights.shape(), ", cell_size ", cell,
           "); slice the weights or draw fewer heads");
  Image img{int(width), int(height)};

  // --- header --------------------------------------------------------------------------------------
  int y = kMargin;
  if (!options.title.empty()) {
    img.draw_text(kMargin, y, options.title, kBlack, 2);
    y += text_height(2) + 6;
  }
  img.draw_text(kMargin, y, "rows: query tokens, columns: key tokens", kGrey);
  int top = kMargin + header_h;

  // --- panels --------------------------------------------------------------------------------------
  for (int p = 0; p < n; ++p) {
    int px = kMargin + int((p % per_row) * (panel_w + kGap));
    int py = top + int((p / per_row) * (panel_h + kGap));
    int map_x = px + row_label_w, map_y = py + title_h + col_label_h;
    const Panel& panel = panels[p];
    if (!panel.title.empty()) {
      int tw = text_width(panel.title);
      img.draw_text(map_x + std::max(0, int(map_w - tw) / 2), py, panel.title, kBlack);
    }
    for (int64_t j = 0; j < Tk; j += col_stride) {
      int x = map_x + int(j * cell) + (cell - text_height()) / 2;
      img.draw_text_vertical(x, map_y - kLabelPad - text_width(cols[j]), cols[j], kBlack);
    }
    for (int64_t i = 0; i < Tq; i += row_stride) {
      int yy = map_y + int(i * cell) + (cell - text_height()) / 2;
      img.draw_text(map_x - kLabelPad - text_width(rows[i]), yy, rows[i], kBlack);
    }
    bool values_fit = options.show_values && cell >= text_width("0.00") + 2 && cell >= kLineHeight + 2;
    for (int64_t i = 0; i < Tq; ++i) {
      for (int64_t j = 0; j < Tk; ++j) {
        float v = panel.values[size_t(i * Tk + j)];
        Color c = viridis(range.normalize(v));
        int cx = map_x + int(j * cell), cy = map_y + int(i * cell);
        img.fill_rect(cx, cy, cell, cell, c);
        if (values_fit) {
          char buf[16];
          std::snprintf(buf, sizeof(buf), "%.2f", double(v));
          std::string s = std::abs(v) < 10 ? buf : detail::format_number(v);
          img.draw_text(cx + (cell - text_width(s)) / 2, cy + (cell - text_height()) / 2, s,
                        luminance(c) > 0.5 ? kBlack : kWhite);
        }
      }
    }
    img.draw_rect(map_x - 1, map_y - 1, int(map_w) + 2, int(map_h) + 2, kGrey);
  }

  // --- colour bar, beside the first row of maps ----------------------------------------------------
  int bar_x = kMargin + int(grid_w) + kGap, bar_y = top + title_h + col_label_h;
  for (int yy = 0; yy < bar_h; ++yy)
    img.fill_rect(bar_x, bar_y + yy, kBarWidth, 1, viridis(1.0 - double(yy) / double(bar_h - 1)));
  img.draw_rect(bar_x - 1, bar_y - 1, kBarWidth + 2, bar_h + 2, kGrey);
  for (int k = 0; k < kNumTicks; ++k) {
    int ty = bar_y + int(std::lround((bar_h - 1) * (1.0 - double(k) / (kNumTicks - 1))));
    img.fill_rect(bar_x + kBarWidth, ty, 3, 1, kBlack);
    img.draw_text(bar_x + kBarWidth + 4, ty - text_height() / 2, ticks[k], kBlack);
  }
  img.save_png(path);
}

}  // namespace tt::viz
