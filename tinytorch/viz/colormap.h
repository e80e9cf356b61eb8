// Colour maps for figures: a viridis-like map (dark purple -> blue -> green -> yellow, lightness
// rising all the way, readable in grey and by most colour-blind readers), the nearest xterm
// 256-colour index for terminals, and the normalisation of values into [0, 1].
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tinytorch/viz/image.h"

namespace tt::viz {

// The colour of t in [0, 1] (clamped), interpolated linearly between eleven stops. NaN gives
// kGrey.
Color viridis(double t);

// The xterm 256-colour palette index (16..231, its 6x6x6 cube) nearest to c.
int xterm256_index(Color c);

// A value range [lo, hi] that colours map onto. Defaults: lo = min(0, smallest finite value),
// hi = largest finite value; a range of zero width is widened to [lo, lo + 1].
struct ValueRange {
  double lo = 0, hi = 1;
  // (v - lo) / (hi - lo) clamped to [0, 1]; NaN stays NaN.
  double normalize(double v) const;
};
ValueRange value_range(const std::vector<float>& values, std::optional<double> vmin, std::optional<double> vmax);

}  // namespace tt::viz
