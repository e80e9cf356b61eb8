// Loss layers and F:: loss functions: option checks at construction, the class weights as
// buffers, then the ops of ops/loss.h with the options spelled out.
#include "tinytorch/nn/loss.h"

#include <sstream>

namespace tt::nn {

namespace {

// "reduction=sum, weight=[10]": the options that differ from the defaults, PyTorch-style.
class Repr {
 public:
  template <typename T>
  Repr& add(const char* name, const T& value) {
    os_ << (first_ ? "" : ", ") << name << "=" << value;
    first_ = false;
    return *this;
  }
  Repr& reduction(Reduction r) { return r == kMean ? *this : add("reduction", r); }
  Repr& tensor(const char* name, const Tensor& t) { return t.defined() ? add(name, t.shape()) : *this; }
  std::string str() const { return os_.str(); }

 private:
  std::ostringstream os_;
  bool first_ = true;
};

void check_label_smoothing(double eps, const char* op) {
  TT_CHECK(eps >= 0.0 && eps <= 1.0, op, ": label_smoothing must be in [0, 1], got ", eps);
}

// A weight given in the options becomes the module's buffer `name` (nothing is registered without one).
Tensor register_weight(Module& m, const char* name, const Tensor& w) {
  // A handle of its own on the caller's storage: Module::to() then swaps the buffer's data without
  // changing the caller's tensor.
  return w.defined() ? m.register_buffer(name, w.detach()) : Tensor();
}

}  // namespace

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) const {
  return mse_loss(input, target, options.reduction());
}
std::string MSELoss::extra_repr() const { return Repr().reduction(options.reduction()).str(); }

Tensor L1Loss::forward(const Tensor& input, const Tensor& target) const {
  return l1_loss(input, target, options.reduction());
}
std::string L1Loss::extra_repr() const { return Repr().reduction(options.reduction()).str(); }

CrossEntropyLoss::CrossEntropyLoss(const CrossEntropyLossOptions& options) : options(options) {
  check_label_smoothing(options.label_smoothing(), "nn::CrossEntropyLoss");
  weight = register_weight(*this, "weight", options.weight());
}
Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) const {
  return cross_entropy(input, target, weight, options.reduction(), options.ignore_index(), options.label_smoothing());
}
std::string CrossEntropyLoss::extra_repr() const {
  Repr r;
  r.reduction(options.reduction());
  if (options.ignore_index() != kDefaultIgnoreIndex) r.add("ignore_index", options.ignore_index());
  if (options.label_smoothing() != 0.0) r.add("label_smoothing", options.label_smoothing());
  return r.tensor("weight", weight).str();
}

NLLLoss::NLLLoss(const NLLLossOptions& options) : options(options) {
  weight = register_weight(*this, "weight", options.weight());
}
Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) const {
  return nll_loss(input, target, weight, options.reduction(), options.ignore_index());
}
std::string NLLLoss::extra_repr() const {
  Repr r;
  r.reduction(options.reduction());
  if (options.ignore_index() != kDefaultIgnoreIndex) r.add("ignore_index", options.ignore_index());
  return r.tensor("weight", weight).str();
}

BCELoss::BCELoss(const BCELossOptions& options) : options(options) {
  weight = register_weight(*this, "weight", options.weight());
}
Tensor BCELoss::forward(const Tensor& input, const Tensor& target) const {
  return binary_cross_entropy(input, target, weight, options.reduction());
}
std::string BCELoss::extra_repr() const {
  return Repr().reduction(options.reduction()).tensor("weight", weight).str();
}

BCEWithLogitsLoss::BCEWithLogitsLoss(const BCEWithLogitsLossOptions& options) : options(options) {
  weight = register_weight(*this, "weight", options.weight());
  pos_weight = register_weight(*this, "pos_weight", options.pos_weight());
}
Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) const {
  return binary_cross_entropy_with_logits(input, target, weight, pos_weight, options.reduction());
}
std::string BCEWithLogitsLoss::extra_repr() const {
  return Repr().reduction(options.reduction()).tensor("weight", weight).tensor("pos_weight", pos_weight).str();
}

namespace functional {

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options) {
  return tt::mse_loss(input, target, options.reduction());
}
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options) {
  return tt::l1_loss(input, target, options.reduction());
}
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options) {
  return tt::cross_entropy(input, target, options.weight(), options.reduction(), options.ignore_index(),
                           options.label_smoothing());
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options) {
  return tt::nll_loss(input, target, options.weight(), options.reduction(), options.ignore_index());
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
  return tt::binary_cross_entropy(input, target, options.weight(), options.reduction());
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
  return tt::binary_cross_entropy_with_logits(input, target, options.weight(), options.pos_weight(),
                                              options.reduction());
}

}  // namespace functional

}  // namespace tt::nn
