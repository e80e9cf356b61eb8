// The fused optimizer kernels (ops/optim_step.h -> backend/cpu/optimizer.cpp) against a slow
// twin written with plain tensor ops, on random data: sizes that are not multiples of the vector
// width and sizes above the OpenMP grain, float32 and float64, every flag. Also the op-level
// checks and version bumps.
#include <omp.h>

#include <cmath>
#include <vector>

#include <tinytorch/ops/optim_step.h>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {

const std::vector<int64_t> kSizes = {1, 7, 33, 1000, 40009};  // the last above the OpenMP grain

double tol(ScalarType dtype) { return dtype == kFloat64 ? 1e-12 : 2e-5; }

// The SGD update of backend.h as tensor ops, returning {param, buf}.
std::vector<Tensor> sgd_twin(Tensor p, Tensor g, Tensor buf, const SgdStepArgs& a) {
  Tensor d = a.maximize ? -g : g;
  if (a.weight_decay != 0) d = d + p * a.weight_decay;
  if (a.momentum != 0) {
    buf = a.first_step ? d.clone() : buf * a.momentum + d * (1 - a.dampening);
    d = a.nesterov ? d + buf * a.momentum : buf;
  }
  return {p - d * a.lr, buf};
}

// The Adam/AdamW update of backend.h as tensor ops, returning {param, m, v, vmax}.
std::vector<Tensor> adam_twin(Tensor p, Tensor g, Tensor m, Tensor v, Tensor vmax, const AdamStepArgs& a) {
  if (a.maximize) g = -g;
  if (a.weight_decay != 0 && a.decoupled) p = p * (1 - a.lr * a.weight_decay);
  if (a.weight_decay != 0 && !a.decoupled) g = g + p * a.weight_decay;
  m = m * a.beta1 + g * (1 - a.beta1);
  v = v * a.beta2 + g * g * (1 - a.beta2);
  Tensor v_hat = v;
  if (a.amsgrad) v_hat = vmax = maximum(vmax, v);
  Tensor denom = sqrt(v_hat) / a.bias_correction2_sqrt + a.eps;
  return {p - m / denom * a.step_size, m, v, vmax};
}

}  // namespace

TEST_CASE("fused SGD step matches its tensor-op twin", "[optim][kernels]") {
  manual_seed(1);
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (int64_t n : kSizes) {
      for (int flags = 0; flags < 32; ++flags) {
        SgdStepArgs a;
        a.lr = 0.05;
        a.weight_decay = (flags & 1) ? 0.1 : 0.0;
        a.momentum = (flags & 2) ? 0.9 : 0.0;
        a.first_step = (flags & 4) != 0;
        a.nesterov = (flags & 8) && a.momentum != 0;
        a.dampening = ((flags & 8) && !a.nesterov) ? 0.3 : 0.0;
        a.maximize = (flags & 16) != 0;
        INFO("dtype " << dtype << " n " << n << " flags " << flags);
        Tensor p = randn({n}, dtype), g = randn({n}, dtype);
        Tensor buf = a.momentum != 0 ? randn({n}, dtype) : Tensor();
        std::vector<Tensor> want = sgd_twin(p.clone(), g, buf.defined() ? buf.clone() : buf, a);
        detail::sgd_step_(p, g, buf, a);
        CHECK_ALLCLOSE(p, want[0], tol(dtype), tol(dtype));
        if (buf.defined()) CHECK_ALLCLOSE(buf, want[1], tol(dtype), tol(dtype));
      }
    }
  }
}

TEST_CASE("fused Adam and AdamW steps match their tensor-op twin", "[optim][kernels]") {
  manual_seed(2);
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (int64_t n : kSizes) {
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
        const int step = 3;
        a.step_size = a.lr / (1 - std::pow(a.beta1, step));
        a.bias_correction2_sqrt = std::sqrt(1 - std::pow(a.beta2, step));
        INFO("dtype " << dtype << " n " << n << " flags " << flags);
        Tensor p = randn({n}, dtype), g = randn({n}, dtype);
        Tensor m = randn({n}, dtype) * 0.1, v = rand({n}, dtype) * 0.1;
        Tensor vmax = a.amsgrad ? v + rand({n}, dtype) * 0.05 - 0.025 : Tensor();
        std::vector<Tensor> want = adam_twin(p.clone(), g, m.clone(), v.clone(), a.amsgrad ? vmax.clone() : vmax, a);
        detail::adam_step_(p, g, m, v, vmax, a);
        CHECK_ALLCLOSE(p, want[0], tol(dtype), tol(dtype));
        CHECK_ALLCLOSE(m, want[1], tol(dtype), tol(dtype));
        CHECK_ALLCLOSE(v, want[2], tol(dtype), tol(dtype));
        if (a.amsgrad) CHECK_ALLCLOSE(vmax, want[3], tol(dtype), tol(dtype));
      }
    }
  }
}

TEST_CASE("fused steps are independent of the thread count", "[optim][kernels]") {
  manual_seed(3);
  const int64_t n = 200001;
  Tensor p0 = randn({n}), g = randn({n});
  AdamStepArgs a;
  a.lr = 1e-3;
  a.step_size = 1e-2;
  a.bias_correction2_sqrt = 0.05;
  std::vector<Tensor> results;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    Tensor p = p0.clone(), m = zeros({n}), v = zeros({n});
    detail::adam_step_(p, g, m, v, Tensor(), a);
    results.push_back(p);
  }
  omp_set_num_threads(omp_get_num_procs());
  CHECK(results[0].to_vector<float>() == results[1].to_vector<float>());
  CHECK(results[0].to_vector<float>() == results[2].to_vector<float>());
}

TEST_CASE("fused steps check their tensors and bump versions", "[optim][kernels]") {
  Tensor p = randn({4, 5}), g = randn({4, 5}), m = zeros({4, 5}), v = zeros({4, 5});
  AdamStepArgs a;
  a.step_size = 0.1;
  const uint64_t pv = p.version(), mv = m.version(), vv = v.version(), gv = g.version();
  detail::adam_step_(p, g, m, v, Tensor(), a);
  CHECK(p.version() > pv);
  CHECK(m.version() > mv);
  CHECK(v.version() > vv);
  CHECK(g.version() == gv);

  REQUIRE_THROWS_AS(detail::adam_step_(p, g.to(kFloat64), m, v, Tensor(), a), DtypeError);
  REQUIRE_THROWS_AS(detail::adam_step_(p, randn({5, 4}), m, v, Tensor(), a), ShapeError);
  REQUIRE_THROWS_WITH(detail::adam_step_(p, g, zeros({5, 4}).t(), v, Tensor(), a),
                      Contains("adam_step: exp_avg must be contiguous"));
  REQUIRE_THROWS_WITH(detail::adam_step_(p, g, m, m, Tensor(), a), Contains("exp_avg and exp_avg_sq share memory"));
  a.amsgrad = true;
  REQUIRE_THROWS_WITH(detail::adam_step_(p, g, m, v, Tensor(), a),
                      Contains("the state tensor max_exp_avg_sq is undefined"));
  REQUIRE_THROWS_WITH(detail::adam_step_(zeros({3}, kInt64), zeros({3}, kInt64), m, v, Tensor(), a),
                      Contains("parameters must be float32, float64 or bfloat16, got int64"));
  SgdStepArgs s;
  s.momentum = 0.9;
  REQUIRE_THROWS_WITH(detail::sgd_step_(p, g, Tensor(), s),
                      Contains("sgd_step: the state tensor momentum_buffer is undefined"));
  REQUIRE_THROWS_WITH(detail::sgd_step_(p.expand({2, 4, 5}), g.expand({2, 4, 5}), Tensor(), SgdStepArgs()),
                      Contains("sgd_step: unsupported operation, more than one element"));

  // A gradient that is the parameter itself is read before it is written (through a copy).
  Tensor q = tensor({1.0, 2.0}, kFloat64);
  SgdStepArgs plain;
  plain.lr = 0.5;
  detail::sgd_step_(q, q, Tensor(), plain);
  CHECK(q.to_vector<double>() == std::vector<double>{0.5, 1.0});
  // A strided gradient (a column of a matrix) is read correctly.
  Tensor mat = tensor({{1.0, 10.0}, {2.0, 20.0}}, kFloat64);
  Tensor r = zeros({2}, kFloat64);
  detail::sgd_step_(r, mat.select(1, 1), Tensor(), plain);
  CHECK(r.to_vector<double>() == std::vector<double>{-5.0, -10.0});
}
