// A tiny built-in bitmap font for figure labels: printable ASCII (32..126) as 5x7 glyphs drawn
// in 6x8 cells (one column and one row of spacing). No kerning, no anti-aliasing, no Unicode
// beyond a few tokenizer markers: text is first mapped to ASCII glyphs by to_glyphs().
#pragma once

#include <string>
#include <vector>

namespace tt::viz {

constexpr int kGlyphWidth = 5;   // pixels of ink per glyph, horizontally
constexpr int kGlyphHeight = 7;  // and vertically
constexpr int kCharAdvance = 6;  // a glyph plus one column of spacing
constexpr int kLineHeight = 8;   // a glyph plus one row of spacing

// Whether the pixel (x, y) of character c's glyph is inked; (0, 0) is the top-left.
// Characters outside 32..126 draw as '?'; x or y outside the glyph are never inked.
bool glyph_pixel(char c, int x, int y);

// One ASCII glyph per Unicode code point of UTF-8 `text`: printable ASCII stays, the word-start
// markers of SentencePiece (U+2581) and GPT-2 (U+0120) become '_', anything else becomes '?'.
std::string to_glyphs(const std::string& text);

// UTF-8 `text` cut into its code points, each as the bytes that encode it. A malformed byte is
// a code point of its own, so the pieces always join back to `text`.
std::vector<std::string> utf8_split(const std::string& text);

}  // namespace tt::viz
