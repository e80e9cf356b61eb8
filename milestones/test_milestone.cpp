// Tests of milestone.h: the verdict line every milestone ends with (its number, its comparison and
// the FAIL that a failed requirement makes of it), and the figures' checks of their input.
#include <catch2/catch.hpp>

#include "milestone.h"

using Catch::Contains;
using namespace milestones;

TEST_CASE("verdict lines say PASS or FAIL with the number against the threshold", "[milestones]") {
  CHECK(verdict_line("test accuracy", 0.9722, 0.95, kAtLeast, kPercent) == "PASS: test accuracy 97.22% >= 95.00%");
  CHECK(verdict_line("test accuracy", 0.931, 0.95, kAtLeast, kPercent) == "FAIL: test accuracy 93.10% < 95.00%");
  CHECK(verdict_line("accuracy", 1.0, 1.0, kAtLeast, kPercent) == "PASS: accuracy 100.00% >= 100.00%");  // the edge
  CHECK(verdict_line("peak", 12.5 * 1024 * 1024, 64.0 * 1024 * 1024, kAtMost, kBytes) ==
        "PASS: peak 12.5 MiB <= 64.0 MiB");
  CHECK(verdict_line("peak", 2.0 * 1024 * 1024 * 1024, 64.0 * 1024 * 1024, kAtMost, kBytes) ==
        "FAIL: peak 2.0 GiB > 64.0 MiB");
  CHECK(verdict_line("max |diff|", 3.1e-7, 1e-6, kAtMost, kPlain) == "PASS: max |diff| 3.1e-07 <= 1e-06");
  CHECK(verdict_line("x", 1, 2, kAtLeast, kPlain, "why") == "FAIL: x 1 < 2 (why)");
}

TEST_CASE("NaN never passes", "[milestones]") {
  const double nan = std::nan("");
  CHECK_FALSE(passes(nan, 0.5, kAtLeast));
  CHECK_FALSE(passes(nan, 0.5, kAtMost));
  CHECK_THAT(verdict_line("loss", nan, 1.0, kAtMost, kPlain), Contains("FAIL: loss nan"));
}

TEST_CASE("a failed requirement turns the verdict into FAIL and is named; the exit status follows", "[milestones]") {
  Verdict ok("accuracy", 0.95, kAtLeast, kPercent);
  CHECK(ok.finish(0.97) == 0);
  CHECK(ok.finish(0.90) == 1);
  Verdict required("accuracy", 0.95, kAtLeast, kPercent);
  required.require(true, "never shown");
  CHECK(required.line(0.97) == "PASS: accuracy 97.00% >= 95.00%");
  required.require(false, "the checkpoint differs");
  required.require(false, "XOR was learned");
  CHECK(required.line(0.97) == "FAIL: accuracy 97.00% >= 95.00% (the checkpoint differs; XOR was learned)");
  CHECK(required.line(0.90) == "FAIL: accuracy 90.00% < 95.00% (the checkpoint differs; XOR was learned)");
  CHECK(required.finish(0.97) == 1);
}

TEST_CASE("bytes and percentages are printed for people", "[milestones]") {
  CHECK(format_value(512, kBytes) == "512 B");
  CHECK(format_value(1536, kBytes) == "1.5 KiB");
  CHECK(format_value(1024.0 * 1024 * 1024, kBytes) == "1.0 GiB");
  CHECK(format_value(0.5, kPercent) == "50.00%");
}

TEST_CASE("the figures refuse input they cannot draw", "[milestones]") {
  REQUIRE_THROWS_WITH(save_image_grid("/tmp/never.png", tt::zeros({2, 8, 8}), {"a", "b"}, {false, false}, "t"),
                      Contains("save_image_grid: images must be [N, 1, H, W] with N >= 1, got [2, 8, 8]"));
  REQUIRE_THROWS_WITH(save_image_grid("/tmp/never.png", tt::zeros({0, 1, 8, 8}), {}, {}, "t"),
                      Contains("with N >= 1, got [0, 1, 8, 8]"));
  const auto none = [](const tt::Tensor& p) { return tt::zeros({p.size(0)}, tt::kInt64); };
  REQUIRE_THROWS_WITH(save_decision_boundaries("/tmp/never.png", {{"empty", tt::zeros({0, 2}),
                                                                   tt::zeros({0}, tt::kInt64), none}}, "t"),
                      Contains("a panel needs points [N, 2] with N >= 1 and labels [N], got [0, 2] and [0]"));
  REQUIRE_THROWS_WITH(save_confusion_matrix("/tmp/never.png", tt::tensor({0, 1}), tt::tensor({0, 5}), {"a", "b"}, "t"),
                    Contains("class 5 outside [0, 2)"));
  REQUIRE_THROWS_WITH(save_confusion_matrix("/tmp/never.png", tt::tensor({0, 1}), tt::tensor({0}), {"a", "b"}, "t"),
                    Contains("2 true labels but 1 predictions"));
}
