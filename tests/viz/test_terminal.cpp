// viz render_attention_terminal: labels on both axes, shades ordered by weight, ANSI colours,
// truncation of long labels and big maps, and clear errors.
#include <sstream>

#include "test_util.h"
#include "viz_test_util.h"

#include <tinytorch/viz/colormap.h>
#include <tinytorch/viz/font.h>
#include <tinytorch/viz/heatmap.h>

using namespace tt;

namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  for (std::string line; std::getline(is, line);) out.push_back(line);
  return out;
}

viz::TerminalOptions plain() {
  viz::TerminalOptions o;
  o.color = false;
  return o;
}

const std::vector<std::string> kShades = {" ", "\u2591", "\u2592", "\u2593", "\u2588"};

// The shade level (0..4) of each cell of a rendered row, after a label of `label_width` code
// points and one space; each cell is two equal shade characters.
std::vector<int> levels(const std::string& line, size_t label_width) {
  std::vector<std::string> cps = viz::utf8_split(line);
  std::vector<int> out;
  for (size_t i = label_width + 1; i + 1 < cps.size(); i += 2) {
    auto it = std::find(kShades.begin(), kShades.end(), cps[i]);
    REQUIRE(it != kShades.end());
    CHECK(cps[i + 1] == cps[i]);
    out.push_back(int(it - kShades.begin()));
  }
  return out;
}

}  // namespace

TEST_CASE("render_attention_terminal: rows and columns labelled, shades in order of weight", "[viz]") {
  std::string s = viz::render_attention_terminal(tensor({{0.0, 0.25, 0.5, 0.75, 1.0}, {1.0, 0.0, 0.0, 0.0, 0.0}}),
                                                 {"the", "cat"}, {"a", "b", "c", "d", "e"}, plain());
  std::vector<std::string> lines = lines_of(s);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "    a b c d e");
  CHECK(lines[1] == "the   \u2591\u2591\u2592\u2592\u2593\u2593\u2588\u2588");
  CHECK(lines[2] == "cat \u2588\u2588        ");  // zero weights are blank cells
  CHECK(lines[3].find("shades:") == 0);
  CHECK(lines[3].find("range [0, 1]") != std::string::npos);
}

TEST_CASE("render_attention_terminal: five equal bands of the range, one shade each", "[viz]") {
  std::string s = viz::render_attention_terminal(tensor({{0.1, 0.3, 0.45, 0.65, 0.85, 1.0}}), {"q"}, {}, plain());
  std::vector<std::string> lines = lines_of(s);
  REQUIRE(lines.size() == 3);
  CHECK(levels(lines[1], 1) == std::vector<int>{0, 1, 2, 3, 4, 4});
  CHECK(lines[2] == "shades: ' '<0.2 '\u2591'<0.4 '\u2592'<0.6 '\u2593'<0.8 '\u2588'  range [0, 1]");
}

TEST_CASE("render_attention_terminal: shades never decrease along a sorted row", "[viz]") {
  manual_seed(7);
  std::vector<float> v = rand({16}).to_vector<float>();
  std::sort(v.begin(), v.end());
  std::string s = viz::render_attention_terminal(tensor(v, {1, 16}), {"q"}, {}, plain());
  std::string row;
  for (const auto& l : lines_of(s))
    if (l.rfind("q ", 0) == 0) row = l;
  REQUIRE(viz::utf8_split(row).size() == 2 + 32);
  std::vector<int> lv = levels(row, 1);
  REQUIRE(lv.size() == 16);
  CHECK(std::is_sorted(lv.begin(), lv.end()));
  CHECK(lv.back() == 4);  // the largest weight is the top of the range
}

TEST_CASE("render_attention_terminal: column labels run downwards and end above their column", "[viz]") {
  std::string s = viz::render_attention_terminal(ones({1, 2}) / 2, {"q"}, {"cat", "to"}, plain());
  std::vector<std::string> lines = lines_of(s);
  REQUIRE(lines.size() >= 4);
  CHECK(lines[0] == "  c");
  CHECK(lines[1] == "  a t");
  CHECK(lines[2] == "  t o");
  CHECK(lines[3] == "q \u2588\u2588\u2588\u2588");
}

TEST_CASE("render_attention_terminal: long labels are cut with an ellipsis, control characters replaced", "[viz]") {
  viz::TerminalOptions o = plain();
  o.max_label_chars = 5;
  std::string s = viz::render_attention_terminal(ones({2, 1}), {"transformer", "a\nb"}, {"k"}, o);
  std::vector<std::string> lines = lines_of(s);
  REQUIRE(lines.size() == 4);
  CHECK(lines[1].rfind("tran\u2026 ", 0) == 0);
  CHECK(lines[2].rfind("  a?b ", 0) == 0);  // right-aligned under the 5-wide label column
}

TEST_CASE("render_attention_terminal: big maps show the first rows and columns and count the rest", "[viz]") {
  viz::TerminalOptions o = plain();
  o.max_rows = 10;
  o.max_cols = 6;
  std::string s = viz::render_attention_terminal(ones({50, 20}) / 20, {}, {}, o);
  CHECK(s.find("40 more rows") != std::string::npos);
  CHECK(s.find("14 more columns not shown") != std::string::npos);
  int map_rows = 0;
  for (const auto& l : lines_of(s)) map_rows += l.find("\u2588") != std::string::npos;
  CHECK(map_rows == 10 + 1);  // and the legend's shade list
}

TEST_CASE("render_attention_terminal: colour mode uses 256-colour backgrounds and resets", "[viz]") {
  std::string s = viz::render_attention_terminal(tensor({{0.0, 1.0}}), {"q"}, {"a", "b"});
  std::string lo = "\x1b[48;5;" + std::to_string(viz::xterm256_index(viz::viridis(0.0))) + "m  ";
  std::string hi = "\x1b[48;5;" + std::to_string(viz::xterm256_index(viz::viridis(1.0))) + "m  ";
  CHECK(s.find("q " + lo + hi + "\x1b[0m\n") != std::string::npos);
  CHECK(s.find("colour: 0 ") != std::string::npos);
  CHECK(s.find("\u2588") == std::string::npos);  // no shade characters
}

TEST_CASE("render_attention_terminal: shapes and labels are checked", "[viz]") {
  REQUIRE_THROWS_WITH(viz::render_attention_terminal(ones({2, 3, 3}), {}, {}),
                      Catch::Contains("weights must be [Tq, Tk]") && Catch::Contains("weights.select(0, h)") &&
                          Catch::Contains("got [2, 3, 3]"));
  REQUIRE_THROWS_WITH(
      viz::render_attention_terminal(ones({2, 5}), {}, {"a"}),
      Catch::Contains("render_attention_terminal: expected 5 column labels") && Catch::Contains("got 1"));
  REQUIRE_THROWS_AS(viz::render_attention_terminal(ones({2, 2}, kInt64), {}, {}), DtypeError);
  viz::TerminalOptions o;
  o.max_rows = 0;
  REQUIRE_THROWS_WITH(viz::render_attention_terminal(ones({2, 2}), {}, {}, o), Catch::Contains("at least 1"));
}
