// gradcheck and gradgradcheck of the elementwise ops (ops/elementwise.h): every op of the tables
// in core/op_table.h through tests/op_info.h, then binary ops with
// broadcasting, scalar overloads and non-contiguous operands; unary ops on transposed and strided
// inputs; where and masked_fill; in-place variants; PyTorch's tie rule for maximum/minimum.
#include <cmath>
#include <limits>

#include "grad_util.h"
#include "op_info.h"

using namespace tt;
using namespace tt::testing;

namespace {
using L = const TensorList&;
}  // namespace

TEST_CASE("gradcheck: every differentiable binary op of the table, broadcast and strided",
          "[autograd][gradcheck][elementwise]") {
  manual_seed(99);
  for (const BinaryRef& ref : kBinaryRefs) {
    if (is_comparison(ref.op)) continue;  // no gradient
    const BinaryRef r = ref;
    auto f = [r](L x) { return apply(r.op, in_domain(r.a_domain, x[0]), in_domain(r.b_domain, x[1])); };
    expect_grad(std::string(binary_info(r.op).name) + ", broadcast", f, {randn64({2, 3}), randn64({3})});
    expect_grad(std::string(binary_info(r.op).name) + ", strided", f, {randn64_t({3, 2}), randn64_strided({3, 2})});
  }
}

TEST_CASE("gradcheck: add", "[autograd][gradcheck][elementwise]") {
  manual_seed(100);
  expect_grad("same shape", [](L x) { return x[0] + x[1]; }, {randn64({2, 3}), randn64({2, 3})});
  expect_grad("broadcast [2, 3] + [3]", [](L x) { return x[0] + x[1]; }, {randn64({2, 3}), randn64({3})});
  expect_grad("broadcast [3, 1] + [1, 4]", [](L x) { return x[0] + x[1]; }, {randn64({3, 1}), randn64({1, 4})});
  expect_grad("0-d + [2, 3]", [](L x) { return x[0] + x[1]; }, {leaf(scalar_tensor(0.5, kFloat64)), randn64({2, 3})});
  expect_grad("transposed + strided", [](L x) { return x[0] + x[1]; }, {randn64_t({3, 4}), randn64_strided({3, 4})});
  expect_grad("alpha", [](L x) { return add(x[0], x[1], 2.5); }, {randn64({2, 3}), randn64({2, 1})});
  expect_grad("tensor + scalar", [](L x) { return x[0] + 2.0; }, {randn64_t({2, 3})});
  expect_grad("scalar + tensor", [](L x) { return 2.0 + x[0]; }, {randn64({4})});
  expect_grad("one operand constant", [](L x) { return x[0] + x[1]; }, {randn64({2, 3}), randn({3}, kFloat64)});
}

TEST_CASE("gradcheck: sub", "[autograd][gradcheck][elementwise]") {
  manual_seed(101);
  expect_grad("broadcast", [](L x) { return x[0] - x[1]; }, {randn64({2, 1, 3}), randn64({4, 1})});
  expect_grad("alpha", [](L x) { return sub(x[0], x[1], -1.5); }, {randn64({3}), randn64({2, 3})});
  expect_grad("transposed", [](L x) { return x[0] - x[1]; }, {randn64_t({3, 2}), randn64({3, 2})});
  expect_grad("tensor - scalar", [](L x) { return x[0] - 1.0; }, {randn64({3})});
  expect_grad("scalar - tensor", [](L x) { return 1.0 - x[0]; }, {randn64_strided({2, 2})});
}

TEST_CASE("gradcheck: mul", "[autograd][gradcheck][elementwise]") {
  manual_seed(102);
  expect_grad("broadcast", [](L x) { return x[0] * x[1]; }, {randn64({2, 3}), randn64({3})});
  expect_grad("broadcast both", [](L x) { return x[0] * x[1]; }, {randn64({2, 1, 3}), randn64({4, 1})});
  expect_grad("same tensor twice", [](L x) { return x[0] * x[0]; }, {randn64({5})});
  expect_grad("transposed * strided", [](L x) { return x[0] * x[1]; }, {randn64_t({2, 3}), randn64_strided({2, 3})});
  expect_grad("scalar", [](L x) { return x[0] * -3.0; }, {randn64({3})});
  expect_grad("scalar first", [](L x) { return 0.5 * x[0]; }, {randn64({3})});
  expect_grad("0-d", [](L x) { return x[0] * x[1]; }, {leaf(scalar_tensor(-1.5, kFloat64)), randn64_t({2, 2})});
}

TEST_CASE("gradcheck: div", "[autograd][gradcheck][elementwise]") {
  manual_seed(103);
  expect_grad("broadcast", [](L x) { return x[0] / x[1]; }, {randn64({2, 3}), away_from_zero64({3})});
  expect_grad("broadcast denominator bigger", [](L x) { return x[0] / x[1]; }, {randn64({3}), away_from_zero64({2, 3})});
  expect_grad("transposed", [](L x) { return x[0] / x[1]; }, {randn64_t({3, 2}), leaf(away_from_zero64({2, 3}).detach().t())});
  expect_grad("tensor / scalar", [](L x) { return x[0] / 4.0; }, {randn64({3})});
  expect_grad("scalar / tensor", [](L x) { return 2.0 / x[0]; }, {away_from_zero64({2, 2})});
}

TEST_CASE("gradcheck: pow", "[autograd][gradcheck][elementwise]") {
  manual_seed(104);
  expect_grad("tensor exponent, broadcast", [](L x) { return pow(x[0], x[1]); }, {uniform64({2, 3}, 0.5, 2.0), randn64({3})});
  expect_grad("tensor exponent, transposed base", [](L x) { return x[0].pow(x[1]); }, {positive_t({3, 2}), randn64({3, 2})});
  expect_grad("constant base", [](L x) { return pow(x[1], x[0]); }, {randn64({3}), uniform64({3}, 0.5, 2.0).detach()});
  expect_grad("scalar exponent 3, negative base", [](L x) { return x[0].pow(3); }, {randn64_t({2, 3})});
  expect_grad("scalar exponent 2", [](L x) { return pow(x[0], 2.0); }, {randn64({4})});
  expect_grad("scalar exponent 0.5", [](L x) { return x[0].pow(0.5); }, {uniform64({4}, 0.5, 2.0)});
  expect_grad("scalar exponent -1.5", [](L x) { return x[0].pow(-1.5); }, {uniform64({4}, 0.5, 2.0)});
  expect_grad("scalar exponent 1", [](L x) { return x[0].pow(1.0); }, {randn64({3})});
  expect_grad("scalar exponent 0", [](L x) { return x[0].pow(0.0); }, {randn64({3})});
}

TEST_CASE("gradcheck: maximum and minimum", "[autograd][gradcheck][elementwise]") {
  manual_seed(105);
  expect_grad("maximum broadcast", [](L x) { return maximum(x[0], x[1]); }, {randn64({2, 3}), randn64({3})});
  expect_grad("minimum broadcast", [](L x) { return minimum(x[0], x[1]); }, {randn64({3, 1}), randn64({1, 4})});
  expect_grad("maximum transposed", [](L x) { return x[0].maximum(x[1]); }, {randn64_t({3, 2}), randn64_strided({3, 2})});
  expect_grad("minimum transposed", [](L x) { return x[0].minimum(x[1]); }, {randn64_t({3, 2}), randn64({3, 2})});
}

TEST_CASE("maximum and minimum split the gradient of a tie in half, as PyTorch does", "[autograd][elementwise]") {
  Tensor a = leaf(tensor({1.0, 2.0, 3.0}, kFloat64));
  Tensor b = leaf(tensor({1.0, 5.0, 0.0}, kFloat64));
  maximum(a, b).sum().backward();
  CHECK_ALLCLOSE(a.grad(), tensor({0.5, 0.0, 1.0}, kFloat64));
  CHECK_ALLCLOSE(b.grad(), tensor({0.5, 1.0, 0.0}, kFloat64));
  a.set_grad(Tensor());
  b.set_grad(Tensor());
  minimum(a, b).sum().backward();
  CHECK_ALLCLOSE(a.grad(), tensor({0.5, 1.0, 0.0}, kFloat64));
  CHECK_ALLCLOSE(b.grad(), tensor({0.5, 0.0, 1.0}, kFloat64));
}

TEST_CASE("gradcheck: unary ops", "[autograd][gradcheck][elementwise]") {
  manual_seed(106);
  for (const UnaryRef& ref : kUnaryRefs) {  // every row of core/op_table.h
    const UnaryOp op = ref.op;
    const std::string name = unary_info(op).name;
    expect_grad(name, [op](L x) { return apply(op, in_domain(op, x[0])); }, {randn64_t({3, 2})});
    expect_grad(name + ", strided", [op](L x) { return apply(op, in_domain(op, x[0])); }, {randn64_strided({2, 3})});
  }
  expect_grad("unary minus", [](L x) { return -x[0]; }, {randn64_strided({2, 3})});
  expect_grad("relu, 0-d", [](L x) { return relu(x[0]); }, {leaf(scalar_tensor(0.7, kFloat64))});
  expect_grad("exp of expanded", [](L x) { return x[0].expand({3, 4}).exp(); }, {randn64({3, 1})});
  expect_grad("a composite: sigmoid(x) * tanh(x) + log(x*x + 1)",
              [](L x) { return x[0].sigmoid() * x[0].tanh() + (x[0] * x[0] + 1.0).log(); }, {randn64({2, 3})});
}

TEST_CASE("abs and relu have gradient 0 at 0, as PyTorch does", "[autograd][elementwise]") {
  Tensor x = leaf(tensor({-1.0, 0.0, 2.0}, kFloat64));
  x.abs().sum().backward();
  CHECK_ALLCLOSE(x.grad(), tensor({-1.0, 0.0, 1.0}, kFloat64));
  x.set_grad(Tensor());
  x.relu().sum().backward();
  CHECK_ALLCLOSE(x.grad(), tensor({0.0, 0.0, 1.0}, kFloat64));
}

TEST_CASE("pow at base 0 has PyTorch's gradients: 0 for exponent 0, 0 for the exponent where it is >= 0",
          "[autograd][elementwise]") {
  // PyTorch 1.13: x.pow(0) has gradient 0 everywhere (0 * 0^-1 would be NaN at x = 0); the
  // exponent's gradient a^b log(a) is 0 where a == 0 and b >= 0, and -inf where a == 0 and b < 0.
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = leaf(tensor({0.0, 1.0, 2.0, -1.0}, kFloat64));
  x.pow(0.0).sum().backward();
  CHECK_ALLCLOSE(x.grad(), tensor({0.0, 0.0, 0.0, 0.0}, kFloat64));

  Tensor x32 = tensor({0.0f, 3.0f}).requires_grad_();
  x32.pow(0).sum().backward();
  CHECK_ALLCLOSE(x32.grad(), tensor({0.0f, 0.0f}));

  Tensor a = leaf(tensor({0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0}, kFloat64));
  Tensor b = leaf(tensor({0.0, 1.0, 2.0, 0.5, -1.0, -0.5, 0.0}, kFloat64));
  Tensor y = pow(a, b);
  CHECK_ALLCLOSE(y, tensor({1.0, 0.0, 0.0, 0.0, inf, inf, 1.0}, kFloat64));
  y.sum().backward();
  CHECK_ALLCLOSE(a.grad(), tensor({0.0, 1.0, 0.0, inf, -inf, -inf, 0.0}, kFloat64));
  CHECK_ALLCLOSE(b.grad(), tensor({0.0, 0.0, 0.0, 0.0, -inf, -inf, std::log(2.0)}, kFloat64));
}

TEST_CASE("gradcheck: where", "[autograd][gradcheck][elementwise]") {
  manual_seed(107);
  Tensor cond = rand({3}) < 0.5;
  Tensor cond2 = tensor({true, false, true, false, false, true}).view({2, 3});
  expect_grad("broadcast condition and operands",
              [cond](L x) { return where(cond, x[0], x[1]); }, {randn64({2, 3}), randn64({2, 1})});
  expect_grad("transposed operands", [cond2](L x) { return where(cond2, x[0], x[1]); },
              {randn64_t({2, 3}), randn64_strided({2, 3})});
  expect_grad("scalar other", [cond2](L x) { return where(cond2, x[0], 2.0); }, {randn64({2, 3})});
  expect_grad("scalar self", [cond2](L x) { return where(cond2, -1.0, x[0]); }, {randn64({3})});
}

TEST_CASE("gradcheck: masked_fill", "[autograd][gradcheck][elementwise]") {
  manual_seed(108);
  Tensor mask = tensor({true, false, false, true}).view({4, 1});
  expect_grad("broadcast mask", [mask](L x) { return x[0].masked_fill(mask, -2.0); }, {randn64({4, 3})});
  expect_grad("transposed input", [mask](L x) { return masked_fill(x[0], mask, 0.0); }, {randn64_t({4, 3})});
  Tensor full_mask = tensor({true, true, true});
  expect_grad("everything masked", [full_mask](L x) { return x[0].masked_fill(full_mask, 1.0) * x[0]; }, {randn64({3})});
}

TEST_CASE("gradcheck: in-place ops", "[autograd][gradcheck][elementwise]") {
  manual_seed(109);
  expect_grad("add_ sub_ mul_ div_ of tensors", [](L x) {
    Tensor y = x[0] * 1.0;
    y.add_(x[1]);
    y.mul_(x[1]);
    y.sub_(x[0], 2.0);
    y.div_(x[2]);
    return y;
  }, {randn64({2, 3}), randn64({3}), away_from_zero64({2, 1})});
  expect_grad("scalar in-place ops", [](L x) {
    Tensor y = x[0] * 2.0;  // not exp(): exp saves its output, so changing it in place must throw
    y.add_(1.0);
    y.mul_(-2.0);
    y.sub_(0.5);
    y.div_(3.0);
    return y;
  }, {randn64_t({2, 3})});
  expect_grad("neg_ exp_ relu_", [](L x) {
    Tensor y = x[0] + 0.0;
    y.neg_();
    y.exp_();
    y.sub_(1.5);
    y.relu_();
    return y;
  }, {randn64({5})});
  expect_grad("operators += -= *= /=", [](L x) {
    Tensor y = x[0].clone();
    y += x[1];
    y *= x[1];
    y -= 1.0;
    y /= x[1];
    return y;
  }, {randn64({2, 2}), away_from_zero64({2, 2})});
  expect_grad("copy_ with broadcast: the old value gets no gradient", [](L x) {
    Tensor y = x[0] * 1.0;
    y.copy_(x[1]);
    return y * x[0];
  }, {randn64({2, 3}), randn64_t({1, 3})});
  expect_grad("fill_", [](L x) {
    Tensor y = x[0].sin();
    y.fill_(0.5);
    return y * x[0];
  }, {randn64({2, 3})});
  expect_grad("masked_fill_", [](L x) {
    Tensor y = x[0] * 2.0;
    y.masked_fill_(tensor({true, false, true}), 0.25);
    return y * x[0];
  }, {randn64({2, 3})});
}

TEST_CASE("recorded in-place ops on views are refused with a clear error", "[autograd][elementwise]") {
  // Note [in-place ops and autograd] (ops/inplace.h): the base would not see the change, so
  // tinytorch refuses where PyTorch would rewrite the base's history.
  Tensor x = randn64({3, 4});
  Tensor y = x.clone();
  CHECK_THROWS_WITH(y.slice(1, 0, 2).mul_(2.0), Catch::Matchers::Contains("view"));
  CHECK_THROWS_WITH(y.select(0, 1).copy_(randn64({4})), Catch::Matchers::Contains("clone() the view"));
  Tensor c = zeros({3}, kFloat64);
  CHECK_THROWS_AS(c.unsqueeze(0).add_(randn64({1, 3})), Error);
  // Unrecorded, the same writes are fine.
  NoGradGuard ng;
  y.slice(1, 0, 2).mul_(2.0);
}
