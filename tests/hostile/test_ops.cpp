// The hostile sweep through the op families and layers (Note [hostile sweep] in hostile.h):
// hostile index values for every indexing op and loss, hostile sizes for every layer that
// allocates its parameters, hostile positions for the positional tables, hostile probabilities.
#include "hostile.h"

#include <cmath>

using namespace tt;
using namespace tt::hostile;

namespace {
// Hostile numbers plus the edges of a dim of size 5.
std::vector<int64_t> indices() {
  std::vector<int64_t> v = kSizes;
  for (int64_t x : {4, 5, -4, -6}) v.push_back(x);
  return v;
}
}  // namespace

TEST_CASE("hostile: index values out of range in every indexing op and loss", "[hostile]") {
  Tensor t = arange(15, kFloat32).view({5, 3}), logits = zeros({2, 5});
  for (int64_t v : indices()) {
    const Expect e = v >= 0 && v < 5 ? Expect::Ok : Expect::Error;
    const std::string vs = std::to_string(v);
    Tensor idx = tensor(std::vector<int64_t>{v}, {1});
    Tensor idx3 = full({1, 3}, v, kInt64);
    run_case<Tensor>("index_select(" + vs + ")", e, [&] { return index_select(t, 0, idx); },
                     [&](const Tensor& r) { CHECK(r.to_vector<float>()[0] == float(3 * v)); });
    run_case<Tensor>("gather(" + vs + ")", e, [&] { return gather(t, 0, idx3); });
    run_case<Tensor>("scatter_add(" + vs + ")", e, [&] { return scatter_add(t, 0, idx3, ones({1, 3})); });
    run_case<Tensor>("embedding(" + vs + ")", e, [&] { return embedding(t, idx); }, has_shape({1, 3}));
    Tensor target = tensor(std::vector<int64_t>{v, 0}, {2});
    run_case<Tensor>("cross_entropy(target " + vs + ")", e, [&] { return cross_entropy(logits, target); },
                     [&](const Tensor& r) { CHECK(std::abs(r.item<float>() - std::log(5.0f)) < 1e-5f); });
    run_case<Tensor>("nll_loss(target " + vs + ")", e, [&] { return nll_loss(log_softmax(logits, 1), target); });
    // padding_idx counts from the end too: [-5, 5).
    run_case<Tensor>("embedding(padding_idx " + vs + ")", v >= -5 && v < 5 ? Expect::Ok : Expect::Error,
                     [&] { return embedding(t, tensor(std::vector<int64_t>{0}, {1}), v); });
    run_case<std::shared_ptr<nn::Embedding>>(
        "nn::Embedding(padding_idx " + vs + ")", v >= -5 && v < 5 ? Expect::Ok : Expect::Error,
        [&] { return std::make_shared<nn::Embedding>(nn::EmbeddingOptions(5, 3).padding_idx(v)); });
  }
}

TEST_CASE("hostile: layers whose parameters have hostile sizes", "[hostile]") {
  for (int64_t a : kSizes)
    for (int64_t b : kSizes) {
      const std::string ab = std::to_string(a) + ", " + std::to_string(b);
      // Linear(in=a, out=b) holds a [b, a] weight and a [b] bias.
      run_case<std::shared_ptr<nn::Linear>>("nn::Linear(" + ab + ")", all_of({allocation({b, a}, 4), allocation({b}, 4)}),
                                            [&] { return std::make_shared<nn::Linear>(a, b); },
                                            [&](const std::shared_ptr<nn::Linear>& l) {
                                              CHECK(l->weight.shape() == Shape{b, a});
                                            });
      run_case<std::shared_ptr<nn::Embedding>>("nn::Embedding(" + ab + ")", allocation({a, b}, 4),
                                               [&] { return std::make_shared<nn::Embedding>(a, b); });
      run_case<std::shared_ptr<nn::LearnedPositionalEmbedding>>(
          "nn::LearnedPositionalEmbedding(" + ab + ")", allocation({a, b}, 4),
          [&] { return std::make_shared<nn::LearnedPositionalEmbedding>(a, b); });
      // The sinusoidal table is built in float64, then kept in float32.
      run_case<std::shared_ptr<nn::SinusoidalPositionalEncoding>>(
          "nn::SinusoidalPositionalEncoding(" + ab + ")", allocation({a, b}, 8),
          [&] { return std::make_shared<nn::SinusoidalPositionalEncoding>(a, b); });
    }
  for (int64_t a : kSizes) {
    const std::string as = std::to_string(a);
    run_case<std::shared_ptr<nn::LayerNorm>>("nn::LayerNorm(" + as + ")", allocation({a}, 4),
                                             [&] { return std::make_shared<nn::LayerNorm>(Shape{a}); });
    // Heads must be > 0 and divide the width (> 0); the parameters are [4a, a] floats in all.
    for (int64_t h : {int64_t(1), int64_t(0), int64_t(-1), int64_t(3), kMax}) {
      Expect e = a <= 0 || h <= 0 || a % h != 0 ? Expect::Error : all_of({allocation({a, a, 4}, 4), allocation({a, 4}, 4)});
      run_case<std::shared_ptr<nn::MultiHeadAttention>>(
          "nn::MultiHeadAttention(" + as + ", heads " + std::to_string(h) + ")", e,
          [&] { return std::make_shared<nn::MultiHeadAttention>(a, h); });
    }
  }
}

TEST_CASE("hostile: positional tables at hostile positions and lengths", "[hostile]") {
  nn::RotaryEmbedding rope(8);
  for (int64_t offset : kSizes)
    for (int64_t len : kSizes) {
      i128 end = i128(offset) + len;
      Expect e = offset < 0 || len < 0 || end > kMax ? Expect::Error : allocation({len, 8}, 8);
      std::ostringstream what;
      what << "RotaryEmbedding::cos_sin(seq_len " << len << ", offset " << offset << ")";
      run_case<std::pair<Tensor, Tensor>>(what.str(), e, [&] { return rope.cos_sin(len, offset, kFloat64, kCPU); },
                                          [&](const std::pair<Tensor, Tensor>& cs) {
                                            has_shape({len, 8})(cs.first);
                                            if (len > 0) {  // a rotation: cos^2 + sin^2 = 1 everywhere
                                              Tensor one = cs.first * cs.first + cs.second * cs.second;
                                              CHECK(testing::allclose(one, ones_like(one), 1e-12, 1e-12));
                                            }
                                          });
      nn::LearnedPositionalEmbedding learned(16, 4);
      run_case<Tensor>("LearnedPositionalEmbedding(" + std::to_string(len) + ", " + std::to_string(offset) + ")",
                       offset >= 0 && len >= 0 && end <= 16 ? Expect::Ok : Expect::Error,
                       [&] { return learned.forward(len, offset); }, has_shape({len, 4}));
    }
}

TEST_CASE("hostile: probabilities and rates outside [0, 1]", "[hostile]") {
  Tensor x = ones({4, 4});
  for (double p : {-1.0, -1e-9, 0.0, 0.5, 1.0, 1.0 + 1e-9, 2.0, double(NAN), double(INFINITY), -double(INFINITY)}) {
    Expect e = p >= 0.0 && p <= 1.0 ? Expect::Ok : Expect::Error;
    run_case<Tensor>("dropout(p " + std::to_string(p) + ")", e, [&] { return dropout(x, p, true); },
                     [&](const Tensor& r) {
                       has_shape({4, 4})(r);
                       if (p == 1.0) CHECK(r.sum().item<float>() == 0.0f);
                     });
    run_case<std::shared_ptr<nn::Dropout>>("nn::Dropout(" + std::to_string(p) + ")", e,
                                           [&] { return std::make_shared<nn::Dropout>(p); });
  }
}
