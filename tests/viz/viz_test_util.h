// Helpers for the viz suite: PNG files decoded by an independent reader (stb_image), pixel
// lookups and colour counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <tinytorch/viz/image.h>

namespace tt::testing {

struct DecodedPng {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // 3 bytes per pixel, rows top to bottom
  viz::Color at(int x, int y) const {
    const uint8_t* p = &rgb[(size_t(y) * size_t(width) + size_t(x)) * 3];
    return {p[0], p[1], p[2]};
  }
  // Number of pixels that are exactly c.
  int64_t count(viz::Color c) const {
    int64_t n = 0;
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) n += at(x, y) == c;
    return n;
  }
};

// The PNG file at `path`, decoded to RGB; fails the test when it is not a PNG.
DecodedPng read_png(const std::string& path);

inline double luminance(viz::Color c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b; }

}  // namespace tt::testing
