// Synthetic datasets (data/synthetic.h): shapes, dtypes, label balance, determinism per seed,
// value ranges, and cheap proofs of how hard each one is (a least-squares linear classifier,
// nearest centroid, 1-nearest-neighbour, and one small MLP trained on the spirals and digits).
#include <algorithm>
#include <cmath>
#include <functional>

#include "test_util.h"

using namespace tt;
using namespace tt::data;

namespace {

// A dataset's rows as plain numbers, for the reference classifiers below.
struct Rows {
  std::vector<double> x;  // [n, f] row-major
  std::vector<size_t> y;  // [n] class labels
  size_t n = 0, f = 0;
  const double* row(size_t i) const { return &x[i * f]; }
};
Rows rows_of(const TensorDataset& ds) {
  Rows r;
  r.x = ds.data().to_vector<double>();
  for (int64_t label : ds.targets().to_vector<int64_t>()) r.y.push_back(size_t(label));
  r.n = size_t(ds.data().size(0));
  r.f = size_t(ds.data().size(1));
  return r;
}

std::vector<int64_t> class_counts(const TensorDataset& ds, int64_t n_classes) {
  std::vector<int64_t> counts(static_cast<size_t>(n_classes), 0);
  for (int64_t y : ds.targets().to_vector<int64_t>()) {
    REQUIRE(y >= 0);
    REQUIRE(y < n_classes);
    counts[size_t(y)]++;
  }
  return counts;
}

double squared_distance(const double* a, const double* b, size_t f) {
  double d = 0;
  for (size_t j = 0; j < f; ++j) d += (a[j] - b[j]) * (a[j] - b[j]);
  return d;
}

// The fraction of test rows whose label `predict` gets right.
double accuracy(const Rows& test, const std::function<size_t(const double*)>& predict) {
  size_t right = 0;
  for (size_t i = 0; i < test.n; ++i) right += predict(test.row(i)) == test.y[i];
  return double(right) / double(test.n);
}

// Nearest class mean, fit on train, scored on test.
double nearest_centroid_accuracy(const Rows& train, const Rows& test, size_t c) {
  std::vector<double> mean(c * train.f, 0.0), count(c, 0.0);
  for (size_t i = 0; i < train.n; ++i) {
    count[train.y[i]] += 1;
    for (size_t j = 0; j < train.f; ++j) mean[train.y[i] * train.f + j] += train.row(i)[j];
  }
  for (size_t k = 0; k < c; ++k)
    for (size_t j = 0; j < train.f; ++j) mean[k * train.f + j] /= count[k];
  return accuracy(test, [&](const double* q) {
    size_t best = 0;
    for (size_t k = 1; k < c; ++k)
      if (squared_distance(q, &mean[k * train.f], train.f) < squared_distance(q, &mean[best * train.f], train.f))
        best = k;
    return best;
  });
}

// 1-nearest-neighbour: near 100% exactly when the classes are separated by gaps, whatever
// their boundary's shape.
double nearest_neighbour_accuracy(const Rows& train, const Rows& test) {
  return accuracy(test, [&](const double* q) {
    size_t best = 0;
    for (size_t i = 1; i < train.n; ++i)
      if (squared_distance(q, train.row(i), train.f) < squared_distance(q, train.row(best), train.f)) best = i;
    return train.y[best];
  });
}

// The best a linear classifier fit by least squares does: W = argmin |[X 1] W - onehot(Y)|² (a
// tiny ridge keeps it solvable), predicting argmax of [x 1] W. The normal equations
// (AᵀA) W = AᵀY are solved by Gauss-Jordan elimination with partial pivoting.
double least_squares_linear_accuracy(const Rows& train, const Rows& test, size_t c) {
  size_t p = train.f + 1;
  std::vector<double> ata(p * p, 0.0), aty(p * c, 0.0);
  for (size_t i = 0; i < train.n; ++i) {
    std::vector<double> a(train.row(i), train.row(i) + train.f);
    a.push_back(1.0);
    for (size_t r = 0; r < p; ++r) {
      for (size_t s = 0; s < p; ++s) ata[r * p + s] += a[r] * a[s];
      aty[r * c + train.y[i]] += a[r];
    }
  }
  for (size_t r = 0; r < p; ++r) ata[r * p + r] += 1e-6;
  for (size_t col = 0; col < p; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < p; ++r)
      if (std::fabs(ata[r * p + col]) > std::fabs(ata[pivot * p + col])) pivot = r;
    for (size_t s = 0; s < p; ++s) std::swap(ata[col * p + s], ata[pivot * p + s]);
    for (size_t s = 0; s < c; ++s) std::swap(aty[col * c + s], aty[pivot * c + s]);
    for (size_t r = 0; r < p; ++r) {
      if (r == col) continue;
      double factor = ata[r * p + col] / ata[col * p + col];
      for (size_t s = 0; s < p; ++s) ata[r * p + s] -= factor * ata[col * p + s];
      for (size_t s = 0; s < c; ++s) aty[r * c + s] -= factor * aty[col * c + s];
    }
  }
  std::vector<double> w(p * c);  // [p, c]: rows 0..f-1 weights, row f the bias
  for (size_t r = 0; r < p; ++r)
    for (size_t s = 0; s < c; ++s) w[r * c + s] = aty[r * c + s] / ata[r * p + r];
  return accuracy(test, [&](const double* q) {
    std::vector<double> score(w.begin() + std::ptrdiff_t(train.f * c), w.end());
    for (size_t k = 0; k < c; ++k)
      for (size_t j = 0; j < train.f; ++j) score[k] += q[j] * w[j * c + k];
    return size_t(std::max_element(score.begin(), score.end()) - score.begin());
  });
}

// Trains an f-64-64-c ReLU MLP with Adam (lr 1e-2, batch 64, shuffled DataLoader) for `steps`
// steps and returns its held-out accuracy. Written with ops only, so it needs no loss or
// optimizer module.
double mlp_accuracy(const TensorDataset& train, const TensorDataset& test, int64_t c, int steps) {
  manual_seed(0);
  int64_t f = train.data().size(1);
  nn::Linear l1(f, 64), l2(64, 64), l3(64, c);
  auto forward = [&](const Tensor& x) { return l3(l2(l1(x).relu()).relu()); };
  std::vector<Tensor> params, m, v;
  for (nn::Linear* l : {&l1, &l2, &l3})
    for (const Tensor& p : l->parameters()) {
      params.push_back(p);
      m.push_back(zeros_like(p));
      v.push_back(zeros_like(p));
    }
  DataLoader loader(std::make_shared<TensorDataset>(train.data(), train.targets()),
                    DataLoaderOptions(64).shuffle(true).seed(0));
  int step = 0;
  while (step < steps) {
    for (const Batch& b : loader) {
      Tensor loss = -forward(b.data).log_softmax(1).gather(1, b.target.unsqueeze(1)).mean();
      for (Tensor& p : params) p.set_grad(Tensor());
      loss.backward();
      ++step;
      NoGradGuard no_grad;
      for (size_t i = 0; i < params.size(); ++i) {
        Tensor g = params[i].grad();
        m[i] = m[i] * 0.9 + g * 0.1;
        v[i] = v[i] * 0.999 + g * g * 0.001;
        Tensor m_hat = m[i] / (1 - std::pow(0.9, step)), v_hat = v[i] / (1 - std::pow(0.999, step));
        params[i].sub_(m_hat / (v_hat.sqrt() + 1e-8) * 0.01);
      }
      if (step == steps) break;
    }
  }
  NoGradGuard no_grad;
  Tensor predicted = forward(test.data()).argmax(1);
  return (predicted == test.targets()).to(kFloat64).mean().item<double>();
}

// Shared checks: float32 [n, f] features, int64 [n] labels, every label in range, reproducible.
void check_basics(const std::function<std::shared_ptr<TensorDataset>(uint64_t)>& make, int64_t n, int64_t f) {
  auto a = make(1), b = make(1), c = make(2);
  CHECK(a->data().shape() == Shape{n, f});
  CHECK(a->targets().shape() == Shape{n});
  CHECK(a->data().dtype() == kFloat32);
  CHECK(a->targets().dtype() == kInt64);
  CHECK(a->data().device() == Device(kCPU));
  CHECK_ALLCLOSE(a->data(), b->data(), 0, 0);  // same seed: the same tensors, bit for bit
  CHECK_ALLCLOSE(a->targets(), b->targets(), 0, 0);
  CHECK_FALSE(testing::allclose(a->data(), c->data(), 0, 1e-3));  // another seed: other data
  for (float v : a->data().to_vector<float>()) REQUIRE(std::isfinite(v));
}

// Labels are not sorted: the first 20 rows hold more than one class.
bool classes_interleaved(const TensorDataset& ds) {
  std::vector<int64_t> y = ds.targets().to_vector<int64_t>();
  return std::any_of(y.begin(), y.begin() + 20, [&](int64_t v) { return v != y[0]; });
}

}  // namespace

TEST_CASE("make_spirals: shape, balance, range, determinism", "[data][synthetic]") {
  check_basics([](uint64_t s) { return make_spirals(50, 3, 0.05, s); }, 150, 2);
  auto ds = make_spirals(100, 3, 0.0, 0);
  CHECK(class_counts(*ds, 3) == std::vector<int64_t>{100, 100, 100});
  CHECK(classes_interleaved(*ds));
  // Without noise every point lies on an arm between radius 0.1 and 1.
  Tensor r = ds->data().pow(2).sum({1}).sqrt();
  CHECK(r.min().item<double>() >= 0.1 - 1e-6);
  CHECK(r.max().item<double>() <= 1.0 + 1e-6);
  // Defaults: two arms.
  CHECK(make_spirals(10)->data().shape() == Shape{20, 2});
  CHECK(class_counts(*make_spirals(10), 2) == std::vector<int64_t>{10, 10});
}

TEST_CASE("make_spirals is not linearly separable but an MLP learns it", "[data][synthetic][learn]") {
  auto split = train_test_split(*make_spirals(300, 2, 0.05, 1), 0.3, 2);
  Rows train = rows_of(*split.train), test = rows_of(*split.test);
  double linear = least_squares_linear_accuracy(train, test, 2);
  double centroid = nearest_centroid_accuracy(train, test, 2);
  double neighbour = nearest_neighbour_accuracy(train, test);
  INFO("linear " << linear << ", centroid " << centroid << ", 1-NN " << neighbour);
  CHECK(linear < 0.75);
  CHECK(centroid < 0.75);
  CHECK(neighbour > 0.97);  // the classes are separable (by a curved boundary)
  double mlp = mlp_accuracy(*split.train, *split.test, 2, 1500);
  INFO("MLP " << mlp);
  CHECK(mlp >= 0.97);

  // Three arms are still learnable, and still far from linear.
  auto split3 = train_test_split(*make_spirals(300, 3, 0.05, 1), 0.3, 2);
  Rows train3 = rows_of(*split3.train), test3 = rows_of(*split3.test);
  double linear3 = least_squares_linear_accuracy(train3, test3, 3);
  double neighbour3 = nearest_neighbour_accuracy(train3, test3);
  INFO("3 arms: linear " << linear3 << ", 1-NN " << neighbour3);
  CHECK(linear3 < 0.7);
  CHECK(neighbour3 > 0.95);
}

TEST_CASE("make_moons: shape, balance, range, hardness", "[data][synthetic]") {
  check_basics([](uint64_t s) { return make_moons(101, 0.1, s); }, 101, 2);
  auto clean = make_moons(400, 0.0, 0);
  CHECK(class_counts(*clean, 2) == std::vector<int64_t>{200, 200});
  CHECK(classes_interleaved(*clean));
  // Without noise, class 0 is on the unit upper arc, class 1 on the lower arc centred at (1, 0.5).
  Tensor x = clean->data(), y = clean->targets();
  std::vector<float> pts = x.to_vector<float>();
  std::vector<int64_t> labels = y.to_vector<int64_t>();
  for (size_t i = 0; i < labels.size(); ++i) {
    double px = pts[2 * i], py = pts[2 * i + 1];
    double cx = labels[i] == 0 ? 0.0 : 1.0, cy = labels[i] == 0 ? 0.0 : 0.5;
    REQUIRE(std::fabs(std::hypot(px - cx, py - cy) - 1.0) < 1e-5);
    REQUIRE((labels[i] == 0 ? py >= -1e-6 : py <= 0.5 + 1e-6));
  }
  auto split = train_test_split(*make_moons(600, 0.1, 3), 0.3, 4);
  Rows train = rows_of(*split.train), test = rows_of(*split.test);
  double linear = least_squares_linear_accuracy(train, test, 2);
  double neighbour = nearest_neighbour_accuracy(train, test);
  INFO("linear " << linear << ", 1-NN " << neighbour);
  CHECK(linear < 0.92);
  CHECK(neighbour > 0.97);
}

TEST_CASE("make_xor: shape, balance, quadrants, hardness", "[data][synthetic]") {
  check_basics([](uint64_t s) { return make_xor(64, 0.1, s); }, 64, 2);
  auto clean = make_xor(400, 0.0, 0);
  CHECK(class_counts(*clean, 2) == std::vector<int64_t>{200, 200});
  CHECK(classes_interleaved(*clean));
  std::vector<float> pts = clean->data().to_vector<float>();
  std::vector<int64_t> labels = clean->targets().to_vector<int64_t>();
  for (size_t i = 0; i < labels.size(); ++i) {
    double px = pts[2 * i], py = pts[2 * i + 1];
    REQUIRE(std::fabs(px) >= 0.1 - 1e-6);
    REQUIRE(std::fabs(px) <= 1.0);
    REQUIRE(std::fabs(py) >= 0.1 - 1e-6);
    REQUIRE(std::fabs(py) <= 1.0);
    REQUIRE(labels[i] == ((px > 0) != (py > 0) ? 1 : 0));
  }
  auto split = train_test_split(*make_xor(600, 0.05, 3), 0.3, 4);
  Rows train = rows_of(*split.train), test = rows_of(*split.test);
  double linear = least_squares_linear_accuracy(train, test, 2);
  double neighbour = nearest_neighbour_accuracy(train, test);
  INFO("linear " << linear << ", 1-NN " << neighbour);
  CHECK(linear < 0.65);
  CHECK(neighbour > 0.97);
}

TEST_CASE("make_blobs: shape, balance, separation", "[data][synthetic]") {
  check_basics([](uint64_t s) { return make_blobs(90, 4, 3, 1.0, s); }, 90, 3);
  auto ds = make_blobs(100, 3, 2, 1.0, 0);
  CHECK(class_counts(*ds, 3) == std::vector<int64_t>{34, 33, 33});
  CHECK(classes_interleaved(*ds));
  // Without spread every blob is a single point, and the points are at least 5 apart.
  auto points = make_blobs(30, 10, 2, 0.0, 5);
  std::vector<float> pts = points->data().to_vector<float>();
  std::vector<int64_t> labels = points->targets().to_vector<int64_t>();
  std::vector<std::vector<double>> centre(10);
  for (size_t i = 0; i < labels.size(); ++i) {
    std::vector<double> p{pts[2 * i], pts[2 * i + 1]};
    auto& c = centre[size_t(labels[i])];
    if (c.empty()) c = p;
    REQUIRE(c == p);
  }
  for (size_t a = 0; a < 10; ++a)
    for (size_t b = a + 1; b < 10; ++b)
      CHECK(std::hypot(centre[a][0] - centre[b][0], centre[a][1] - centre[b][1]) >= 5.0 - 1e-4);
  // Many classes in one dimension do not fit in [-10, 10] 5 apart: the box grows.
  auto crowded = make_blobs(12, 12, 1, 0.0, 0);
  std::vector<float> xs = crowded->data().to_vector<float>();
  std::sort(xs.begin(), xs.end());
  for (size_t i = 1; i < xs.size(); ++i) CHECK(xs[i] - xs[i - 1] >= 5.0f - 1e-4f);

  // Nearest centroid is nearly perfect at spread 1, in 2 and in 10 dimensions.
  for (int64_t f : {2, 10}) {
    auto split = train_test_split(*make_blobs(600, 5, f, 1.0, 7), 0.3, 8);
    double acc = nearest_centroid_accuracy(rows_of(*split.train), rows_of(*split.test), 5);
    INFO(f << " features: nearest centroid " << acc);
    CHECK(acc > 0.95);
  }
  // Spread is the std of each coordinate around its centre.
  auto wide = make_blobs(3000, 1, 2, 2.0, 1);
  double sd = wide->data().std({0}).mean().item<double>();
  CHECK(std::fabs(sd - 2.0) < 0.1);
}

TEST_CASE("make_digits: glyphs, shape, balance, range", "[data][synthetic]") {
  check_basics([](uint64_t s) { return make_digits(5, 0.1, s); }, 50, 64);
  // Ten distinct 8x8 glyphs of 0s and 1s with a blank border (so shifts never cut a stroke).
  for (int64_t d = 0; d < 10; ++d) {
    Tensor g = digit_glyph(d);
    CHECK(g.shape() == Shape{8, 8});
    CHECK(((g == 0.0).to(kInt64) + (g == 1.0).to(kInt64)).min().item<int64_t>() == 1);  // 0 or 1
    CHECK(g.sum().item<double>() >= 10);
    Tensor border = g.select(0, 0).sum() + g.select(0, 7).sum() + g.select(1, 0).sum() + g.select(1, 7).sum();
    CHECK(border.item<double>() == 0);
    for (int64_t e = 0; e < d; ++e) {
      double differing = (digit_glyph(e) != g).sum().item<double>();
      INFO("glyphs " << e << " and " << d << " differ in " << differing << " pixels");
      CHECK(differing >= 4);
    }
  }
  CHECK_THROWS_AS(digit_glyph(10), IndexError);
  CHECK_THROWS_AS(digit_glyph(-1), IndexError);

  auto ds = make_digits(20, 0.1, 0);
  CHECK(ds->data().shape() == Shape{200, 64});
  CHECK(class_counts(*ds, 10) == std::vector<int64_t>(10, 20));
  CHECK(classes_interleaved(*ds));
  CHECK(ds->data().min().item<double>() >= 0.0);
  CHECK(ds->data().max().item<double>() <= 1.0);
  // Without noise each sample is its glyph shifted by at most one pixel, inked in [0.6, 1].
  auto clean = make_digits(30, 0.0, 1);
  Tensor images = clean->data().reshape({300, 8, 8});
  std::vector<int64_t> labels = clean->targets().to_vector<int64_t>();
  int shifted = 0;
  for (int64_t i = 0; i < 300; ++i) {
    Tensor img = images[i];
    double ink = img.max().item<double>();
    REQUIRE(ink >= 0.6 - 1e-6);
    REQUIRE(ink <= 1.0 + 1e-6);
    Tensor mask = (img > 0).to(kFloat32);
    Tensor glyph = digit_glyph(labels[size_t(i)]);
    bool matched = false;
    for (int64_t dr = -1; dr <= 1 && !matched; ++dr)
      for (int64_t dc = -1; dc <= 1 && !matched; ++dc) {
        // Shift the glyph by (dr, dc) with zero fill: pad to 10x10, then cut the window.
        Tensor padded = zeros({10, 10});
        padded.slice(0, 1, 9).slice(1, 1, 9).copy_(glyph);
        Tensor moved = padded.slice(0, 1 - dr, 9 - dr).slice(1, 1 - dc, 9 - dc);
        if (testing::allclose(mask, moved, 0, 0)) {
          matched = true;
          shifted += dr != 0 || dc != 0;
        }
      }
    REQUIRE(matched);
  }
  CHECK(shifted > 150);  // 8 of 9 shifts move the glyph
}

TEST_CASE("make_digits defeats templates but an MLP learns it", "[data][synthetic][learn]") {
  auto split = train_test_split(*make_digits(100, 0.1, 1), 0.3, 2);
  Rows train = rows_of(*split.train), test = rows_of(*split.test);
  double centroid = nearest_centroid_accuracy(train, test, 10);
  INFO("nearest centroid " << centroid);
  CHECK(centroid < 0.8);
  double mlp = mlp_accuracy(*split.train, *split.test, 10, 1500);
  INFO("MLP " << mlp);
  CHECK(mlp >= 0.97);
}

TEST_CASE("synthetic makers reject bad arguments", "[data][synthetic][errors]") {
  CHECK_THROWS_AS(make_spirals(-1), Error);
  CHECK_THROWS_AS(make_spirals(10, 0), Error);
  CHECK_THROWS_AS(make_spirals(10, 2, -0.1), Error);
  CHECK_THROWS_AS(make_spirals(10, 2, std::nan("")), Error);
  CHECK_THROWS_AS(make_moons(-5), Error);
  CHECK_THROWS_AS(make_moons(5, -1.0), Error);
  CHECK_THROWS_AS(make_xor(-1), Error);
  CHECK_THROWS_AS(make_xor(4, INFINITY), Error);
  CHECK_THROWS_AS(make_blobs(10, 0), Error);
  CHECK_THROWS_AS(make_blobs(10, 2, 0), Error);
  CHECK_THROWS_AS(make_blobs(10, 2, 2, -1.0), Error);
  CHECK_THROWS_AS(make_digits(-1), Error);
  CHECK_THROWS_AS(make_digits(1, -0.5), Error);
  try {
    make_blobs(10, 2, 2, -1.0);
    FAIL("expected an Error");
  } catch (const Error& e) {
    std::string msg = e.what();
    CHECK(msg.find("make_blobs") != std::string::npos);
    CHECK(msg.find("spread") != std::string::npos);
  }
  // Zero examples is an empty dataset, not an error.
  CHECK(make_moons(0)->size() == 0);
  CHECK(make_digits(0)->data().shape() == Shape{0, 64});
}
