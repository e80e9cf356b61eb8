// Learning-rate schedulers: StepLR, CosineAnnealingLR and LinearWarmup (which hands over to
// another scheduler when the warmup ends), as torch.optim.lr_scheduler:
//
//   tt::optim::SGD opt(model.parameters(), tt::optim::SGDOptions(0.1));
//   auto cosine = std::make_shared<tt::optim::CosineAnnealingLR>(opt, 90);
//   tt::optim::LinearWarmup sched(opt, 10, 0.01, cosine);   // 10 warmup steps, then cosine
//   for (int epoch = 0; epoch < 100; ++epoch) { train(...); opt.step(); sched.step(); }
//
// A scheduler takes each parameter group's lr at construction as its base lr, sets the lr of
// epoch 0 at once (as PyTorch's constructors do), and step() moves to the next epoch and writes
// its lr into every group. Each lr is the closed form of PyTorch's schedule (lr_at), so values
// agree with PyTorch to rounding; an lr set by hand is overwritten at the next step(). A
// scheduler refers to its optimizer, which must outlive it.
// Not here: ReduceLROnPlateau, cyclic and one-cycle schedules, ChainedScheduler's products.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tinytorch/nn/module.h"
#include "tinytorch/optim/optimizer.h"

namespace tt::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Moves to the next epoch and sets every group's lr to lr_at(epoch, its base lr).
  void step();
  // The lrs the last step (or the constructor) set, one per parameter group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  // Epochs stepped so far (0 right after construction).
  int64_t last_epoch() const { return last_epoch_; }
  // Each group's lr when the scheduler was made.
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return *optimizer_; }

  // The schedule in closed form: the lr at `epoch` (>= 0) of a group whose base lr is `base_lr`.
  virtual double lr_at(int64_t epoch, double base_lr) const = 0;

  // {"last_epoch": 0-d int64, "base_lrs": float64 [groups]}; loading checks the group count,
  // changes nothing on error, and does not touch the optimizer (its state dict holds the lrs).
  nn::StateDict state_dict() const;
  void load_state_dict(const nn::StateDict& state);

 protected:
  // `name` is used in messages ("StepLR"). Subclasses check their arguments, then call
  // initial_step() at the end of their constructor (a base constructor cannot call lr_at).
  LRScheduler(Optimizer& optimizer, const char* name);
  LRScheduler(Optimizer& optimizer, const char* name, std::vector<double> base_lrs);
  void initial_step();
  const char* name_;

 private:
  void apply();
  Optimizer* optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = 0;
};

// lr = base_lr * gamma^(epoch / step_size) (integer division): decays by gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t epoch, double base_lr) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2: half a cosine from
// base_lr down to eta_min over T_max epochs, then back up again (the curve is periodic).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);
  double lr_at(int64_t epoch, double base_lr) const override;

 private:
  int64_t T_max_;
  double eta_min_;
};

// Linear warmup from start_factor * base_lr to base_lr over warmup_steps epochs:
//   lr = base_lr * (start_factor + (1 - start_factor) * epoch / warmup_steps)   epoch < warmup_steps
// then `after`'s schedule restarted at its epoch 0 (after.lr_at(epoch - warmup_steps)), or
// base_lr when there is none. This is PyTorch's SequentialLR([LinearLR(start_factor, 1.0,
// warmup_steps), after], milestones=[warmup_steps]), or LinearLR alone. `after` must be built on
// the same optimizer beforehand; its schedule is read through lr_at, so do not step it yourself
// (its own last_epoch and get_last_lr stay as they were at construction). 0 <= start_factor <= 1.
class LinearWarmup : public LRScheduler {
 public:
  LinearWarmup(Optimizer& optimizer, int64_t warmup_steps, double start_factor = 1.0 / 3,
               std::shared_ptr<LRScheduler> after = nullptr);
  double lr_at(int64_t epoch, double base_lr) const override;

 private:
  int64_t warmup_steps_;
  double start_factor_;
  std::shared_ptr<LRScheduler> after_;
};

}  // namespace tt::optim
