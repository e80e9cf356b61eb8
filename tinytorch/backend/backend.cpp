// Op names for the backend enums (checked against the enum counts) and backend_for().
#include "tinytorch/backend/backend.h"

#include <algorithm>

#include "tinytorch/backend/cpu/cpu_backend.h"

namespace tt {

namespace {
constexpr const char* kUnaryNames[] = {"neg", "exp", "log", "sqrt", "rsqrt", "abs",
                                       "sin", "cos", "tanh", "sigmoid", "relu"};
constexpr const char* kBinaryNames[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                        "eq", "ne", "lt", "le", "gt", "ge"};
constexpr const char* kReduceNames[] = {"sum", "max", "min", "argmax", "argmin"};
constexpr const char* kActivationNames[] = {"gelu", "gelu_tanh", "silu", "leaky_relu"};
static_assert(sizeof(kUnaryNames) / sizeof(*kUnaryNames) == size_t(UnaryOp::NumOps), "name every UnaryOp");
static_assert(sizeof(kBinaryNames) / sizeof(*kBinaryNames) == size_t(BinaryOp::NumOps), "name every BinaryOp");
static_assert(sizeof(kReduceNames) / sizeof(*kReduceNames) == size_t(ReduceOp::NumOps), "name every ReduceOp");
static_assert(sizeof(kActivationNames) / sizeof(*kActivationNames) == size_t(ActivationOp::NumOps),
              "name every ActivationOp");
}  // namespace

const char* op_name(UnaryOp op) { return kUnaryNames[size_t(op)]; }
const char* op_name(BinaryOp op) { return kBinaryNames[size_t(op)]; }
const char* op_name(ReduceOp op) { return kReduceNames[size_t(op)]; }
const char* op_name(ActivationOp op) { return kActivationNames[size_t(op)]; }

bool blas_compatible(const Tensor& m) {
  int d = m.dim();
  int64_t rows = m.size(d - 2), cols = m.size(d - 1);
  int64_t sr = m.stride(d - 2), sc = m.stride(d - 1);
  bool plain = (sc == 1 || cols == 1) && (sr >= std::max<int64_t>(1, cols) || rows == 1);
  bool transposed = (sr == 1 || rows == 1) && (sc >= std::max<int64_t>(1, rows) || cols == 1);
  return plain || transposed;
}

#ifdef TINYTORCH_HAS_CUDA
Backend& cuda_backend(int index);  // backend/cuda
#endif

Backend& backend_for(const Device& device) {
  if (device.is_cpu()) return cpu::cpu_backend();
  check_device_available(device, "backend_for");
#ifdef TINYTORCH_HAS_CUDA
  return cuda_backend(device.index);
#else
  throw DeviceError("backend_for: tinytorch was built without CUDA");
#endif
}

}  // namespace tt
