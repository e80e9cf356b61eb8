// The viridis-like colour map (our own table of stops, interpolated linearly), the xterm
// 256-colour quantisation, and value ranges.
#include "tinytorch/viz/colormap.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tinytorch/core/error.h"

namespace tt::viz {
namespace {

// Eleven evenly spaced stops from dark purple to yellow; lightness rises monotonically.
constexpr Color kViridisStops[] = {
    {68, 1, 84},    {72, 36, 117},  {65, 68, 135},  {53, 95, 141},  {42, 120, 142}, {33, 145, 140},
    {34, 168, 132}, {68, 191, 112}, {122, 209, 81}, {189, 223, 38}, {253, 231, 37},
};
constexpr int kNumStops = sizeof(kViridisStops) / sizeof(kViridisStops[0]);

uint8_t lerp(uint8_t a, uint8_t b, double f) { return uint8_t(std::lround(a + (double(b) - double(a)) * f)); }

// The xterm cube's six levels per channel.
constexpr int kCubeLevels[6] = {0, 95, 135, 175, 215, 255};

int nearest_level(uint8_t v) {
  int best = 0;
  for (int i = 1; i < 6; ++i)
    if (std::abs(kCubeLevels[i] - int(v)) < std::abs(kCubeLevels[best] - int(v))) best = i;
  return best;
}

}  // namespace

Color viridis(double t) {
  if (std::isnan(t)) return kGrey;
  t = std::clamp(t, 0.0, 1.0) * (kNumStops - 1);
  int i = std::min(int(t), kNumStops - 2);
  double f = t - i;
  const Color& a = kViridisStops[i];
  const Color& b = kViridisStops[i + 1];
  return {lerp(a.r, b.r, f), lerp(a.g, b.g, f), lerp(a.b, b.b, f)};
}

int xterm256_index(Color c) { return 16 + 36 * nearest_level(c.r) + 6 * nearest_level(c.g) + nearest_level(c.b); }

double ValueRange::normalize(double v) const {
  if (std::isnan(v)) return v;
  return std::clamp((v - lo) / (hi - lo), 0.0, 1.0);
}

ValueRange value_range(const std::vector<float>& values, std::optional<double> vmin, std::optional<double> vmax) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (float v : values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, double(v));
    hi = std::max(hi, double(v));
  }
  if (lo > hi) lo = hi = 0;  // nothing finite
  TT_CHECK((!vmin || std::isfinite(*vmin)) && (!vmax || std::isfinite(*vmax)),
           "value_range: vmin and vmax must be finite, got vmin = ", vmin.value_or(0), ", vmax = ", vmax.value_or(0));
  TT_CHECK(!vmin || !vmax || *vmin <= *vmax, "value_range: vmin must be at most vmax, got vmin = ", *vmin,
           ", vmax = ", *vmax);
  ValueRange r;
  r.lo = vmin ? *vmin : std::min(0.0, lo);
  r.hi = vmax ? *vmax : hi;
  if (!vmax) r.hi = std::max(r.hi, r.lo);  // a given vmin above every value
  if (!vmin) r.lo = std::min(r.lo, r.hi);  // a given vmax below every value
  if (r.hi == r.lo) r.hi = r.lo + 1;
  return r;
}

}  // namespace tt::viz
