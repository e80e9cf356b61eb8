// Attention maps you can look at: a PNG heatmap of attention weights (one head, or a grid of
// heads plus their mean) with token labels, a colour bar and a title per panel, and the same map
// rendered as text for a terminal. Weights are any floating tensor on any device; they are copied
// to the CPU as float. Query tokens label the rows, key tokens the columns.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tinytorch/core/tensor.h"

namespace tt::viz {

struct HeatmapOptions {
  std::string title;           // drawn above the panels (nothing when empty)
  int cell_size = 0;           // pixels per weight; 0 picks one so a panel is about 320 px wide
  int max_label_chars = 12;    // longer token labels are cut, ending in '~'
  int panels_per_row = 0;      // 0: about a square grid
  bool mean_panel = true;      // with H > 1 heads, add a panel of the mean over heads
  bool show_values = false;    // write each weight in its cell when the cell is wide enough
  std::optional<double> vmin;  // colour range; default min(0, smallest weight) ...
  std::optional<double> vmax;  // ... to the largest weight, shared by every panel
};

// Writes a PNG heatmap of attention `weights` to `path` (atomically; IOError on failure).
//   weights: [Tq, Tk] one map, [H, Tq, Tk] one panel per head ("head 0", ...) plus "mean", or
//            [1, H, Tq, Tk] (a batch of one).
//   row_labels: Tq query tokens, col_labels: Tk key tokens; an empty list labels by position.
// Token labels are drawn in the built-in ASCII font (font.h: to_glyphs). Where cells are smaller
// than a line of text, every k-th label is drawn. NaN weights are grey.
void save_attention_heatmap(const std::string& path, const Tensor& weights, const std::vector<std::string>& row_labels,
                            const std::vector<std::string>& col_labels, const HeatmapOptions& options = {});

struct TerminalOptions {
  bool color = true;        // ANSI 256-colour backgrounds; false: shades " ░▒▓█" (5 levels)
  int max_label_chars = 8;  // longer labels are cut, ending in '…'
  int max_rows = 40;        // rows and columns past these are left out (and counted)
  int max_cols = 40;
  std::optional<double> vmin;  // colour range, as in HeatmapOptions
  std::optional<double> vmax;
};

// The attention map `weights` [Tq, Tk] as text, two characters per weight: query labels at the
// left of each row, key labels written downwards above each column, then a legend line with the
// value range. Select one head first (weights.select(0, h)) for [H, Tq, Tk].
std::string render_attention_terminal(const Tensor& weights, const std::vector<std::string>& row_labels,
                                      const std::vector<std::string>& col_labels, const TerminalOptions& options = {});

}  // namespace tt::viz
