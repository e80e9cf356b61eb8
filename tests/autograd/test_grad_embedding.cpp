// gradcheck and gradgradcheck of tt::embedding's weight gradient (repeated indices, padding_idx,
// 0-d and 2-D indices, a transposed weight; that the padding row's gradient is zero is checked in
// tests/ops/test_embedding.cpp and against PyTorch) and of rotary embedding (nn/positional.h).
#include "grad_util.h"

using namespace tt;
using namespace tt::testing;

namespace {
using L = const TensorList&;
}  // namespace

TEST_CASE("gradcheck: embedding", "[autograd][gradcheck][embedding]") {
  manual_seed(510);
  Tensor rep = tensor({2, 0, 2, 2, 4});  // row 2 read three times, rows 1 and 3 never
  expect_grad("repeated indices", [rep](L x) { return embedding(x[0], rep); }, {randn64({5, 3})});
  // padding_idx: the padding row deliberately gets no gradient, which finite differences would
  // contradict; so the table is built from the other rows (the input) around a constant padding
  // row, and gradcheck sees that the masking leaves every other row's gradient exact.
  Tensor pad_row = randn({1, 3}, kFloat64);
  expect_grad("padding_idx 2", [rep, pad_row](L x) {
    return embedding(cat({x[0].slice(0, 0, 2), pad_row, x[0].slice(0, 2, 4)}), rep, 2);
  }, {randn64({4, 3})});
  expect_grad("padding_idx -1", [rep, pad_row](L x) { return embedding(cat({x[0], pad_row}), rep, -1); },
              {randn64({4, 3})});
  Tensor ids = tensor({{1, 0, 1}, {3, 3, 2}});
  expect_grad("2-D indices, transposed weight", [ids](L x) { return embedding(x[0], ids); }, {randn64_t({4, 2})});
  Tensor one = scalar_tensor(1, kInt64);
  expect_grad("0-d index", [one](L x) { return embedding(x[0], one); }, {randn64({3, 4})});
  expect_grad("composed: squared and summed over the sequence",
              [ids](L x) { return (embedding(x[0], ids) * embedding(x[0], ids)).sum({1}); }, {randn64({4, 3})});
}

TEST_CASE("gradcheck: rotary embedding", "[autograd][gradcheck][rope]") {
  manual_seed(511);
  nn::RotaryEmbedding rope(nn::RotaryOptions(4).base(100.0));
  expect_grad("apply, offset 0", [&rope](L x) { return rope.apply(x[0]); }, {randn64({2, 2, 3, 4})});
  expect_grad("apply, offset 5, transposed input", [&rope](L x) { return rope.apply(x[0], 5); },
              {randn64_t({1, 2, 3, 4})});
  Tensor pos = tensor({7, 0, 3});
  expect_grad("apply at positions", [&rope, pos](L x) { return rope.apply(x[0], pos); }, {randn64({1, 1, 3, 4})});
  expect_grad("scores of rotated q and k", [&rope](L x) {
    auto [q, k] = rope.forward(x[0], x[1], 2);
    return q.matmul(k.transpose(-1, -2));
  }, {randn64({1, 2, 3, 4}), randn64({1, 2, 3, 4})});
}
