// CPU elementwise kernels: copy (with dtype conversion, bf16 included), fill, unary, where, arange.
// All run on the StridedLoop engine (loop.h); each inner loop has a contiguous branch the
// compiler vectorizes and a broadcast-scalar branch for `t + 2` and bias-like operands. Binary
// ops are in binary.cpp: 13 ops times every dtype make the largest kernel file, and module 01's
// exercise (binary_loop) recompiles only that one.
#include <cstring>

#include <omp.h>

#include "tinytorch/backend/cpu/cpu_backend.h"
#include "tinytorch/backend/cpu/loop.h"
#include "tinytorch/backend/visit.h"
#include "tinytorch/backend/threads.h"

namespace tt::cpu {

int omp_num_threads_now() { return omp_get_num_threads(); }
int omp_thread_num_now() { return omp_get_thread_num(); }
int parallel_threads() {
  detail::apply_num_threads();
  return omp_get_max_threads();
}

CpuBackend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

namespace {

// out: [*]; in: bcast to out.
template <typename out_t, typename in_t, typename F>
void unary_loop(const Tensor& out, const Tensor& in, F f) {
  const Tensor* ops[2] = {&out, &in};
  StridedLoop<2> loop(ops);
  loop.run([f](char** p, const int64_t* s, int64_t n) {
    auto* o = reinterpret_cast<out_t*>(p[0]);
    auto* a = reinterpret_cast<const in_t*>(p[1]);
    if (s[0] == int64_t(sizeof(out_t)) && s[1] == int64_t(sizeof(in_t))) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<out_t*>(p[0] + i * s[0]) = f(*reinterpret_cast<const in_t*>(p[1] + i * s[1]));
    }
  });
}

}  // namespace

void CpuBackend::copy(const Tensor& out, const Tensor& src) {
  TT_DISPATCH_STORAGE(out.dtype(), "copy", [&] {
    using out_t = scalar_t;
    TT_DISPATCH_STORAGE(src.dtype(), "copy", [&] {
      unary_loop<out_t, scalar_t>(out, src, [](scalar_t v) { return static_cast<out_t>(v); });
    });
  });
}

void CpuBackend::fill(const Tensor& out, Scalar value) {
  TT_DISPATCH_STORAGE(out.dtype(), "fill_", [&] {
    const scalar_t v = value.to<scalar_t>();
    const Tensor* ops[1] = {&out};
    StridedLoop<1> loop(ops);
    loop.run([v](char** p, const int64_t* s, int64_t n) {
      if (s[0] == int64_t(sizeof(scalar_t))) {
        auto* o = reinterpret_cast<scalar_t*>(p[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<scalar_t*>(p[0] + i * s[0]) = v;
      }
    });
  });
}

void CpuBackend::unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  TT_DISPATCH_ALL(in.dtype(), op_name(op), [&] {
    const bool ran = visit_unary<scalar_t>(op, [&](auto f) { unary_loop<scalar_t, scalar_t>(out, in, f); });
    TT_CHECK_DTYPE(ran, op_name(op), ": the kernel takes no ", in.dtype(), " tensors (ops/ converts or refuses them first)");
  });
}

// out, cond, a, b: bcast to out.
void CpuBackend::where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  TT_DISPATCH_STORAGE(out.dtype(), "where", [&] {
    const Tensor* ops[4] = {&out, &cond, &a, &b};
    StridedLoop<4> loop(ops);
    loop.run([](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        bool c = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
        *reinterpret_cast<scalar_t*>(p[0] + i * s[0]) =
            c ? *reinterpret_cast<const scalar_t*>(p[2] + i * s[2])
              : *reinterpret_cast<const scalar_t*>(p[3] + i * s[3]);
      }
    });
  });
}

void CpuBackend::arange(const Tensor& out, double start, double step) {
  TT_DISPATCH_NUMERIC(out.dtype(), "arange", [&] {
    auto* o = out.data_ptr<scalar_t>();
    int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<scalar_t>(start + double(i) * step);
  });
}

void CpuBackend::transfer(const Tensor& out, const Tensor& src) {
  std::memcpy(out.raw_data_ptr(), src.raw_data_ptr(), size_t(src.numel()) * src.element_size());
}

}  // namespace tt::cpu
