// nn::LayerNorm and nn::RMSNorm (nn/normalization.h): parameters and their initial values, the
// options (eps, elementwise_affine, bias), forward against the functional op, printing as
// PyTorch prints, training the parameters, bad options.
#include <sstream>

#include "test_util.h"

using namespace tt;
using Catch::Matchers::Contains;

TEST_CASE("nn::LayerNorm: parameters, forward and printing", "[nn][normalization]") {
  nn::LayerNorm ln(nn::LayerNormOptions({4}));
  auto named = ln.named_parameters();
  REQUIRE(named.size() == 2);
  CHECK(named.contains("weight"));
  CHECK(named.contains("bias"));
  CHECK_ALLCLOSE(ln.weight, ones({4}), 0, 0);
  CHECK_ALLCLOSE(ln.bias, zeros({4}), 0, 0);
  CHECK(ln.weight.requires_grad());
  manual_seed(1120);
  Tensor x = randn({2, 3, 4});
  CHECK_ALLCLOSE(ln(x), F::layer_norm(x, {4}), 0, 0);
  CHECK(ln.extra_repr() == "(4,), eps=1e-05, elementwise_affine=True");
  std::ostringstream os;
  os << ln;
  CHECK_THAT(os.str(), Catch::Matchers::StartsWith("LayerNorm((4,), eps=1e-05, elementwise_affine=True)"));

  nn::LayerNorm ln2(nn::LayerNormOptions({3, 4}).eps(1e-3).elementwise_affine(false));
  CHECK(ln2.parameters().empty());
  CHECK_FALSE(ln2.weight.defined());
  CHECK(ln2.extra_repr() == "(3, 4), eps=0.001, elementwise_affine=False");
  CHECK_ALLCLOSE(ln2(x), F::layer_norm(x, {3, 4}, {}, {}, 1e-3), 0, 0);

  nn::LayerNorm ln3(nn::LayerNormOptions({4}).bias(false));
  CHECK(ln3.parameters().size() == 1);
  CHECK_FALSE(ln3.bias.defined());
  CHECK(ln3.options.normalized_shape() == Shape{4});
  CHECK(ln3.options.eps() == 1e-5);
  CHECK(ln3.options.elementwise_affine());
  CHECK_FALSE(ln3.options.bias());
}

TEST_CASE("nn::RMSNorm: parameters, forward and printing", "[nn][normalization]") {
  nn::RMSNorm rn(nn::RMSNormOptions({4}));
  REQUIRE(rn.parameters().size() == 1);
  CHECK_ALLCLOSE(rn.weight, ones({4}), 0, 0);
  manual_seed(1121);
  Tensor x = randn({5, 4});
  CHECK_ALLCLOSE(rn(x), F::rms_norm(x, {4}), 0, 0);
  CHECK(rn.extra_repr() == "(4,), eps=None, elementwise_affine=True");
  nn::RMSNorm rn2(nn::RMSNormOptions({4}).eps(1e-6).elementwise_affine(false));
  CHECK(rn2.parameters().empty());
  CHECK(rn2.extra_repr() == "(4,), eps=1e-06, elementwise_affine=False");
  CHECK_ALLCLOSE(rn2(x), F::rms_norm(x, {4}, {}, 1e-6), 0, 0);
  std::ostringstream os;
  os << rn2;
  CHECK_THAT(os.str(), Catch::Matchers::StartsWith("RMSNorm((4,), eps=1e-06, elementwise_affine=False)"));
}

TEST_CASE("nn::LayerNorm and nn::RMSNorm: parameters get gradients and train", "[nn][normalization]") {
  manual_seed(1122);
  nn::LayerNorm ln(nn::LayerNormOptions({3}));
  nn::RMSNorm rn(nn::RMSNormOptions({3}));
  Tensor x = randn({4, 3});
  Tensor target = randn({4, 3});
  Tensor loss = ((rn(ln(x)) - target) * (rn(ln(x)) - target)).mean();
  loss.backward();
  for (const Tensor& p : {ln.weight, ln.bias, rn.weight}) {
    REQUIRE(p.grad().defined());
    CHECK(p.grad().shape() == Shape{3});
  }
  ln.zero_grad();
  ln.reset_parameters();
  CHECK_ALLCLOSE(ln.weight, ones({3}), 0, 0);
}

TEST_CASE("nn::LayerNorm and nn::RMSNorm: bad options and inputs", "[nn][normalization]") {
  CHECK_THROWS_WITH(nn::LayerNorm(nn::LayerNormOptions(Shape{})), Contains("LayerNorm") && Contains("at least one"));
  CHECK_THROWS_WITH(nn::LayerNorm(nn::LayerNormOptions({4}).eps(-1)), Contains("eps"));
  CHECK_THROWS_WITH(nn::RMSNorm(nn::RMSNormOptions({-2})), Contains("RMSNorm") && Contains("negative"));
  CHECK_THROWS_WITH(nn::RMSNorm(nn::RMSNormOptions({2}).eps(-1.0)), Contains("eps"));
  nn::LayerNorm ln(nn::LayerNormOptions({4}));
  CHECK_THROWS_AS(ln(randn({2, 3})), ShapeError);
  CHECK_THROWS_WITH(ln(randn({2, 3})), Contains("[4]") && Contains("[2, 3]"));
}
