// Learning-rate schedulers: the shared epoch bookkeeping and each schedule's closed form.
#include "tinytorch/optim/lr_scheduler.h"

#include <cmath>

#include "tinytorch/ops/factory.h"

namespace tt::optim {

namespace {
std::vector<double> current_lrs(const Optimizer& optimizer) {
  std::vector<double> lrs;
  for (const auto& g : optimizer.param_groups()) lrs.push_back(g.options().lr());
  return lrs;
}
constexpr double kPi = 3.14159265358979323846;
}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer, const char* name)
    : LRScheduler(optimizer, name, current_lrs(optimizer)) {}

LRScheduler::LRScheduler(Optimizer& optimizer, const char* name, std::vector<double> base_lrs)
    : name_(name), optimizer_(&optimizer), base_lrs_(std::move(base_lrs)) {}

void LRScheduler::initial_step() {
  last_epoch_ = 0;
  apply();
}

void LRScheduler::step() {
  ++last_epoch_;
  try {
    apply();
  } catch (...) {
    --last_epoch_;
    throw;
  }
}

void LRScheduler::apply() {
  auto& groups = optimizer_->param_groups();
  TT_CHECK(groups.size() == base_lrs_.size(), name_, ": the optimizer has ", groups.size(),
           " parameter groups, but the scheduler was made for ", base_lrs_.size(),
           " (make the scheduler after adding every group)");
  std::vector<double> lrs(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) lrs[g] = lr_at(last_epoch_, base_lrs_[g]);
  for (size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(lrs[g]);
  last_lr_ = lrs;
}

nn::StateDict LRScheduler::state_dict() const {
  nn::StateDict s;
  s.insert("last_epoch", scalar_tensor(last_epoch_, kInt64));
  s.insert("base_lrs", tensor(base_lrs_, Shape{int64_t(base_lrs_.size())}, kFloat64));
  return s;
}

void LRScheduler::load_state_dict(const nn::StateDict& state) {
  const Tensor* epoch = state.find("last_epoch");
  const Tensor* base = state.find("base_lrs");
  TT_CHECK(epoch && base && state.size() == 2, name_,
           ": load_state_dict: expected exactly the keys last_epoch and base_lrs, nothing was changed");
  TT_CHECK(epoch->defined() && epoch->dim() == 0 && !epoch->is_floating_point() && epoch->dtype() != kBool,
           name_, ": load_state_dict: last_epoch must be a 0-d integer tensor, nothing was changed");
  TT_CHECK(base->defined() && base->dim() == 1 && base->is_floating_point(), name_,
           ": load_state_dict: base_lrs must be a 1-d float tensor, nothing was changed");
  TT_CHECK(size_t(base->numel()) == base_lrs_.size(), name_, ": load_state_dict: base_lrs has ",
           base->numel(), " entries, but the scheduler has ", base_lrs_.size(), " groups, nothing was changed");
  const int64_t e = epoch->item<int64_t>();
  TT_CHECK(e >= 0, name_, ": load_state_dict: last_epoch must be >= 0, got ", e, ", nothing was changed");
  last_epoch_ = e;
  base_lrs_ = base->to_vector<double>();
  last_lr_.assign(base_lrs_.size(), 0.0);
  for (size_t g = 0; g < base_lrs_.size(); ++g) last_lr_[g] = lr_at(last_epoch_, base_lrs_[g]);
}

// --- StepLR ------------------------------------------------------------------------------------
StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer, "StepLR"), step_size_(step_size), gamma_(gamma) {
  TT_CHECK(step_size >= 1, "StepLR: step_size must be >= 1, got ", step_size);
  initial_step();
}

double StepLR::lr_at(int64_t epoch, double base_lr) const {
  // TT_EXERCISE_BEGIN(07, 5)
  return base_lr * std::pow(gamma_, double(epoch / step_size_));
  // TT_EXERCISE_END
}

// --- CosineAnnealingLR ---------------------------------------------------------------------------
CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer, "CosineAnnealingLR"), T_max_(T_max), eta_min_(eta_min) {
  TT_CHECK(T_max >= 1, "CosineAnnealingLR: T_max must be >= 1, got ", T_max);
  initial_step();
}

double CosineAnnealingLR::lr_at(int64_t epoch, double base_lr) const {
  // TT_EXERCISE_BEGIN(07, 6)
  return eta_min_ + (base_lr - eta_min_) * (1 + std::cos(kPi * double(epoch) / double(T_max_))) / 2;
  // TT_EXERCISE_END
}

// --- LinearWarmup --------------------------------------------------------------------------------
namespace {
std::vector<double> warmup_base_lrs(Optimizer& optimizer, const std::shared_ptr<LRScheduler>& after) {
  if (!after) return current_lrs(optimizer);
  TT_CHECK(&after->optimizer() == &optimizer,
           "LinearWarmup: the scheduler to run after the warmup must belong to the same optimizer");
  return after->base_lrs();  // its constructor already set the lrs of its own epoch 0
}
}  // namespace

LinearWarmup::LinearWarmup(Optimizer& optimizer, int64_t warmup_steps, double start_factor,
                           std::shared_ptr<LRScheduler> after)
    : LRScheduler(optimizer, "LinearWarmup", warmup_base_lrs(optimizer, after)),
      warmup_steps_(warmup_steps),
      start_factor_(start_factor),
      after_(std::move(after)) {
  TT_CHECK(warmup_steps >= 1, "LinearWarmup: warmup_steps must be >= 1, got ", warmup_steps);
  TT_CHECK(start_factor >= 0 && start_factor <= 1, "LinearWarmup: start_factor must be in [0, 1], got ",
           start_factor);
  initial_step();
}

double LinearWarmup::lr_at(int64_t epoch, double base_lr) const {
  // TT_EXERCISE_BEGIN(07, 7)
  if (epoch < warmup_steps_)  // LinearLR's closed form with end_factor 1
    return base_lr * (start_factor_ + (1.0 - start_factor_) * double(epoch) / double(warmup_steps_));
  return after_ ? after_->lr_at(epoch - warmup_steps_, base_lr) : base_lr;
  // TT_EXERCISE_END
}

}  // namespace tt::optim
