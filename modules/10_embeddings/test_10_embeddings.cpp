// Module 10 suite: Embedding as a lookup (values by hand, the [*] -> [*, E] rule, one-hot @ W to
// the last bit), its backward as a scatter-add (repeated ids add up, unread rows get zero, the
// one-hot formula, gradcheck and double backward), padding_idx (zero row, read as it is, no
// gradient, unmoved by SGD and AdamW), the default init and from_pretrained, the errors; order
// (permuted ids give permuted vectors; positions break the tie), learned positions (offsets, the
// max_len limit), the sinusoidal table against its formula and its distance-only dot products,
// rotary embedding (rotate_half, pair i turned by t theta_i, norms kept, scores that depend only on
// m - n, decoding with an offset, gradients), the memory an embedding allocates, and a small model
// that learns through an embedding. It is the judge in exercise mode (`tools/tt exercise 10`): the
// cases tagged [exercise] lean on the bodies a learner writes (the embedding forward and backward,
// the sinusoidal table, rotate_half, apply_rotary and the rotary cos/sin tables).
#include <cmath>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

using Catch::Matchers::Contains;
using tt::Shape;
using tt::Tensor;
using tt::autograd::TensorList;

namespace nn = tt::nn;

namespace {

// A table [5, 3] whose row v, column j holds 10 v + j (the walkthrough's).
Tensor table53() {
  return tt::tensor({{0.0, 1.0, 2.0}, {10.0, 11.0, 12.0}, {20.0, 21.0, 22.0}, {30.0, 31.0, 32.0}, {40.0, 41.0, 42.0}});
}

// Ids as one-hot rows: ids [*] int64 -> [*, V] in `dtype`.
Tensor one_hot(const Tensor& ids, int64_t V, tt::ScalarType dtype = tt::kFloat32) {
  Shape s = ids.shape();
  s.push_back(V);
  return tt::eye(V, dtype).index_select(0, ids.reshape({ids.numel()})).reshape(s);
}

// A float64 leaf that requires grad.
Tensor leaf(const Shape& shape) { return tt::randn(shape, tt::kFloat64).requires_grad_(); }

void check_grad(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  tt::autograd::GradcheckResult r = tt::autograd::gradcheck(fn, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

void check_gradgrad(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs) {
  tt::autograd::GradcheckResult r = tt::autograd::gradgradcheck(tt::autograd::GradcheckFn(fn), inputs);
  INFO(r.message);
  CHECK(r.ok);
}

double dot_of(const Tensor& a, const Tensor& b) { return (a * b).sum().item<double>(); }

// The largest |a - b| over the elements, as a double.
double max_abs_diff(const Tensor& a, const Tensor& b) { return (a - b).abs().max().item<double>(); }

// One head vector v: [D] rotated for position t.
Tensor rope_at(const nn::RotaryEmbedding& rope, const Tensor& v, int64_t t) {
  return rope.apply(v.reshape({1, v.size(0)}), t).reshape({v.size(0)});
}

// The score of q at position m against k at position n, both rotated.
double rope_score(const nn::RotaryEmbedding& rope, const Tensor& q, int64_t m, const Tensor& k, int64_t n) {
  return dot_of(rope_at(rope, q, m), rope_at(rope, k, n));
}

// The sinusoidal table from its definition, in float64: pe[t, 2i] = sin(t w_i), pe[t, 2i+1] = cos(t w_i).
Tensor sinusoidal_reference(int64_t T, int64_t E, double base) {
  std::vector<double> v(size_t(T * E));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; 2 * i < E; ++i) {
      const double w = std::pow(base, -2.0 * double(i) / double(E));
      v[size_t(t * E + 2 * i)] = std::sin(double(t) * w);
      if (2 * i + 1 < E) v[size_t(t * E + 2 * i + 1)] = std::cos(double(t) * w);
    }
  return tt::tensor(v, {T, E}, tt::kFloat64);
}

}  // namespace

// --- the lookup ------------------------------------------------------------------------------------

TEST_CASE("Embedding replaces each id by its row, checked by hand", "[module10][exercise]") {
  nn::Embedding emb(5, 3);
  CHECK(emb.weight.shape() == Shape{5, 3});
  CHECK(emb.weight.requires_grad());
  {
    tt::NoGradGuard no_grad;
    emb.weight.copy_(table53());
  }
  Tensor ids = tt::tensor({{1, 4, 1}, {0, 3, 2}});
  Tensor y = emb(ids);
  REQUIRE(y.shape() == Shape{2, 3, 3});  // [B, T] -> [B, T, E]
  CHECK_ALLCLOSE(y.select(0, 0), tt::tensor({{10.0, 11.0, 12.0}, {40.0, 41.0, 42.0}, {10.0, 11.0, 12.0}}), 0, 0);
  CHECK_ALLCLOSE(y.select(0, 1), tt::tensor({{0.0, 1.0, 2.0}, {30.0, 31.0, 32.0}, {20.0, 21.0, 22.0}}), 0, 0);
  CHECK(y.grad_fn()->name() == "EmbeddingBackward0");
  // One id (0-d) gives one row; 1-D and 3-D ids follow the same rule; no ids give no rows.
  CHECK_ALLCLOSE(emb(tt::scalar_tensor(3, tt::kInt64)), tt::tensor({30.0, 31.0, 32.0}), 0, 0);
  CHECK_ALLCLOSE(emb(tt::tensor({4, 0})), tt::tensor({{40.0, 41.0, 42.0}, {0.0, 1.0, 2.0}}), 0, 0);
  CHECK(emb(tt::zeros({2, 2, 2}, tt::kInt64)).shape() == Shape{2, 2, 2, 3});
  CHECK(emb(tt::zeros({0}, tt::kInt64)).shape() == Shape{0, 3});
  // Transposed (non-contiguous) ids read the same rows as their contiguous copy.
  CHECK_ALLCLOSE(emb(ids.t()), emb(ids.t().contiguous()), 0, 0);
  CHECK_ALLCLOSE(emb(ids.t()).select(0, 1), tt::tensor({{40.0, 41.0, 42.0}, {30.0, 31.0, 32.0}}), 0, 0);
  // The three spellings agree: the layer, tt::embedding(weight, ids), F::embedding(ids, weight).
  CHECK_ALLCLOSE(tt::embedding(emb.weight, ids), y, 0, 0);
  CHECK_ALLCLOSE(tt::F::embedding(ids, emb.weight), y, 0, 0);
  // float64 tables give float64 rows.
  CHECK(tt::embedding(table53().to(tt::kFloat64), tt::tensor({1})).dtype() == tt::kFloat64);
}

TEST_CASE("Embedding equals one-hot times the table, values and gradients", "[module10][exercise]") {
  tt::manual_seed(100);
  const int64_t V = 7, E = 5;
  Tensor W = tt::randn({V, E}).requires_grad_();
  Tensor W2 = W.detach().clone().requires_grad_();
  Tensor ids = tt::randint(V, {4, 6});
  Tensor G = tt::randn({4, 6, E});
  Tensor by_lookup = tt::embedding(W, ids);
  Tensor by_product = one_hot(ids, V).matmul(W2);
  // Each output is one product by 1 plus products by 0: equal to the last bit.
  CHECK_ALLCLOSE(by_lookup, by_product, 0, 0);
  TensorList g1 = tt::autograd::grad({by_lookup}, {W}, {G});
  TensorList g2 = tt::autograd::grad({by_product}, {W2}, {G});
  // dW = onehot^T dY, summed over all [4, 6] positions.
  CHECK_ALLCLOSE(g1[0], g2[0], 1e-5, 1e-5);
  CHECK_ALLCLOSE(g1[0], one_hot(ids, V).reshape({24, V}).t().matmul(G.reshape({24, E})), 1e-5, 1e-5);
}

// --- the backward ----------------------------------------------------------------------------------

TEST_CASE("Embedding backward scatter-adds: repeated ids accumulate, unread rows get zero", "[module10][exercise]") {
  nn::Embedding emb(5, 3);
  Tensor seq = tt::tensor({1, 4, 1, 1});
  Tensor G = tt::tensor({{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {1.0, 1.0, 1.0}});
  (emb(seq) * G).sum().backward();
  // Row 1 = G[0] + G[2] + G[3]; row 4 = G[1]; rows 0, 2 and 3 were not read.
  CHECK_ALLCLOSE(emb.weight.grad(), tt::tensor({{0.0, 0.0, 0.0}, {2.0, 1.0, 2.0}, {0.0, 0.0, 0.0},
                                                {0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}}), 0, 0);
  // The gradient is dense: the whole [V, E] table.
  CHECK(emb.weight.grad().shape() == Shape{5, 3});
  // A second backward adds to the first (module 04), row by row.
  (emb(tt::tensor({{4, 4}, {2, 1}})).sum()).backward();
  CHECK_ALLCLOSE(emb.weight.grad(), tt::tensor({{0.0, 0.0, 0.0}, {3.0, 2.0, 3.0}, {1.0, 1.0, 1.0},
                                                {0.0, 0.0, 0.0}, {2.0, 3.0, 2.0}}), 0, 0);
  // An id read many times: its row collects every position's gradient.
  nn::Embedding many(3, 2);
  Tensor ids = tt::full({50}, int64_t(2), tt::kInt64);
  many(ids).sum().backward();
  CHECK_ALLCLOSE(many.weight.grad(), tt::tensor({{0.0, 0.0}, {0.0, 0.0}, {50.0, 50.0}}), 0, 0);
}

TEST_CASE("Embedding backward on random ids equals a per-id sum of the upstream rows", "[module10][exercise]") {
  tt::manual_seed(101);
  const int64_t V = 11, E = 4;
  Tensor W = tt::randn({V, E}).requires_grad_();
  Tensor ids = tt::randint(V, {3, 9});
  Tensor G = tt::randn({3, 9, E});
  Tensor dW = tt::autograd::grad({tt::embedding(W, ids)}, {W}, {G})[0];
  std::vector<int64_t> iv = ids.to_vector<int64_t>();
  std::vector<double> gv = G.to_vector<double>(), expect(size_t(V * E), 0.0);
  for (size_t p = 0; p < iv.size(); ++p)
    for (int64_t j = 0; j < E; ++j) expect[size_t(iv[p] * E + j)] += gv[p * size_t(E) + size_t(j)];
  CHECK_ALLCLOSE(dW, tt::tensor(expect, {V, E}), 1e-5, 1e-6);
}

TEST_CASE("gradcheck and double backward pass for embedding in float64", "[module10][exercise]") {
  tt::manual_seed(102);
  Tensor rep = tt::tensor({2, 0, 2, 2, 4});  // row 2 three times, rows 1 and 3 never
  check_grad([rep](const TensorList& in) { return tt::embedding(in[0], rep); }, {leaf({5, 3})});
  Tensor ids = tt::tensor({{1, 0, 1}, {3, 3, 2}});
  check_grad([ids](const TensorList& in) { return tt::embedding(in[0], ids); }, {leaf({4, 2})});
  // A table used twice in one expression: the squares of the rows, summed over the sequence.
  check_grad([ids](const TensorList& in) { return (tt::embedding(in[0], ids) * tt::embedding(in[0], ids)).sum({1}); },
             {leaf({4, 3})});
  // The backward is written with tensor ops (scatter_add), so it is differentiable too.
  check_gradgrad([ids](const TensorList& in) { return (tt::embedding(in[0], ids) * tt::embedding(in[0], ids)).sum({1}); },
                 {leaf({4, 3})});
}

// --- padding_idx -----------------------------------------------------------------------------------

TEST_CASE("padding_idx: a zero row that is read as it is and never gets a gradient", "[module10][exercise]") {
  tt::manual_seed(103);
  nn::Embedding emb(nn::EmbeddingOptions(6, 3).padding_idx(0));
  CHECK_ALLCLOSE(emb.weight.select(0, 0).detach(), tt::zeros({3}), 0, 0);
  CHECK(emb.weight.select(0, 1).detach().abs().sum().item<double>() > 0);
  Tensor batch = tt::tensor({{3, 5, 2, 4}, {1, 2, 0, 0}});  // the second sentence padded with 0
  Tensor y = emb(batch);
  CHECK_ALLCLOSE(y.select(0, 1).slice(0, 2, 4), tt::zeros({2, 3}), 0, 0);
  y.sum().backward();
  CHECK_ALLCLOSE(emb.weight.grad(), tt::tensor({{0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}, {2.0, 2.0, 2.0},
                                                {1.0, 1.0, 1.0}, {1.0, 1.0, 1.0}, {1.0, 1.0, 1.0}}), 0, 0);
  // The padding row is read as it is: a non-zero pad row comes out non-zero (PyTorch's meaning),
  // and still gets no gradient.
  Tensor w = tt::randn({4, 2}).requires_grad_();
  Tensor out = tt::embedding(w, tt::tensor({3, 1, 3}), 3);
  CHECK_ALLCLOSE(out.select(0, 0), w.select(0, 3).detach(), 0, 0);
  out.sum().backward();
  CHECK_ALLCLOSE(w.grad(), tt::tensor({{0.0, 0.0}, {1.0, 1.0}, {0.0, 0.0}, {0.0, 0.0}}), 0, 0);
  // A negative padding_idx counts from the end.
  nn::Embedding last(nn::EmbeddingOptions(6, 3).padding_idx(-1));
  CHECK(last.options.padding_idx() == std::optional<int64_t>(5));
  CHECK_ALLCLOSE(last.weight.select(0, 5).detach(), tt::zeros({3}), 0, 0);
  CHECK(last.extra_repr() == "6, 3, padding_idx=5");
}

TEST_CASE("the padding row stays zero through optimizer steps, even with weight decay", "[module10][exercise]") {
  tt::manual_seed(104);
  nn::Embedding emb(nn::EmbeddingOptions(8, 4).padding_idx(0));
  Tensor before = emb.weight.detach().clone();
  tt::optim::AdamW opt(emb.parameters(), tt::optim::AdamWOptions(0.1).weight_decay(0.1));
  Tensor ids = tt::tensor({{0, 3, 0, 5}, {2, 0, 0, 7}});
  Tensor target = tt::randn({2, 4, 4});
  for (int step = 0; step < 5; ++step) {
    opt.zero_grad();
    tt::mse_loss(emb(ids), target).backward();
    opt.step();
  }
  CHECK_ALLCLOSE(emb.weight.select(0, 0).detach(), tt::zeros({4}), 0, 0);
  // Rows that were read moved; a row never read moved only by weight decay (toward zero).
  CHECK(max_abs_diff(emb.weight.select(0, 3), before.select(0, 3)) > 0.1);
  Tensor unread = emb.weight.select(0, 1).detach();
  CHECK_ALLCLOSE(unread, before.select(0, 1) * std::pow(1.0 - 0.1 * 0.1, 5), 1e-5, 1e-6);
}

// --- init, modules, errors -------------------------------------------------------------------------

TEST_CASE("Embedding is drawn from N(0, 1), and from_pretrained copies a table", "[module10]") {
  tt::manual_seed(105);
  nn::Embedding emb(400, 50);
  CHECK(std::fabs(emb.weight.mean().item<double>()) < 0.02);
  CHECK(std::fabs(emb.weight.std().item<double>() - 1.0) < 0.02);
  CHECK(emb.num_parameters() == 400 * 50);
  std::ostringstream os;
  os << emb;
  CHECK_THAT(os.str(), Contains("Embedding(400, 50)"));
  auto frozen = nn::Embedding::from_pretrained(table53());
  CHECK_FALSE(frozen->weight.requires_grad());
  CHECK_ALLCLOSE(frozen->forward(tt::tensor({4})), tt::tensor({{40.0, 41.0, 42.0}}), 0, 0);
  CHECK_FALSE(frozen->forward(tt::tensor({4})).requires_grad());
  auto trainable = nn::Embedding::from_pretrained(table53(), /*freeze=*/false);
  CHECK(trainable->weight.requires_grad());
}

TEST_CASE("Embedding refuses bad ids, dtypes and options with messages that name them", "[module10]") {
  nn::Embedding emb(5, 3);
  REQUIRE_THROWS_AS(emb(tt::tensor({0, 5})), tt::IndexError);
  REQUIRE_THROWS_WITH(emb(tt::tensor({{0, 1}, {5, 2}})),
                      "embedding: index 5 at position 2 of the flattened indices is out of range for a table of 5 "
                      "rows; indices must be in [0, 5)");
  REQUIRE_THROWS_WITH(emb(tt::tensor({-1})), Contains("index -1") && Contains("position 0"));
  REQUIRE_THROWS_AS(emb(tt::tensor({1.0, 2.0})), tt::DtypeError);
  REQUIRE_THROWS_WITH(emb(tt::tensor({1.0})), Contains("expected int64 indices, got dtype float32"));
  REQUIRE_THROWS_WITH(tt::embedding(tt::tensor({1, 2}), emb.weight), Contains("embedding(weight, indices)"));
  REQUIRE_THROWS_AS(tt::embedding(tt::tensor({1.0, 2.0}), tt::tensor({0})), tt::ShapeError);
  REQUIRE_THROWS_AS(nn::Embedding(nn::EmbeddingOptions(5, 2).padding_idx(5)), tt::IndexError);
  REQUIRE_THROWS_WITH(nn::Embedding(nn::EmbeddingOptions(5, 2).padding_idx(-6)), Contains("padding_idx"));
  REQUIRE_THROWS_AS(nn::Embedding(-1, 2), tt::Error);
  // A bad id changes nothing: the table is as it was and no gradient appeared.
  Tensor before = emb.weight.detach().clone();
  REQUIRE_THROWS(emb(tt::tensor({7})).sum().backward());
  CHECK_ALLCLOSE(emb.weight, before, 0, 0);
  CHECK_FALSE(emb.weight.grad().defined());
}

// --- order and positions ---------------------------------------------------------------------------

TEST_CASE("without positions, permuting the ids only permutes the vectors", "[module10]") {
  tt::manual_seed(106);
  nn::Embedding words(10, 4);
  Tensor ids = tt::tensor({1, 2, 3, 7});
  Tensor perm = tt::tensor({3, 1, 0, 2});
  Tensor a = words(ids), b = words(ids.index_select(0, perm));
  CHECK_ALLCLOSE(b, a.index_select(0, perm), 0, 0);
  // Any symmetric pooling of per-token functions is blind to the order...
  CHECK_ALLCLOSE(a.tanh().mean({0}), b.tanh().mean({0}), 1e-6, 1e-7);
  // ...until a position-dependent vector is added.
  nn::LearnedPositionalEmbedding wpe(8, 4);
  Tensor pa = a + wpe(4), pb = b + wpe(4);
  CHECK(max_abs_diff(pa.tanh().mean({0}), pb.tanh().mean({0})) > 1e-3);
  // (A plain mean stays blind: the mean of word + position is the mean of each.)
  CHECK_ALLCLOSE(pa.mean({0}), pb.mean({0}), 1e-5, 1e-6);
}

TEST_CASE("LearnedPositionalEmbedding returns rows offset .. offset + T - 1 and trains the rows used",
          "[module10][exercise]") {
  tt::manual_seed(107);
  nn::LearnedPositionalEmbedding wpe(8, 3);
  CHECK(wpe.weight.shape() == Shape{8, 3});
  CHECK(wpe.named_parameters().keys() == std::vector<std::string>{"weight"});
  CHECK_ALLCLOSE(wpe(5), wpe.weight.slice(0, 0, 5).detach(), 0, 0);
  CHECK_ALLCLOSE(wpe(2, 6), wpe.weight.slice(0, 6, 8).detach(), 0, 0);  // a KV cache's offset
  // Explicit positions go through the embedding lookup.
  CHECK_ALLCLOSE(wpe(tt::tensor({{7, 0, 7}})), wpe.weight.index_select(0, tt::tensor({7, 0, 7})).detach().unsqueeze(0),
                 0, 0);
  wpe(tt::tensor({7, 0, 7})).sum().backward();
  CHECK_ALLCLOSE(wpe.weight.grad().sum({1}), tt::tensor({3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 6.0}), 0, 0);
  // Broadcast over a batch of token vectors [B, T, E].
  Tensor x = tt::randn({2, 5, 3});
  CHECK_ALLCLOSE((x + wpe(5)).select(0, 1), x.select(0, 1) + wpe(5), 0, 0);
  // No row for a position past the table.
  CHECK(wpe(8).shape() == Shape{8, 3});
  REQUIRE_THROWS_AS(wpe(9), tt::IndexError);
  REQUIRE_THROWS_WITH(wpe(4, 6), Contains("max_len = 8") && Contains("offset 6"));
  REQUIRE_THROWS_AS(wpe(tt::tensor({8})), tt::IndexError);
}

TEST_CASE("sinusoidal_positions is sin and cos of t times base^(-2i / E)", "[module10][exercise]") {
  Tensor pe = nn::sinusoidal_positions(50, 16);
  REQUIRE(pe.shape() == Shape{50, 16});
  CHECK(pe.dtype() == tt::kFloat32);
  CHECK_ALLCLOSE(pe, sinusoidal_reference(50, 16, 10000.0), 1e-5, 2e-6);
  // Position 0 is (sin 0, cos 0) in every pair; position 1 of the fastest pair is (sin 1, cos 1).
  CHECK_ALLCLOSE(pe.select(0, 0).slice(0, 0, 4), tt::tensor({0.0, 1.0, 0.0, 1.0}), 0, 0);
  CHECK(pe.select(0, 1).select(0, 0).item<double>() == Approx(std::sin(1.0)).epsilon(1e-6));
  CHECK(pe.select(0, 1).select(0, 1).item<double>() == Approx(std::cos(1.0)).epsilon(1e-6));
  // Pair 2 of 16 columns turns at 10000^(-4/16) = 0.1 radian per position.
  CHECK(pe.select(0, 7).select(0, 4).item<double>() == Approx(std::sin(0.7)).epsilon(1e-6));
  // Every row has norm sqrt(E / 2).
  CHECK_ALLCLOSE(pe.pow(2.0).sum({1}), tt::full({50}, 8.0), 1e-5, 1e-5);
  // Another base, an odd dim (ends with a sin column), no rows.
  CHECK_ALLCLOSE(nn::sinusoidal_positions(6, 4, 100.0), sinusoidal_reference(6, 4, 100.0), 1e-5, 2e-6);
  CHECK_ALLCLOSE(nn::sinusoidal_positions(5, 5), sinusoidal_reference(5, 5, 10000.0), 1e-5, 2e-6);
  CHECK(nn::sinusoidal_positions(0, 4).shape() == Shape{0, 4});
  REQUIRE_THROWS_AS(nn::sinusoidal_positions(-1, 4), tt::Error);
}

TEST_CASE("sinusoidal rows k apart have a dot product that depends on k alone", "[module10][exercise]") {
  Tensor pe = nn::sinusoidal_positions(200, 16);
  for (int64_t k : {1, 3, 10}) {
    double expect = 0;
    for (int i = 0; i < 8; ++i) expect += std::cos(double(k) * std::pow(10000.0, -2.0 * i / 16.0));
    for (int64_t t : {0, 17, 100, 180}) {
      INFO("t = " << t << ", k = " << k);
      CHECK(dot_of(pe.select(0, t), pe.select(0, t + k)) == Approx(expect).margin(2e-5));
    }
  }
}

TEST_CASE("SinusoidalPositionalEncoding adds its table, held as a buffer", "[module10][exercise]") {
  nn::SinusoidalPositionalEncoding enc(16, 4);
  CHECK(enc.parameters().empty());
  CHECK(enc.state_dict().keys() == std::vector<std::string>{"pe"});
  CHECK_FALSE(enc.pe.requires_grad());
  Tensor x = tt::randn({2, 5, 4});
  CHECK_ALLCLOSE(enc(x), x + nn::sinusoidal_positions(5, 4), 1e-6, 1e-6);
  CHECK_ALLCLOSE(enc(x, 3), x + nn::sinusoidal_positions(8, 4).slice(0, 3, 8), 1e-6, 1e-6);
  REQUIRE_THROWS_AS(enc(tt::randn({1, 17, 4})), tt::IndexError);
  REQUIRE_THROWS_AS(enc(tt::randn({1, 3, 5})), tt::ShapeError);
}

// --- rotary ----------------------------------------------------------------------------------------

TEST_CASE("rotate_half negates and swaps the two halves", "[module10][exercise]") {
  CHECK_ALLCLOSE(nn::rotate_half(tt::tensor({1.0, 2.0, 3.0, 4.0})), tt::tensor({-3.0, -4.0, 1.0, 2.0}), 0, 0);
  Tensor x = tt::randn({2, 3, 6});
  Tensor r = nn::rotate_half(x);
  CHECK(r.shape() == x.shape());
  CHECK_ALLCLOSE(r.slice(-1, 0, 3), -x.slice(-1, 3, 6), 0, 0);
  CHECK_ALLCLOSE(r.slice(-1, 3, 6), x.slice(-1, 0, 3), 0, 0);
  // A quarter turn twice is a half turn: rotate_half(rotate_half(x)) = -x.
  CHECK_ALLCLOSE(nn::rotate_half(r), -x, 0, 0);
  // It is perpendicular to x in every pair.
  CHECK_ALLCLOSE((x * r).sum({-1}), tt::zeros({2, 3}), 0, 1e-6);
  REQUIRE_THROWS_AS(nn::rotate_half(tt::randn({3})), tt::ShapeError);
}

TEST_CASE("apply_rotary is x cos + rotate_half(x) sin: a 2-D rotation of each pair", "[module10][exercise]") {
  const double a = 0.3, b = 1.7;  // the angles of pair 0 and pair 1
  Tensor x = tt::tensor({1.0, 2.0, 3.0, 4.0}, tt::kFloat64);
  Tensor cos = tt::tensor({std::cos(a), std::cos(b), std::cos(a), std::cos(b)}, tt::kFloat64);
  Tensor sin = tt::tensor({std::sin(a), std::sin(b), std::sin(a), std::sin(b)}, tt::kFloat64);
  // Pair 0 is (x[0], x[2]) = (1, 3), pair 1 is (x[1], x[3]) = (2, 4); each turns by its angle.
  Tensor expect = tt::tensor({1 * std::cos(a) - 3 * std::sin(a), 2 * std::cos(b) - 4 * std::sin(b),
                              3 * std::cos(a) + 1 * std::sin(a), 4 * std::cos(b) + 2 * std::sin(b)},
                             tt::kFloat64);
  CHECK_ALLCLOSE(nn::apply_rotary(x, cos, sin), expect, 1e-12, 1e-12);
  // cos and sin [T, D] broadcast over the leading dims of x [B, H, T, D].
  Tensor xs = tt::randn({2, 3, 2, 4}, tt::kFloat64);
  Tensor c2 = tt::stack({tt::ones({4}, tt::kFloat64), cos}), s2 = tt::stack({tt::zeros({4}, tt::kFloat64), sin});
  Tensor ys = nn::apply_rotary(xs, c2, s2);
  CHECK_ALLCLOSE(ys.select(2, 0), xs.select(2, 0), 0, 0);  // angle 0: unchanged
  CHECK_ALLCLOSE(ys.select(0, 1).select(0, 2).select(0, 1),
                 nn::apply_rotary(xs.select(0, 1).select(0, 2).select(0, 1), cos, sin), 1e-12, 1e-12);
  // The gradient is the inverse rotation, as gradcheck confirms.
  check_grad([cos, sin](const TensorList& in) { return nn::apply_rotary(in[0], cos, sin); }, {leaf({3, 4})});
}

TEST_CASE("RotaryEmbedding turns pair i by t theta_i, checked by hand", "[module10][exercise]") {
  nn::RotaryEmbedding rope(nn::RotaryOptions(4));
  Tensor x = tt::tensor({1.0, 2.0, 3.0, 4.0}, tt::kFloat64);
  const int64_t t = 3;
  const double a0 = t * 1.0, a1 = t * std::pow(10000.0, -0.5);  // theta_0 = 1, theta_1 = 0.01
  Tensor expect = tt::tensor({1.0 * std::cos(a0) - 3.0 * std::sin(a0), 2.0 * std::cos(a1) - 4.0 * std::sin(a1),
                              3.0 * std::cos(a0) + 1.0 * std::sin(a0), 4.0 * std::cos(a1) + 2.0 * std::sin(a1)},
                             tt::kFloat64);
  CHECK_ALLCLOSE(rope_at(rope, x, t), expect, 1e-12, 1e-12);
  CHECK_ALLCLOSE(rope_at(rope, x, 0), x, 0, 0);  // position 0 is the identity
  // The cos/sin tables: [T, D], each half holding the D/2 angles t theta_i.
  nn::RotaryEmbedding rope6(nn::RotaryOptions(6).base(100.0));
  auto [c, s] = rope6.cos_sin(5, 2, tt::kFloat64, tt::kCPU);  // positions 2 .. 6
  REQUIRE(c.shape() == Shape{5, 6});
  for (int64_t row = 0; row < 5; ++row)
    for (int64_t i = 0; i < 3; ++i) {
      const double angle = double(row + 2) * std::pow(100.0, -2.0 * double(i) / 6.0);
      INFO("position " << row + 2 << ", pair " << i);
      CHECK(c.select(0, row).select(0, i).item<double>() == Approx(std::cos(angle)).margin(1e-12));
      CHECK(c.select(0, row).select(0, i + 3).item<double>() == Approx(std::cos(angle)).margin(1e-12));
      CHECK(s.select(0, row).select(0, i).item<double>() == Approx(std::sin(angle)).margin(1e-12));
      CHECK(s.select(0, row).select(0, i + 3).item<double>() == Approx(std::sin(angle)).margin(1e-12));
    }
  CHECK(rope.parameters().empty());
  CHECK(rope.state_dict().size() == 0);
}

TEST_CASE("RoPE keeps norms in float32 and float64", "[module10][exercise]") {
  tt::manual_seed(108);
  nn::RotaryEmbedding rope(nn::RotaryOptions(8).base(500000.0));
  for (tt::ScalarType dt : {tt::kFloat32, tt::kFloat64}) {
    Tensor x = tt::randn({2, 3, 20, 8}, dt);
    Tensor y = rope.apply(x, 7);
    CHECK(y.dtype() == dt);
    CHECK_ALLCLOSE((y * y).sum({-1}), (x * x).sum({-1}), 1e-5, 1e-5);
    CHECK(max_abs_diff(y, x) > 0.1);  // but it did rotate
  }
}

TEST_CASE("RoPE scores depend only on the distance m - n", "[module10][exercise]") {
  tt::manual_seed(109);
  nn::RotaryEmbedding rope(nn::RotaryOptions(32));
  Tensor pe = nn::sinusoidal_positions(600, 32);
  for (int trial = 0; trial < 3; ++trial) {
    Tensor q = tt::randn({32}, tt::kFloat64), k = tt::randn({32}, tt::kFloat64);
    for (int64_t d : {-3, 0, 2, 9}) {
      // <rope(q, m), rope(k, n)> = <rope(q, m - n), k> for every m with the same m - n.
      const double expect = d >= 0 ? dot_of(rope_at(rope, q, d), k) : dot_of(q, rope_at(rope, k, -d));
      for (int64_t n : {3, 40, 500}) {
        INFO("trial " << trial << ", m - n = " << d << ", n = " << n);
        CHECK(rope_score(rope, q, n + d, k, n) == Approx(expect).margin(1e-9));
      }
    }
    // Another distance gives another score; equal positions give the unrotated score.
    CHECK(std::fabs(rope_score(rope, q, 5, k, 3) - rope_score(rope, q, 3, k, 5)) > 1e-3);
    CHECK(rope_score(rope, q, 11, k, 11) == Approx(dot_of(q, k)).margin(1e-9));
    // Added (not rotated) positions do not have the property.
    const double near = dot_of(q + pe.select(0, 5).to(tt::kFloat64), k + pe.select(0, 3).to(tt::kFloat64));
    const double far = dot_of(q + pe.select(0, 105).to(tt::kFloat64), k + pe.select(0, 103).to(tt::kFloat64));
    CHECK(std::fabs(near - far) > 1e-2);
  }
}

TEST_CASE("RoPE with an offset equals the same rows of the full sequence", "[module10][exercise]") {
  tt::manual_seed(110);
  nn::RotaryEmbedding rope(nn::RotaryOptions(6));
  Tensor x = tt::randn({2, 3, 10, 6});  // [B, H, T, D]
  Tensor full = rope.apply(x);
  for (int64_t t = 0; t < 10; ++t) {  // decoding one token at a time with a KV cache
    INFO("t = " << t);
    CHECK_ALLCLOSE(rope.apply(x.slice(2, t, t + 1), t), full.slice(2, t, t + 1), 1e-6, 1e-6);
  }
  CHECK_ALLCLOSE(rope.apply(x.slice(2, 6, 10), 6), full.slice(2, 6, 10), 1e-6, 1e-6);  // a chunk
  // Explicit positions, shared or one row per batch, give the same rotations.
  CHECK_ALLCLOSE(rope.apply(x.slice(2, 2, 5), tt::tensor({2, 3, 4})), full.slice(2, 2, 5), 1e-6, 1e-6);
  Tensor per_batch = rope.apply(x.slice(2, 0, 2), tt::tensor({{5, 6}, {0, 1}}));
  CHECK_ALLCLOSE(per_batch.select(0, 0), rope.apply(x.slice(2, 0, 2), 5).select(0, 0), 1e-6, 1e-6);
  CHECK_ALLCLOSE(per_batch.select(0, 1), full.select(0, 1).slice(1, 0, 2), 1e-6, 1e-6);
  // A far position grows the tables; nearer positions read the same values afterwards.
  CHECK(rope.apply(x.slice(2, 0, 1), 3000).shape() == Shape{2, 3, 1, 6});
  CHECK_ALLCLOSE(rope.apply(x), full, 0, 0);
  // q and k at once; their head counts may differ.
  Tensor k = tt::randn({2, 1, 10, 6});
  auto [rq, rk] = rope.forward(x, k, 0);
  CHECK_ALLCLOSE(rq, full, 0, 0);
  CHECK_ALLCLOSE(rk, rope.apply(k), 0, 0);
}

TEST_CASE("gradients flow through RoPE: gradcheck of the rotation and of rotated scores", "[module10][exercise]") {
  tt::manual_seed(111);
  nn::RotaryEmbedding rope(nn::RotaryOptions(4).base(100.0));
  check_grad([&rope](const TensorList& in) { return rope.apply(in[0], 5); }, {leaf({1, 2, 3, 4})});
  check_grad([&rope](const TensorList& in) {
    auto [q, k] = rope.forward(in[0], in[1], 2);
    return q.matmul(k.transpose(-1, -2));
  }, {leaf({1, 2, 3, 4}), leaf({1, 2, 3, 4})});
  // The gradient of a rotation is the rotation back: d/dx <rope(x, t), g> = rope(g, -t), which
  // for pair i is the turn by -t theta_i: rotating the gradient forward again gives g.
  Tensor x = leaf({1, 1, 1, 4});
  Tensor g = tt::randn({1, 1, 1, 4}, tt::kFloat64);
  Tensor dx = tt::autograd::grad({rope.apply(x, 9)}, {x}, {g})[0];
  CHECK_ALLCLOSE(rope.apply(dx, 9), g, 1e-12, 1e-12);
}

TEST_CASE("RotaryEmbedding refuses odd head dims and mismatched inputs", "[module10]") {
  REQUIRE_THROWS_AS(nn::RotaryEmbedding(nn::RotaryOptions(7)), tt::ShapeError);
  REQUIRE_THROWS_WITH(nn::RotaryEmbedding(nn::RotaryOptions(7)), Contains("even") && Contains("7"));
  REQUIRE_THROWS_AS(nn::RotaryEmbedding(nn::RotaryOptions(4).base(0.0)), tt::Error);
  nn::RotaryEmbedding rope(nn::RotaryOptions(4));
  REQUIRE_THROWS_AS(rope.apply(tt::randn({1, 1, 3, 6})), tt::ShapeError);
  REQUIRE_THROWS_AS(rope.apply(tt::randn({1, 1, 3, 4}), -1), tt::Error);
  REQUIRE_THROWS_AS(rope.apply(tt::randn({1, 1, 2, 4}), tt::tensor({0, -1})), tt::IndexError);
  REQUIRE_THROWS_AS(rope.apply(tt::tensor({1, 2, 3, 4}).reshape({1, 1, 1, 4})), tt::DtypeError);
}

// --- costs and a model -----------------------------------------------------------------------------

TEST_CASE("the lookup allocates its output only, and the gradient is a dense table", "[module10]") {
  tt::manual_seed(112);
  const int64_t V = 1000, E = 64, N = 256;
  Tensor W = tt::randn({V, E}).requires_grad_();
  Tensor ids = tt::randint(V, {N});
  const int64_t out_bytes = N * E * 4;
  Tensor y;
  {
    tt::NoGradGuard no_grad;
    const int64_t before = tt::memory::stats().allocated_bytes;
    tt::memory::reset_peak_stats();
    y = tt::embedding(W, ids);
    const int64_t peak = tt::memory::stats().peak_allocated_bytes - before;
    CHECK(peak >= out_bytes);
    CHECK(peak < out_bytes + 4096);  // no one-hot matrix (N V floats = 1 MB) anywhere
  }
  tt::embedding(W, ids).sum().backward();
  CHECK(W.grad().numel() == V * E);
}

TEST_CASE("a model learns a next-token rule through an embedding", "[module10]") {
  // Token v is followed by (3 v + 1) mod 8: Embedding(8, 16) -> Linear(16, 8), cross-entropy.
  tt::manual_seed(113);
  const int64_t V = 8;
  nn::Embedding emb(V, 16);
  nn::Linear head(16, V);
  std::vector<Tensor> params = emb.parameters();
  for (const Tensor& p : head.parameters()) params.push_back(p);
  tt::optim::Adam opt(params, tt::optim::AdamOptions(0.05));
  Tensor x = tt::arange(V, tt::TensorOptions().dtype(tt::kInt64));
  std::vector<int64_t> next;
  for (int64_t v = 0; v < V; ++v) next.push_back((3 * v + 1) % V);
  Tensor target = tt::tensor(next, {V});
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    Tensor loss = tt::cross_entropy(head(emb(x)), target);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    loss.backward();
    opt.step();
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.05 * first);
  CHECK_ALLCLOSE(head(emb(x)).argmax(1), target, 0, 0);
}
