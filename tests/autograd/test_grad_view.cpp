// gradcheck and gradgradcheck of the view ops (ops/view.h) and of the copies (ops/copy.h):
// view reshape flatten transpose permute unsqueeze squeeze expand slice select narrow, contiguous,
// clone, to(dtype); on contiguous and non-contiguous inputs, and chained.
#include "grad_util.h"

using namespace tt;
using namespace tt::testing;

namespace {
using L = const TensorList&;
}  // namespace

TEST_CASE("gradcheck: view and reshape", "[autograd][gradcheck][view]") {
  manual_seed(300);
  expect_grad("view", [](L x) { return x[0].view({3, 4}); }, {randn64({2, 6})});
  expect_grad("view with -1", [](L x) { return view(x[0], {-1, 2}); }, {randn64({2, 3, 2})});
  expect_grad("view to 0-d and back", [](L x) { return x[0].view({}).view({1, 1}); }, {randn64({1})});
  expect_grad("reshape contiguous", [](L x) { return x[0].reshape({4, 3}); }, {randn64({2, 6})});
  expect_grad("reshape transposed (copies)", [](L x) { return x[0].reshape({6}); }, {randn64_t({2, 3})});
  expect_grad("reshape strided", [](L x) { return reshape(x[0], {3, 2}); }, {randn64_strided({2, 3})});
  expect_grad("flatten", [](L x) { return x[0].flatten(); }, {randn64_t({2, 3})});
  expect_grad("flatten 1..2", [](L x) { return x[0].flatten(1, 2); }, {randn64({2, 3, 2, 2})});
}

TEST_CASE("gradcheck: transpose and permute", "[autograd][gradcheck][view]") {
  manual_seed(301);
  expect_grad("transpose", [](L x) { return x[0].transpose(0, 2); }, {randn64({2, 3, 4})});
  expect_grad("t of transposed", [](L x) { return x[0].t(); }, {randn64_t({3, 2})});
  expect_grad("permute", [](L x) { return x[0].permute({2, 0, 1}); }, {randn64({2, 3, 4})});
  expect_grad("permute negative dims, strided", [](L x) { return permute(x[0], {-1, 0, 1}); }, {randn64_strided({2, 2, 3})});
  expect_grad("transpose then elementwise", [](L x) { return x[0].transpose(0, 1) * x[1]; }, {randn64({3, 2}), randn64({2, 3})});
}

TEST_CASE("gradcheck: unsqueeze and squeeze", "[autograd][gradcheck][view]") {
  manual_seed(302);
  expect_grad("unsqueeze 0", [](L x) { return x[0].unsqueeze(0); }, {randn64({3})});
  expect_grad("unsqueeze -1", [](L x) { return unsqueeze(x[0], -1); }, {randn64_t({2, 3})});
  expect_grad("squeeze all", [](L x) { return x[0].squeeze(); }, {randn64({1, 3, 1, 2})});
  expect_grad("squeeze dim", [](L x) { return x[0].squeeze(2); }, {randn64({2, 3, 1})});
  expect_grad("squeeze a dim that is not 1", [](L x) { return x[0].squeeze(0); }, {randn64({2, 3})});
}

TEST_CASE("gradcheck: expand", "[autograd][gradcheck][view]") {
  manual_seed(303);
  expect_grad("expand size-1 dims", [](L x) { return x[0].expand({3, 4}); }, {randn64({3, 1})});
  expect_grad("expand new leading dims", [](L x) { return x[0].expand({2, 3, 4}); }, {randn64({4})});
  expect_grad("expand with -1", [](L x) { return expand(x[0], {-1, 5}); }, {randn64({2, 1})});
  expect_grad("expand a transposed input", [](L x) { return x[0].unsqueeze(0).expand({2, 3, 2}) * x[1]; },
              {randn64_t({3, 2}), randn64({2, 1, 1})});
  expect_grad("expand_as", [](L x) { return x[0].expand_as(x[1]) * x[1]; }, {randn64({1, 3}), randn64({2, 3})});
}

TEST_CASE("gradcheck: slice, select, narrow", "[autograd][gradcheck][view]") {
  manual_seed(304);
  expect_grad("slice", [](L x) { return x[0].slice(1, 1, 3); }, {randn64({3, 4})});
  expect_grad("slice step 2", [](L x) { return x[0].slice(0, 0, kEnd, 2); }, {randn64({5, 2})});
  expect_grad("slice negative start, transposed", [](L x) { return slice(x[0], -1, -2, kEnd); }, {randn64_t({3, 4})});
  expect_grad("select", [](L x) { return x[0].select(1, 2); }, {randn64({3, 4})});
  expect_grad("select negative index, strided", [](L x) { return x[0].select(0, -1); }, {randn64_strided({3, 4})});
  expect_grad("operator index", [](L x) { return x[0][1] * 2.0; }, {randn64({3, 2})});
  expect_grad("narrow", [](L x) { return x[0].narrow(0, 1, 2); }, {randn64({4, 3})});
  expect_grad("narrow transposed", [](L x) { return narrow(x[0], 1, 0, 2); }, {randn64_t({3, 4})});
  expect_grad("two overlapping slices", [](L x) { return x[0].slice(0, 0, 3) * x[0].slice(0, 1, 4); }, {randn64({4})});
  expect_grad("chained views", [](L x) {
    return x[0].transpose(0, 1).slice(0, 1, 3).unsqueeze(0).expand({2, 2, 3}).select(2, 1).reshape({4});
  }, {randn64({3, 4})});
}

TEST_CASE("gradcheck: contiguous, clone, to(dtype)", "[autograd][gradcheck][view]") {
  manual_seed(305);
  expect_grad("contiguous of transposed", [](L x) { return x[0].contiguous(); }, {randn64_t({3, 4})});
  expect_grad("contiguous of contiguous", [](L x) { return contiguous(x[0]) * 2.0; }, {randn64({3})});
  expect_grad("clone", [](L x) { return x[0].clone(); }, {randn64_strided({2, 3})});
  expect_grad("clone then in-place", [](L x) {
    Tensor y = clone(x[0]);
    y.mul_(3.0);
    return y;
  }, {randn64({4})});
  expect_grad("to float64 (no-op)", [](L x) { return x[0].to(kFloat64) * 1.0; }, {randn64({3})});
  // Through float32: finite differences need a bigger step and a looser tolerance.
  expect_grad("to float32 and back", [](L x) { return x[0].to(kFloat32).to(kFloat64); }, {randn64_t({2, 3})},
              true, Tol{1e-3, 1e-3, 1e-2});
  expect_grad("to float32, op, back", [](L x) { return (x[0].to(kFloat32) * 2.0f).to(kFloat64); }, {randn64({3})},
              true, Tol{1e-3, 1e-3, 1e-2});
}

TEST_CASE("to(dtype) sends float32 gradients back as float64", "[autograd][view]") {
  Tensor x = randn64({3});
  x.to(kFloat32).sum().backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == kFloat64);
  CHECK_ALLCLOSE(x.grad(), ones({3}, kFloat64));
}
