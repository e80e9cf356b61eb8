// viz/colormap: the viridis-like map (ends, monotone lightness, clamping), xterm 256-colour
// quantisation and value ranges.
#include "test_util.h"
#include "viz_test_util.h"

#include <tinytorch/viz/colormap.h>

using namespace tt;
using tt::testing::luminance;
using viz::Color;

TEST_CASE("viridis: dark purple at 0, yellow at 1, clamped outside, grey for NaN", "[viz]") {
  CHECK(viz::viridis(0.0) == Color{68, 1, 84});
  CHECK(viz::viridis(1.0) == Color{253, 231, 37});
  CHECK(viz::viridis(-3.0) == viz::viridis(0.0));
  CHECK(viz::viridis(7.0) == viz::viridis(1.0));
  CHECK(viz::viridis(std::nan("")) == viz::kGrey);
}

TEST_CASE("viridis: lightness rises strictly with the value", "[viz]") {
  double prev = -1;
  for (int i = 0; i <= 100; ++i) {  // 10 steps between stops: more than rounding can undo
    double l = luminance(viz::viridis(i / 100.0));
    INFO("t = " << i / 100.0);
    CHECK(l > prev);
    prev = l;
  }
}

TEST_CASE("xterm256_index: the 6x6x6 cube's corners and nearest levels", "[viz]") {
  CHECK(viz::xterm256_index(Color{0, 0, 0}) == 16);
  CHECK(viz::xterm256_index(Color{255, 255, 255}) == 231);
  CHECK(viz::xterm256_index(Color{255, 0, 0}) == 196);
  CHECK(viz::xterm256_index(Color{100, 0, 0}) == 16 + 36 * 1);  // 100 is nearest to 95
  CHECK(viz::xterm256_index(Color{0, 0, 40}) == 16);            // 40 is nearer 0 than 95
}

TEST_CASE("value_range: defaults from the data, widened when flat, checked when given", "[viz]") {
  auto r = viz::value_range({0.25f, 0.5f, std::nanf(""), 0.75f}, std::nullopt, std::nullopt);
  CHECK(r.lo == 0.0);  // min(0, smallest)
  CHECK(r.hi == 0.75);
  CHECK(r.normalize(0.375) == Approx(0.5));
  CHECK(r.normalize(2.0) == 1.0);
  CHECK(r.normalize(-1.0) == 0.0);
  CHECK(std::isnan(r.normalize(std::nan(""))));
  auto neg = viz::value_range({-2.f, 2.f}, std::nullopt, std::nullopt);
  CHECK(neg.lo == -2.0);
  auto flat = viz::value_range({0.f, 0.f}, std::nullopt, std::nullopt);
  CHECK(flat.lo == 0.0);
  CHECK(flat.hi == 1.0);
  auto given = viz::value_range({0.5f}, 0.2, 0.4);
  CHECK(given.lo == 0.2);
  CHECK(given.hi == 0.4);
  auto above = viz::value_range({0.1f, 0.3f}, 0.5, std::nullopt);  // vmin above every value
  CHECK(above.lo == 0.5);
  CHECK(above.hi == 1.5);
  REQUIRE_THROWS_WITH(viz::value_range({0.f}, 1.0, 0.5),
                      Catch::Contains("vmin must be at most vmax, got vmin = 1, vmax = 0.5"));
  REQUIRE_THROWS_WITH(viz::value_range({0.f}, std::nullopt, INFINITY), Catch::Contains("must be finite"));
}
