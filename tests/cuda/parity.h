// The CPU<->CUDA parity check shared by the tests/cuda suite: one function of tensors run forward
// and backward on CPU leaves and on their CUDA copies, outputs and every input gradient compared.
// The CPU is the reference; the CUDA kernels must agree with it to float rounding (float64 to
// ~1e-10 relative, float32 to ~1e-5) and exactly for integer and bool results.
//
//   check_parity("add, broadcast", [](const Tensor& a, const Tensor& b) { return a + b.expand({4, 5}); },
//                rnd({4, 5}), rnd({1, 5}));
//
// Inputs are plain contiguous leaves; the function builds the views it tests (permute, expand,
// slice) itself, on each device, so the CUDA kernels see real strided and broadcast operands and
// the gradients flow back to the leaves. Backward runs from sum(out_i * cotangent_i) over the
// floating outputs, with cotangents drawn once on the CPU from a fixed seed and copied.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "test_util.h"

#ifdef TT_PARITY_SELF_TEST
#undef TT_REQUIRE_CUDA
#define TT_REQUIRE_CUDA() (void)0
#endif

namespace tt::testing {

// The device under test. Built with -DTT_PARITY_SELF_TEST, the suite runs CPU against CPU: a
// check of the tests themselves (shapes, arguments, tolerances) on a machine without a GPU.
inline const Device& gpu() {
#ifdef TT_PARITY_SELF_TEST
  static const Device d(kCPU);
#else
  static const Device d(kCUDA, 0);
#endif
  return d;
}

// Random inputs from one fixed stream, so a failing case is the same on every run.
inline Generator& parity_generator() {
  static Generator g(20240607);
  return g;
}
// normal(0, 1) values of `shape` on the CPU (float32 unless told), a leaf that requires grad.
inline Tensor rnd(const Shape& shape, ScalarType dtype = kFloat32) {
  return randn(shape, TensorOptions().dtype(dtype), &parity_generator()).requires_grad_();
}
// uniform(lo, hi) values, a leaf that requires grad.
inline Tensor rnd_uniform(const Shape& shape, double lo, double hi, ScalarType dtype = kFloat32) {
  Tensor u = rand(shape, TensorOptions().dtype(dtype), &parity_generator());
  return (u * (hi - lo) + lo).detach().requires_grad_();
}
// int64 values in [lo, hi) (no grad).
inline Tensor rnd_int(const Shape& shape, int64_t lo, int64_t hi) {
  return randint(lo, hi, shape, kInt64, &parity_generator());
}

struct Tolerance {
  double rtol = -1, atol = -1;  // negative: the default of the dtype
};
// float64 ~1e-10 relative, float32 ~1e-5 relative / 1e-6 absolute, exact for integers and bool.
inline Tolerance resolve(Tolerance t, ScalarType dtype) {
  Tolerance d;
  if (dtype == kFloat64) d = {1e-10, 1e-12};
  else if (dtype == kFloat32) d = {1e-5, 1e-6};
  else d = {0, 0};
  if (t.rtol >= 0) d.rtol = t.rtol;
  if (t.atol >= 0) d.atol = t.atol;
  return d;
}

// `device` (a CUDA tensor, or a CPU one for a CPU-only result) against the CPU `reference`:
// same shape and dtype, values within the tolerance (bitwise equal values for integers and bool).
inline void check_same(const std::string& what, const Tensor& device, const Tensor& reference, Tolerance tol = {}) {
  INFO(what);
  REQUIRE(device.defined() == reference.defined());
  if (!reference.defined()) return;
  CHECK(device.dtype() == reference.dtype());
  REQUIRE(device.shape() == reference.shape());
  Tensor got = device.detach().cpu();
  Tensor want = reference.detach();
  if (!want.is_floating_point()) {
    INFO("cuda: " << got << "\ncpu:  " << want);
    CHECK(got.to_vector<int64_t>() == want.to_vector<int64_t>());
    return;
  }
  Tolerance t = resolve(tol, want.dtype());
  CHECK_ALLCLOSE(got, want, t.rtol, t.atol);
}

namespace detail {
inline std::vector<Tensor> as_outputs(const Tensor& t) { return {t}; }
inline std::vector<Tensor> as_outputs(const std::vector<Tensor>& v) { return v; }
inline std::vector<Tensor> as_outputs(const std::tuple<Tensor, Tensor>& t) { return {std::get<0>(t), std::get<1>(t)}; }
inline std::vector<Tensor> as_outputs(const std::pair<Tensor, Tensor>& t) { return {t.first, t.second}; }

template <typename Fn, size_t... I>
std::vector<Tensor> call(const Fn& fn, const std::vector<Tensor>& in, std::index_sequence<I...>) {
  return as_outputs(fn(in[I]...));
}

// The leaf on `device` matching the CPU input `t`: a fresh leaf requiring grad when t does.
inline Tensor leaf_on(const Tensor& t, const Device& device) {
  Tensor c = t.detach().to(device, /*copy=*/true);
  return t.requires_grad() ? c.requires_grad_() : c;
}
}  // namespace detail

struct ParityOptions {
  Tolerance forward, backward;
  bool backward_pass = true;  // false: outputs only
};

// Runs fn(inputs...) on CPU leaves and on CUDA leaves; compares the outputs and the gradient of
// every input that requires grad. Returns the CUDA outputs for further checks.
template <typename Fn, typename... Ts>
std::vector<Tensor> check_parity_with(const std::string& what, const ParityOptions& opts, const Fn& fn,
                                      const Ts&... inputs) {
  INFO("parity: " << what);
  std::vector<Tensor> originals{inputs...};
  std::vector<Tensor> cpu_in, dev_in;
  for (const Tensor& t : originals) {
    cpu_in.push_back(detail::leaf_on(t, Device(kCPU)));
    dev_in.push_back(detail::leaf_on(t, gpu()));
  }
  std::vector<Tensor> cpu_out = detail::call(fn, cpu_in, std::index_sequence_for<Ts...>{});
  std::vector<Tensor> dev_out = detail::call(fn, dev_in, std::index_sequence_for<Ts...>{});
  REQUIRE(cpu_out.size() == dev_out.size());
  for (size_t i = 0; i < cpu_out.size(); ++i) {
    if (!cpu_out[i].defined()) continue;
    CHECK(dev_out[i].device() == gpu());
    check_same(what + ": output " + std::to_string(i), dev_out[i], cpu_out[i], opts.forward);
  }
  if (!opts.backward_pass) return dev_out;

  // loss = sum_i sum(out_i * cotangent_i) over the outputs that carry a graph.
  Generator cot_gen(7);
  Tensor cpu_loss, dev_loss;
  for (size_t i = 0; i < cpu_out.size(); ++i) {
    const Tensor& c = cpu_out[i];
    if (!c.defined() || !c.is_floating_point() || !c.requires_grad()) continue;
    Tensor cot = randn(c.shape(), TensorOptions().dtype(c.dtype()), &cot_gen);
    Tensor cl = (c * cot).sum(), dl = (dev_out[i] * cot.to(gpu())).sum();
    cpu_loss = cpu_loss.defined() ? cpu_loss + cl : cl;
    dev_loss = dev_loss.defined() ? dev_loss + dl : dl;
  }
  if (!cpu_loss.defined()) return dev_out;
  cpu_loss.backward();
  dev_loss.backward();
  for (size_t i = 0; i < cpu_in.size(); ++i) {
    if (!cpu_in[i].requires_grad()) continue;
    std::string name = what + ": grad of input " + std::to_string(i);
    Tensor cg = cpu_in[i].grad(), dg = dev_in[i].grad();
    INFO(name);
    REQUIRE(cg.defined() == dg.defined());
    if (!cg.defined()) continue;
    CHECK(dg.device() == gpu());
    check_same(name, dg, cg, opts.backward);
  }
  return dev_out;
}

// check_parity with the default tolerances of each dtype.
template <typename Fn, typename... Ts>
std::vector<Tensor> check_parity(const std::string& what, const Fn& fn, const Ts&... inputs) {
  return check_parity_with(what, ParityOptions(), fn, inputs...);
}

// The same relative and absolute tolerance forward and backward.
inline ParityOptions tol(double rtol, double atol) {
  ParityOptions o;
  o.forward = o.backward = Tolerance{rtol, atol};
  return o;
}

// Sizes every elementwise-style op is run on: 1, odd, a block and a bit, more than one wave.
inline const std::vector<int64_t>& odd_sizes() {
  static const std::vector<int64_t> s{1, 7, 33, 1000, 4097};
  return s;
}

}  // namespace tt::testing
