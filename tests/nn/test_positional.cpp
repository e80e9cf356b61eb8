// Positional encodings (nn/positional.h): the learned table, the sinusoidal table against known
// values, and rotary embedding: its pairing convention, norms kept, KV-cache offsets equal to
// slicing the full sequence, and the relative-position property of attention scores.
#include <cmath>

#include "test_util.h"

using namespace tt;

TEST_CASE("LearnedPositionalEmbedding returns the first T rows of its table", "[nn][positional]") {
  manual_seed(530);
  nn::LearnedPositionalEmbedding pos(8, 3);
  CHECK(pos.weight.shape() == Shape{8, 3});
  CHECK(pos.named_parameters().keys() == std::vector<std::string>{"weight"});
  Tensor p = pos(5);
  CHECK(p.shape() == Shape{5, 3});
  CHECK_ALLCLOSE(p, pos.weight.slice(0, 0, 5).detach(), 0, 0);
  CHECK_ALLCLOSE(pos(2, 6), pos.weight.slice(0, 6, 8).detach(), 0, 0);
  CHECK_ALLCLOSE(pos(tensor({{7, 0}})), pos.weight.index_select(0, tensor({7, 0})).detach().unsqueeze(0), 0, 0);
  p.sum().backward();  // only the rows used get a gradient
  CHECK_ALLCLOSE(pos.weight.grad().slice(0, 0, 5), ones({5, 3}), 0, 0);
  CHECK_ALLCLOSE(pos.weight.grad().slice(0, 5, 8), zeros({3, 3}), 0, 0);
  CHECK(pos(8).shape() == Shape{8, 3});
  REQUIRE_THROWS_AS(pos(9), IndexError);
  REQUIRE_THROWS_WITH(pos(4, 6), Catch::Contains("max_len = 8") && Catch::Contains("offset 6"));
  REQUIRE_THROWS_AS(pos(tensor({8})), IndexError);
  CHECK(pos.extra_repr() == "8, 3");
}

TEST_CASE("sinusoidal_positions is the table of Attention Is All You Need", "[nn][positional]") {
  Tensor pe = nn::sinusoidal_positions(8, 4);
  CHECK(pe.shape() == Shape{8, 4});
  CHECK(pe.dtype() == kFloat32);
  CHECK_ALLCLOSE(pe.select(0, 0), tensor({0.0, 1.0, 0.0, 1.0}), 0, 0);  // position 0: sin 0, cos 0
  // even columns sin, odd columns cos; columns 2i and 2i + 1 share the frequency base^(-2i / dim)
  CHECK_ALLCLOSE(pe.select(0, 1), tensor({0.8414709848, 0.5403023059, 0.0099998333, 0.9999500004}), 1e-6, 1e-7);
  CHECK_ALLCLOSE(pe.select(0, 2).slice(0, 0, 2), tensor({0.9092974268, -0.4161468365}), 1e-6, 1e-7);
  Tensor pe6 = nn::sinusoidal_positions(6, 6);
  CHECK(pe6.select(0, 5).select(0, 2).item<double>() == Approx(0.2300017117).epsilon(1e-6));
  CHECK(pe6.select(0, 5).select(0, 3).item<double>() == Approx(0.9731902243).epsilon(1e-6));
  Tensor pe8 = nn::sinusoidal_positions(8, 8);
  CHECK(pe8.select(0, 7).select(0, 4).item<double>() == Approx(0.0699428473).epsilon(1e-6));
  CHECK(pe8.select(0, 7).select(0, 5).item<double>() == Approx(0.9975510003).epsilon(1e-6));
  // an odd dim ends with a sin column; another base changes the frequencies
  CHECK(nn::sinusoidal_positions(3, 5).shape() == Shape{3, 5});
  CHECK(nn::sinusoidal_positions(2, 4, 100.0).select(0, 1).select(0, 2).item<double>() ==
        Approx(std::sin(0.1)).epsilon(1e-6));
  CHECK(nn::sinusoidal_positions(0, 4).shape() == Shape{0, 4});
}

TEST_CASE("SinusoidalPositionalEncoding holds its table as a buffer and adds it", "[nn][positional]") {
  nn::SinusoidalPositionalEncoding enc(16, 4);
  CHECK(enc.parameters().empty());
  CHECK(enc.named_buffers().keys() == std::vector<std::string>{"pe"});
  CHECK(enc.state_dict().keys() == std::vector<std::string>{"pe"});
  CHECK_FALSE(enc.pe.requires_grad());
  Tensor x = randn({2, 5, 4});
  CHECK_ALLCLOSE(enc(x), x + nn::sinusoidal_positions(5, 4), 1e-6, 1e-6);
  CHECK_ALLCLOSE(enc(x, 3), x + nn::sinusoidal_positions(8, 4).slice(0, 3, 8), 1e-6, 1e-6);
  CHECK_ALLCLOSE(enc.encoding(16), nn::sinusoidal_positions(16, 4), 0, 0);
  REQUIRE_THROWS_AS(enc(randn({1, 17, 4})), IndexError);
  REQUIRE_THROWS_AS(enc(randn({1, 3, 5})), ShapeError);
  CHECK(enc.extra_repr() == "16, 4");
}

namespace {
// rope(v, t) for one vector v: [D] at position t.
Tensor rope_at(const nn::RotaryEmbedding& rope, const Tensor& v, int64_t t) {
  return rope.apply(v.reshape({1, 1, 1, v.size(0)}), t).reshape({v.size(0)});
}
double score(const nn::RotaryEmbedding& rope, const Tensor& q, int64_t m, const Tensor& k, int64_t n) {
  return (rope_at(rope, q, m) * rope_at(rope, k, n)).sum().item<double>();
}
}  // namespace

TEST_CASE("RotaryEmbedding rotates the two halves of the head dim (rotate_half)", "[nn][positional][rope]") {
  nn::RotaryEmbedding rope(nn::RotaryOptions(4));
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64);
  const int64_t t = 3;
  const double a0 = t * 1.0, a1 = t * std::pow(10000.0, -0.5);  // pairs (0, 2) and (1, 3)
  Tensor expected = tensor({1.0 * std::cos(a0) - 3.0 * std::sin(a0), 2.0 * std::cos(a1) - 4.0 * std::sin(a1),
                            3.0 * std::cos(a0) + 1.0 * std::sin(a0), 4.0 * std::cos(a1) + 2.0 * std::sin(a1)},
                           kFloat64);
  CHECK_ALLCLOSE(rope_at(rope, x, t), expected, 1e-12, 1e-12);
  CHECK_ALLCLOSE(rope_at(rope, x, 0), x, 0, 0);  // position 0 is the identity
  CHECK_ALLCLOSE(nn::rotate_half(x), tensor({-3.0, -4.0, 1.0, 2.0}, kFloat64), 0, 0);
  auto [c, s] = rope.cos_sin(2, 1, kFloat32, kCPU);
  CHECK(c.shape() == Shape{2, 4});
  CHECK_ALLCLOSE(c.select(0, 0), tensor({std::cos(1.0), std::cos(0.01), std::cos(1.0), std::cos(0.01)}), 1e-6, 1e-7);
  CHECK_ALLCLOSE(s.select(0, 1), tensor({std::sin(2.0), std::sin(0.02), std::sin(2.0), std::sin(0.02)}), 1e-6, 1e-7);
  CHECK(rope.extra_repr() == "head_dim=4, base=10000");
  CHECK(rope.parameters().empty());
  CHECK(rope.state_dict().size() == 0);  // the cos/sin cache is not state (Note [rotary pairing])
}

TEST_CASE("RotaryEmbedding keeps norms and works in float32 and float64", "[nn][positional][rope]") {
  manual_seed(531);
  nn::RotaryEmbedding rope(nn::RotaryOptions(8).base(500000.0));
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Tensor x = randn({2, 3, 20, 8}, dt);
    Tensor y = rope.apply(x, 7);
    CHECK(y.shape() == x.shape());
    CHECK(y.dtype() == dt);
    CHECK_ALLCLOSE((y * y).sum({-1}), (x * x).sum({-1}), 1e-5, 1e-5);
  }
}

TEST_CASE("RotaryEmbedding with an offset equals slicing the full-sequence result", "[nn][positional][rope]") {
  manual_seed(532);
  nn::RotaryEmbedding rope(nn::RotaryOptions(6));
  Tensor x = randn({2, 3, 10, 6});
  Tensor full = rope.apply(x);
  for (int64_t t : {0, 4, 9}) {  // decoding one token at a time with a KV cache
    CHECK_ALLCLOSE(rope.apply(x.slice(2, t, t + 1), t), full.slice(2, t, t + 1), 1e-6, 1e-6);
  }
  CHECK_ALLCLOSE(rope.apply(x.slice(2, 6, 10), 6), full.slice(2, 6, 10), 1e-6, 1e-6);  // a chunk
  // explicit positions, shared or per batch, give the same rotations
  CHECK_ALLCLOSE(rope.apply(x.slice(2, 2, 5), tensor({2, 3, 4})), full.slice(2, 2, 5), 1e-6, 1e-6);
  Tensor per_batch = rope.apply(x.slice(2, 0, 2), tensor({{5, 6}, {0, 1}}));
  CHECK_ALLCLOSE(per_batch.select(0, 0), rope.apply(x.slice(2, 0, 2), 5).select(0, 0), 1e-6, 1e-6);
  CHECK_ALLCLOSE(per_batch.select(0, 1), full.select(0, 1).slice(1, 0, 2), 1e-6, 1e-6);
  // a far position grows the cache; nearer positions still read the same values afterwards
  Tensor far = rope.apply(x.slice(2, 0, 1), 3000);
  CHECK(far.shape() == Shape{2, 3, 1, 6});
  CHECK_ALLCLOSE(rope.apply(x), full, 0, 0);
  // q and k at once; their head counts may differ (grouped-query attention)
  Tensor k = randn({2, 1, 10, 6});
  auto [rq, rk] = rope.forward(x, k, 0);
  CHECK_ALLCLOSE(rq, full, 0, 0);
  CHECK_ALLCLOSE(rk, rope.apply(k), 0, 0);
}

TEST_CASE("RoPE scores depend only on the distance between positions", "[nn][positional][rope]") {
  manual_seed(533);
  nn::RotaryEmbedding rope(nn::RotaryOptions(16));
  for (int trial = 0; trial < 3; ++trial) {
    Tensor q = randn({16}), k = randn({16});
    double s31 = score(rope, q, 3, k, 1), s108 = score(rope, q, 10, k, 8), s10098 = score(rope, q, 100, k, 98);
    INFO("scores " << s31 << " " << s108 << " " << s10098);
    CHECK(std::fabs(s31 - s108) < 1e-5);
    CHECK(std::fabs(s31 - s10098) < 1e-5);
    // another distance gives another score, and the unrotated score is yet another
    CHECK(std::fabs(s31 - score(rope, q, 3, k, 0)) > 1e-3);
    CHECK(std::fabs(s31 - score(rope, q, 1, k, 3)) > 1e-3);
    CHECK(std::fabs(score(rope, q, 7, k, 7) - (q * k).sum().item<double>()) < 1e-5);  // same position: unrotated
  }
}

TEST_CASE("RotaryEmbedding rejects odd head dims and mismatched inputs", "[nn][positional][rope][errors]") {
  REQUIRE_THROWS_AS(nn::RotaryEmbedding(nn::RotaryOptions(7)), ShapeError);
  REQUIRE_THROWS_WITH(nn::RotaryEmbedding(nn::RotaryOptions(7)), Catch::Contains("even") && Catch::Contains("7"));
  REQUIRE_THROWS_AS(nn::RotaryEmbedding(nn::RotaryOptions(0)), ShapeError);
  REQUIRE_THROWS_AS(nn::RotaryEmbedding(nn::RotaryOptions(4).base(0.0)), Error);
  nn::RotaryEmbedding rope(nn::RotaryOptions(4));
  REQUIRE_THROWS_AS(rope.apply(randn({1, 1, 3, 6})), ShapeError);
  REQUIRE_THROWS_AS(rope.apply(randn({1, 1, 3, 4}), -1), Error);
  REQUIRE_THROWS_AS(rope.apply(randn({1, 1, 3, 4}), tensor({0, 1})), ShapeError);
  REQUIRE_THROWS_AS(rope.apply(randn({1, 1, 2, 4}), tensor({0, -1})), IndexError);
  REQUIRE_THROWS_AS(rope.apply(randn({1, 1, 2, 4}), tensor({0.0, 1.0})), DtypeError);
  REQUIRE_THROWS_AS(rope.apply(tensor({1, 2, 3, 4}).reshape({1, 1, 1, 4})), DtypeError);  // not a float
  REQUIRE_THROWS_AS(nn::rotate_half(randn({3})), ShapeError);
}
