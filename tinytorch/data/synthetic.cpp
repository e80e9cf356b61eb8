// The synthetic datasets: each made point by point in plain C++ from a RandomStream (stream 0 of
// the seed), then shuffled (stream 1) and wrapped in tensors.
#include "tinytorch/data/synthetic.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tinytorch/data/random.h"
#include "tinytorch/ops/factory.h"

namespace tt::data {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr uint64_t kPointStream = 0, kShuffleStream = 1;

// Rows of `features` (n x f, row-major) and their labels, in a random order, as a dataset.
std::shared_ptr<TensorDataset> shuffled_dataset(const std::vector<float>& features, const std::vector<int64_t>& labels,
                                                int64_t f, uint64_t seed) {
  int64_t n = int64_t(labels.size());
  std::vector<int64_t> order = permutation(n, seed, kShuffleStream);
  std::vector<float> x(features.size());
  std::vector<int64_t> y(labels.size());
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = order[size_t(i)];
    std::copy_n(features.begin() + src * f, f, x.begin() + i * f);
    y[size_t(i)] = labels[size_t(src)];
  }
  return std::make_shared<TensorDataset>(tensor(x, Shape{n, f}, kFloat32), tensor(y, Shape{n}, kInt64));
}

void check_count(int64_t n, const char* op, const char* what) {
  TT_CHECK(n >= 0, op, ": ", what, " must be non-negative, got ", n);
}
void check_noise(double noise, const char* op, const char* what = "noise") {
  TT_CHECK(std::isfinite(noise) && noise >= 0, op, ": ", what, " must be finite and non-negative, got ", noise);
}

// Note [digit glyphs]: our own 8×8 drawings of 0-9, '#' ink and '.' blank. Each keeps a blank
// border row and column on every side, so a 1-pixel shift never cuts the stroke.
constexpr const char* kGlyphs[10][8] = {
    {"........", "..####..", ".#....#.", ".#...##.", ".#.##.#.", ".##...#.", "..####..", "........"},
    {"........", "...##...", "..###...", "...##...", "...##...", "...##...", "..####..", "........"},
    {"........", "..####..", ".#....#.", "......#.", "....##..", "..##....", ".######.", "........"},
    {"........", ".#####..", "......#.", "..####..", "......#.", "......#.", ".#####..", "........"},
    {"........", "....##..", "...#.#..", "..#..#..", ".######.", ".....#..", ".....#..", "........"},
    {"........", ".######.", ".#......", ".#####..", "......#.", "......#.", ".#####..", "........"},
    {"........", "...###..", "..#.....", ".#####..", ".#....#.", ".#....#.", "..####..", "........"},
    {"........", ".######.", "......#.", ".....#..", "....#...", "...#....", "...#....", "........"},
    {"........", "..####..", ".#....#.", "..####..", ".#....#.", ".#....#.", "..####..", "........"},
    {"........", "..####..", ".#....#.", ".#....#.", "..#####.", ".....#..", "..###...", "........"},
};

}  // namespace

std::shared_ptr<TensorDataset> make_spirals(int64_t n_per_class, int64_t n_classes, double noise, uint64_t seed) {
  check_count(n_per_class, "make_spirals", "n_per_class");
  TT_CHECK(n_classes >= 1, "make_spirals: n_classes must be at least 1, got ", n_classes);
  check_noise(noise, "make_spirals");
  constexpr double kTurns = 1.0, kInnerRadius = 0.1;
  RandomStream rng(seed, kPointStream);
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t k = 0; k < n_classes; ++k) {
    for (int64_t i = 0; i < n_per_class; ++i) {
      double t = rng.uniform();  // position along the arm
      double r = kInnerRadius + (1 - kInnerRadius) * t;
      double angle = 2 * kPi * (double(k) / double(n_classes) + kTurns * t);
      x.push_back(float(r * std::cos(angle) + noise * rng.normal()));
      x.push_back(float(r * std::sin(angle) + noise * rng.normal()));
      y.push_back(k);
    }
  }
  return shuffled_dataset(x, y, 2, seed);
}

std::shared_ptr<TensorDataset> make_moons(int64_t n, double noise, uint64_t seed) {
  check_count(n, "make_moons", "n");
  check_noise(noise, "make_moons");
  RandomStream rng(seed, kPointStream);
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < n; ++i) {
    int64_t label = i % 2;
    double t = kPi * rng.uniform();
    double px = label == 0 ? std::cos(t) : 1 - std::cos(t);
    double py = label == 0 ? std::sin(t) : 0.5 - std::sin(t);
    x.push_back(float(px + noise * rng.normal()));
    x.push_back(float(py + noise * rng.normal()));
    y.push_back(label);
  }
  return shuffled_dataset(x, y, 2, seed);
}

std::shared_ptr<TensorDataset> make_xor(int64_t n, double noise, uint64_t seed) {
  check_count(n, "make_xor", "n");
  check_noise(noise, "make_xor");
  constexpr double kMargin = 0.1;
  RandomStream rng(seed, kPointStream);
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < n; ++i) {
    int64_t label = i % 2;
    // Label 0: same signs (quadrants I and III); label 1: opposite signs (II and IV).
    double sx = rng.uniform() < 0.5 ? -1.0 : 1.0;
    double sy = label == 0 ? sx : -sx;
    x.push_back(float(sx * rng.uniform(kMargin, 1.0) + noise * rng.normal()));
    x.push_back(float(sy * rng.uniform(kMargin, 1.0) + noise * rng.normal()));
    y.push_back(label);
  }
  return shuffled_dataset(x, y, 2, seed);
}

std::shared_ptr<TensorDataset> make_blobs(int64_t n, int64_t n_classes, int64_t n_features, double spread,
                                          uint64_t seed) {
  check_count(n, "make_blobs", "n");
  TT_CHECK(n_classes >= 1, "make_blobs: n_classes must be at least 1, got ", n_classes);
  TT_CHECK(n_features >= 1, "make_blobs: n_features must be at least 1, got ", n_features);
  check_noise(spread, "make_blobs", "spread");
  constexpr double kMinDistance = 5.0;
  constexpr int kTriesPerBox = 1000;
  RandomStream rng(seed, kPointStream);
  // Centres by rejection: redraw one that lands within kMinDistance of an earlier centre, and
  // widen the box when it keeps failing (many classes in few dimensions).
  std::vector<std::vector<double>> centres;
  double half_width = 10.0;
  int tries = 0;
  while (int64_t(centres.size()) < n_classes) {
    std::vector<double> c(static_cast<size_t>(n_features));
    for (double& v : c) v = rng.uniform(-half_width, half_width);
    bool far_enough = true;
    for (const auto& other : centres) {
      double d2 = 0;
      for (size_t j = 0; j < c.size(); ++j) d2 += (c[j] - other[j]) * (c[j] - other[j]);
      far_enough = far_enough && d2 >= kMinDistance * kMinDistance;
    }
    if (far_enough) {
      centres.push_back(c);
    } else if (++tries == kTriesPerBox) {
      half_width *= 1.25;
      tries = 0;
    }
  }
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < n; ++i) {
    int64_t label = i % n_classes;
    for (int64_t j = 0; j < n_features; ++j)
      x.push_back(float(centres[size_t(label)][size_t(j)] + spread * rng.normal()));
    y.push_back(label);
  }
  return shuffled_dataset(x, y, n_features, seed);
}

Tensor digit_glyph(int64_t d) {
  TT_CHECK_INDEX(d >= 0 && d <= 9, "digit_glyph: digit must be in 0..9, got ", d);
  std::vector<float> pixels(64);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) pixels[size_t(r * 8 + c)] = kGlyphs[d][r][c] == '#' ? 1.0f : 0.0f;
  return tensor(pixels, Shape{8, 8}, kFloat32);
}

std::shared_ptr<TensorDataset> make_digits(int64_t n_per_class, double noise, uint64_t seed) {
  check_count(n_per_class, "make_digits", "n_per_class");
  check_noise(noise, "make_digits");
  RandomStream rng(seed, kPointStream);
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t d = 0; d < 10; ++d) {
    for (int64_t i = 0; i < n_per_class; ++i) {
      int dr = int(rng.uniform_below(3)) - 1, dc = int(rng.uniform_below(3)) - 1;
      double ink = rng.uniform(0.6, 1.0);
      for (int r = 0; r < 8; ++r) {
        for (int c = 0; c < 8; ++c) {
          // The pixel (r, c) of the shifted image shows the glyph's pixel (r - dr, c - dc).
          int gr = r - dr, gc = c - dc;
          bool on = gr >= 0 && gr < 8 && gc >= 0 && gc < 8 && kGlyphs[d][gr][gc] == '#';
          double v = (on ? ink : 0.0) + noise * rng.normal();
          x.push_back(float(std::clamp(v, 0.0, 1.0)));
        }
      }
      y.push_back(d);
    }
  }
  return shuffled_dataset(x, y, 64, seed);
}

}  // namespace tt::data
