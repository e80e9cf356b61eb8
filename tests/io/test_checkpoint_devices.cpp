// Checkpoints that do not depend on where they were written: what the CPU alone can prove of a model
// and its optimizer saved on one device and resumed on another. The file names no device (each
// tensor is only dtype, shape and bytes); a model and optimizer resumed from it continue training
// exactly; and the optimizer's state follows each parameter into its dtype, by the same copy into
// empty_like(parameter) that takes it to the parameter's device. The GPU directions (cuda -> cpu,
// cpu -> cuda) are tests/cuda/test_checkpoint_cuda.cpp.
#include <nlohmann/json.hpp>

#include "io/checkpoint_util.h"

using namespace tt;
using namespace tt::testing;

namespace {

// The JSON header of a safetensors file.
nlohmann::json header_of(const std::string& path) {
  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() >= 8);
  const uint64_t n = read_u64le(bytes);
  REQUIRE(bytes.size() >= 8 + n);
  return nlohmann::json::parse(bytes.substr(8, n));
}

}  // namespace

TEST_CASE("a checkpoint names no device: each tensor is a dtype, a shape and its bytes", "[io]") {
  TempDir dir;
  for (const std::string kind : {"adamw", "sgd"}) {
    INFO(kind);
    manual_seed(0);
    CheckpointNet net;
    auto opt = make_checkpoint_optimizer(kind, net.parameters());
    const CheckpointBatch batch = checkpoint_batch();
    for (int i = 0; i < 2; ++i) checkpoint_step(net, *opt, batch);
    save_checkpoint(net, *opt, dir);
    for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
      INFO(file);
      const nlohmann::json header = header_of(dir.file(file));
      size_t tensors = 0;
      for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") continue;
        ++tensors;
        INFO(name << ": " << entry.dump());
        CHECK(entry.size() == 3);  // nothing else: a reader puts the tensor wherever it wants
        CHECK(entry.contains("dtype"));
        CHECK(entry.contains("shape"));
        CHECK(entry.contains("data_offsets"));
      }
      CHECK(tensors > 0);
      const std::string text = header.dump();
      CHECK(text.find("cpu") == std::string::npos);
      CHECK(text.find("cuda") == std::string::npos);
    }
    // The optimizer's file holds its buffers and step counts as plain tensors.
    const nlohmann::json opt_header = header_of(dir.file("optimizer.safetensors"));
    CHECK(opt_header.contains(kind == "adamw" ? "state.0.max_exp_avg_sq" : "state.0.momentum_buffer"));
    if (kind == "adamw") CHECK(opt_header["state.0.step"]["dtype"] == "I64");
  }
}

TEST_CASE("a model and its optimizer resumed from a checkpoint train on exactly as before", "[io]") {
  for (const std::string kind : {"adamw", "sgd"}) {
    INFO(kind);
    TempDir dir;
    const CheckpointBatch batch = checkpoint_batch();
    manual_seed(0);
    CheckpointNet a;
    auto opt_a = make_checkpoint_optimizer(kind, a.parameters());
    for (int i = 0; i < 3; ++i) checkpoint_step(a, *opt_a, batch);
    save_checkpoint(a, *opt_a, dir);

    manual_seed(1);  // other weights, and an optimizer that has stepped once: both are replaced
    CheckpointNet b;
    auto opt_b = make_checkpoint_optimizer(kind, b.parameters());
    checkpoint_step(b, *opt_b, batch);
    load_checkpoint(b, *opt_b, dir);
    check_same_checkpoint(a, *opt_a, b, *opt_b, Device(kCPU));

    // Same device, same arithmetic: the next two steps agree bit for bit.
    for (int i = 0; i < 2; ++i) CHECK(checkpoint_step(b, *opt_b, batch) == checkpoint_step(a, *opt_a, batch));
    check_same_checkpoint(a, *opt_a, b, *opt_b, Device(kCPU));
  }
}

TEST_CASE("loaded optimizer state takes its parameter's dtype, as it takes its device", "[io]") {
  // A float32 checkpoint resumed in float64: the state is copied into empty_like(parameter), the
  // path that also puts it on the parameter's device (tests/cuda/test_checkpoint_cuda.cpp).
  TempDir dir;
  const CheckpointBatch batch = checkpoint_batch();
  manual_seed(0);
  CheckpointNet a;
  auto opt_a = make_checkpoint_optimizer("adamw", a.parameters());
  for (int i = 0; i < 3; ++i) checkpoint_step(a, *opt_a, batch);
  save_checkpoint(a, *opt_a, dir);

  CheckpointNet b;
  b.to(kFloat64);
  auto opt_b = make_checkpoint_optimizer("adamw", b.parameters());
  load_checkpoint(b, *opt_b, dir);
  CHECK(b.fc1->weight.dtype() == kFloat64);
  CHECK(opt_b->state(b.fc1->weight)["exp_avg"].dtype() == kFloat64);
  check_same_checkpoint(a, *opt_a, b, *opt_b, Device(kCPU));  // float32 values, exact in float64
  // The next step in float64 follows the float32 one to float32 rounding.
  const double la = checkpoint_step(a, *opt_a, batch), lb = checkpoint_step(b, *opt_b, batch);
  CHECK(std::abs(la - lb) <= 1e-5 * std::abs(la));
  CHECK_ALLCLOSE(b.fc1->weight.to(kFloat32), a.fc1->weight, 1e-5, 1e-6);
  CHECK_ALLCLOSE(b.fc2->bias.to(kFloat32), a.fc2->bias, 1e-5, 1e-6);
}
