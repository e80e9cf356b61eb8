// Learning-rate schedulers (optim/lr_scheduler.h): known values of each schedule, warmup handing
// over to another scheduler, several groups, argument checks and state dicts.
#include <cmath>
#include <memory>
#include <vector>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {

constexpr double kPi = 3.14159265358979323846;

std::vector<double> run(optim::LRScheduler& s, int steps) {
  std::vector<double> lrs = {s.get_last_lr()[0]};
  for (int i = 0; i < steps; ++i) {
    s.step();
    lrs.push_back(s.get_last_lr()[0]);
  }
  return lrs;
}

void check_values(const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("epoch " << i << ": " << actual[i] << " vs " << expected[i]);
    CHECK(actual[i] == Approx(expected[i]).margin(1e-15).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("StepLR decays by gamma every step_size epochs", "[optim][lr_scheduler]") {
  Tensor p = zeros({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  optim::StepLR sched(opt, 3, 0.5);
  CHECK(sched.last_epoch() == 0);
  check_values(run(sched, 7), {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025});
  CHECK(opt.param_groups()[0].options().lr() == sched.get_last_lr()[0]);
  CHECK(sched.last_epoch() == 7);
  REQUIRE_THROWS_WITH(optim::StepLR(opt, 0), Contains("StepLR: step_size must be >= 1, got 0"));
}

TEST_CASE("CosineAnnealingLR follows half a cosine down to eta_min and back", "[optim][lr_scheduler]") {
  Tensor p = zeros({1}).requires_grad_();
  optim::Adam opt({p}, optim::AdamOptions(1.0));
  optim::CosineAnnealingLR sched(opt, 4, 0.2);
  std::vector<double> expected;
  for (int e = 0; e <= 8; ++e) expected.push_back(0.2 + 0.8 * (1 + std::cos(kPi * e / 4)) / 2);
  check_values(run(sched, 8), expected);
  CHECK(expected[2] == Approx(0.6));
  CHECK(expected[4] == Approx(0.2));  // eta_min at T_max
  CHECK(expected[8] == Approx(1.0));  // and back
  REQUIRE_THROWS_WITH(optim::CosineAnnealingLR(opt, 0), Contains("T_max must be >= 1"));
}

TEST_CASE("LinearWarmup ramps up linearly, then hands over", "[optim][lr_scheduler]") {
  Tensor p = zeros({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  SECTION("alone: holds the base lr after the warmup") {
    optim::LinearWarmup sched(opt, 4, 0.2);
    check_values(run(sched, 6), {0.2, 0.4, 0.6, 0.8, 1.0, 1.0, 1.0});
  }
  SECTION("then a cosine, restarted at its own epoch 0") {
    auto cosine = std::make_shared<optim::CosineAnnealingLR>(opt, 4, 0.0);
    optim::LinearWarmup sched(opt, 2, 0.5, cosine);
    CHECK(opt.param_groups()[0].options().lr() == 0.5);  // the warmup's epoch 0 wins
    check_values(run(sched, 6), {0.5, 0.75, 1.0, 0.5 * (1 + std::cos(kPi / 4)), 0.5, 0.5 * (1 + std::cos(3 * kPi / 4)),
                                 0.0});
  }
  SECTION("then a step decay") {
    auto step = std::make_shared<optim::StepLR>(opt, 2, 0.1);
    optim::LinearWarmup sched(opt, 1, 0.0, step);
    check_values(run(sched, 5), {0.0, 1.0, 1.0, 0.1, 0.1, 0.01});
  }
  SECTION("nested: a warmup after a warmup") {
    auto inner = std::make_shared<optim::LinearWarmup>(opt, 2, 0.5);
    optim::LinearWarmup sched(opt, 2, 0.0, inner);
    check_values(run(sched, 5), {0.0, 0.5, 0.5, 0.75, 1.0, 1.0});  // inner's base lr is the real base
  }
  REQUIRE_THROWS_WITH(optim::LinearWarmup(opt, 0), Contains("warmup_steps must be >= 1"));
  REQUIRE_THROWS_WITH(optim::LinearWarmup(opt, 3, 1.5), Contains("start_factor must be in [0, 1], got 1.5"));
  Tensor q = zeros({1}).requires_grad_();
  optim::SGD other({q}, optim::SGDOptions(1.0));
  auto foreign = std::make_shared<optim::StepLR>(other, 2);
  REQUIRE_THROWS_WITH(optim::LinearWarmup(opt, 3, 0.5, foreign), Contains("must belong to the same optimizer"));
}

TEST_CASE("schedulers set every parameter group from its own base lr", "[optim][lr_scheduler]") {
  Tensor a = zeros({1}).requires_grad_(), b = zeros({1}).requires_grad_();
  optim::SGD opt({{{a}}, {{b}, optim::SGDOptions(0.01)}}, optim::SGDOptions(0.1));
  optim::StepLR sched(opt, 1, 0.5);
  sched.step();
  sched.step();
  CHECK(sched.base_lrs() == std::vector<double>{0.1, 0.01});
  CHECK(sched.get_last_lr() == std::vector<double>{0.025, 0.0025});
  CHECK(opt.param_groups()[1].options().lr() == 0.0025);
  // A group added after the scheduler was made is refused, not silently left out.
  opt.add_param_group({{zeros({1}).requires_grad_()}});
  REQUIRE_THROWS_WITH(sched.step(), Contains("the optimizer has 3 parameter groups, but the scheduler was made for 2"));
  CHECK(sched.last_epoch() == 2);
}

TEST_CASE("scheduler state_dict round trip", "[optim][lr_scheduler]") {
  Tensor p = zeros({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  optim::CosineAnnealingLR a(opt, 10);
  for (int i = 0; i < 3; ++i) a.step();
  const nn::StateDict s = a.state_dict();
  CHECK(s["last_epoch"].item<int64_t>() == 3);
  CHECK(s["base_lrs"].to_vector<double>() == std::vector<double>{1.0});

  Tensor q = zeros({1}).requires_grad_();
  optim::SGD opt2({q}, optim::SGDOptions(5.0));
  optim::CosineAnnealingLR b(opt2, 10);
  b.load_state_dict(s);
  CHECK(b.last_epoch() == 3);
  a.step();
  b.step();
  CHECK(a.get_last_lr() == b.get_last_lr());
  CHECK(opt2.param_groups()[0].options().lr() == a.get_last_lr()[0]);

  nn::StateDict bad;
  bad.insert("last_epoch", scalar_tensor(int64_t(1), kInt64));
  bad.insert("base_lrs", tensor({1.0, 2.0}, kFloat64));
  REQUIRE_THROWS_WITH(b.load_state_dict(bad), Contains("base_lrs has 2 entries, but the scheduler has 1 groups"));
  CHECK(b.last_epoch() == 4);
}
