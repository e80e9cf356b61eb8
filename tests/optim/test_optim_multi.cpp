// The multi-tensor optimizer steps (ops/optim_step.h: sgd_step_multi_, adam_step_multi_; the CPU
// twin of the one-launch GPU step) against the single-tensor steps that optim/ used per parameter
// before: the same bits over several steps, for every option, float32, float64 and bfloat16, a
// list mixing sizes (an empty parameter, one above the OpenMP grain, a transposed view). Then the
// step counters (incremented in place, where they live), the checks, and the optimizers' state.
#include <cmath>
#include <vector>

#include <tinytorch/ops/optim_step.h>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {

// Every element's bits, as doubles (exact for float32, float64 and bfloat16).
std::vector<double> bits(const Tensor& t) { return t.detach().to(kFloat64).contiguous().to_vector<double>(); }

// Parameters of several sizes; the last a transposed (non-contiguous) view of its own storage.
std::vector<Tensor> make_params(ScalarType dtype) {
  std::vector<Tensor> ps;
  for (int64_t n : {int64_t(1), int64_t(0), int64_t(33), int64_t(1000), int64_t(40009)})
    ps.push_back(randn({n}).to(dtype));
  ps.push_back(randn({7, 5}).to(dtype).t());
  return ps;
}

std::vector<Tensor> clones(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.is_contiguous() ? t.clone() : t.t().clone().t());  // same strides
  return out;
}

}  // namespace

TEST_CASE("multi-tensor SGD step gives the single-tensor step's bits", "[optim][kernels]") {
  manual_seed(11);
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16}) {
    for (int flags = 0; flags < 32; ++flags) {
      SgdStepArgs a;
      a.lr = 0.05;
      a.weight_decay = (flags & 1) ? 0.1 : 0.0;
      a.momentum = (flags & 2) ? 0.9 : 0.0;
      a.nesterov = (flags & 4) && a.momentum != 0;
      a.dampening = ((flags & 8) && !a.nesterov) ? 0.3 : 0.0;
      a.maximize = (flags & 16) != 0;
      INFO("dtype " << dtype << " flags " << flags);
      std::vector<Tensor> single = make_params(dtype), multi = clones(single);
      std::vector<Tensor> buf_s, buf_m;
      for (const Tensor& p : single) {
        buf_s.push_back(a.momentum != 0 ? zeros(p.shape(), p.dtype()) : Tensor());
        buf_m.push_back(a.momentum != 0 ? zeros(p.shape(), p.dtype()) : Tensor());
      }
      for (int step = 0; step < 3; ++step) {
        std::vector<SgdParamState> list;
        for (size_t i = 0; i < single.size(); ++i) {
          Tensor g = randn(single[i].shape()).to(dtype);
          SgdStepArgs s = a;
          s.first_step = step == 0;
          detail::sgd_step_(single[i], g, buf_s[i], s);
          list.push_back({multi[i], g, buf_m[i], step == 0});
        }
        detail::sgd_step_multi_(list, a);
        for (size_t i = 0; i < single.size(); ++i) {
          INFO("step " << step << " parameter " << i);
          REQUIRE(bits(multi[i]) == bits(single[i]));
          if (a.momentum != 0) REQUIRE(bits(buf_m[i]) == bits(buf_s[i]));
        }
      }
      CHECK_FALSE(multi.back().is_contiguous());  // written back into the view's own storage
    }
  }
}

TEST_CASE("multi-tensor Adam and AdamW steps give the single-tensor step's bits", "[optim][kernels]") {
  manual_seed(12);
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16}) {
    for (int flags = 0; flags < 16; ++flags) {
      AdamStepArgs a;
      a.lr = 0.01;
      a.beta1 = 0.85;
      a.beta2 = 0.99;
      a.eps = 1e-6;
      a.weight_decay = (flags & 1) ? 0.1 : 0.0;
      a.decoupled = (flags & 2) != 0;
      a.amsgrad = (flags & 4) != 0;
      a.maximize = (flags & 8) != 0;
      INFO("dtype " << dtype << " flags " << flags);
      std::vector<Tensor> single = make_params(dtype), multi = clones(single);
      std::vector<std::vector<Tensor>> st_s, st_m;  // m, v, vmax per parameter
      std::vector<Tensor> steps;
      for (const Tensor& p : single) {
        auto z = [&] { return zeros(p.shape(), p.dtype()); };
        st_s.push_back({z(), z(), a.amsgrad ? z() : Tensor()});
        st_m.push_back({z(), z(), a.amsgrad ? z() : Tensor()});
        steps.push_back(scalar_tensor(int64_t(0), kInt64));
      }
      for (int step = 1; step <= 4; ++step) {
        AdamStepArgs s = a;
        adam_bias_corrections(s, step);  // what optim/ computed on the host per parameter
        std::vector<AdamParamState> list;
        for (size_t i = 0; i < single.size(); ++i) {
          Tensor g = randn(single[i].shape()).to(dtype);
          detail::adam_step_(single[i], g, st_s[i][0], st_s[i][1], st_s[i][2], s);
          list.push_back({multi[i], g, st_m[i][0], st_m[i][1], st_m[i][2], steps[i]});
        }
        detail::adam_step_multi_(list, a);  // a's own step_size and bias_correction2_sqrt are ignored
        for (size_t i = 0; i < single.size(); ++i) {
          INFO("step " << step << " parameter " << i);
          REQUIRE(bits(multi[i]) == bits(single[i]));
          REQUIRE(bits(st_m[i][0]) == bits(st_s[i][0]));
          REQUIRE(bits(st_m[i][1]) == bits(st_s[i][1]));
          if (a.amsgrad) REQUIRE(bits(st_m[i][2]) == bits(st_s[i][2]));
          REQUIRE(steps[i].item<int64_t>() == step);
        }
      }
    }
  }
}

TEST_CASE("multi-tensor steps check every tensor before writing any", "[optim][kernels]") {
  Tensor p1 = randn({3}), p2 = randn({4}), g1 = randn({3}), g2 = randn({4});
  Tensor m1 = zeros({3}), v1 = zeros({3}), m2 = zeros({4}), v2 = zeros({4});
  Tensor s1 = scalar_tensor(int64_t(0), kInt64), s2 = scalar_tensor(int64_t(0), kInt64);
  const std::vector<double> before = bits(p1);
  AdamStepArgs a;
  a.lr = 0.1;
  // The second parameter's counter is float: nothing is written, the first parameter included.
  REQUIRE_THROWS_WITH(detail::adam_step_multi_({{p1, g1, m1, v1, Tensor(), s1},
                                                {p2, g2, m2, v2, Tensor(), scalar_tensor(0.0, kFloat64)}},
                                               a),
                      Contains("adam_step: the step counter must be a 0-d int64 tensor, got float64"));
  CHECK(bits(p1) == before);
  CHECK(s1.item<int64_t>() == 0);
  REQUIRE_THROWS_WITH(detail::adam_step_multi_({{p1, g1, m1, v1, Tensor(), Tensor()}}, a),
                      Contains("adam_step: the step counter is undefined"));
  REQUIRE_THROWS_WITH(detail::adam_step_multi_({{p1, g2, m1, v1, Tensor(), s1}}, a),
                      Contains("adam_step: the gradient must have the parameter's shape"));
  SgdStepArgs s;
  s.momentum = 0.9;
  REQUIRE_THROWS_WITH(detail::sgd_step_multi_({{p1, g1, zeros({3}), true}, {p2, g2, Tensor(), true}}, s),
                      Contains("sgd_step: the state tensor momentum_buffer is undefined"));
  CHECK(bits(p1) == before);

  // Versions: parameters, state and counters are bumped; gradients are not.
  const uint64_t pv = p1.version(), mv = m1.version(), sv = s1.version(), gv = g1.version();
  detail::adam_step_multi_({{p1, g1, m1, v1, Tensor(), s1}, {p2, g2, m2, v2, Tensor(), s2}}, a);
  CHECK(p1.version() > pv);
  CHECK(m1.version() > mv);
  CHECK(s1.version() > sv);
  CHECK(g1.version() == gv);
  CHECK(s1.item<int64_t>() == 1);
  CHECK(s2.item<int64_t>() == 1);
  CHECK(bits(p1) != before);
  detail::adam_step_multi_({}, a);  // an empty list is a no-op
}

TEST_CASE("optimizers step every parameter through the multi-tensor step", "[optim]") {
  // Adam through the optimizer against the single-tensor step with host bias corrections, 5 steps,
  // two groups (one with amsgrad), a parameter without gradient that keeps no state.
  manual_seed(13);
  Tensor a = randn({5, 3}).requires_grad_(), b = randn({17}).requires_grad_(), c = randn({2}).requires_grad_();
  Tensor ra = a.detach().clone(), rb = b.detach().clone();
  optim::AdamOptions o1(1e-2), o2(3e-2);
  o2.amsgrad(true).weight_decay(0.1);
  optim::Adam opt(std::vector<optim::OptimizerParamGroup>{optim::OptimizerParamGroup({a, c}, o1),
                                                         optim::OptimizerParamGroup({b}, o2)});
  Tensor ma = zeros({5, 3}), va = zeros({5, 3}), mb = zeros({17}), vb = zeros({17}), vmb = zeros({17});
  for (int step = 1; step <= 5; ++step) {
    Tensor ga = randn({5, 3}), gb = randn({17});
    opt.zero_grad();
    a.set_grad(ga.clone());
    b.set_grad(gb.clone());
    opt.step();
    AdamStepArgs x;
    x.lr = 1e-2;
    adam_bias_corrections(x, step);
    detail::adam_step_(ra, ga, ma, va, Tensor(), x);
    AdamStepArgs y;
    y.lr = 3e-2;
    y.amsgrad = true;
    y.weight_decay = 0.1;
    adam_bias_corrections(y, step);
    detail::adam_step_(rb, gb, mb, vb, vmb, y);
    INFO("step " << step);
    REQUIRE(bits(a) == bits(ra));
    REQUIRE(bits(b) == bits(rb));
  }
  CHECK(opt.state(a)["step"].item<int64_t>() == 5);
  CHECK(opt.state(b)["step"].item<int64_t>() == 5);
  CHECK(opt.state(c).empty());
  // The state dict carries the counts; a new optimizer loaded from it continues at step 6.
  nn::StateDict sd = opt.state_dict();
  CHECK(sd["state.0.step"].item<int64_t>() == 5);
  optim::Adam again(std::vector<optim::OptimizerParamGroup>{optim::OptimizerParamGroup({a, c}, o1),
                                                           optim::OptimizerParamGroup({b}, o2)});
  again.load_state_dict(sd);
  CHECK(again.state(a)["step"].item<int64_t>() == 5);
  a.set_grad(ones({5, 3}));
  b.set_grad(Tensor());
  again.step();
  CHECK(again.state(a)["step"].item<int64_t>() == 6);
  CHECK(again.state(b)["step"].item<int64_t>() == 5);
}
