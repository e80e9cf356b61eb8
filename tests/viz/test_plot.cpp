// viz/plot: save_line_plot draws the series in their palette colours on linear or log axes,
// tick labels read as numbers or bytes, and bad series are refused with the offending value.
#include "test_util.h"
#include "viz_test_util.h"

#include <tinytorch/viz/plot.h>

using namespace tt;
using tt::testing::read_png;
using tt::testing::TempDir;

namespace {

const viz::Color kFirst{31, 119, 180};  // the palette's first two colours
const viz::Color kSecond{255, 127, 14};

std::vector<viz::LineSeries> quadratic_and_linear() {
  viz::LineSeries quad{"T^2", {}, {}, true}, lin{"T", {}, {}, false};
  for (double t = 128; t <= 4096; t *= 2) {
    quad.x.push_back(t);
    quad.y.push_back(t * t * 32);
    lin.x.push_back(t);
    lin.y.push_back(t * 1024);
  }
  return {quad, lin};
}

}  // namespace

TEST_CASE("save_line_plot: a log-log plot of two series decodes at the asked size", "[viz]") {
  TempDir dir;
  viz::LinePlotOptions o;
  o.title = "bytes vs T";
  o.x_label = "sequence length T";
  o.y_label = "bytes";
  o.log_x = o.log_y = true;
  o.y_format = viz::TickFormat::kBytes;
  o.width = 640;
  o.height = 400;
  viz::save_line_plot(dir.file("p.png"), quadratic_and_linear(), o);
  auto png = read_png(dir.file("p.png"));
  CHECK(png.width == 640);
  CHECK(png.height == 400);
  CHECK(png.count(kFirst) > 100);
  CHECK(png.count(kSecond) > 100);
  CHECK(dir.entries() == std::vector<std::string>{"p.png"});
}

TEST_CASE("save_line_plot: linear axes take negative values and single points", "[viz]") {
  TempDir dir;
  viz::save_line_plot(dir.file("a.png"), {{"s", {-3, 0, 5}, {2, -1, 4}}});
  viz::save_line_plot(dir.file("b.png"), {{"one point", {1}, {1}}});
  CHECK(read_png(dir.file("a.png")).width == 800);
  CHECK(read_png(dir.file("b.png")).count(kFirst) >= 25);  // its marker
}

TEST_CASE("save_line_plot: bad series and sizes are refused", "[viz]") {
  TempDir dir;
  std::string p = dir.file("p.png");
  REQUIRE_THROWS_WITH(viz::save_line_plot(p, {}), Catch::Contains("save_line_plot: there is no series to plot"));
  REQUIRE_THROWS_WITH(viz::save_line_plot(p, {{"s", {1, 2}, {1}}}),
                      Catch::Contains("series 's' needs as many x as y values, at least one, got 2 x and 1 y"));
  REQUIRE_THROWS_WITH(viz::save_line_plot(p, {{"s", {}, {}}}), Catch::Contains("at least one"));
  REQUIRE_THROWS_WITH(viz::save_line_plot(p, {{"s", {1, 2}, {1, std::nan("")}}}),
                      Catch::Contains("not finite at point 1"));
  viz::LinePlotOptions o;
  o.log_y = true;
  REQUIRE_THROWS_WITH(viz::save_line_plot(p, {{"bytes", {1, 2, 3}, {4, 0, 5}}}, o),
                      Catch::Contains("log_y needs y > 0, series 'bytes' has y[1] = 0"));
  o = {};
  o.width = 10;
  REQUIRE_THROWS_WITH(viz::save_line_plot(p, {{"s", {1}, {1}}}, o), Catch::Contains("got 10 x 500"));
  CHECK(dir.entries().empty());
}

TEST_CASE("format_tick: plain numbers and bytes in binary units", "[viz]") {
  CHECK(viz::format_tick(4096, viz::TickFormat::kNumber) == "4096");
  CHECK(viz::format_tick(1.5, viz::TickFormat::kNumber) == "1.5");
  CHECK(viz::format_tick(1e7, viz::TickFormat::kNumber) == "1e+07");
  CHECK(viz::format_tick(0, viz::TickFormat::kNumber) == "0");
  CHECK(viz::format_tick(100, viz::TickFormat::kBytes) == "100 B");
  CHECK(viz::format_tick(512 * 1024, viz::TickFormat::kBytes) == "512 KiB");
  CHECK(viz::format_tick(1.5 * 1024 * 1024, viz::TickFormat::kBytes) == "1.5 MiB");
  CHECK(viz::format_tick(4.0 * (1 << 30), viz::TickFormat::kBytes) == "4 GiB");
}
