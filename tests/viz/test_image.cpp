// viz/image and viz/font: the glyph table, UTF-8 handling, drawing primitives and PNG files that
// decode, with the same pixels, in an independent reader.
#include <set>

#include "test_util.h"
#include "viz_test_util.h"

using namespace tt;
using tt::testing::read_png;
using tt::testing::TempDir;
using viz::Color;
using viz::Image;

namespace {

// The glyph of c as 35 booleans.
std::vector<bool> glyph(char c) {
  std::vector<bool> out;
  for (int y = 0; y < viz::kGlyphHeight; ++y)
    for (int x = 0; x < viz::kGlyphWidth; ++x) out.push_back(viz::glyph_pixel(c, x, y));
  return out;
}

// The bounding box {x0, y0, x1, y1} of pixels that are not `paper`; x0 > x1 when there are none.
std::vector<int> ink_box(const Image& img, Color paper) {
  std::vector<int> box{img.width(), img.height(), -1, -1};
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x)
      if (img.at(x, y) != paper)
        box = {std::min(box[0], x), std::min(box[1], y), std::max(box[2], x), std::max(box[3], y)};
  return box;
}

}  // namespace

TEST_CASE("font: every printable character has its own glyph, space has no ink", "[viz]") {
  std::set<std::vector<bool>> seen;
  for (int c = 33; c <= 126; ++c) {
    std::vector<bool> g = glyph(char(c));
    INFO("character " << char(c));
    CHECK(std::count(g.begin(), g.end(), true) > 0);
    CHECK(seen.insert(g).second);  // no two characters look the same
  }
  std::vector<bool> space = glyph(' ');
  CHECK(std::count(space.begin(), space.end(), true) == 0);
  CHECK_FALSE(viz::glyph_pixel('A', -1, 0));
  CHECK_FALSE(viz::glyph_pixel('A', 0, viz::kGlyphHeight));
}

TEST_CASE("font: characters outside printable ASCII draw as a question mark", "[viz]") {
  CHECK(glyph('\n') == glyph('?'));
  CHECK(glyph(char(200)) == glyph('?'));
  CHECK(glyph(char(127)) == glyph('?'));
}

TEST_CASE("font: UTF-8 text maps to one glyph per code point", "[viz]") {
  CHECK(viz::to_glyphs("cat") == "cat");
  CHECK(viz::to_glyphs("\u2581the") == "_the");  // SentencePiece's word start
  CHECK(viz::to_glyphs("\u0120cat") == "_cat");  // GPT-2's word start
  CHECK(viz::to_glyphs("caf\u00e9 \u732b") == "caf? ?");
  std::vector<std::string> cps = viz::utf8_split("a\u00e9\u2581\xF0\x9F\x98\x80z");
  REQUIRE(cps.size() == 5);
  CHECK(cps[1] == "\u00e9");
  CHECK(cps[3] == "\xF0\x9F\x98\x80");
  // A truncated sequence and a stray continuation byte are code points of their own.
  std::vector<std::string> bad = viz::utf8_split(
      "\xE2\x96"
      "a\x80");
  CHECK(bad == std::vector<std::string>{"\xE2", "\x96", "a", "\x80"});
  CHECK(viz::text_width("") == 0);
  CHECK(viz::text_width("ab") == 2 * viz::kCharAdvance - 1);
  CHECK(viz::text_width("\u00e9t\u00e9", 2) == 2 * (3 * viz::kCharAdvance - 1));
}

TEST_CASE("Image: pixels start as the background, set clips, at checks bounds", "[viz]") {
  Image img(4, 3, Color{1, 2, 3});
  CHECK(img.width() == 4);
  CHECK(img.height() == 3);
  CHECK(img.pixels().size() == 36);
  CHECK(img.at(3, 2) == Color{1, 2, 3});
  img.set(1, 2, Color{9, 8, 7});
  CHECK(img.at(1, 2) == Color{9, 8, 7});
  img.set(-1, 0, viz::kBlack);  // outside: skipped
  img.set(4, 0, viz::kBlack);
  CHECK(ink_box(img, Color{1, 2, 3}) == std::vector<int>{1, 2, 1, 2});
  REQUIRE_THROWS_WITH(img.at(4, 0), Catch::Contains("pixel (4, 0) is outside the 4 x 3 image"));
  REQUIRE_THROWS_AS(img.at(0, -1), IndexError);
}

TEST_CASE("Image: sizes outside [1, kMaxImageSide] are refused", "[viz]") {
  REQUIRE_THROWS_WITH(Image(0, 5), Catch::Contains("width and height must be in [1, 16384], got 0 x 5"));
  REQUIRE_THROWS_WITH(Image(5, viz::kMaxImageSide + 1), Catch::Contains("got 5 x 16385"));
}

TEST_CASE("Image: rectangles and lines cover exactly their pixels", "[viz]") {
  Image img(20, 20);
  img.fill_rect(2, 3, 4, 5, viz::kBlack);
  CHECK(ink_box(img, viz::kWhite) == std::vector<int>{2, 3, 5, 7});
  Image outline(20, 20);
  outline.draw_rect(2, 3, 4, 5, viz::kBlack);
  CHECK(ink_box(outline, viz::kWhite) == std::vector<int>{2, 3, 5, 7});
  CHECK(outline.at(3, 4) == viz::kWhite);  // hollow
  Image clipped(10, 10);
  clipped.fill_rect(-5, -5, 8, 100, viz::kBlack);
  CHECK(ink_box(clipped, viz::kWhite) == std::vector<int>{0, 0, 2, 9});

  Image line(20, 20);
  line.draw_line(1, 2, 15, 9, viz::kBlack);
  CHECK(line.at(1, 2) == viz::kBlack);
  CHECK(line.at(15, 9) == viz::kBlack);
  CHECK(ink_box(line, viz::kWhite) == std::vector<int>{1, 2, 15, 9});
  int64_t ink = 0;
  for (int x = 0; x < 20; ++x)
    for (int y = 0; y < 20; ++y) ink += line.at(x, y) == viz::kBlack;
  CHECK(ink == 15);  // one pixel per step along the longer axis

  Image dashed(40, 3);
  dashed.draw_line(0, 1, 39, 1, viz::kBlack, 1, 5);
  CHECK(dashed.at(0, 1) == viz::kBlack);
  CHECK(dashed.at(4, 1) == viz::kBlack);
  CHECK(dashed.at(5, 1) == viz::kWhite);
  CHECK(dashed.at(10, 1) == viz::kBlack);
}

TEST_CASE("Image: text fills the box text_width x text_height, vertical text the turned box", "[viz]") {
  Image img(100, 40);
  img.draw_text(10, 5, "HH", viz::kBlack);
  // 'H' has ink in its first and last columns and in every row.
  CHECK(ink_box(img, viz::kWhite) ==
        std::vector<int>{10, 5, 10 + viz::text_width("HH") - 1, 5 + viz::text_height() - 1});
  CHECK(img.at(10, 5) == viz::kBlack);
  CHECK(img.at(10 + viz::kGlyphWidth, 5) == viz::kWhite);  // the spacing column

  Image big(100, 40);
  big.draw_text(0, 0, "H", viz::kBlack, 3);
  CHECK(ink_box(big, viz::kWhite) == std::vector<int>{0, 0, 3 * viz::kGlyphWidth - 1, 3 * viz::kGlyphHeight - 1});

  Image v(40, 100);
  v.draw_text_vertical(5, 10, "HH", viz::kBlack);
  CHECK(ink_box(v, viz::kWhite) == std::vector<int>{5, 10, 5 + viz::text_height() - 1, 10 + viz::text_width("HH") - 1});
  // Turned counter-clockwise, 'L' (a stem on its left and a foot along its bottom) has its stem
  // along the bottom of the box and its foot at the right.
  Image l(20, 20);
  l.draw_text_vertical(0, 0, "L", viz::kBlack);
  for (int x = 0; x < viz::kGlyphHeight; ++x) CHECK(l.at(x, viz::kGlyphWidth - 1) == viz::kBlack);
  for (int y = 0; y < viz::kGlyphWidth; ++y) CHECK(l.at(viz::kGlyphHeight - 1, y) == viz::kBlack);
  CHECK(l.at(0, 0) == viz::kWhite);
}

TEST_CASE("Image: save_png writes a PNG that decodes to the same pixels", "[viz]") {
  TempDir dir;
  Image img(31, 17, Color{10, 20, 30});
  img.fill_rect(3, 4, 5, 6, Color{200, 100, 50});
  img.draw_text(12, 2, "Ok", viz::kWhite);
  std::string path = dir.file("pic.png");
  img.save_png(path);
  auto png = read_png(path);
  REQUIRE(png.width == 31);
  REQUIRE(png.height == 17);
  CHECK(png.rgb == img.pixels());
  CHECK(dir.entries() == std::vector<std::string>{"pic.png"});  // no temporary file left behind

  // Saving again replaces the file as a whole.
  Image other(5, 6);
  other.save_png(path);
  auto again = read_png(path);
  CHECK(again.width == 5);
  CHECK(again.height == 6);
  CHECK(dir.entries() == std::vector<std::string>{"pic.png"});
}

TEST_CASE("Image: save_png into a missing directory throws IOError naming the path", "[viz]") {
  TempDir dir;
  std::string path = dir.file("no/such/dir/pic.png");
  Image img(3, 3);
  REQUIRE_THROWS_AS(img.save_png(path), IOError);
  REQUIRE_THROWS_WITH(img.save_png(path), Catch::Contains("save_png: " + path) && Catch::Contains("temporary file"));
  REQUIRE_THROWS_WITH(img.save_png(""), Catch::Contains("save_png: the path is empty"));
  CHECK(dir.entries().empty());
}
