// The losses against PyTorch: values and gradients (loss.json, through the gradient machinery of
// test_ref_grad.h) and the bad inputs both libraries reject, plus tinytorch's documented
// deviations (loss_errors.json, through reference_util.h's forward machinery). The cases are
// tools/fixtures/cases_loss.py, whose run_loss_torch() is the PyTorch twin of loss_op() below.
#include <stdexcept>

#include <tinytorch/ops/loss.h>

#include "reference/test_ref_grad.h"

namespace tt::reference {

namespace {

Reduction parse_reduction(const json& args) {
  const std::string r = args.value("reduction", std::string("mean"));
  if (r == "none") return kNone;
  if (r == "mean") return kMean;
  if (r == "sum") return kSum;
  throw std::runtime_error("fixture: unknown reduction '" + r + "'");
}

// inputs: [input, target, weight?, pos_weight?]; args say which optional ones are there.
std::vector<Tensor> loss_op(const std::string& op, const json& args, std::vector<Input>& in) {
  const Tensor &x = in.at(0).value, &t = in.at(1).value;
  size_t k = 2;
  Tensor weight, pos_weight;
  if (args.value("weight", false)) weight = in.at(k++).value;
  if (args.value("pos_weight", false)) pos_weight = in.at(k++).value;
  const Reduction r = parse_reduction(args);
  const int64_t ignore_index = args.value("ignore_index", kDefaultIgnoreIndex);
  if (op == "mse_loss") return {mse_loss(x, t, r)};
  if (op == "l1_loss") return {l1_loss(x, t, r)};
  if (op == "cross_entropy")
    return {cross_entropy(x, t, weight, r, ignore_index, args.value("label_smoothing", 0.0))};
  if (op == "nll_loss") return {nll_loss(x, t, weight, r, ignore_index)};
  if (op == "binary_cross_entropy") return {binary_cross_entropy(x, t, weight, r)};
  if (op == "binary_cross_entropy_with_logits") return {binary_cross_entropy_with_logits(x, t, weight, pos_weight, r)};
  throw std::logic_error("no loss " + op);
}

}  // namespace

}  // namespace tt::reference

TEST_CASE("reference: loss values and gradients match PyTorch", "[reference][loss]") {
  using namespace tt::reference;
  CHECK(grad::run_family("loss", loss_op) > 150);
}

TEST_CASE("reference: losses reject what PyTorch rejects, and the documented deviations", "[reference][loss]") {
  using namespace tt::reference;
  CHECK(run_family("loss_errors", loss_op) > 30);
}
