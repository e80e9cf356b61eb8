// Dropout as a product with a random scale tensor: keep (u >= p) ? 1 / (1 - p) : 0, u ~ U[0, 1).
// The product's own backward multiplies the gradient by the same scale, so no new node is needed.
#include "tinytorch/ops/dropout.h"

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/factory.h"

namespace tt {

Tensor dropout(const Tensor& x, double p, bool train, Generator* gen) {
  // TT_EXERCISE_BEGIN(05, 3)
  TT_CHECK(p >= 0.0 && p <= 1.0, "dropout: probability must be in [0, 1], got ", p);
  TT_CHECK_DTYPE(x.is_floating_point(), "dropout: expected a floating-point tensor, got ", x.dtype());
  if (!train || p == 0.0) return x;
  Tensor scale;
  {
    NoGradGuard no_grad;
    Tensor u = rand(x.shape(), x.options(), gen);
    if (p == 1.0) {
      scale = zeros_like(u);
    } else {
      Tensor keep = to_dtype(ge(u, scalar_tensor(p, u.options())), x.dtype());
      scale = mul(keep, 1.0 / (1.0 - p));
    }
  }
  return mul(x, scale);
  // TT_EXERCISE_END
}

}  // namespace tt
