// world_of_one(): the process group of this process alone (distributed.h). Every collective
// checks its arguments as the other backends do, then leaves the data as one rank has it: the sum,
// average, max or min of one value is that value, a broadcast from rank 0 changes nothing, and
// gathering or scattering over one rank is a copy.
#include <cstdio>
#include <cstdlib>

#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/core/error.h"
#include "tinytorch/distributed/distributed.h"

namespace tt::distributed {

namespace {

struct Done final : Work {
  bool is_completed() override { return true; }
  void wait() override {}
};

class WorldOfOne final : public ProcessGroup {
 public:
  WorldOfOne() : ProcessGroup(0, 1) {}
  // It never communicates, so no backend is its own; it reports MPI when the build has MPI (its
  // stand-in role: module 16 runs MPI's lessons on it) and NCCL otherwise.
  Backend backend() const override { return is_available(Backend::MPI) ? Backend::MPI : Backend::NCCL; }

  // tensor [*] -> unchanged.
  std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op) override {
    check_reduction(tensor, op, "allreduce");
    return done();
  }
  // tensor [*] -> unchanged.
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root) override {
    check_defined(tensor, "broadcast");
    check_root(root, "broadcast");
    return done();
  }
  // input [*] -> output [1, *] = input.
  std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) override {
    check_stacked(output, input, "allgather", "output", "input");
    return copy(output, input.reshape(output.shape()));
  }
  // input [1, *] -> output [*] = input[0].
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) override {
    check_stacked(input, output, "reduce_scatter", "input", "output");
    check_reduction(input, op, "reduce_scatter");
    return copy(output, input.reshape(output.shape()));
  }
  std::shared_ptr<Work> barrier() override { return done(); }
  [[noreturn]] void abort(const std::string& why) override {
    detail::print_abort_line(0, why);
    std::_Exit(1);
  }

 private:
  static std::shared_ptr<Work> done() { return std::make_shared<Done>(); }
  static std::shared_ptr<Work> copy(const Tensor& output, const Tensor& input) {
    NoGradGuard no_grad;
    output.detach().copy_(input);
    return done();
  }
};

}  // namespace

std::shared_ptr<ProcessGroup> world_of_one() {
  static const std::shared_ptr<ProcessGroup> group = std::make_shared<WorldOfOne>();
  return group;
}

}  // namespace tt::distributed
