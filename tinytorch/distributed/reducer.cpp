// Reducer: DistributedDataParallel's gradient averaging (reducer.h).
//
// Note [buckets]: one all-reduce per parameter would pay MPI's latency hundreds of times per step;
// one all-reduce of everything after backward would pay it once but start only when backward ends,
// leaving the network idle while backward runs and the CPU idle while the all-reduce runs. Buckets
// sit between: parameters are grouped into flat buffers of about bucket_cap_mb, in reverse order
// (backward reaches the last layers first), and a bucket is all-reduced as soon as every gradient in
// it has arrived, while backward goes on computing the earlier layers' gradients. The rules:
//   * A gradient arrives through the parameter's post-accumulate-grad hook (Note [post-accumulate
//     hooks]), which copies .grad into its slot of the bucket. The engine runs AccumulateGrad as
//     soon as it can (Note [engine order]), so a gradient arrives when it is final.
//   * Buckets start strictly in order: bucket k+1 waits for bucket k even if it fills first. MPI
//     and NCCL pair collectives by their order on each rank, so a rank that started bucket 2
//     before bucket 1 would have its bucket 2 summed with the other's bucket 1.
//   * The first hook of a backward queues a callback (autograd::queue_callback) that runs when the
//     backward is over: it deals with parameters that got no gradient, waits for every bucket and
//     copies the averages back into .grad. So backward() returns with .grad averaged, like PyTorch.
//   * A parameter that gets no gradient would leave its bucket unfilled forever. Without
//     find_unused_parameters that is an error naming it; with it, the callback counts its slot as
//     zero, starts the remaining buckets in order, and all-reduces a used/unused flag per parameter
//     so that one unused on every rank keeps its .grad as it was (PyTorch's behaviour).
//   * Under no_sync() the hooks do nothing: .grad accumulates locally, and the next synchronized
//     backward averages the accumulated sums.
#include "tinytorch/distributed/reducer.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <utility>

#include "tinytorch/autograd/engine.h"
#include "tinytorch/autograd/grad_mode.h"
#include "tinytorch/core/error.h"
#include "tinytorch/ops/factory.h"

namespace tt::distributed {

struct Reducer::Bucket {
  std::vector<size_t> params;  // parameter indices, in the order backward tends to produce them
  Tensor flat;                 // [sum of their numels], allocated once, on their device
  size_t pending = 0;          // parameters whose gradient has not arrived in this backward
  std::shared_ptr<Work> work;  // the all-reduce in flight
};

std::vector<std::vector<size_t>> assign_buckets(const std::vector<Tensor>& params, int64_t cap_bytes) {
  // TT_EXERCISE_BEGIN(16, 1)
  TT_CHECK(cap_bytes > 0, "DistributedDataParallel: the bucket size must be positive, got ", cap_bytes, " bytes");
  std::vector<std::vector<size_t>> buckets;
  // One open bucket per (dtype, device); its index in `buckets` and its size so far.
  std::map<std::pair<int, std::string>, std::pair<size_t, int64_t>> open;
  for (size_t k = params.size(); k-- > 0;) {
    const Tensor& p = params[k];
    const std::pair<int, std::string> key{int(p.dtype()), p.device().str()};
    auto it = open.find(key);
    if (it == open.end()) {
      it = open.emplace(key, std::make_pair(buckets.size(), int64_t(0))).first;
      buckets.emplace_back();
    }
    buckets[it->second.first].push_back(k);
    it->second.second += p.numel() * int64_t(p.element_size());
    if (it->second.second >= cap_bytes) open.erase(it);  // full: the next one starts a new bucket
  }
  return buckets;
  // TT_EXERCISE_END
}

namespace {

// A parameter's identity across ranks: [name hash, dtype, device type, ndim, 6 dims, hash of the rest].
constexpr int64_t kSignature = 11;

int64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return int64_t(h >> 1);
}

std::string shape_of(const int64_t* sig) {
  std::ostringstream os;
  os << "[";
  for (int64_t d = 0; d < sig[3]; ++d) os << (d ? ", " : "") << (d < 6 ? std::to_string(sig[4 + d]) : "...");
  os << "] " << dtype_name(ScalarType(sig[1])) << (sig[2] == int64_t(kCUDA) ? " on cuda" : "");
  return os.str();
}

}  // namespace

Reducer::Reducer(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group, const ReducerOptions& options)
    : module_(std::move(module)), group_(std::move(group)), options_(options) {
  TT_CHECK(module_ && group_, "DistributedDataParallel: needs a module and a process group");
  TT_CHECK(options_.bucket_cap_mb > 0, "DistributedDataParallel: bucket_cap_mb must be positive, got ",
           options_.bucket_cap_mb);
  for (const auto& item : module_->named_parameters()) {
    if (!item.second.requires_grad()) continue;
    names_.push_back(item.first);
    params_.push_back(item.second);
  }
  check_parameters_match();
  broadcast_from_rank0(module_->parameters());
  broadcast_from_rank0(module_->buffers());

  // At least one byte, at most 2^62: a cap below a byte means one tensor per bucket, a huge one a single bucket.
  const double cap = std::min(std::max(options_.bucket_cap_mb * 1024.0 * 1024.0, 1.0), 4.6e18);
  const auto plan = assign_buckets(params_, int64_t(cap));
  bucket_of_.assign(params_.size(), 0);
  offset_of_.assign(params_.size(), 0);
  for (size_t b = 0; b < plan.size(); ++b) {
    auto bucket = std::make_unique<Bucket>();
    bucket->params = plan[b];
    int64_t n = 0;
    for (size_t i : plan[b]) {
      bucket_of_[i] = b;
      offset_of_[i] = n;
      n += params_[i].numel();
    }
    const Tensor& first = params_[plan[b].front()];
    bucket->flat = zeros({n}, TensorOptions().dtype(first.dtype()).device(first.device()));
    buckets_.push_back(std::move(bucket));
  }
  reset_iteration();
}

Reducer::~Reducer() {
  for (HookHandle& h : hooks_) h.remove();
  for (auto& b : buckets_) {
    if (!b->work) continue;
    try {
      b->work->wait();
    } catch (...) {  // already reported (or about to be) by the backward that started it
    }
  }
}

void Reducer::attach() {
  std::weak_ptr<Reducer> weak = weak_from_this();
  TT_CHECK(!weak.expired(), "Reducer::attach: the reducer must be owned by a std::shared_ptr");
  for (size_t i = 0; i < params_.size(); ++i)
    hooks_.push_back(params_[i].register_post_accumulate_grad_hook([weak, i](const Tensor&) {
      if (auto self = weak.lock()) self->on_grad_ready(i);
    }));
}

// Every rank's parameter list, compared on every rank: all of them see the same mismatch and throw
// the same error, instead of one rank failing and the others waiting for it.
void Reducer::check_parameters_match() const {
  const int64_t n = int64_t(params_.size());
  Tensor counts = tensor(std::vector<int64_t>{n, -n});
  group_->allreduce(counts, ReduceOp::Max)->wait();
  std::vector<int64_t> c = counts.to_vector<int64_t>();
  Tensor all_counts = empty({group_->size()}, TensorOptions().dtype(kInt64));
  if (c[0] != -c[1]) {
    group_->allgather(all_counts, tensor(std::vector<int64_t>{n}).reshape({})) ->wait();
    std::ostringstream os;
    std::vector<int64_t> per_rank = all_counts.to_vector<int64_t>();
    for (size_t r = 0; r < per_rank.size(); ++r) os << (r ? ", " : "") << "rank " << r << ": " << per_rank[r];
    TT_CHECK_SHAPE(false, "DistributedDataParallel: the ranks' models have different numbers of trainable parameters (",
                   os.str(), "); every rank must build the same model");
  }
  std::vector<int64_t> sig(size_t(n * kSignature), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t* s = &sig[size_t(i * kSignature)];
    const Tensor& p = params_[size_t(i)];
    s[0] = name_hash(names_[size_t(i)]);
    s[1] = int64_t(p.dtype());
    s[2] = int64_t(p.device().type);
    s[3] = p.dim();
    for (int d = 0; d < p.dim(); ++d) {
      if (d < 6) s[4 + d] = p.size(d);
      else s[10] = s[10] * 1000003 + p.size(d);
    }
  }
  if (n == 0) return;
  Tensor mine = tensor(sig).reshape({n, kSignature});
  Tensor all = empty({group_->size(), n, kSignature}, TensorOptions().dtype(kInt64));
  group_->allgather(all, mine)->wait();
  std::vector<int64_t> a = all.to_vector<int64_t>();
  const size_t stride = size_t(n * kSignature);
  for (int r = 1; r < group_->size(); ++r) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t* s0 = &a[size_t(i * kSignature)];
      const int64_t* sr = &a[size_t(r) * stride + size_t(i * kSignature)];
      if (std::equal(s0, s0 + kSignature, sr)) continue;
      const std::string& name = names_[size_t(i)];
      TT_CHECK(s0[0] == sr[0], "DistributedDataParallel: trainable parameter ", i, " has a different name on rank ",
               r, " than on rank 0 (this rank calls it '", name, "'); every rank must build the same model");
      TT_CHECK_SHAPE(false, "DistributedDataParallel: parameter '", name, "' has shape ", shape_of(s0),
                     " on rank 0 but ", shape_of(sr), " on rank ", r, "; every rank must build the same model");
    }
  }
}

void Reducer::broadcast_from_rank0(const std::vector<Tensor>& tensors) const {
  std::vector<std::shared_ptr<Work>> works;
  for (const Tensor& t : tensors) works.push_back(group_->broadcast(t.detach(), 0));
  for (auto& w : works) w->wait();
}

void Reducer::prepare_forward() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (in_backward_) {  // an exception ended the last backward before its callback ran
      abandon_iteration();
      TT_CHECK(false, "DistributedDataParallel: the previous backward did not finish (an exception interrupted "
               "it), so its gradients were not averaged; they are left as they were. If every rank caught the "
               "same exception, zero the gradients and go on; otherwise the ranks have diverged");
    }
  }
  if (options_.broadcast_buffers && group_->size() > 1) broadcast_from_rank0(module_->buffers());
}

void Reducer::on_grad_ready(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  used_since_sync_[index] = true;
  if (!sync_) return;  // no_sync: .grad accumulates locally
  if (!in_backward_) {
    in_backward_ = true;
    last_ = LastBackward{};
    std::weak_ptr<Reducer> weak = weak_from_this();
    autograd::queue_callback([weak] {
      if (auto self = weak.lock()) self->finish_backward();
    });
  }
  TT_CHECK(!ready_[index], "DistributedDataParallel: parameter '", names_[index], "' received a gradient twice "
           "in one backward; each backward may reach a parameter's .grad only once");
  copy_into_bucket(index, params_[index].grad());
  ready_[index] = true;
  ++ready_count_;
  launch_ready_buckets();
  // Started while gradients were still to come: these overlap the rest of backward.
  if (ready_count_ < params_.size()) last_.buckets_started_during_backward = next_bucket_;
}

// Its gradient (or zeros, for an undefined one) into its slot, and one fewer for its bucket to wait for.
void Reducer::copy_into_bucket(size_t index, const Tensor& grad) {
  Bucket& b = *buckets_[bucket_of_[index]];
  const Tensor& p = params_[index];
  NoGradGuard no_grad;
  Tensor slot = b.flat.slice(0, offset_of_[index], offset_of_[index] + p.numel());
  if (grad.defined()) slot.copy_(grad.reshape({-1}));
  else slot.zero_();
  --b.pending;
}

void Reducer::launch_ready_buckets() {
  // TT_EXERCISE_BEGIN(16, 2)
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_]->pending == 0) {
    Bucket& b = *buckets_[next_bucket_];
    b.work = group_->allreduce_unchecked(b.flat, ReduceOp::Avg);
    ++next_bucket_;
  }
  // TT_EXERCISE_END
}

void Reducer::finish_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Every rank starts every bucket, in order, whatever it found missing: a rank that stopped early
  // would leave the others waiting, or pair its next collective with their last bucket. A
  // parameter without a gradient in this backward contributes what it accumulated under no_sync,
  // or zeros.
  for (size_t i = 0; i < params_.size(); ++i)
    if (!ready_[i]) copy_into_bucket(i, used_since_sync_[i] ? params_[i].grad() : Tensor());
  launch_ready_buckets();
  // Then one small all-reduce tells every rank what every other saw: [used since the last sync
  // anywhere (max) | got a gradient in this backward everywhere (-max of -flag = min)].
  const size_t P = params_.size();
  std::vector<int64_t> flags(2 * P);
  for (size_t i = 0; i < P; ++i) {
    flags[i] = used_since_sync_[i] ? 1 : 0;
    flags[P + i] = ready_[i] ? -1 : 0;
  }
  Tensor agreed = tensor(flags);
  std::shared_ptr<Work> flags_work = group_->allreduce_unchecked(agreed, ReduceOp::Max);
  try {
    for (auto& b : buckets_) b->work->wait();
    flags_work->wait();
  } catch (...) {
    abandon_iteration();
    throw;
  }
  std::vector<int64_t> f = agreed.to_vector<int64_t>();
  std::vector<size_t> missing;  // no gradient in this backward on at least one rank
  for (size_t i = 0; i < P; ++i)
    if (f[P + i] == 0) missing.push_back(i);
  if (!missing.empty() && !options_.find_unused_parameters) {
    std::ostringstream os;
    for (size_t k = 0; k < missing.size() && k < 10; ++k) os << (k ? ", " : "") << "'" << names_[missing[k]] << "'";
    if (missing.size() > 10) os << " and " << missing.size() - 10 << " more";
    reset_iteration();
    TT_CHECK(false, "DistributedDataParallel: ", missing.size(), " parameter(s) received no gradient in this "
             "backward on at least one rank: ", os.str(), ". Construct it with DistributedDataParallelOptions()"
             ".find_unused_parameters(true) if the forward may leave parameters out, or make the loss depend on "
             "every parameter. The gradients were not averaged");
  }
  {
    NoGradGuard no_grad;
    for (size_t i = 0; i < P; ++i) {
      if (f[i] == 0) continue;  // unused on every rank since the last sync: .grad stays as it was
      const Tensor& p = params_[i];
      Tensor avg = buckets_[bucket_of_[i]]->flat.slice(0, offset_of_[i], offset_of_[i] + p.numel()).reshape(p.shape());
      Tensor g = p.grad();
      if (g.defined()) g.copy_(avg);
      else p.set_grad(avg.clone());
    }
  }
  last_.buckets = buckets_.size();
  reset_iteration();
}

// After an error: waits for whatever was started (its errors were or will be reported by the call
// that failed), then forgets the iteration.
void Reducer::abandon_iteration() {
  for (auto& b : buckets_) {
    if (!b->work) continue;
    try {
      b->work->wait();
    } catch (...) {
    }
  }
  reset_iteration();
}

void Reducer::reset_iteration() {
  ready_.assign(params_.size(), false);
  used_since_sync_.assign(params_.size(), false);
  ready_count_ = 0;
  for (auto& b : buckets_) {
    b->pending = b->params.size();
    b->work.reset();
  }
  next_bucket_ = 0;
  in_backward_ = false;
}

std::vector<std::vector<size_t>> Reducer::bucket_indices() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : buckets_) out.push_back(b->params);
  return out;
}

}  // namespace tt::distributed
