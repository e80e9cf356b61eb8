// gradcheck and gradgradcheck of the reductions (ops/reduction.h): sum, mean, var, std over all,
// one or several dims, keepdim, on non-contiguous inputs; max/min over all and over a dim, plus
// PyTorch's tie rules (max() splits evenly among tied maxima, max(dim) credits the returned index).
#include <tuple>

#include "grad_util.h"

using namespace tt;
using namespace tt::testing;

namespace {
using L = const TensorList&;
}  // namespace

TEST_CASE("gradcheck: sum", "[autograd][gradcheck][reduction]") {
  manual_seed(200);
  expect_grad("all", [](L x) { return x[0].sum(); }, {randn64_t({3, 4})});
  expect_grad("dim 0", [](L x) { return x[0].sum(Shape{0}); }, {randn64({3, 4})});
  expect_grad("dim -1 keepdim", [](L x) { return x[0].sum(Shape{-1}, true); }, {randn64_strided({2, 3, 4})});
  expect_grad("dims 0 and 2", [](L x) { return sum(x[0], {0, 2}); }, {randn64_t({2, 3, 4})});
  expect_grad("dims 0 and 2 keepdim", [](L x) { return sum(x[0], {0, 2}, true); }, {randn64({2, 3, 4})});
  expect_grad("0-d", [](L x) { return x[0].sum(); }, {leaf(scalar_tensor(1.5, kFloat64))});
  expect_grad("of an expanded input", [](L x) { return x[0].expand({2, 3, 4}).sum(Shape{1}); }, {randn64({3, 1})});
}

TEST_CASE("gradcheck: mean", "[autograd][gradcheck][reduction]") {
  manual_seed(201);
  expect_grad("all", [](L x) { return x[0].mean(); }, {randn64_t({3, 4})});
  expect_grad("dim 1", [](L x) { return x[0].mean(Shape{1}); }, {randn64({3, 4})});
  expect_grad("dims -1 and 0 keepdim", [](L x) { return mean(x[0], {-1, 0}, true); }, {randn64_strided({2, 3, 4})});
}

TEST_CASE("gradcheck: var and std", "[autograd][gradcheck][reduction]") {
  manual_seed(202);
  expect_grad("var all", [](L x) { return x[0].var(); }, {randn64_t({3, 4})});
  expect_grad("var dim 1", [](L x) { return x[0].var(Shape{1}); }, {randn64({3, 4})});
  expect_grad("var dim 0, correction 0, keepdim", [](L x) { return var(x[0], {0}, 0, true); }, {randn64_strided({4, 3})});
  expect_grad("var dims 0 and 2", [](L x) { return var(x[0], {0, 2}); }, {randn64({2, 3, 4})});
  expect_grad("var over all dims with correction 0", [](L x) { return x[0].var({}, 0); }, {randn64({2, 3})});
  expect_grad("std all", [](L x) { return x[0].std(); }, {randn64_t({3, 4})});
  expect_grad("std dim -1", [](L x) { return x[0].std(Shape{-1}); }, {randn64({3, 4})});
  expect_grad("std dims 1 and 2, correction 0, keepdim", [](L x) { return x[0].std(Shape{1, 2}, 0, true); },
              {randn64_strided({2, 3, 4})});
}

TEST_CASE("gradcheck: max and min", "[autograd][gradcheck][reduction]") {
  manual_seed(203);
  expect_grad("max all", [](L x) { return x[0].max(); }, {randn64_t({3, 4})});
  expect_grad("min all", [](L x) { return x[0].min(); }, {randn64_strided({3, 4})});
  expect_grad("max dim 1", [](L x) { return std::get<0>(x[0].max(1)); }, {randn64({3, 4})});
  expect_grad("max dim 0 keepdim", [](L x) { return std::get<0>(max(x[0], 0, true)); }, {randn64_t({3, 4})});
  expect_grad("min dim -1", [](L x) { return std::get<0>(x[0].min(-1)); }, {randn64_strided({2, 3, 4})});
  expect_grad("min dim 1 keepdim", [](L x) { return std::get<0>(min(x[0], 1, true)); }, {randn64({2, 3, 4})});
  expect_grad("max over a dim of size 1", [](L x) { return std::get<0>(x[0].max(1)); }, {randn64({3, 1})});
}

TEST_CASE("gradcheck: amax and amin over dim lists", "[autograd][gradcheck][reduction]") {
  manual_seed(204);
  expect_grad("amax all", [](L x) { return x[0].amax(); }, {randn64_t({3, 4})});
  expect_grad("amax dims 0 and 2", [](L x) { return x[0].amax({0, 2}); }, {randn64({2, 3, 4})});
  expect_grad("amin dim -1 keepdim", [](L x) { return amin(x[0], -1, true); }, {randn64_strided({2, 3, 4})});
  expect_grad("amin dim 0", [](L x) { return x[0].amin(0); }, {randn64_t({3, 4})});
}

TEST_CASE("amax and amin share a tie's gradient evenly, as torch.amax does", "[autograd][reduction]") {
  Tensor x = leaf(tensor({{1.0, 3.0, 3.0}, {2.0, 2.0, 0.0}}, kFloat64));
  x.amax(1).sum().backward();
  CHECK_ALLCLOSE(x.grad(), tensor({{0.0, 0.5, 0.5}, {0.5, 0.5, 0.0}}, kFloat64));
  Tensor y = leaf(tensor({{0.0, 5.0}, {0.0, 1.0}}, kFloat64));
  (y.amin({0, 1}) * 4.0).backward();
  CHECK_ALLCLOSE(y.grad(), tensor({{2.0, 0.0}, {2.0, 0.0}}, kFloat64));
}

TEST_CASE("max() and min() over all split the gradient evenly among tied extremes", "[autograd][reduction]") {
  Tensor x = leaf(tensor({{1.0, 3.0, 3.0}, {2.0, 3.0, 0.0}}, kFloat64));
  x.max().backward();
  CHECK_ALLCLOSE(x.grad(), tensor({{0.0, 1.0 / 3, 1.0 / 3}, {0.0, 1.0 / 3, 0.0}}, kFloat64));
  Tensor y = leaf(tensor({0.0, 5.0, 0.0, 1.0}, kFloat64));
  (y.min() * 4.0).backward();
  CHECK_ALLCLOSE(y.grad(), tensor({2.0, 0.0, 2.0, 0.0}, kFloat64));
}

TEST_CASE("max(dim) and min(dim) send a tie's gradient to the returned index", "[autograd][reduction]") {
  Tensor x = leaf(tensor({{1.0, 3.0, 3.0}, {2.0, 2.0, 0.0}}, kFloat64));
  Tensor values, indices;
  std::tie(values, indices) = x.max(1);
  values.sum().backward();
  Tensor expected = zeros({2, 3}, kFloat64);
  std::vector<int64_t> idx = indices.to_vector<int64_t>();
  expected.select(0, 0).select(0, idx[0]).fill_(1.0);
  expected.select(0, 1).select(0, idx[1]).fill_(1.0);
  CHECK_ALLCLOSE(x.grad(), expected);
  CHECK(x.grad().sum().item<double>() == 2.0);  // never split
  Tensor y = leaf(tensor({{0.0, 1.0}, {0.0, 1.0}}, kFloat64));
  std::tie(values, indices) = y.min(0, true);
  values.sum().backward();
  std::vector<int64_t> idy = indices.to_vector<int64_t>();
  Tensor expected_y = zeros({2, 2}, kFloat64);
  expected_y.select(0, idy[0]).select(0, 0).fill_(1.0);
  expected_y.select(0, idy[1]).select(0, 1).fill_(1.0);
  CHECK_ALLCLOSE(y.grad(), expected_y);
  CHECK(y.grad().sum().item<double>() == 2.0);
}

TEST_CASE("argmax and argmin record no graph", "[autograd][reduction]") {
  Tensor x = randn64({3, 4});
  CHECK_FALSE(x.argmax().requires_grad());
  CHECK_FALSE(x.argmin(1).requires_grad());
  Tensor values, indices;
  std::tie(values, indices) = x.max(0);
  CHECK(values.requires_grad());
  CHECK_FALSE(indices.requires_grad());
}
