// What every ProcessGroup shares: the names of backends and reductions, the argument checks made
// before communicating, and the line an abort prints (process_group.h).
#include "tinytorch/distributed/process_group.h"

#include <cstdio>

#include "tinytorch/core/error.h"

namespace tt::distributed {

std::string to_string(Backend b) { return b == Backend::MPI ? "mpi" : "nccl"; }

std::string to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

void ProcessGroup::check_defined(const Tensor& t, const char* op) {
  TT_CHECK(t.defined(), op, ": the tensor is undefined");
}

void ProcessGroup::check_reduction(const Tensor& t, ReduceOp reduce, const char* op) {
  check_defined(t, op);
  TT_CHECK_DTYPE(reduce != ReduceOp::Avg || is_floating_point(t.dtype()), op, ": avg needs a floating-point "
                 "tensor, got ", t.dtype(), "; use sum and divide");
  if (t.dtype() == kBool)
    TT_CHECK(reduce == ReduceOp::Max || reduce == ReduceOp::Min, op, ": a bool tensor can be reduced with max "
             "(any) or min (all), not ", to_string(reduce));
}

void ProcessGroup::check_stacked(const Tensor& big, const Tensor& small, const char* op, const char* big_name,
                                 const char* small_name) const {
  check_defined(big, op);
  check_defined(small, op);
  Shape want = small.shape();
  want.insert(0, size());
  TT_CHECK_SHAPE(big.shape() == want, op, ": the ", big_name, " must have shape [world size, *", small_name,
                 ".shape] = ", want, ", got ", big.shape());
  TT_CHECK_DTYPE(big.dtype() == small.dtype(), op, ": the ", big_name, " is ", big.dtype(), " but the ", small_name,
                 " is ", small.dtype());
}

void ProcessGroup::check_root(int root, const char* op) const {
  TT_CHECK(root >= 0 && root < size(), op, ": root ", root, " is not a rank of this group of ", size());
}

namespace detail {
void print_abort_line(int rank, const std::string& why) {
  std::fflush(stdout);
  std::fprintf(stderr, "rank %d: %s\n", rank, why.c_str());
  std::fflush(stderr);
}
}  // namespace detail

}  // namespace tt::distributed
