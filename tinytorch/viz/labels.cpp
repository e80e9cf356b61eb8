// Label checking, shortening and number formats for the figure writers.
#include "tinytorch/viz/labels.h"

#include <cstdio>

#include "tinytorch/core/error.h"
#include "tinytorch/viz/font.h"

namespace tt::viz::detail {

std::vector<std::string> resolve_labels(const char* op, const char* what, const std::vector<std::string>& labels,
                                        int64_t n, const Shape& shape) {
  if (labels.empty()) {
    std::vector<std::string> out;
    for (int64_t i = 0; i < n; ++i) out.push_back(std::to_string(i));
    return out;
  }
  TT_CHECK_SHAPE(int64_t(labels.size()) == n, op, ": expected ", n, " ", what, " labels (one per ", what,
                 " of weights ", shape, ", or none), got ", labels.size());
  return labels;
}

std::string shorten(const std::string& label, int max_chars, const std::string& ellipsis) {
  std::vector<std::string> cps = utf8_split(label);
  std::string out;
  int keep = int(cps.size()) <= max_chars ? int(cps.size()) : max_chars - 1;
  for (int i = 0; i < keep; ++i) {
    bool control = cps[i].size() == 1 && (static_cast<unsigned char>(cps[i][0]) < 32 || cps[i][0] == 127);
    out += control ? "?" : cps[i];
  }
  if (keep < int(cps.size())) out += ellipsis;
  return out;
}

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

}  // namespace tt::viz::detail
