// The hostile sweep through every public factory (Note [hostile sweep] in hostile.h): every shape
// of one or two hostile sizes, every dtype, on the CPU and, where one is present, on a CUDA device.
#include "hostile.h"

#include <array>
#include <cfloat>
#include <cmath>

using namespace tt;
using namespace tt::hostile;

// A legal allocation no machine can serve must come back as a tt::Error, and AddressSanitizer must
// let it: by default it aborts on an allocation that large instead of returning null. ASAN_OPTIONS
// from the environment still overrides this (it is applied after these defaults).
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace {

const std::vector<ScalarType> kDtypes = {kFloat32, kFloat64, kInt64, kBool};

struct ShapeFactory {
  const char* name;
  bool (*accepts)(ScalarType);
  std::function<Tensor(const Shape&, const TensorOptions&)> make;
};
bool any_dtype(ScalarType) { return true; }
bool floating(ScalarType t) { return is_floating_point(t); }
bool not_bool(ScalarType t) { return t != kBool; }

const std::vector<ShapeFactory>& shape_factories() {
  static const std::vector<ShapeFactory> factories = {
      {"empty", any_dtype, [](const Shape& s, const TensorOptions& o) { return empty(s, o); }},
      {"zeros", any_dtype, [](const Shape& s, const TensorOptions& o) { return zeros(s, o); }},
      {"ones", any_dtype, [](const Shape& s, const TensorOptions& o) { return ones(s, o); }},
      {"full", any_dtype, [](const Shape& s, const TensorOptions& o) { return full(s, 7, o); }},
      {"rand", floating, [](const Shape& s, const TensorOptions& o) { return rand(s, o); }},
      {"randn", floating, [](const Shape& s, const TensorOptions& o) { return randn(s, o); }},
      {"randint", not_bool, [](const Shape& s, const TensorOptions& o) { return randint(-3, 10, s, o); }},
  };
  return factories;
}

void sweep_shape_factories(Device device) {
  int ran = 0;
  for (const ShapeFactory& f : shape_factories())
    for (ScalarType dtype : kDtypes)
      for (const Shape& shape : hostile_shapes()) {
        Expect e = f.accepts(dtype) ? allocation(shape, int64_t(element_size(dtype))) : Expect::Error;
        std::ostringstream what;
        what << f.name << "(" << shape << ", " << dtype << ", " << device << ")";
        ran += run_case<Tensor>(what.str(), e, [&] { return f.make(shape, TensorOptions(dtype).device(device)); },
                                [&](const Tensor& t) {
                                  has_shape(shape)(t);
                                  CHECK(t.dtype() == dtype);
                                });
      }
  CHECK(ran > 0);
}

void sweep_ranges(Device device) {
  TensorOptions f32 = TensorOptions(kFloat32).device(device);
  for (int64_t n : kSizes) {
    // arange(n): int64 values; n < 0 is an empty range in the wrong direction, an error.
    Expect e = n < 0 ? Expect::Error : allocation({n}, 8);
    run_case<Tensor>("arange(" + std::to_string(n) + ")", e, [&] { return arange(0, n, 1, TensorOptions(kInt64).device(device)); },
                     has_shape({n}));
    run_case<Tensor>("linspace(0, 1, " + std::to_string(n) + ")", n < 0 ? Expect::Error : allocation({n}, 4),
                     [&] { return linspace(0, 1, n, f32); }, has_shape({n}));
    run_case<Tensor>("eye(" + std::to_string(n) + ")", allocation({n, n}, 4), [&] { return eye(n, f32); },
                     has_shape({n, n}));
    for (int64_t m : kSizes)
      run_case<Tensor>("eye(" + std::to_string(n) + ", " + std::to_string(m) + ")", allocation({n, m}, 4),
                       [&] { return eye(n, m, f32); }, has_shape({n, m}));
  }
  // Ranges whose length is not a count at all.
  const double inf = INFINITY, nan = NAN;
  const std::vector<std::array<double, 3>> bad = {
      {0, 1e30, 1}, {0, 1, 1e-300}, {-1e300, 1e300, 1e-300}, {0, inf, 1}, {0, nan, 1}, {nan, 1, 1}, {0, 1, nan},
      {0, 10, 0},   {0, 10, -1},    {0, -1e19, -1}};
  for (const auto& r : bad)
    run_case<Tensor>("arange(" + std::to_string(r[0]) + ", " + std::to_string(r[1]) + ", " + std::to_string(r[2]) + ")",
                     Expect::Error, [&] { return arange(r[0], r[1], r[2], f32); });
}

// full(value) into each dtype: PyTorch's rule, checked before the conversion (which would be
// undefined behaviour for an int64 out of range).
void sweep_fill_values(Device device) {
  const double two63 = 9223372036854775808.0;
  const std::vector<double> values = {0.5, -0.5, 1e20, -1e20, two63, -two63, 9.2e18, 1e39, -1e39, INFINITY, -INFINITY,
                                      NAN, DBL_MAX, -DBL_MAX, DBL_MIN};
  for (ScalarType dtype : kDtypes)
    for (double v : values) {
      bool ok = true;
      if (dtype == kInt64) ok = std::isfinite(v) && v >= -two63 && v < two63;
      if (dtype == kFloat32) ok = !std::isfinite(v) || std::fabs(v) <= FLT_MAX;
      std::ostringstream what;
      what << "full({2}, " << v << ", " << dtype << ")";
      TensorOptions o = TensorOptions(dtype).device(device);
      run_case<Tensor>(what.str(), ok ? Expect::Ok : Expect::Error, [&] { return full({2}, v, o); },
                       [&](const Tensor& t) {
                         double got = t.to(kCPU).to(kFloat64).to_vector<double>()[0];
                         double want = dtype == kInt64   ? std::trunc(v)
                                       : dtype == kBool  ? double(v != 0)
                                       : dtype == kFloat32 ? double(float(v))
                                                           : v;
                         CHECK((got == want || (std::isnan(got) && std::isnan(want))));
                       });
      Tensor t = zeros({2}, o);
      run_case<Tensor>("fill_ " + what.str(), ok ? Expect::Ok : Expect::Error, [&] { return t.fill_(v); });
      run_case<Tensor>("masked_fill " + what.str(), ok ? Expect::Ok : Expect::Error,
                       [&] { return zeros({2}, o).masked_fill(ones({2}, TensorOptions(kBool).device(device)), v); });
    }
}

}  // namespace

TEST_CASE("hostile: every shape factory, every dtype, every hostile shape", "[hostile]") {
  sweep_shape_factories(kCPU);
}

TEST_CASE("hostile: ranges (arange, linspace, eye) of hostile lengths", "[hostile]") { sweep_ranges(kCPU); }

TEST_CASE("hostile: full, fill_ and masked_fill of values a dtype cannot hold", "[hostile]") {
  sweep_fill_values(kCPU);
}

TEST_CASE("hostile: from_blob with hostile sizes and strides", "[hostile]") {
  std::vector<float> buffer(64, 1.0f);
  const std::vector<int64_t> strides = {0, 1, 2, -1, kMin, int64_t(1) << 62, kMax};
  for (const Shape& shape : hostile_shapes()) {
    if (shape.size() != 2) continue;
    for (int64_t s0 : strides)
      for (int64_t s1 : strides) {
        // Valid when every size and stride is >= 0 and the elements spanned, in bytes, fit in int64.
        i128 n = count(shape);
        bool ok = n >= 0 && n <= kMax && s0 >= 0 && s1 >= 0;
        if (ok && n > 0) {
          i128 extent = 1 + i128(shape[0] - 1) * s0 + i128(shape[1] - 1) * s1;
          ok = extent <= kMax / 4;
        }
        std::ostringstream what;
        what << "from_blob(" << shape << ", strides [" << s0 << ", " << s1 << "])";
        run_case<Tensor>(what.str(), ok ? Expect::Ok : Expect::Error,
                         [&] { return from_blob(buffer.data(), shape, {s0, s1}, kFloat32); }, has_shape(shape));
      }
    run_case<Tensor>("from_blob(" + describe(shape) + ") contiguous", allocation(shape, 4) == Expect::Error ? Expect::Error : Expect::Ok,
                     [&] { return from_blob(buffer.data(), shape, kFloat32); }, has_shape(shape));
  }
}

TEST_CASE("hostile: tensor(values, shape) whose element count only matches after wrapping", "[hostile]") {
  const int64_t two32 = int64_t(1) << 32;
  for (const Shape& shape : std::vector<Shape>{{two32, two32}, {-2, -3}, {-1, -6}, {kMin, 0}, {two32, two32, 0}}) {
    i128 n = count(shape);
    Expect e = n == 0 ? Expect::Ok : Expect::Error;
    run_case<Tensor>("tensor({}, " + describe(shape) + ")", e,
                     [&] { return tensor(std::vector<float>{}, shape); }, has_shape(shape));
    run_case<Tensor>("tensor(6 values, " + describe(shape) + ")", Expect::Error,
                     [&] { return tensor(std::vector<float>(6, 1.0f), shape); });
  }
}

TEST_CASE("hostile: the factory sweep on a CUDA device", "[hostile][cuda]") {
  TT_REQUIRE_CUDA();
  sweep_shape_factories(Device(kCUDA, 0));
  sweep_ranges(Device(kCUDA, 0));
  sweep_fill_values(Device(kCUDA, 0));
}
