// The losses against PyTorch: values and gradients (loss.json, through the gradient machinery of
// test_ref_grad.h) and the bad inputs both libraries reject, plus tinytorch's documented
// deviations (loss_errors.json, through reference_util.h's forward machinery). The cases are
// tools/fixtures/cases_loss.py; both sides call each loss through its row of the op registry.
#include "reference/runners.h"
#include "reference/test_ref_grad.h"

TEST_CASE("reference: loss values and gradients match PyTorch", "[reference][loss]") {
  using namespace tt::reference;
  CHECK(grad::run_family("loss", grad::foundation_op) > 150);
}

TEST_CASE("reference: losses reject what PyTorch rejects, and the documented deviations", "[reference][loss]") {
  using namespace tt::reference;
  CHECK(run_family("loss_errors", runners::registry) > 30);
}
