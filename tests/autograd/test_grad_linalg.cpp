// gradcheck and gradgradcheck of matmul in every form PyTorch allows (1-D, 2-D, batched,
// broadcast batch dims, mixed ranks), of mm, bmm and dot, with transposed (no-copy) operands.
#include "grad_util.h"

using namespace tt;
using namespace tt::testing;

namespace {
using L = const TensorList&;
Tensor mat(L x) { return matmul(x[0], x[1]); }
}  // namespace

TEST_CASE("gradcheck: matmul 1-D and 2-D", "[autograd][gradcheck][linalg]") {
  manual_seed(400);
  expect_grad("1-D . 1-D", mat, {randn64({4}), randn64({4})});
  expect_grad("1-D @ 2-D", mat, {randn64({3}), randn64({3, 2})});
  expect_grad("2-D @ 1-D", mat, {randn64({2, 3}), randn64({3})});
  expect_grad("2-D @ 2-D", mat, {randn64({2, 3}), randn64({3, 4})});
  expect_grad("transposed @ transposed", mat, {randn64_t({2, 3}), randn64_t({3, 4})});
  expect_grad("strided @ 2-D", mat, {randn64_strided({2, 3}), randn64({3, 2})});
  expect_grad("one operand constant", mat, {randn64({2, 3}), randn({3, 2}, kFloat64)});
  expect_grad("x @ x", [](L x) { return x[0].matmul(x[0]); }, {randn64({3, 3})});
  expect_grad("x @ x.t()", [](L x) { return x[0].matmul(x[0].t()); }, {randn64({2, 3})});
}

TEST_CASE("gradcheck: matmul batched and broadcast", "[autograd][gradcheck][linalg]") {
  manual_seed(401);
  expect_grad("3-D @ 3-D", mat, {randn64({2, 2, 3}), randn64({2, 3, 2})});
  expect_grad("3-D @ 2-D", mat, {randn64({2, 2, 3}), randn64({3, 2})});
  expect_grad("2-D @ 3-D", mat, {randn64({2, 3}), randn64({2, 3, 2})});
  expect_grad("broadcast batch dims", mat, {randn64({2, 1, 2, 3}), randn64({3, 3, 2})});
  expect_grad("3-D @ 1-D", mat, {randn64({2, 2, 3}), randn64({3})});
  expect_grad("1-D @ 3-D", mat, {randn64({3}), randn64({2, 3, 2})});
  expect_grad("batched transposed", mat, {randn64_t({2, 2, 3}), randn64_t({2, 3, 2})});
  expect_grad("batch of size 1 broadcast", mat, {randn64({1, 2, 3}), randn64({3, 3, 2})});
}

TEST_CASE("gradcheck: mm, bmm, dot", "[autograd][gradcheck][linalg]") {
  manual_seed(402);
  expect_grad("mm", [](L x) { return mm(x[0], x[1]); }, {randn64({2, 3}), randn64_t({3, 2})});
  expect_grad("bmm", [](L x) { return x[0].bmm(x[1]); }, {randn64({2, 2, 3}), randn64_t({2, 3, 2})});
  expect_grad("dot", [](L x) { return dot(x[0], x[1]); }, {randn64({4}), randn64({4})});
  expect_grad("dot strided", [](L x) { return dot(x[0], x[1]); }, {leaf(randn({8}, kFloat64).slice(0, 0, kEnd, 2)), randn64({4})});
}

TEST_CASE("gradcheck: an MLP-like chain", "[autograd][gradcheck][linalg]") {
  manual_seed(403);
  expect_grad("tanh(x @ w1 + b1) @ w2, mean over rows",
              [](L x) { return ((x[0].matmul(x[1]) + x[2]).tanh().matmul(x[3])).mean(Shape{0}); },
              {randn64({4, 3}), randn64({3, 5}), randn64({5}), randn64_t({5, 2})});
}

TEST_CASE("gradcheck: linear with and without bias, any leading dims", "[autograd][gradcheck][linalg]") {
  manual_seed(404);
  auto lin = [](L x) { return linear(x[0], x[1], x[2]); };
  auto lin_nb = [](L x) { return linear(x[0], x[1]); };
  expect_grad("[5, 3] x [4, 3] + [4]", lin, {randn64({5, 3}), randn64({4, 3}), randn64({4})});
  expect_grad("no bias", lin_nb, {randn64({5, 3}), randn64({4, 3})});
  expect_grad("3-D input", lin, {randn64({2, 3, 3}), randn64({2, 3}), randn64({2})});
  expect_grad("1-D input", lin, {randn64({3}), randn64({2, 3}), randn64({2})});
  expect_grad("transposed input and weight", lin, {randn64_t({4, 3}), randn64_t({2, 3}), randn64({2})});
  expect_grad("strided weight", lin, {randn64({3, 3}), randn64_strided({2, 3}), randn64({2})});
}
