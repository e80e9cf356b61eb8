// Raw OpenBLAS: the ceiling for GEMM workloads. cblas_sgemm straight into a buffer allocated
// once, so no framework overhead and no allocation at all. Only GEMM-shaped workloads have an
// openblas factory.
//
// It also reports which OpenBLAS this process really uses (see Note [threads] in main.cpp).
#include <cblas.h>
#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "harness.h"

namespace ttbench {

namespace {

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::shared_ptr<float>;

Buffer filled(int64_t n, uint64_t seed) {
  size_t bytes = (size_t(n) * sizeof(float) + 63) / 64 * 64;
  Buffer b(static_cast<float*>(std::aligned_alloc(64, bytes)), FreeDeleter());
  fill_uniform(b.get(), n, seed);
  return b;
}

// C = A @ B, row-major [n, n].
Factory sgemm(int64_t n) {
  return [n] {
    Buffer a = filled(n * n, 1), b = filled(n * n, 2), c = filled(n * n, 3);
    auto run = [=] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f, a.get(),
                  int(n), b.get(), int(n), 0.0f, c.get(), int(n));
      do_not_optimize(c.get());
    };
    Prepared p;
    p.run = run;
    p.check = [=] {
      run();
      return checksum(c.get(), n * n);
    };
    return p;
  };
}

// linear_fb as three GEMMs: y = x Wt, dx = dy W, dW = dyT x (x [R, I], W [O, I], dy [R, O]).
// The bias costs nothing here; check() adds its exact contribution to the checksums instead
// (sum(y) gains R * sum(b); db = column sums of dy, all positive, so |db| sums to sum(dy)).
Factory linear_fb() {
  return [] {
    const int R = 8192, I = 512, O = 2048;
    Buffer x = filled(int64_t(R) * I, 1), w = filled(int64_t(O) * I, 2), b = filled(O, 3),
           dy = filled(int64_t(R) * O, 4);
    Buffer y = filled(int64_t(R) * O, 5), dx = filled(int64_t(R) * I, 6), dw = filled(int64_t(O) * I, 7);
    auto run = [=] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, O, I, 1.0f, x.get(), I, w.get(), I, 0.0f, y.get(), O);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, I, O, 1.0f, dy.get(), O, w.get(), I, 0.0f, dx.get(), I);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, O, I, R, 1.0f, dy.get(), O, x.get(), I, 0.0f, dw.get(), I);
      do_not_optimize(y.get());
      do_not_optimize(dx.get());
      do_not_optimize(dw.get());
    };
    Prepared p;
    p.run = run;
    p.check = [=] {
      run();
      double bias_in_y = double(R) * checksum(b.get(), O);
      return checksum(y.get(), int64_t(R) * O) + bias_in_y + abs_checksum(dx.get(), int64_t(R) * I) +
             abs_checksum(dw.get(), int64_t(O) * I) + checksum(dy.get(), int64_t(R) * O);
    };
    return p;
  };
}

// The shared object that defines `symbol` for a global lookup: the one every caller binds to.
std::string provider_of(const char* symbol) {
  void* addr = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info;
  if (addr && dladdr(addr, &info) && info.dli_fname) return info.dli_fname;
  return "(not found)";
}

}  // namespace

Impl make_openblas_impl() {
  Impl impl;
  impl.name = "openblas";
  impl.set_threads = [](int n) { openblas_set_num_threads(n); };
  impl.describe = [] {
    const int parallel = openblas_get_parallel();  // 0 sequential, 1 pthreads, 2 OpenMP
    return std::string("openblas: openblas_get_num_threads()=") +
           std::to_string(openblas_get_num_threads()) + " threading=" +
           (parallel == 0 ? "sequential" : parallel == 1 ? "pthreads" : "openmp") + " config='" +
           openblas_get_config() + "' cblas_sgemm from " + provider_of("cblas_sgemm") +
           ", sgemm_ (what LibTorch calls) from " + provider_of("sgemm_");
  };
  impl.factories["matmul_1024"] = sgemm(1024);
  impl.factories["matmul_4096"] = sgemm(4096);
  impl.factories["linear_fb"] = linear_fb();
  return impl;
}

}  // namespace ttbench
