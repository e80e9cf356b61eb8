// Helpers shared by the figure writers (heatmap, terminal, plot): token labels checked against a
// tensor's shape, labels cut to a width, and short number formats for ticks and legends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tinytorch/core/shape.h"

namespace tt::viz::detail {

// `labels` when it holds one label per position (n), "0", "1", ... when it is empty; otherwise a
// ShapeError from `op` naming `what` ("row", "column"), the counts and the weights' shape.
std::vector<std::string> resolve_labels(const char* op, const char* what, const std::vector<std::string>& labels,
                                        int64_t n, const Shape& shape);

// `label` when it has at most max_chars code points, else its first max_chars - 1 and `ellipsis`.
// Control characters (which would move a terminal's cursor) become '?'.
std::string shorten(const std::string& label, int max_chars, const std::string& ellipsis);

// v with three significant digits ("0.125", "1e+03", "-2.5").
std::string format_number(double v);

}  // namespace tt::viz::detail
