// nn::DistributedDataParallel: the same model on every rank, each on its own share of the batch,
// gradients averaged across ranks during backward, so that every rank takes the same optimizer step
// as one process would on the whole batch. As PyTorch's DDP:
//
//   tt::distributed::init_process_group(tt::distributed::Backend::MPI);
//   auto model = std::make_shared<Net>();
//   tt::nn::DistributedDataParallel<Net> ddp(model);      // ranks now hold identical weights
//   tt::optim::AdamW opt(ddp.parameters(), ...);
//   tt::Tensor loss = loss_fn(ddp.forward(x_shard), y_shard);
//   loss.backward();                                       // .grad = the average over the ranks
//   opt.step();
//   if (rank == 0) save(ddp.module().state_dict());        // names without a "module." prefix
//
// Construction (every rank, same order) checks that the ranks' parameters agree in names, shapes and
// dtypes (a mismatch throws on every rank, naming the parameter and both shapes), broadcasts
// parameters and buffers from rank 0, and hooks every parameter (distributed/reducer.h). With
// world size 1 (no mpirun) it is a plain wrapper. Copying shares the same reducer.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "tinytorch/distributed/distributed.h"
#include "tinytorch/distributed/reducer.h"
#include "tinytorch/nn/module.h"

namespace tt::nn {

struct DistributedDataParallelOptions {
  // Target size of a gradient bucket in MiB. Smaller: all-reduces start earlier, more of them.
  DistributedDataParallelOptions& bucket_cap_mb(double v) {
    reducer.bucket_cap_mb = v;
    return *this;
  }
  // Off (the default): a parameter that gets no gradient in a backward is an error naming it
  // (thrown at the end of that backward), since its bucket would never be complete. On: such
  // parameters count as zero on this rank; one unused on every rank keeps its .grad untouched.
  DistributedDataParallelOptions& find_unused_parameters(bool v) {
    reducer.find_unused_parameters = v;
    return *this;
  }
  // Broadcast buffers (running statistics) from rank 0 before each forward.
  DistributedDataParallelOptions& broadcast_buffers(bool v) {
    reducer.broadcast_buffers = v;
    return *this;
  }
  // The group to average over; default: distributed::default_group() (a world of one without one).
  DistributedDataParallelOptions& process_group(std::shared_ptr<distributed::ProcessGroup> g) {
    group = std::move(g);
    return *this;
  }
  distributed::ReducerOptions reducer;
  std::shared_ptr<distributed::ProcessGroup> group;
};

template <class M>
class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(std::shared_ptr<M> module, DistributedDataParallelOptions options = {})
      : module_(std::move(module)) {
    TT_CHECK(module_ != nullptr, "DistributedDataParallel: the module is null");
    if (!options.group) distributed::check_initialized_under_mpirun("DistributedDataParallel");
    std::shared_ptr<distributed::ProcessGroup> group = options.group;
    if (!group && distributed::is_initialized()) group = distributed::default_group();
    if (group) {  // without one: a world of one, nothing to average
      reducer_ = std::make_shared<distributed::Reducer>(module_, group, options.reducer);
      reducer_->attach();
    }
  }

  // Runs the module's forward (after broadcasting buffers, when asked to).
  template <class... Args>
  decltype(auto) forward(Args&&... args) {
    if (reducer_) reducer_->prepare_forward();
    return module_->forward(std::forward<Args>(args)...);
  }
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    return forward(std::forward<Args>(args)...);
  }

  // The wrapped module: save and load its state_dict (no "module." prefix), call its other methods.
  M& module() const { return *module_; }
  const std::shared_ptr<M>& module_ptr() const { return module_; }
  std::vector<Tensor> parameters() const { return module_->parameters(); }
  void train(bool on = true) { module_->train(on); }
  void eval() { module_->train(false); }

  // While the returned guard lives, backward does not communicate: gradients of several
  // micro-batches add up locally in .grad, and the first backward after it averages the sum.
  class NoSync {
   public:
    explicit NoSync(std::shared_ptr<distributed::Reducer> r) : reducer_(std::move(r)) {
      if (reducer_) {
        previous_ = reducer_->sync();
        reducer_->set_sync(false);
      }
    }
    ~NoSync() {
      if (reducer_) reducer_->set_sync(previous_);
    }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    std::shared_ptr<distributed::Reducer> reducer_;
    bool previous_ = true;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(reducer_); }

  // The reducer (null in a world of one without a group): buckets and overlap, for tests and lessons.
  const std::shared_ptr<distributed::Reducer>& reducer() const { return reducer_; }

 private:
  std::shared_ptr<M> module_;
  std::shared_ptr<distributed::Reducer> reducer_;
};

}  // namespace tt::nn
