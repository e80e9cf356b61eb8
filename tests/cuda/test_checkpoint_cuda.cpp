// Checkpoints across devices (issue 17): a model and its optimizer (AdamW with amsgrad, SGD with
// momentum) trained on the GPU, saved, and resumed on the CPU, and the reverse; the state arrives
// bit for bit, each tensor where it belongs (optimizer buffers beside their parameter, step counts
// on the CPU), and one more step agrees across the devices to float32 rounding. The file's bytes do
// not depend on the device the tensors were on; a model moved to the GPU after loading takes its
// optimizer state along. All [cuda]: skipped where no GPU is present. The CPU half of the story
// (no device in the file, exact resumption, state converted into the parameter's dtype) is
// tests/io/test_checkpoint_devices.cpp.
#include "cuda/parity.h"
#include "io/checkpoint_util.h"

using namespace tt;
using namespace tt::testing;

namespace {

// Trains a model of each kind 3 steps on `from`, saves it, resumes it on `to` (a model and an
// optimizer with other weights, on `to` from the start), then takes one more step on both.
void check_resume_across(const Device& from, const Device& to) {
  const CheckpointBatch batch = checkpoint_batch();
  for (const std::string kind : {"adamw", "sgd"}) {
    INFO(kind << ": " << from.str() << " -> " << to.str());
    TempDir dir;
    manual_seed(0);
    CheckpointNet a;
    a.to(from);
    auto opt_a = make_checkpoint_optimizer(kind, a.parameters());
    for (int i = 0; i < 3; ++i) checkpoint_step(a, *opt_a, batch);
    save_checkpoint(a, *opt_a, dir);

    manual_seed(1);
    CheckpointNet b;
    b.to(to);
    auto opt_b = make_checkpoint_optimizer(kind, b.parameters());
    load_checkpoint(b, *opt_b, dir);
    check_same_checkpoint(a, *opt_a, b, *opt_b, to);

    // One more step on each device: the same update, to float32 rounding (the gradients are summed
    // in another order on the GPU; the state they start from is identical).
    const double la = checkpoint_step(a, *opt_a, batch), lb = checkpoint_step(b, *opt_b, batch);
    CHECK(std::abs(la - lb) <= 1e-5 * std::abs(la) + 1e-6);
    const nn::StateDict sa = a.state_dict(), sb = b.state_dict();
    for (const auto& [name, t] : sa) {
      CHECK(sb[name].device() == to);
      check_same(name, sb[name], t.cpu());
    }
    const std::vector<Tensor> pa = opt_a->parameters(), pb = opt_b->parameters();
    for (size_t i = 0; i < pa.size(); ++i) {
      for (const auto& [key, t] : opt_a->state(pa[i])) {
        const Tensor& u = opt_b->state(pb[i])[key];
        if (key != "step") CHECK(u.device() == to);
        check_same("parameter " + std::to_string(i) + ", " + key, u, t.cpu());
      }
    }
  }
}

}  // namespace

TEST_CASE("checkpoint: a model and its optimizer saved on the GPU resume on the CPU", "[cuda][io]") {
  TT_REQUIRE_CUDA();
  check_resume_across(gpu(), Device(kCPU));
}

TEST_CASE("checkpoint: a model and its optimizer saved on the CPU resume on the GPU", "[cuda][io]") {
  TT_REQUIRE_CUDA();
  check_resume_across(Device(kCPU), gpu());
}

TEST_CASE("checkpoint: the file's bytes do not depend on the device", "[cuda][io]") {
  TT_REQUIRE_CUDA();
  TempDir dir;
  const CheckpointBatch batch = checkpoint_batch();
  manual_seed(0);
  CheckpointNet net;
  net.to(gpu());
  auto opt = make_checkpoint_optimizer("adamw", net.parameters());
  for (int i = 0; i < 2; ++i) checkpoint_step(net, *opt, batch);
  save_checkpoint(net, *opt, dir);
  // The same tensors copied to the CPU first.
  for (const auto& [file, state] :
       {std::make_pair("model", net.state_dict()), std::make_pair("optimizer", opt->state_dict())}) {
    INFO(file);
    nn::StateDict on_cpu;
    for (const auto& [name, t] : state) on_cpu.insert(name, t.cpu());
    const std::string cpu_path = dir.file(std::string(file) + "_cpu.safetensors");
    save(on_cpu, cpu_path);
    CHECK(read_bytes(dir.file(std::string(file) + ".safetensors")) == read_bytes(cpu_path));
  }
}

TEST_CASE("checkpoint: a model loaded on the CPU then moved to the GPU takes its optimizer state along",
          "[cuda][io]") {
  TT_REQUIRE_CUDA();
  TempDir dir;
  const CheckpointBatch batch = checkpoint_batch();
  manual_seed(0);
  CheckpointNet a;
  auto opt_a = make_checkpoint_optimizer("adamw", a.parameters());
  for (int i = 0; i < 3; ++i) checkpoint_step(a, *opt_a, batch);
  save_checkpoint(a, *opt_a, dir);

  CheckpointNet b;
  auto opt_b = make_checkpoint_optimizer("adamw", b.parameters());
  load_checkpoint(b, *opt_b, dir);
  b.to(gpu());  // after the optimizer was built and loaded: the same parameter objects, moved
  const double la = checkpoint_step(a, *opt_a, batch), lb = checkpoint_step(b, *opt_b, batch);
  CHECK(std::abs(la - lb) <= 1e-5 * std::abs(la) + 1e-6);
  const Tensor& w = b.fc1->weight;
  CHECK(w.device() == gpu());
  for (const char* key : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}) {
    INFO(key);
    CHECK(opt_b->state(w)[key].device() == gpu());
    check_same(key, opt_b->state(w)[key], opt_a->state(a.fc1->weight)[key]);
  }
  CHECK(opt_b->state(w)["step"].item<int64_t>() == 4);
  check_same("fc1.weight", w, a.fc1->weight);
}
