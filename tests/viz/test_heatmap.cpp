// viz/heatmap: save_attention_heatmap writes PNGs that decode, colours cells by weight through
// the colour map (monotonically), draws one panel per head plus their mean, and rejects bad
// shapes and labels with messages that say what was expected.
#include "test_util.h"
#include "viz_test_util.h"

#include <tinytorch/viz/colormap.h>
#include <tinytorch/viz/heatmap.h>

using namespace tt;
using tt::testing::DecodedPng;
using tt::testing::luminance;
using tt::testing::read_png;
using tt::testing::TempDir;
using viz::Color;

namespace {

// The colours of the runs of pixels along the first image row that holds `first`, starting at
// its first pixel there and stopping at the map's grey border; also each run's length.
void runs_from(const DecodedPng& png, Color first, std::vector<Color>& colors, std::vector<int>& lengths) {
  for (int y = 0; y < png.height; ++y) {
    for (int x = 0; x < png.width; ++x) {
      if (png.at(x, y) != first) continue;
      for (; x < png.width && png.at(x, y) != viz::kGrey; ++x) {
        if (colors.empty() || png.at(x, y) != colors.back()) {
          colors.push_back(png.at(x, y));
          lengths.push_back(0);
        }
        ++lengths.back();
      }
      return;
    }
  }
}

}  // namespace

TEST_CASE("save_attention_heatmap: a 2-D map decodes, and cell colours follow the weights", "[viz]") {
  TempDir dir;
  Tensor w = tensor({{0.0, 0.1, 0.3, 0.6, 1.0}, {0.2, 0.2, 0.2, 0.2, 0.2}});
  viz::HeatmapOptions o;
  o.cell_size = 12;
  o.title = "one head";
  std::string path = dir.file("map.png");
  viz::save_attention_heatmap(path, w, {"the", "cat"}, {"a", "b", "c", "d", "e"}, o);
  CHECK(dir.entries() == std::vector<std::string>{"map.png"});
  DecodedPng png = read_png(path);
  CHECK(png.width >= 5 * 12);
  CHECK(png.height >= 2 * 12);

  std::vector<Color> colors;
  std::vector<int> lengths;
  runs_from(png, viz::viridis(0.0), colors, lengths);
  std::vector<double> row = {0.0, 0.1, 0.3, 0.6, 1.0};
  REQUIRE(colors.size() == row.size());
  for (size_t j = 0; j < row.size(); ++j) {
    INFO("column " << j);
    CHECK(colors[j] == viz::viridis(double(float(row[j]))));  // range [0, 1]
    CHECK(lengths[j] == 12);
    if (j > 0) CHECK(luminance(colors[j]) > luminance(colors[j - 1]));  // heavier is lighter
  }
  CHECK(png.count(viz::viridis(double(0.2f))) >= 5 * 12 * 12);  // the second row
}

TEST_CASE("save_attention_heatmap: colours are monotone in the weights, whatever their order", "[viz]") {
  TempDir dir;
  std::vector<float> v = {0.5f, 0.1f, 0.9f, 0.3f, 0.7f, 0.0f, 0.8f, 0.2f, 0.6f};
  viz::HeatmapOptions o;
  o.cell_size = 6;
  o.vmin = 0.0;
  o.vmax = 1.0;
  viz::save_attention_heatmap(dir.file("m.png"), tensor(v, {1, 9}), {}, {}, o);
  DecodedPng png = read_png(dir.file("m.png"));
  std::vector<Color> colors;
  std::vector<int> lengths;
  runs_from(png, viz::viridis(v[0]), colors, lengths);
  REQUIRE(colors.size() == 9);
  for (size_t i = 0; i < 9; ++i)
    for (size_t j = 0; j < 9; ++j)
      if (v[i] < v[j]) CHECK(luminance(colors[i]) < luminance(colors[j]));
}

TEST_CASE("save_attention_heatmap: heads get a panel each, and the mean panel averages them", "[viz]") {
  TempDir dir;
  Tensor w = tt::stack({full({2, 3}, 0.2), full({2, 3}, 0.6)});  // [H=2, Tq=2, Tk=3]
  viz::HeatmapOptions o;
  o.cell_size = 10;
  o.panels_per_row = 4;
  viz::save_attention_heatmap(dir.file("heads.png"), w, {"q0", "q1"}, {"k0", "k1", "k2"}, o);
  DecodedPng png = read_png(dir.file("heads.png"));
  double hi = double(0.6f);
  float mean = float((double(0.2f) + double(0.6f)) / 2);
  CHECK(png.count(viz::viridis(double(0.2f) / hi)) >= 600);
  CHECK(png.count(viz::viridis(1.0)) >= 600);
  CHECK(png.count(viz::viridis(double(mean) / hi)) >= 600);

  o.mean_panel = false;
  viz::save_attention_heatmap(dir.file("no_mean.png"), w, {"q0", "q1"}, {"k0", "k1", "k2"}, o);
  DecodedPng no_mean = read_png(dir.file("no_mean.png"));
  CHECK(no_mean.count(viz::viridis(double(mean) / hi)) < 600);
  CHECK(no_mean.width < png.width);  // three panels in a row became two
  CHECK(no_mean.height == png.height);
}

TEST_CASE("save_attention_heatmap: [1, H, Tq, Tk] draws the same figure as [H, Tq, Tk]", "[viz]") {
  TempDir dir;
  manual_seed(1);
  Tensor w = rand({3, 4, 5}).softmax(-1);
  viz::save_attention_heatmap(dir.file("a.png"), w, {}, {});
  viz::save_attention_heatmap(dir.file("b.png"), w.unsqueeze(0), {}, {});
  CHECK(read_png(dir.file("a.png")).rgb == read_png(dir.file("b.png")).rgb);
  // float64 weights, and weights that require grad, are drawn as they are.
  viz::save_attention_heatmap(dir.file("c.png"), w.to(kFloat64).requires_grad_(), {}, {});
  CHECK(read_png(dir.file("c.png")).rgb == read_png(dir.file("a.png")).rgb);
}

TEST_CASE("save_attention_heatmap: the automatic cell size keeps big and small maps readable", "[viz]") {
  TempDir dir;
  viz::save_attention_heatmap(dir.file("small.png"), ones({3, 3}) / 3, {}, {});
  viz::save_attention_heatmap(dir.file("big.png"), ones({200, 200}) / 200, {}, {});
  DecodedPng small = read_png(dir.file("small.png")), big = read_png(dir.file("big.png"));
  CHECK(small.count(viz::viridis(1.0)) >= 3 * 3 * 40 * 40);  // cells of 40 px, the cap
  CHECK(small.count(viz::viridis(1.0)) < 3 * 3 * 41 * 41);
  CHECK(big.width > 200);
  CHECK(big.width < 1000);
  CHECK(big.count(viz::viridis(1.0)) >= 200 * 200);  // at least a pixel per weight
}

TEST_CASE("save_attention_heatmap: NaN weights are grey, long and non-ASCII labels are fine", "[viz]") {
  TempDir dir;
  viz::HeatmapOptions o;
  o.cell_size = 20;
  std::vector<std::string> rows = {"\u2581the", "an extremely long token label"}, cols = {"caf\u00e9", "\u732b"};
  viz::save_attention_heatmap(dir.file("plain.png"), tensor({{0.1, 0.5}, {0.9, 0.3}}), rows, cols, o);
  viz::save_attention_heatmap(dir.file("nan.png"), tensor({{0.1, std::nan("")}, {0.9, 0.3}}), rows, cols, o);
  DecodedPng plain = read_png(dir.file("plain.png")), nan = read_png(dir.file("nan.png"));
  REQUIRE(plain.width == nan.width);
  CHECK(nan.count(viz::kGrey) - plain.count(viz::kGrey) == 20 * 20);
}

TEST_CASE("save_attention_heatmap: show_values writes numbers into cells wide enough", "[viz]") {
  TempDir dir;
  viz::HeatmapOptions o;
  o.cell_size = 30;
  Tensor w = tensor({{0.25, 1.0}});
  viz::save_attention_heatmap(dir.file("plain.png"), w, {}, {}, o);
  o.show_values = true;
  viz::save_attention_heatmap(dir.file("values.png"), w, {}, {}, o);
  Color quarter = viz::viridis(0.25);
  int64_t plain = read_png(dir.file("plain.png")).count(quarter);
  int64_t values = read_png(dir.file("values.png")).count(quarter);
  CHECK(plain >= 900);
  CHECK(values < plain - 20);  // the digits cover some of the cell
}

TEST_CASE("save_attention_heatmap: bad shapes, dtypes, labels and options are refused", "[viz]") {
  TempDir dir;
  std::string p = dir.file("x.png");
  Tensor w = ones({2, 3}) / 3;
  REQUIRE_THROWS_WITH(
      viz::save_attention_heatmap(p, w, {"a"}, {}),
      Catch::Contains("save_attention_heatmap: expected 2 row labels (one per row of weights [2, 3], or none), got 1"));
  REQUIRE_THROWS_WITH(viz::save_attention_heatmap(p, w, {}, {"a", "b", "c", "d"}),
                      Catch::Contains("expected 3 column labels") && Catch::Contains("got 4"));
  REQUIRE_THROWS_AS(viz::save_attention_heatmap(p, w, {}, {"a"}), ShapeError);
  REQUIRE_THROWS_WITH(viz::save_attention_heatmap(p, ones({5}), {}, {}),
                      Catch::Contains("weights must be [Tq, Tk], [H, Tq, Tk] or [1, H, Tq, Tk], got [5]"));
  REQUIRE_THROWS_WITH(viz::save_attention_heatmap(p, ones({1, 1, 1, 2, 2}), {}, {}),
                      Catch::Contains("got [1, 1, 1, 2, 2]"));
  REQUIRE_THROWS_WITH(viz::save_attention_heatmap(p, ones({2, 1, 2, 2}), {}, {}),
                      Catch::Contains("must have batch size 1, got [2, 1, 2, 2]"));
  REQUIRE_THROWS_WITH(viz::save_attention_heatmap(p, ones({0, 3}), {}, {}), Catch::Contains("must not be empty"));
  REQUIRE_THROWS_AS(viz::save_attention_heatmap(p, ones({2, 2}, kInt64), {}, {}), DtypeError);
  REQUIRE_THROWS_WITH(viz::save_attention_heatmap(p, Tensor(), {}, {}), Catch::Contains("undefined"));
  viz::HeatmapOptions o;
  o.cell_size = -1;
  REQUIRE_THROWS_WITH(viz::save_attention_heatmap(p, w, {}, {}, o),
                      Catch::Contains("cell_size must be in [0, 256], got -1"));
  o.cell_size = 256;
  REQUIRE_THROWS_WITH(viz::save_attention_heatmap(p, ones({1, 100}), {}, {}, o),
                      Catch::Contains("more than 16384 on a side") && Catch::Contains("slice the weights"));
  o = {};
  o.vmin = 1.0;
  o.vmax = 0.0;
  REQUIRE_THROWS_WITH(viz::save_attention_heatmap(p, w, {}, {}, o), Catch::Contains("vmin must be at most vmax"));
  CHECK(dir.entries().empty());  // nothing was written
  REQUIRE_THROWS_AS(viz::save_attention_heatmap(dir.file("missing/x.png"), w, {}, {}), IOError);
}

TEST_CASE("save_attention_heatmap: draws what attention_weights returns, masked cells at the bottom colour", "[viz]") {
  TempDir dir;
  manual_seed(5);
  Tensor q = randn({1, 2, 4, 8}), k = randn({1, 2, 4, 8});
  Tensor w = attention_weights(q, k, {}, /*is_causal=*/true);  // [1, 2, 4, 4]
  viz::HeatmapOptions o;
  o.cell_size = 10;
  o.vmin = 0.0;
  o.vmax = 1.0;
  viz::save_attention_heatmap(dir.file("causal.png"), w, {"a", "b", "c", "d"}, {"a", "b", "c", "d"}, o);
  DecodedPng png = read_png(dir.file("causal.png"));
  // Six cells above the diagonal per panel (two heads and their mean) are exactly 0.
  CHECK(png.count(viz::viridis(0.0)) >= 3 * 6 * 100);
  // The first query sees only the first key: weight 1.
  CHECK(png.count(viz::viridis(1.0)) >= 3 * 100);
}
