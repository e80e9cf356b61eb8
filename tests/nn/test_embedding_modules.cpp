// nn::Embedding (nn/embedding.h): the default initialization, padding_idx (zero row, no
// gradient, negative counting from the end), printing, from_pretrained, and bad options.
#include <sstream>

#include "test_util.h"

using namespace tt;

TEST_CASE("Embedding looks up rows of its weight", "[nn][embedding]") {
  manual_seed(520);
  nn::Embedding emb(10, 4);
  CHECK(emb.weight.shape() == Shape{10, 4});
  CHECK(emb.weight.requires_grad());
  CHECK(emb.named_parameters().keys() == std::vector<std::string>{"weight"});
  Tensor ids = tensor({{1, 9}, {0, 1}});
  Tensor y = emb(ids);
  CHECK(y.shape() == Shape{2, 2, 4});
  CHECK_ALLCLOSE(y.select(0, 0).select(0, 1), emb.weight.select(0, 9).detach(), 0, 0);
  y.sum().backward();
  CHECK_ALLCLOSE(emb.weight.grad().select(0, 1), full({4}, 2.0), 0, 0);
  CHECK_ALLCLOSE(emb.weight.grad().select(0, 5), zeros({4}), 0, 0);
  REQUIRE_THROWS_AS(emb(tensor({10})), IndexError);
}

TEST_CASE("Embedding's weight is drawn from N(0, 1)", "[nn][embedding]") {
  manual_seed(521);
  nn::Embedding emb(200, 100);
  CHECK(std::fabs(emb.weight.mean().item<double>()) < 0.02);
  CHECK(std::fabs(emb.weight.std().item<double>() - 1.0) < 0.02);
}

TEST_CASE("Embedding with padding_idx: zero row, no gradient", "[nn][embedding]") {
  manual_seed(522);
  nn::Embedding emb(nn::EmbeddingOptions(6, 3).padding_idx(0));
  CHECK(emb.options.padding_idx() == std::optional<int64_t>(0));
  CHECK_ALLCLOSE(emb.weight.select(0, 0).detach(), zeros({3}), 0, 0);
  CHECK(emb.weight.select(0, 1).detach().abs().sum().item<double>() > 0);
  Tensor ids = tensor({{0, 2, 0}, {2, 5, 0}});
  emb(ids).sum().backward();
  CHECK_ALLCLOSE(emb.weight.grad().select(0, 0), zeros({3}), 0, 0);
  CHECK_ALLCLOSE(emb.weight.grad().select(0, 2), full({3}, 2.0), 0, 0);
  // reset_parameters draws again and keeps the padding row at zero
  emb.reset_parameters();
  CHECK_ALLCLOSE(emb.weight.select(0, 0).detach(), zeros({3}), 0, 0);
  // negative padding_idx is stored wrapped, as PyTorch does
  nn::Embedding last(nn::EmbeddingOptions(6, 3).padding_idx(-1));
  CHECK(last.options.padding_idx() == std::optional<int64_t>(5));
  CHECK_ALLCLOSE(last.weight.select(0, 5).detach(), zeros({3}), 0, 0);
}

TEST_CASE("Embedding prints like PyTorch", "[nn][embedding]") {
  CHECK(nn::Embedding(nn::EmbeddingOptions(65, 128).padding_idx(0)).extra_repr() == "65, 128, padding_idx=0");
  CHECK(nn::Embedding(65, 128).extra_repr() == "65, 128");
  CHECK(nn::Embedding(nn::EmbeddingOptions(10, 3).padding_idx(-2)).extra_repr() == "10, 3, padding_idx=8");
  std::ostringstream os;
  os << nn::Embedding(5, 2);
  CHECK(os.str().rfind("Embedding(5, 2)", 0) == 0);
}

TEST_CASE("Embedding::from_pretrained copies the table and freezes it by default", "[nn][embedding]") {
  Tensor table = tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});
  auto emb = nn::Embedding::from_pretrained(table);
  CHECK_FALSE(emb->weight.requires_grad());
  CHECK_ALLCLOSE(emb->forward(tensor({2, 0})), tensor({{5.0, 6.0}, {1.0, 2.0}}), 0, 0);
  CHECK(emb->weight.data_ptr<float>() != table.data_ptr<float>());  // a copy, not the caller's tensor
  auto trainable = nn::Embedding::from_pretrained(table, false, 1);
  CHECK(trainable->weight.requires_grad());
  CHECK_ALLCLOSE(trainable->weight.select(0, 1).detach(), tensor({3.0, 4.0}), 0, 0);  // padding row kept as given
  REQUIRE_THROWS_AS(nn::Embedding::from_pretrained(tensor({1.0, 2.0})), ShapeError);
}

TEST_CASE("Embedding rejects bad options", "[nn][embedding][errors]") {
  REQUIRE_THROWS_AS(nn::Embedding(nn::EmbeddingOptions(5, 2).padding_idx(5)), IndexError);
  REQUIRE_THROWS_AS(nn::Embedding(nn::EmbeddingOptions(5, 2).padding_idx(-6)), IndexError);
  REQUIRE_THROWS_WITH(nn::Embedding(nn::EmbeddingOptions(5, 2).padding_idx(7)),
                      Catch::Contains("padding_idx") && Catch::Contains("7") && Catch::Contains("5"));
  REQUIRE_THROWS_AS(nn::Embedding(-1, 2), Error);
  CHECK(nn::Embedding(0, 4).weight.shape() == Shape{0, 4});
}
