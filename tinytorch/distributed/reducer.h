// Reducer: the part of DistributedDataParallel that does not depend on the module's type. It puts
// the parameters into buckets (reverse registration order, about bucket_cap_mb each), copies each
// gradient into its bucket as soon as backward has written it (a post-accumulate-grad hook), starts
// a bucket's all-reduce as soon as the bucket is full and every earlier bucket has started, and at
// the end of backward (a queued callback) waits for all of them and writes the averages back into
// .grad. Note [buckets] in reducer.cpp has the rules; module 16 teaches them.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tinytorch/distributed/process_group.h"
#include "tinytorch/nn/module.h"

namespace tt::distributed {

struct ReducerOptions {
  double bucket_cap_mb = 25.0;          // bucket size in MiB (a parameter larger than it has its own)
  bool find_unused_parameters = false;  // see DistributedDataParallelOptions
  bool broadcast_buffers = true;
};

// The buckets for `params` (indices into it), in the order they are all-reduced: the parameters are
// taken in REVERSE order (backward produces the last layer's gradients first), a bucket holds
// parameters of one dtype and device, and it is closed once it holds at least cap_bytes (so a
// parameter larger than the cap gets a bucket of its own). Every rank computes the same plan.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<Tensor>& params, int64_t cap_bytes);

class Reducer : public std::enable_shared_from_this<Reducer> {
 public:
  // Checks that every rank has the same parameters (names, shapes, dtypes, devices), broadcasts
  // parameters and buffers from rank 0, and builds the buckets. Call attach() next.
  Reducer(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group, const ReducerOptions& options);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Registers the gradient hooks (they hold a weak pointer to this reducer).
  void attach();
  // Called before each forward: broadcasts buffers from rank 0 (broadcast_buffers). Throws (once)
  // when an exception ended the previous backward before its gradients were averaged.
  void prepare_forward();
  // Turns synchronization off (no_sync) or back on: while off, gradients accumulate locally.
  void set_sync(bool on) { sync_ = on; }
  bool sync() const { return sync_; }

  // For tests and module 16: the buckets as lists of parameter indices (into the trainable
  // parameters, those of module->parameters() that require grad, in that order),
  // in launch order, and how many all-reduces the last backward started while backward was still
  // running (overlapped) out of how many in all.
  std::vector<std::vector<size_t>> bucket_indices() const;
  struct LastBackward {
    size_t buckets_started_during_backward = 0;
    size_t buckets = 0;
  };
  LastBackward last_backward() const { return last_; }

 private:
  struct Bucket;
  void on_grad_ready(size_t index);
  void copy_into_bucket(size_t index, const Tensor& grad);
  void launch_ready_buckets();
  void finish_backward();
  void abandon_iteration();
  void reset_iteration();
  void check_parameters_match() const;
  void broadcast_from_rank0(const std::vector<Tensor>& tensors) const;

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  ReducerOptions options_;
  std::vector<Tensor> params_;          // trainable parameters, registration order
  std::vector<std::string> names_;      // their dotted names
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<size_t> bucket_of_;       // parameter index -> bucket
  std::vector<int64_t> offset_of_;      // parameter index -> element offset in its bucket
  std::vector<HookHandle> hooks_;
  std::vector<bool> ready_;             // this backward: gradient copied into its bucket
  std::vector<bool> used_since_sync_;   // got a gradient since the last synchronized backward (no_sync too)
  size_t ready_count_ = 0;
  size_t next_bucket_ = 0;              // the next bucket to start, in launch order
  bool in_backward_ = false;            // a finish_backward callback is queued
  bool sync_ = true;
  LastBackward last_;
  std::mutex mutex_;                    // hooks of a multi-threaded backward
};

}  // namespace tt::distributed
