// CUDA twin of cpu/linear.cpp: a linear layer's GEMMs with the bias in cuBLASLt's epilogue. The
// forward is one cublasLtMatmul with CUBLASLT_EPILOGUE_BIAS (no broadcast copy, no beta = 1 read
// of the output); the weight gradient's GEMM sums g's columns into the bias gradient as it reads
// them (CUBLASLT_EPILOGUE_BGRADB), so dW and db cost one call. float32 (TF32 when allow_tf32())
// and bfloat16 (float32 accumulation) go through cuBLASLt; float64, empty inner dims, layouts
// cuBLASLt has no algorithm for, and the environment setting TT_CUBLASLT=off take the CPU twin's
// path (bias rows then a beta = 1 GEMM; a GEMM then the row-sum reduction), on the same stream.
// Note [cuBLASLt plans] says what is cached between calls.
#include <cublasLt.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tinytorch/backend/cuda/check.h"
#include "tinytorch/backend/cuda/cuda_backend.h"
#include "tinytorch/backend/cuda/gemm.h"
#include "tinytorch/backend/cuda/libraries.h"
#include "tinytorch/backend/cuda/scratch.cuh"
#include "tinytorch/backend/cuda/stream.h"

namespace tt::cuda {

namespace {

// Note [cuBLASLt plans]: a heuristic query costs tens of microseconds of host time, as much as a
// small GEMM, so its answer (an algorithm and the workspace it needs, or "none") is cached per
// problem: device, dtype, compute type, epilogue, transposes, sizes, leading dims and the
// alignment of every pointer (an algorithm picked for 16-byte aligned operands may not run on a
// view that starts 4 bytes in). The descriptors themselves are plain host structs, made per call.
// The workspace is drawn from the caching allocator for the call (Scratch), never cudaMalloc'd.
constexpr uint64_t kMaxWorkspaceBytes = uint64_t(8) << 20;

bool lt_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("TT_CUBLASLT");
    return e == nullptr || std::strcmp(e, "off") != 0;
  }();
  return on;
}

bool lt_dtype(ScalarType dtype) { return dtype == kFloat32 || dtype == kBFloat16; }

cublasLtHandle_t lt_handle(int device) {
  static std::mutex mu;
  static std::vector<cublasLtHandle_t> handles;  // leaked on purpose, as cublas_handle()'s
  std::lock_guard<std::mutex> lock(mu);
  if (handles.empty()) handles.resize(static_cast<size_t>(device_count()), nullptr);
  TT_CHECK_DEVICE(device >= 0 && size_t(device) < handles.size(), "cublasLt handle: no CUDA device ", device);
  if (!handles[device]) {
    DeviceGuard guard(device);
    TT_CUBLAS_CHECK(lib::cublaslt().cublasLtCreate(&handles[device]));
  }
  return handles[device];
}

// The largest power of two (at most 256) dividing the address: what cuBLASLt may assume of it.
uint32_t alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 1;
  while (a < 256 && v % (2 * a) == 0) a *= 2;
  return a;
}

struct PlanKey {
  int device, dtype, compute, epilogue;
  bool trans_a, trans_b;
  int64_t m, n, k, lda, ldb, ldc;
  uint32_t align_a, align_b, align_c, align_bias;
  auto tie() const {
    return std::tie(device, dtype, compute, epilogue, trans_a, trans_b, m, n, k, lda, ldb, ldc, align_a, align_b,
                    align_c, align_bias);
  }
  bool operator==(const PlanKey& o) const { return tie() == o.tie(); }
};
struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    size_t h = 0;
    auto mix = [&h](int64_t v) { h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    for (int64_t v : {int64_t(k.device), int64_t(k.dtype), int64_t(k.compute), int64_t(k.epilogue),
                      int64_t(k.trans_a), int64_t(k.trans_b), k.m, k.n, k.k, k.lda, k.ldb, k.ldc, int64_t(k.align_a),
                      int64_t(k.align_b), int64_t(k.align_c), int64_t(k.align_bias)})
      mix(v);
    return h;
  }
};
struct Plan {
  bool usable = false;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

std::mutex& plans_mutex() {
  static std::mutex mu;
  return mu;
}
std::unordered_map<PlanKey, Plan, PlanKeyHash>& plans() {
  static auto* cache = new std::unordered_map<PlanKey, Plan, PlanKeyHash>();  // leaked: used up to exit
  return *cache;
}

// The descriptors of one cublasLtMatmul call, destroyed when it is queued.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (pref != nullptr) (void)lib::cublaslt().cublasLtMatmulPreferenceDestroy(pref);
    if (c != nullptr) (void)lib::cublaslt().cublasLtMatrixLayoutDestroy(c);
    if (b != nullptr) (void)lib::cublaslt().cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) (void)lib::cublaslt().cublasLtMatrixLayoutDestroy(a);
    if (op != nullptr) (void)lib::cublaslt().cublasLtMatmulDescDestroy(op);
  }
};

template <typename T>
void set_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& value) {
  TT_CUBLAS_CHECK(lib::cublaslt().cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof value));
}
template <typename T>
void set_pref(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const T& value) {
  TT_CUBLAS_CHECK(lib::cublaslt().cublasLtMatmulPreferenceSetAttribute(p, attr, &value, sizeof value));
}

// Column-major, as cuBLAS: C [m, n] (leading dim ldc) = op(A) op(B), op(A): [m, k], op(B): [k, n],
// with `epilogue` reading or writing `bias` (BIAS: a [m] vector added to every column; BGRADB: the
// [n] sums of op(B) over k). True when queued on the current stream; false, with nothing queued,
// where cuBLASLt has no algorithm for the problem (the caller then takes the CPU twin's path).
bool lt_matmul(int device, ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               const GemmMat& a, const GemmMat& b, void* c, int64_t ldc, cublasLtEpilogue_t epilogue, void* bias) {
  const cudaDataType_t type = dtype == kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute =
      dtype == kFloat32 && allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const PlanKey key{device, int(dtype), int(compute), int(epilogue), trans_a, trans_b, m, n, k, a.ld, b.ld, ldc,
                    alignment(a.p), alignment(b.p), alignment(c), alignment(bias)};
  Plan plan;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(plans_mutex());
    auto it = plans().find(key);
    if (it != plans().end()) {
      plan = it->second;
      known = true;
    }
  }
  if (known && !plan.usable) return false;

  const lib::CublasLt& lt = lib::cublaslt();
  Descriptors d;
  TT_CUBLAS_CHECK(lt.cublasLtMatmulDescCreate(&d.op, compute, CUDA_R_32F));
  set_attr(d.op, CUBLASLT_MATMUL_DESC_TRANSA, int32_t(trans_a ? CUBLAS_OP_T : CUBLAS_OP_N));
  set_attr(d.op, CUBLASLT_MATMUL_DESC_TRANSB, int32_t(trans_b ? CUBLAS_OP_T : CUBLAS_OP_N));
  set_attr(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(epilogue));
  set_attr(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  // Stored matrices: A is [k, m] when transposed, B is [n, k] when transposed.
  TT_CUBLAS_CHECK(
      lt.cublasLtMatrixLayoutCreate(&d.a, type, uint64_t(trans_a ? k : m), uint64_t(trans_a ? m : k), a.ld));
  TT_CUBLAS_CHECK(
      lt.cublasLtMatrixLayoutCreate(&d.b, type, uint64_t(trans_b ? n : k), uint64_t(trans_b ? k : n), b.ld));
  TT_CUBLAS_CHECK(lt.cublasLtMatrixLayoutCreate(&d.c, type, uint64_t(m), uint64_t(n), ldc));
  cublasLtHandle_t handle = lt_handle(device);

  if (!known) {
    TT_CUBLAS_CHECK(lt.cublasLtMatmulPreferenceCreate(&d.pref));
    set_pref(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, kMaxWorkspaceBytes);
    set_pref(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a);
    set_pref(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b);
    set_pref(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c);
    set_pref(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_c);
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    const cublasStatus_t status =
        lt.cublasLtMatmulAlgoGetHeuristic(handle, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &result, &count);
    plan.usable = status == CUBLAS_STATUS_SUCCESS && count > 0 && result.state == CUBLAS_STATUS_SUCCESS;
    if (plan.usable) {
      plan.algo = result.algo;
      plan.workspace = result.workspaceSize;
    }
    std::lock_guard<std::mutex> lock(plans_mutex());
    plans()[key] = plan;
  }
  if (!plan.usable) return false;

  const float alpha = 1.0f, beta = 0.0f;
  Scratch<char> workspace(int64_t(plan.workspace), device);
  const cublasStatus_t status = lt.cublasLtMatmul(handle, d.op, &alpha, a.p, d.a, b.p, d.b, &beta, c, d.c, c, d.c,
                                                  &plan.algo, workspace.data(), plan.workspace, current_stream());
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) {  // nothing was queued: remember, and let the caller fall back
    std::lock_guard<std::mutex> lock(plans_mutex());
    plans()[key].usable = false;
    return false;
  }
  TT_CUBLAS_CHECK(status);
  return true;
}

}  // namespace

// out: [M, N] = a [M, K] @ b [K, N] + bias (bias: out's shape, a row broadcast with strides [0, 1]).
// Row-major out is the column-major out^T = b^T a^T (as gemm_rowmajor): the operands swap, and the
// bias, one value per column of out, runs down out^T's rows, which is where the epilogue adds it.
void CudaBackend::gemm_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  DeviceGuard guard(out.device().index);
  const int64_t M = out.size(0), N = out.size(1), K = a.size(1);
  if (out.numel() == 0) return;
  const Layout lc = layout(M, N, out.stride(0), out.stride(1));
  // A bias not on a 16-byte boundary takes the fallback: cuBLASLt's heuristic may pick an epilogue
  // kernel that loads it in 16-byte vectors and faults with a misaligned address (a sticky error).
  if (lt_enabled() && lt_dtype(out.dtype()) && K > 0 && lc.row_major && bias.stride(1) == 1 &&
      (bias.stride(0) == 0 || M == 1) && alignment(bias.raw_data_ptr()) >= 16) {
    const Layout la = layout(M, K, a.stride(0), a.stride(1)), lb = layout(K, N, b.stride(0), b.stride(1));
    const GemmMat A{a.raw_data_ptr(), la.ld, 0}, B{b.raw_data_ptr(), lb.ld, 0};
    if (lt_matmul(out.device().index, out.dtype(), !lb.row_major, !la.row_major, N, M, K, B, A, out.raw_data_ptr(),
                  lc.ld, CUBLASLT_EPILOGUE_BIAS, bias.raw_data_ptr()))
      return;
  }
  copy(out, bias);  // the CPU twin's path: every row starts as the bias ...
  gemm(out, a, b, 1.0);  // ... and the product accumulates onto it
}

// out: [M, N] = a [M, K] @ b [K, N]; grad_bias: [M, 1] = the sums of a's rows. With out^T = b^T a^T
// as above, a^T is cuBLASLt's op(B) ([K, M]) and BGRADB's sums over k are the sums of a's rows.
// cuBLASLt is asked only in the layout linear's backward gives (a = g^T with g row-major, so op(B)
// is a transpose), the one its bias-gradient kernels are known for.
void CudaBackend::gemm_bias_grad(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& grad_bias) {
  DeviceGuard guard(out.device().index);
  const int64_t M = out.size(0), N = out.size(1), K = a.size(1);
  if (M == 0) return;
  const Layout la = layout(M, K, a.stride(0), a.stride(1)), lb = layout(K, N, b.stride(0), b.stride(1));
  const Layout lc = layout(M, N, out.stride(0), out.stride(1));
  if (lt_enabled() && lt_dtype(out.dtype()) && N > 0 && K > 0 && lc.row_major && !la.row_major &&
      grad_bias.is_contiguous() && alignment(grad_bias.raw_data_ptr()) >= 16) {
    const GemmMat A{a.raw_data_ptr(), la.ld, 0}, B{b.raw_data_ptr(), lb.ld, 0};
    if (lt_matmul(out.device().index, out.dtype(), !lb.row_major, !la.row_major, N, M, K, B, A, out.raw_data_ptr(),
                  lc.ld, CUBLASLT_EPILOGUE_BGRADB, grad_bias.raw_data_ptr()))
      return;
  }
  gemm(out, a, b, 0.0);
  // Through backend_for(), so a bf16 `a` is summed in float32 (Note [bf16 compute]).
  backend_for(out.device()).reduce(ReduceOp::Sum, grad_bias, a);
}

}  // namespace tt::cuda
