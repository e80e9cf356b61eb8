// Image drawing and PNG output. The PNG encoder is stb_image_write (Debian's libstb-dev), compiled
// here and only here, with static linkage so that it cannot clash with a program's own copy of
// stb; it encodes into memory and we write the bytes ourselves, atomically.
#include "tinytorch/viz/image.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <system_error>

#include "tinytorch/core/error.h"
#include "tinytorch/viz/font.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO
#include <stb_image_write.h>

namespace tt::viz {
namespace {

std::string last_error() { return std::error_code(errno, std::generic_category()).message(); }

// Writes `bytes` to a temporary file beside `path` (same directory, so rename is atomic), then
// renames it over `path`. On any failure the temporary file is removed and IOError names `op`.
void write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes, const char* op) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      throw IOError(detail::concat(op, ": ", path, ": cannot create the temporary file ", tmp, ": ", last_error()));
  }
  if (fd < 0) throw IOError(detail::concat(op, ": ", path, ": cannot find a free temporary file name"));
  auto fail = [&](const char* what) {
    std::string reason = last_error();
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw IOError(detail::concat(op, ": ", path, ": ", what, ": ", reason));
  };
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      fail("cannot write the temporary file");
    }
    p += w;
    left -= size_t(w);
  }
  if (::fsync(fd) != 0) fail("cannot flush the temporary file");
  int closing = fd;
  fd = -1;
  if (::close(closing) != 0) fail("cannot close the temporary file");
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename the temporary file over the target");
}

void append_bytes(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<uint8_t>*>(context);
  const auto* p = static_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + size);
}

}  // namespace

int text_width(const std::string& text, int scale) {
  int n = int(utf8_split(text).size());
  return n == 0 ? 0 : (n * kCharAdvance - 1) * scale;  // no spacing after the last glyph
}

int text_height(int scale) { return kGlyphHeight * scale; }

Image::Image(int width, int height, Color background) : width_(width), height_(height) {
  TT_CHECK(width >= 1 && width <= kMaxImageSide && height >= 1 && height <= kMaxImageSide,
           "Image: width and height must be in [1, ", kMaxImageSide, "], got ", width, " x ", height);
  pixels_.resize(size_t(width) * size_t(height) * 3);
  for (size_t i = 0; i < pixels_.size(); i += 3) {
    pixels_[i] = background.r;
    pixels_[i + 1] = background.g;
    pixels_[i + 2] = background.b;
  }
}

Color Image::at(int x, int y) const {
  TT_CHECK_INDEX(x >= 0 && x < width_ && y >= 0 && y < height_, "Image::at: pixel (", x, ", ", y, ") is outside the ",
                 width_, " x ", height_, " image");
  const uint8_t* p = &pixels_[(size_t(y) * size_t(width_) + size_t(x)) * 3];
  return {p[0], p[1], p[2]};
}

void Image::set(int x, int y, Color c) {
  if (x < 0 || x >= width_ || y < 0 || y >= height_) return;
  uint8_t* p = &pixels_[(size_t(y) * size_t(width_) + size_t(x)) * 3];
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
}

void Image::fill_rect(int x, int y, int w, int h, Color c) {
  int x0 = std::max(x, 0), y0 = std::max(y, 0);
  int x1 = std::min(x + w, width_), y1 = std::min(y + h, height_);
  for (int yy = y0; yy < y1; ++yy)
    for (int xx = x0; xx < x1; ++xx) set(xx, yy, c);
}

void Image::draw_rect(int x, int y, int w, int h, Color c) {
  if (w <= 0 || h <= 0) return;
  fill_rect(x, y, w, 1, c);
  fill_rect(x, y + h - 1, w, 1, c);
  fill_rect(x, y, 1, h, c);
  fill_rect(x + w - 1, y, 1, h, c);
}

void Image::draw_line(int x0, int y0, int x1, int y1, Color c, int thickness, int dash) {
  // Bresenham: step along the line one pixel at a time, carrying the error of the other axis.
  int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int err = dx + dy, step = 0, lo = -(thickness - 1) / 2;
  while (true) {
    if (dash <= 0 || (step / dash) % 2 == 0)
      fill_rect(x0 + lo, y0 + lo, std::max(thickness, 1), std::max(thickness, 1), c);
    if (x0 == x1 && y0 == y1) break;
    int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
    ++step;
  }
}

void Image::draw_text(int x, int y, const std::string& text, Color c, int scale) {
  std::string glyphs = to_glyphs(text);
  for (size_t i = 0; i < glyphs.size(); ++i) {
    int gx = x + int(i) * kCharAdvance * scale;
    for (int py = 0; py < kGlyphHeight; ++py)
      for (int px = 0; px < kGlyphWidth; ++px)
        if (glyph_pixel(glyphs[i], px, py)) fill_rect(gx + px * scale, y + py * scale, scale, scale, c);
  }
}

void Image::draw_text_vertical(int x, int y, const std::string& text, Color c, int scale) {
  // Turning counter-clockwise maps the glyph's (px, py) to (py, -px): the text's start sits at
  // the bottom of its box and its glyph tops face left.
  std::string glyphs = to_glyphs(text);
  int bottom = y + text_width(text, scale) - 1;
  for (size_t i = 0; i < glyphs.size(); ++i) {
    int gy = bottom - int(i) * kCharAdvance * scale;
    for (int py = 0; py < kGlyphHeight; ++py)
      for (int px = 0; px < kGlyphWidth; ++px)
        if (glyph_pixel(glyphs[i], px, py)) fill_rect(x + py * scale, gy - (px + 1) * scale + 1, scale, scale, c);
  }
}

std::vector<uint8_t> Image::encode_png() const {
  std::vector<uint8_t> out;
  int ok = stbi_write_png_to_func(append_bytes, &out, width_, height_, 3, pixels_.data(), width_ * 3);
  if (ok == 0)
    throw IOError(detail::concat("encode_png: stb_image_write failed on a ", width_, " x ", height_, " image"));
  return out;
}

void Image::save_png(const std::string& path) const {
  TT_CHECK_T(IOError, !path.empty(), "save_png: the path is empty");
  write_file_atomically(path, encode_png(), "save_png");
}

}  // namespace tt::viz
