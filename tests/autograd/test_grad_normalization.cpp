// gradcheck and gradgradcheck of the normalization ops (ops/normalization.h): layer_norm and
// rms_norm with respect to x, weight and bias, with and without the affine, over one and several
// normalized dims, on non-contiguous inputs; double backward goes through the composite backward
// (Note [double backward of normalization]).
#include <vector>

#include "grad_util.h"

using namespace tt;
using namespace tt::testing;

namespace {
using L = const TensorList&;
}  // namespace

TEST_CASE("gradcheck: layer_norm", "[autograd][gradcheck][normalization]") {
  manual_seed(1110);
  expect_grad("x only", [](L x) { return layer_norm(x[0], {4}); }, {randn64({3, 4})});
  expect_grad("x, weight, bias", [](L x) { return layer_norm(x[0], {4}, x[1], x[2]); },
              {randn64({3, 4}), randn64({4}), randn64({4})});
  expect_grad("weight only", [](L x) { return layer_norm(x[0], {3}, x[1]); }, {randn64({2, 3}), randn64({3})});
  expect_grad("bias only", [](L x) { return layer_norm(x[0], {3}, Tensor(), x[1]); }, {randn64({2, 3}), randn64({3})});
  expect_grad("two normalized dims of 3-D", [](L x) { return layer_norm(x[0], {2, 3}, x[1], x[2]); },
              {randn64({2, 2, 3}), randn64({2, 3}), randn64({2, 3})});
  expect_grad("transposed input", [](L x) { return layer_norm(x[0], {3}, x[1], x[2]); },
              {randn64_t({4, 3}), randn64({3}), randn64({3})});
  expect_grad("strided input, large eps", [](L x) { return layer_norm(x[0], {3}, x[1], Tensor(), 0.5); },
              {randn64_strided({2, 3}), randn64({3})});
  expect_grad("1-D", [](L x) { return layer_norm(x[0], {5}, x[1], x[2]); }, {randn64({5}), randn64({5}), randn64({5})});
  expect_grad("weight and bias only, x fixed", [](L x) {
    return layer_norm(tensor(std::vector<double>{1.0, -2.0, 0.5, 3.0, 0.0, 1.0}, {2, 3}, kFloat64), {3}, x[0], x[1]);
  }, {randn64({3}), randn64({3})});
}

TEST_CASE("gradcheck: rms_norm", "[autograd][gradcheck][normalization]") {
  manual_seed(1111);
  expect_grad("x only", [](L x) { return rms_norm(x[0], {4}); }, {randn64({3, 4})});
  expect_grad("x and weight", [](L x) { return rms_norm(x[0], {4}, x[1], 1e-5); }, {randn64({3, 4}), randn64({4})});
  expect_grad("two normalized dims", [](L x) { return rms_norm(x[0], {2, 3}, x[1]); },
              {randn64({2, 2, 3}), randn64({2, 3})});
  expect_grad("transposed input", [](L x) { return rms_norm(x[0], {3}, x[1]); }, {randn64_t({4, 3}), randn64({3})});
  expect_grad("strided input, large eps", [](L x) { return rms_norm(x[0], {3}, Tensor(), 0.5); },
              {randn64_strided({2, 3})});
  expect_grad("weight only", [](L x) {
    return rms_norm(tensor(std::vector<double>{1.0, -2.0, 0.5, 3.0, 0.0, 1.0}, {2, 3}, kFloat64), {3}, x[0]);
  }, {randn64({3})});
}

TEST_CASE("gradcheck: normalization inside a composite", "[autograd][gradcheck][normalization]") {
  manual_seed(1112);
  // a pre-norm residual branch: x + rms_norm(layer_norm(x) * w)
  expect_grad("residual", [](L x) { return x[0] + rms_norm(layer_norm(x[0], {3}, x[1], x[2]) * x[1], {3}); },
              {randn64({2, 3}), randn64({3}), randn64({3})});
}
