// gradcheck and gradgradcheck of joining and splitting (ops/join.h: cat stack split chunk) and
// of indexing (ops/indexing.h: index_select gather scatter_add), with repeated indices,
// non-contiguous inputs and inputs that do not require grad.
#include "grad_util.h"

using namespace tt;
using namespace tt::testing;

namespace {
using L = const TensorList&;
}  // namespace

TEST_CASE("gradcheck: cat", "[autograd][gradcheck][join]") {
  manual_seed(500);
  expect_grad("dim 0", [](L x) { return cat({x[0], x[1]}, 0); }, {randn64({2, 3}), randn64({1, 3})});
  expect_grad("dim 1, three inputs, one constant, one transposed",
              [](L x) { return cat({x[0], x[1], x[2]}, 1); },
              {randn64_t({2, 3}), randn({2, 1}, kFloat64), randn64_strided({2, 2})});
  expect_grad("dim -1 of 3-D", [](L x) { return cat({x[0], x[1]}, -1); }, {randn64({2, 2, 1}), randn64({2, 2, 3})});
  expect_grad("the same tensor twice", [](L x) { return cat({x[0], x[0] * 2.0}, 0); }, {randn64({3})});
}

TEST_CASE("gradcheck: stack", "[autograd][gradcheck][join]") {
  manual_seed(501);
  expect_grad("dim 0", [](L x) { return stack({x[0], x[1]}, 0); }, {randn64({2, 3}), randn64_t({2, 3})});
  expect_grad("dim -1", [](L x) { return stack({x[0], x[1], x[2]}, -1); }, {randn64({3}), randn64({3}), randn64({3})});
  expect_grad("dim 1 with a constant", [](L x) { return stack({x[0], x[1]}, 1); }, {randn64({2, 2}), randn({2, 2}, kFloat64)});
}

TEST_CASE("gradcheck: split and chunk", "[autograd][gradcheck][join]") {
  manual_seed(502);
  expect_grad("split equal", [](L x) { return split(x[0], 2, 0); }, {randn64({4, 3})});
  expect_grad("split with a short last piece", [](L x) { return x[0].split(2, 1); }, {randn64_t({2, 5})});
  expect_grad("split sizes", [](L x) { return split(x[0], std::vector<int64_t>{1, 3, 2}, 1); }, {randn64({2, 6})});
  expect_grad("chunk", [](L x) { return x[0].chunk(3, 0); }, {randn64({6, 2})});
  expect_grad("chunk uneven, strided", [](L x) { return chunk(x[0], 2, -1); }, {randn64_strided({2, 5})});
  expect_grad("only one piece used", [](L x) { return split(x[0], 2, 0)[1] * 3.0; }, {randn64({4, 2})});
  expect_grad("pieces recombined", [](L x) {
    TensorList p = x[0].chunk(2, 1);
    return p[1] * p[0];
  }, {randn64({3, 4})});
}

TEST_CASE("gradcheck: index_select", "[autograd][gradcheck][indexing]") {
  manual_seed(503);
  Tensor idx = tensor({2, 0, 2, 1});  // repeated: gradients add up
  expect_grad("dim 0", [idx](L x) { return x[0].index_select(0, idx); }, {randn64({3, 2})});
  expect_grad("dim 1 transposed", [idx](L x) { return index_select(x[0], 1, idx); }, {randn64_t({2, 3})});
  expect_grad("dim -1 of 3-D", [idx](L x) { return index_select(x[0], -1, idx); }, {randn64_strided({2, 2, 3})});
  Tensor one = tensor({1});
  expect_grad("1-D, one index", [one](L x) { return x[0].index_select(0, one); }, {randn64({3})});
}

TEST_CASE("gradcheck: gather", "[autograd][gradcheck][indexing]") {
  manual_seed(504);
  Tensor idx0 = tensor({{0, 1, 2}, {2, 2, 0}});  // [2, 3] into dim 0 of [3, 3]
  Tensor idx1 = tensor({{1, 1}, {0, 2}, {2, 0}});  // [3, 2] into dim 1 of [3, 3]
  expect_grad("dim 0", [idx0](L x) { return x[0].gather(0, idx0); }, {randn64({3, 3})});
  expect_grad("dim 1 transposed", [idx1](L x) { return gather(x[0], 1, idx1); }, {randn64_t({3, 3})});
  expect_grad("dim 1 of a wider input", [idx1](L x) { return gather(x[0], -1, idx1); }, {randn64_strided({3, 4})});
}

TEST_CASE("gradcheck: scatter_add", "[autograd][gradcheck][indexing]") {
  manual_seed(505);
  Tensor idx = tensor({{0, 1, 0}, {2, 0, 0}});  // repeated targets
  expect_grad("self and src, dim 0", [idx](L x) { return x[0].scatter_add(0, idx, x[1]); },
              {randn64({3, 3}), randn64({2, 3})});
  expect_grad("dim 1, transposed self, bigger src", [](L x) {
    return scatter_add(x[0], 1, tensor({{1, 1}, {0, 2}}), x[1]);
  }, {randn64_t({2, 3}), randn64({2, 4})});
  expect_grad("only src requires grad", [idx](L x) { return scatter_add(x[1], 0, idx, x[0]); },
              {randn64({2, 3}), zeros({3, 3}, kFloat64)});
  expect_grad("in place on a non-leaf", [idx](L x) {
    Tensor y = x[0] * 1.0;
    y.scatter_add_(0, idx, x[1]);
    return y * y;
  }, {randn64({3, 3}), randn64({2, 3})});
}

TEST_CASE("gradcheck: an attention-score-like expression", "[autograd][gradcheck][join]") {
  manual_seed(506);
  // q: [B, T, D], k: [B, T, D] -> scores [B, T, T], masked, normalised by hand.
  Tensor causal = tensor({false, true, true, false, false, true, false, false, false}).view({3, 3});
  expect_grad("q @ k^T / sqrt(D), masked, exp-normalised",
              [causal](L x) {
                Tensor s = x[0].matmul(x[1].transpose(1, 2)) / 2.0;
                Tensor e = s.masked_fill(causal, -1e9).exp();
                return e / e.sum(Shape{-1}, true);
              },
              {randn64({2, 3, 4}), randn64({2, 3, 4})});
}
