// Image: an RGB pixel buffer with the few drawing primitives our figures need (pixels, filled and
// outlined rectangles, lines, text in the built-in font, also rotated for column labels) and PNG
// output (stb_image_write, written to a temporary file and renamed). No anti-aliasing, no alpha.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tt::viz {

struct Color {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Color& o) const { return r == o.r && g == o.g && b == o.b; }
  bool operator!=(const Color& o) const { return !(*this == o); }
};

constexpr Color kWhite{255, 255, 255};
constexpr Color kBlack{0, 0, 0};
constexpr Color kGrey{128, 128, 128};
constexpr Color kLightGrey{220, 220, 220};

// The largest image side we draw, in pixels (a figure this size is already 800 MB of RGB).
constexpr int kMaxImageSide = 16384;

// Width in pixels of `text` drawn with draw_text at `scale` (one glyph per code point), and the
// height of one line of text.
int text_width(const std::string& text, int scale = 1);
int text_height(int scale = 1);

class Image {
 public:
  // width, height in [1, kMaxImageSide]; every pixel starts as `background`.
  Image(int width, int height, Color background = kWhite);

  int width() const { return width_; }
  int height() const { return height_; }
  // Row-major RGB bytes, 3 per pixel, rows top to bottom.
  const std::vector<uint8_t>& pixels() const { return pixels_; }

  // The colour at (x, y); IndexError outside the image.
  Color at(int x, int y) const;
  // Drawing clips: pixels that fall outside the image are skipped, never an error.
  void set(int x, int y, Color c);
  void fill_rect(int x, int y, int w, int h, Color c);
  void draw_rect(int x, int y, int w, int h, Color c);  // a one-pixel outline of the same box
  // A straight line from (x0, y0) to (x1, y1), both ends included (Bresenham). thickness grows
  // the line into a square brush; dash > 0 draws dash pixels, skips dash pixels, and so on.
  void draw_line(int x0, int y0, int x1, int y1, Color c, int thickness = 1, int dash = 0);
  // Text whose top-left corner is (x, y), each font pixel a scale x scale square.
  void draw_text(int x, int y, const std::string& text, Color c, int scale = 1);
  // Text turned 90 degrees counter-clockwise (it reads bottom to top, as a y-axis label); (x, y)
  // is the top-left corner of its box, which is text_height(scale) wide and text_width(text) tall.
  void draw_text_vertical(int x, int y, const std::string& text, Color c, int scale = 1);

  // The image as PNG file bytes.
  std::vector<uint8_t> encode_png() const;
  // Writes the PNG to `path` through a temporary file beside it, renamed over `path` once
  // complete: `path` is either untouched or the whole new image. IOError on failure.
  void save_png(const std::string& path) const;

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;
};

}  // namespace tt::viz
