// Bad indices on a GPU (Note [device error flag] in backend/device_error.h): the kernel that reads
// an index checks it, never reads or writes outside a tensor, and the first bad one is reported as
// a tt::IndexError naming the op and the value at the next synchronization (item(), cpu(),
// tt::cuda::synchronize()), once. The message and the scope are checked everywhere; the [cuda]
// cases are skipped where no GPU is present. The CPU's immediate checks are tested in tests/ops.
#include <tinytorch/backend/device_error.h>

#include "test_util.h"

using namespace tt;
using Catch::Contains;

TEST_CASE("device errors: the message names the op, the value and the range", "[device_errors]") {
  DeviceErrorRecord r;
  r.op = int32_t(DeviceErrorOp::kEmbedding);
  r.value = 50304;
  r.lo = 0;
  r.hi = 50304;
  CHECK(device_error_message(r, "cuda:0") ==
        "embedding: index 50304 out of range [0, 50304) (found on cuda:0 at a later synchronization)");
  r.op = int32_t(DeviceErrorOp::kCrossEntropy);
  r.value = -3;
  r.hi = 10;
  CHECK(device_error_message(r, "cuda:1") ==
        "cross_entropy: target -3 out of range [0, 10) (found on cuda:1 at a later synchronization)");
  r.op = int32_t(DeviceErrorOp::kCount);
  CHECK_THAT(device_error_message(r, "cuda:0"), Contains("unknown op: value -3"));
}

TEST_CASE("device errors: the outermost scope names the op", "[device_errors]") {
  CHECK(detail::device_error_op(DeviceErrorOp::kGather) == DeviceErrorOp::kGather);
  {
    detail::DeviceErrorScope outer(DeviceErrorOp::kCrossEntropy);
    CHECK(detail::device_error_op(DeviceErrorOp::kGather) == DeviceErrorOp::kCrossEntropy);
    {
      detail::DeviceErrorScope inner(DeviceErrorOp::kEmbedding);
      CHECK(detail::device_error_op(DeviceErrorOp::kGather) == DeviceErrorOp::kCrossEntropy);
    }
    CHECK(detail::device_error_op(DeviceErrorOp::kIndexSelect) == DeviceErrorOp::kCrossEntropy);
  }
  CHECK(detail::device_error_op(DeviceErrorOp::kIndexSelect) == DeviceErrorOp::kIndexSelect);
}

TEST_CASE("device errors: the CPU still checks before any kernel runs", "[device_errors]") {
  Tensor w = randn({5, 3});
  REQUIRE_THROWS_AS(embedding(w, tensor({1, 5}, kInt64)), IndexError);
  REQUIRE_THROWS_WITH(F::cross_entropy(randn({2, 5}), tensor({0, 7}, kInt64)), Contains("target 7 is out of bounds"));
  REQUIRE_THROWS_AS(index_select(w, 0, tensor({9}, kInt64)), IndexError);
}

namespace {
const Device kGpu(kCUDA, 0);
Tensor ids(std::initializer_list<int64_t> v) { return tensor(v, kInt64).to(kGpu); }
}  // namespace

TEST_CASE("device errors: embedding reports a bad id at the next sync, once", "[cuda][device_errors]") {
  TT_REQUIRE_CUDA();
  const int64_t V = 50304;
  Tensor w = randn({V, 8}).to(kGpu);
  Tensor out = embedding(w, ids({3, V, 7}));  // queued: no host sync, no throw yet
  REQUIRE_THROWS_AS(out.cpu(), IndexError);
  // Cleared once reported: the next syncs pass; the bad row read as zeros, never out of bounds.
  Tensor host = out.cpu();
  CHECK(host.select(0, 1).abs().sum().item<double>() == 0.0);
  CHECK_ALLCLOSE(host.select(0, 0), w.cpu().select(0, 3));
  Tensor again = embedding(w, ids({1, -1}));
  REQUIRE_THROWS_WITH(again.sum().item<double>(),
                      "embedding: index -1 out of range [0, 50304) (found on cuda:0 at a later synchronization)");
  // The message of a GPT's embedding names the exact value.
  (void)embedding(w, ids({V}));
  REQUIRE_THROWS_WITH(cuda::synchronize(), Contains("embedding: index 50304 out of range [0, 50304)"));
  cuda::synchronize();
  // Backward of a bad lookup drops the bad row's gradient and reports it too.
  Tensor wl = randn({6, 4}).to(kGpu).requires_grad_();
  Tensor bad = ids({2, 6});
  auto step = [&] {
    embedding(wl, bad).sum().backward();
    cuda::synchronize();
  };
  REQUIRE_THROWS_AS(step(), IndexError);
  CHECK(wl.grad().cpu().select(0, 2).sum().item<double>() == 4.0);
}

TEST_CASE("device errors: cross_entropy and nll_loss targets, ignore_index respected", "[cuda][device_errors]") {
  TT_REQUIRE_CUDA();
  Tensor logits_c = randn({4, 5});
  Tensor logits = logits_c.to(kGpu);
  // ignore_index (-100 by default) is not an error, on either device, and the losses agree.
  Tensor ok_c = F::cross_entropy(logits_c, tensor({0, -100, 4, 2}, kInt64));
  Tensor ok = F::cross_entropy(logits, ids({0, -100, 4, 2}));
  CHECK(std::abs(ok.item<double>() - ok_c.item<double>()) < 1e-5);
  Tensor bad = F::cross_entropy(logits, ids({0, 7, -100, 2}));
  REQUIRE_THROWS_WITH(bad.item<double>(),
                      "cross_entropy: target 7 out of range [0, 5) (found on cuda:0 at a later synchronization)");
  CHECK(std::isfinite(bad.item<double>()));  // reported once; the bad row never read outside the logits
  Tensor logp = log_softmax(logits, 1);
  Tensor bad_nll = nll_loss(logp, ids({1, -3, 0, 0}), Tensor(), kMean, 1);  // ignore_index 1
  REQUIRE_THROWS_WITH(bad_nll.item<double>(), Contains("nll_loss: target -3 out of range [0, 5)"));
  Tensor ignored = nll_loss(logp, ids({1, 1, 0, 3}), Tensor(), kMean, 1);
  CHECK(std::isfinite(ignored.item<double>()));
}

TEST_CASE("device errors: index_select, gather and scatter_add", "[cuda][device_errors]") {
  TT_REQUIRE_CUDA();
  Tensor t = randn({5, 3}).to(kGpu);
  Tensor sel = index_select(t, 0, ids({1, 9}));
  REQUIRE_THROWS_WITH(sel.cpu(), "index_select: index 9 out of range [0, 5) (found on cuda:0 at a later "
                                 "synchronization)");
  Tensor strided = index_select(t.t(), 1, ids({4, -2}));  // the strided kernel
  REQUIRE_THROWS_WITH(strided.cpu(), Contains("index_select: index -2 out of range [0, 5)"));
  Tensor gat = gather(t, 1, ids({0, 3, 1, 2, 0, 0, 1, 1, 2, 0, 0, 0, 0, 0, 0}).reshape({5, 3}));
  REQUIRE_THROWS_WITH(gat.cpu(), Contains("gather: index 3 out of range [0, 3)"));
  Tensor acc = zeros({4}).to(kGpu);
  acc.scatter_add_(0, ids({0, 4}), ones({2}).to(kGpu));
  REQUIRE_THROWS_WITH(acc.cpu(), Contains("scatter_add_: index 4 out of range [0, 4)"));
  CHECK(acc.cpu().to_vector<float>() == std::vector<float>{1, 0, 0, 0});
  // Several bad indices before one sync: the first recorded is reported, then nothing more. (The
  // indices are copied first: a copy from the host is a synchronization point too.)
  Tensor seven = ids({7}), eight = ids({8});
  (void)index_select(t, 0, seven);
  (void)index_select(t, 0, eight);
  REQUIRE_THROWS_AS(cuda::synchronize(), IndexError);
  cuda::synchronize();
  CHECK(index_select(t, 0, ids({4})).cpu().numel() == 3);
}

TEST_CASE("device errors: a GPT training step on the GPU never waits for the host", "[cuda][device_errors]") {
  TT_REQUIRE_CUDA();
  // The benchmark's gpt_step, smaller: forward, cross-entropy, zero_grad, backward, AdamW step.
  manual_seed(7);
  const int64_t V = 65, T = 32, B = 4;
  nn::GPT gpt(nn::GPTOptions(V, T).n_layer(2).n_embd(64).n_head(4).tie_weights(true));
  gpt.to(kGpu);
  Tensor tokens = randint(0, V, {B, T + 1}).to(kGpu);
  Tensor input = tokens.slice(1, 0, T).contiguous(), target = tokens.slice(1, 1, T + 1).contiguous().reshape({B * T});
  optim::AdamW opt(gpt.parameters(), optim::AdamWOptions(1e-3).weight_decay(0.01));
  Tensor loss;
  auto step = [&] {
    loss = F::cross_entropy(gpt(input).reshape({B * T, V}), target);
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  step();  // the first step creates the optimizer's state
  cuda::synchronize();
  const uint64_t before = detail::host_waits();
  step();
  step();
  CHECK(detail::host_waits() == before);  // no item(), cpu() or copy from the host inside a step
  CHECK(std::isfinite(loss.item<double>()));
  CHECK(detail::host_waits() == before + 1);  // item() is one
  CHECK(opt.state(gpt.parameters()[0])["step"].item<int64_t>() == 3);
}
