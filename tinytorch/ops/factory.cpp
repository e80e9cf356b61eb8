// Factories: allocation, constant fills, ranges, random tensors and tensors from user data.
#include "tinytorch/ops/factory.h"

#include <cmath>
#include <cstring>

#include "tinytorch/backend/backend.h"
#include "tinytorch/core/checked.h"

namespace tt {

namespace detail {
Tensor make_tensor(Storage storage, int64_t offset, const Shape& shape, const Shape& strides, ScalarType dtype,
                   const char* op) {
  int64_t extent = checked_extent(shape, strides, op);
  if (extent > 0) {
    TT_CHECK_SHAPE(storage != nullptr && offset >= 0, op, ": a tensor of sizes ", shape, " needs a storage");
    int64_t item = int64_t(element_size(dtype)), end = checked_add(offset, extent, op);
    TT_CHECK_SHAPE(end <= int64_t(storage->nbytes) / item, op, ": sizes ", shape, ", strides ", strides,
                   " and offset ", offset, " reach element ", end - 1, " of a storage of ",
                   int64_t(storage->nbytes) / item, " elements");
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->offset = offset;
  impl->shape = shape;
  impl->strides = strides;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}
}  // namespace detail

namespace {
Tensor finish(Tensor t, const TensorOptions& opts) {
  if (opts.requires_grad()) {
    TT_CHECK_DTYPE(t.is_floating_point(), "requires_grad: only floating-point tensors can require "
                   "gradients, got dtype ", t.dtype());
    t.requires_grad_(true);
  }
  return t;
}
}  // namespace

Tensor empty(const Shape& shape, const TensorOptions& opts) {
  return detail::empty(shape, opts, "empty");
}

namespace detail {
Tensor empty(const Shape& shape, const TensorOptions& opts, const char* op) {
  size_t nbytes = checked_nbytes(shape, element_size(opts.dtype()), op);
  auto storage = std::make_shared<StorageImpl>(nbytes, opts.device());
  return finish(make_tensor(std::move(storage), 0, shape, contiguous_strides(shape), opts.dtype(), op), opts);
}
}  // namespace detail

namespace {
Tensor filled(const Shape& shape, Scalar value, const TensorOptions& opts, const char* op) {
  check_scalar_fits(value, opts.dtype(), op);
  Tensor t = detail::empty(shape, opts.requires_grad(false), op);
  backend_for(t.device()).fill(t, value);
  return finish(t, opts);
}
}  // namespace

Tensor full(const Shape& shape, Scalar value, const TensorOptions& opts) { return filled(shape, value, opts, "full"); }
Tensor zeros(const Shape& shape, const TensorOptions& opts) { return filled(shape, 0, opts, "zeros"); }
Tensor ones(const Shape& shape, const TensorOptions& opts) { return filled(shape, 1, opts, "ones"); }
Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.options()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.options()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.options()); }
Tensor full_like(const Tensor& t, Scalar v) { return full(t.shape(), v, t.options()); }
Tensor rand_like(const Tensor& t) { return rand(t.shape(), t.options()); }
Tensor randn_like(const Tensor& t) { return randn(t.shape(), t.options()); }

Tensor arange(Scalar start, Scalar end, Scalar step, const TensorOptions& opts) {
  double s = start.to<double>(), e = end.to<double>(), st = step.to<double>();
  TT_CHECK(st != 0.0, "arange: step must be nonzero");
  TT_CHECK(std::isfinite(s) && std::isfinite(e), "arange: start and end must be finite, got ", s, " and ", e);
  TT_CHECK((st > 0 && e >= s) || (st < 0 && e <= s),
           "arange: upper bound and larger bound inconsistent with step sign, got start=", s,
           ", end=", e, ", step=", st);
  int64_t n = checked_count(std::ceil((e - s) / st), "arange");
  // bf16 values are computed in float32 and rounded once (Note [bfloat16]). Filled on the target
  // device (every backend computes start + i * step in double, the same bits): a copy from the host
  // would make the host wait for the GPU, once per forward of a model that numbers its positions.
  const TensorOptions compute = opts.dtype(compute_dtype(opts.dtype())).requires_grad(false);
  Tensor out = detail::empty({n}, compute, "arange");
  backend_for(out.device()).arange(out, s, st);
  return finish(out.to(opts.dtype()), opts);
}
Tensor arange(Scalar end, const TensorOptions& opts) { return arange(0, end, 1, opts); }
Tensor arange(Scalar start, Scalar end, Scalar step) {
  bool all_int = !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  return arange(start, end, step, all_int ? kInt64 : kFloat32);
}
Tensor arange(Scalar end) { return arange(0, end, 1); }

Tensor linspace(double start, double end, int64_t steps, const TensorOptions& opts) {
  TT_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got ", steps);
  const TensorOptions on_cpu = opts.device(kCPU).dtype(compute_dtype(opts.dtype())).requires_grad(false);
  Tensor cpu = detail::empty({steps}, on_cpu, "linspace");
  double step = steps > 1 ? (end - start) / double(steps - 1) : 0.0;
  TT_DISPATCH_NUMERIC(cpu.dtype(), "linspace", [&] {
    scalar_t* p = cpu.data_ptr<scalar_t>();
    // Fill from both ends, as PyTorch does, so the last value is exactly `end`.
    // One step gives `start` (as PyTorch), which the two-ended fill would make `end`.
    int64_t half = steps == 1 ? 1 : steps / 2;
    for (int64_t i = 0; i < steps; ++i)
      p[i] = static_cast<scalar_t>(i < half ? start + step * double(i) : end - step * double(steps - 1 - i));
  });
  return finish(cpu.to(TensorOptions().dtype(opts.dtype()).device(opts.device())), opts);
}

Tensor eye(int64_t n, int64_t m, const TensorOptions& opts) {
  TT_CHECK(n >= 0 && m >= 0, "eye: sizes must be non-negative, got n=", n, ", m=", m);
  Tensor t = detail::empty({n, m}, opts.requires_grad(false), "eye");
  backend_for(t.device()).fill(t, 0);
  int64_t k = n < m ? n : m;
  // The diagonal is a strided view with stride m + 1 (k > 0 means n * m fit, so m + 1 does too).
  Tensor diag = detail::make_tensor(t.storage(), 0, {k}, {k > 0 ? m + 1 : 1}, t.dtype(), "eye");
  backend_for(t.device()).fill(diag, 1);
  return finish(t, opts);
}
Tensor eye(int64_t n, const TensorOptions& opts) { return eye(n, n, opts); }

Tensor rand(const Shape& shape, const TensorOptions& opts, Generator* gen) {
  TT_CHECK_DTYPE(is_floating_point(opts.dtype()), "rand: expected a floating-point dtype, got ", opts.dtype());
  Tensor t = detail::empty(shape, opts.requires_grad(false), "rand");
  Generator& g = gen ? *gen : default_generator();
  uint64_t seed = g.seed(), offset = g.take(uint64_t(t.numel()));
  backend_for(t.device()).uniform(t, 0.0, 1.0, seed, offset);
  return finish(t, opts);
}

Tensor randn(const Shape& shape, const TensorOptions& opts, Generator* gen) {
  TT_CHECK_DTYPE(is_floating_point(opts.dtype()), "randn: expected a floating-point dtype, got ", opts.dtype());
  Tensor t = detail::empty(shape, opts.requires_grad(false), "randn");
  Generator& g = gen ? *gen : default_generator();
  uint64_t seed = g.seed(), offset = g.take(uint64_t(t.numel()));
  backend_for(t.device()).normal(t, 0.0, 1.0, seed, offset);
  return finish(t, opts);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, const TensorOptions& opts, Generator* gen) {
  TT_CHECK(low < high, "randint: expected low < high, got low=", low, ", high=", high);
  TT_CHECK_DTYPE(opts.dtype() != kBool, "randint: bool is not a valid dtype for randint");
  Tensor t = detail::empty(shape, opts, "randint");
  Generator& g = gen ? *gen : default_generator();
  uint64_t seed = g.seed(), offset = g.take(uint64_t(t.numel()));
  backend_for(t.device()).randint(t, low, high, seed, offset);
  return t;
}
Tensor randint(int64_t high, const Shape& shape, const TensorOptions& opts, Generator* gen) {
  return randint(0, high, shape, opts, gen);
}

namespace {
void check_value_count(const Shape& shape, size_t count) {
  int64_t n = checked_numel(shape, "tensor");
  TT_CHECK_SHAPE(uint64_t(n) == count, "tensor: shape ", shape, " needs ", n, " values, got ", count);
}
}  // namespace

template <typename T>
Tensor tensor(const std::vector<T>& values, const Shape& shape, const TensorOptions& opts) {
  check_value_count(shape, values.size());
  Tensor cpu = empty(shape, TensorOptions(dtype_of<T>::value));
  if (!values.empty()) std::copy(values.begin(), values.end(), cpu.data_ptr<T>());
  return finish(cpu.to(opts.dtype()).to(opts.device()), opts);
}
template Tensor tensor(const std::vector<float>&, const Shape&, const TensorOptions&);
template Tensor tensor(const std::vector<double>&, const Shape&, const TensorOptions&);
template Tensor tensor(const std::vector<int64_t>&, const Shape&, const TensorOptions&);

// std::vector<bool> is packed, so bool data goes through a byte vector.
template <>
Tensor tensor(const std::vector<bool>& values, const Shape& shape, const TensorOptions& opts) {
  check_value_count(shape, values.size());
  Tensor cpu = empty(shape, TensorOptions(kBool));
  bool* p = cpu.data_ptr<bool>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return finish(cpu.to(opts.dtype()).to(opts.device()), opts);
}

Tensor scalar_tensor(Scalar value, const TensorOptions& opts) { return full({}, value, opts); }

Tensor tensor(std::initializer_list<double> values, const TensorOptions& opts) {
  return tensor(std::vector<double>(values), {int64_t(values.size())}, opts);
}
Tensor tensor(std::initializer_list<int> values, const TensorOptions& opts) {
  return tensor(std::vector<int64_t>(values.begin(), values.end()), {int64_t(values.size())}, opts);
}
Tensor tensor(std::initializer_list<int64_t> values, const TensorOptions& opts) {
  return tensor(std::vector<int64_t>(values), {int64_t(values.size())}, opts);
}
Tensor tensor(std::initializer_list<bool> values, const TensorOptions& opts) {
  return tensor(std::vector<bool>(values), {int64_t(values.size())}, opts);
}

namespace {
template <typename T, typename Rows>
Tensor tensor_2d(Rows rows, const TensorOptions& opts) {
  std::vector<T> flat;
  int64_t cols = rows.size() ? int64_t(rows.begin()->size()) : 0;
  for (const auto& r : rows) {
    TT_CHECK_SHAPE(int64_t(r.size()) == cols, "tensor: every row must have the same length, got ",
                   cols, " and ", r.size());
    flat.insert(flat.end(), r.begin(), r.end());
  }
  return tensor(flat, {int64_t(rows.size()), cols}, opts);
}
}  // namespace

Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, const TensorOptions& opts) {
  return tensor_2d<double>(rows, opts);
}
Tensor tensor(std::initializer_list<std::initializer_list<int>> rows, const TensorOptions& opts) {
  return tensor_2d<int64_t>(rows, opts);
}

Tensor from_blob(void* data, const Shape& shape, const Shape& strides, const TensorOptions& opts) {
  // The storage covers the elements the layout spans; negative strides are refused there (the
  // in-place overlap check and every kernel assume none), as are sizes that overflow.
  int64_t extent = checked_extent(shape, strides, "from_blob");
  size_t nbytes = checked_nbytes({extent}, element_size(opts.dtype()), "from_blob");
  auto storage = std::make_shared<StorageImpl>(data, nbytes, opts.device(), nullptr);
  return finish(detail::make_tensor(std::move(storage), 0, shape, strides, opts.dtype(), "from_blob"), opts);
}
Tensor from_blob(void* data, const Shape& shape, const TensorOptions& opts) {
  return from_blob(data, shape, contiguous_strides(shape), opts);
}
Tensor from_blob(void* data, const Shape& shape, std::function<void(void*)> deleter, const TensorOptions& opts) {
  size_t nbytes = checked_nbytes(shape, element_size(opts.dtype()), "from_blob");
  auto storage = std::make_shared<StorageImpl>(data, nbytes, opts.device(), std::move(deleter));
  return finish(detail::make_tensor(std::move(storage), 0, shape, contiguous_strides(shape), opts.dtype(), "from_blob"),
                opts);
}

}  // namespace tt
