// tt::embedding (ops/embedding.h): rows gathered for indices of any shape (0-d, 1-D, 2-D,
// non-contiguous, empty), the weight gradient with repeated indices and padding_idx, and the
// errors for bad indices, dtypes and shapes.
#include "test_util.h"

using namespace tt;

namespace {
Tensor table() {  // [4, 3]: row r is (10r, 10r + 1, 10r + 2)
  return tensor({{0.0, 1.0, 2.0}, {10.0, 11.0, 12.0}, {20.0, 21.0, 22.0}, {30.0, 31.0, 32.0}});
}
}  // namespace

TEST_CASE("embedding gathers rows for indices of any shape", "[ops][embedding]") {
  Tensor w = table();
  CHECK_ALLCLOSE(embedding(w, tensor({2, 0, 2})), tensor({{20.0, 21.0, 22.0}, {0.0, 1.0, 2.0}, {20.0, 21.0, 22.0}}), 0,
                 0);
  // 0-d indices -> [E]
  Tensor one = embedding(w, scalar_tensor(3, kInt64));
  CHECK(one.shape() == Shape{3});
  CHECK_ALLCLOSE(one, tensor({30.0, 31.0, 32.0}), 0, 0);
  // 2-D indices [B, T] -> [B, T, E]
  Tensor ids = tensor({{1, 3}, {0, 1}, {2, 2}});
  Tensor y = embedding(w, ids);
  CHECK(y.shape() == Shape{3, 2, 3});
  CHECK_ALLCLOSE(y.select(0, 0).select(0, 1), tensor({30.0, 31.0, 32.0}), 0, 0);
  CHECK_ALLCLOSE(y.select(0, 2), tensor({{20.0, 21.0, 22.0}, {20.0, 21.0, 22.0}}), 0, 0);
  // non-contiguous indices and weight give the same as their contiguous copies
  CHECK_ALLCLOSE(embedding(w, ids.t()), embedding(w, ids.t().contiguous()), 0, 0);
  Tensor wt = randn({3, 5}).t();  // [5, 3], transposed in memory
  CHECK_ALLCLOSE(embedding(wt, ids), embedding(wt.contiguous(), ids), 0, 0);
  // 3-D indices, empty indices, float64 weight
  CHECK(embedding(w, zeros({2, 2, 2}, kInt64)).shape() == Shape{2, 2, 2, 3});
  CHECK(embedding(w, zeros({0}, kInt64)).shape() == Shape{0, 3});
  CHECK(embedding(w, zeros({2, 0}, kInt64)).shape() == Shape{2, 0, 3});
  CHECK(embedding(w.to(kFloat64), tensor({1})).dtype() == kFloat64);
  // padding_idx does not change the forward: the padding row is read as it is
  CHECK_ALLCLOSE(embedding(w, tensor({0, 1}), 0), embedding(w, tensor({0, 1})), 0, 0);
  // F::embedding takes (input, weight), as torch.nn.functional.embedding does
  CHECK_ALLCLOSE(F::embedding(tensor({3}), w), tensor({{30.0, 31.0, 32.0}}), 0, 0);
}

TEST_CASE("embedding's weight gradient adds repeated rows and skips padding_idx", "[ops][embedding]") {
  Tensor w = table().requires_grad_();
  Tensor ids = tensor({{1, 3, 1}, {0, 1, 2}});
  Tensor g = arange(18.0).reshape({2, 3, 3});
  embedding(w, ids).backward(g);
  // row 1 is read three times (positions 0, 2, 4), row 0 once, row 2 once, row 3 once
  CHECK_ALLCLOSE(w.grad(), tensor({{9.0, 10.0, 11.0},
                                   {0.0 + 6.0 + 12.0, 1.0 + 7.0 + 13.0, 2.0 + 8.0 + 14.0},
                                   {15.0, 16.0, 17.0},
                                   {3.0, 4.0, 5.0}}), 0, 0);
  Tensor w2 = table().requires_grad_();
  embedding(w2, ids, 1).backward(g);
  CHECK_ALLCLOSE(w2.grad(), tensor({{9.0, 10.0, 11.0}, {0.0, 0.0, 0.0}, {15.0, 16.0, 17.0}, {3.0, 4.0, 5.0}}), 0, 0);
  // a negative padding_idx counts from the end: -1 is row 3
  Tensor w3 = table().requires_grad_();
  embedding(w3, ids, -1).backward(g);
  CHECK_ALLCLOSE(w3.grad().select(0, 3), zeros({3}), 0, 0);
  CHECK_ALLCLOSE(w3.grad().select(0, 0), tensor({9.0, 10.0, 11.0}), 0, 0);
  // a row never read gets zero, and the node is named like PyTorch's
  Tensor w4 = table().requires_grad_();
  Tensor y = embedding(w4, tensor({2}));
  CHECK(y.grad_fn()->name() == "EmbeddingBackward0");
  y.sum().backward();
  CHECK_ALLCLOSE(w4.grad(), tensor({{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}, {0.0, 0.0, 0.0}}), 0, 0);
  // no graph when the weight does not require grad, or under NoGradGuard
  CHECK_FALSE(embedding(table(), tensor({1})).requires_grad());
  NoGradGuard no_grad;
  CHECK_FALSE(embedding(w4, tensor({1})).requires_grad());
}

TEST_CASE("embedding rejects bad indices, dtypes and shapes", "[ops][embedding][errors]") {
  Tensor w = table();
  REQUIRE_THROWS_AS(embedding(w, tensor({0, 4})), IndexError);
  REQUIRE_THROWS_WITH(embedding(w, tensor({0, 1, 4, 2})), Catch::Contains("embedding") && Catch::Contains("index 4") &&
                                                             Catch::Contains("position 2") && Catch::Contains("4 rows"));
  REQUIRE_THROWS_WITH(embedding(w, tensor({{0, 1}, {-1, 2}})), Catch::Contains("index -1") &&
                                                                  Catch::Contains("position 2"));
  REQUIRE_THROWS_WITH(embedding(w, scalar_tensor(7, kInt64)), Catch::Contains("index 7") &&
                                                                  Catch::Contains("position 0"));
  REQUIRE_THROWS_AS(embedding(w, tensor({0.0, 1.0})), DtypeError);
  REQUIRE_THROWS_WITH(embedding(w, tensor({0.0})), Catch::Contains("int64") && Catch::Contains("float32"));
  REQUIRE_THROWS_AS(embedding(w, tensor({1}, kInt64).to(kBool)), DtypeError);
  // the arguments swapped (PyTorch's F.embedding(input, weight) order) say so
  REQUIRE_THROWS_WITH(embedding(tensor({1, 2}), w), Catch::Contains("embedding(weight, indices)"));
  REQUIRE_THROWS_AS(embedding(tensor({1.0, 2.0}), tensor({0})), ShapeError);
  REQUIRE_THROWS_AS(embedding(w, tensor({0}), 4), IndexError);
  REQUIRE_THROWS_AS(embedding(w, tensor({0}), -5), IndexError);
  REQUIRE_THROWS_WITH(embedding(w, tensor({0}), 9), Catch::Contains("padding_idx") && Catch::Contains("9"));
  // an empty table accepts only empty indices
  CHECK(embedding(zeros({0, 3}), zeros({0}, kInt64)).shape() == Shape{0, 3});
  REQUIRE_THROWS_AS(embedding(zeros({0, 3}), tensor({0})), IndexError);
}
