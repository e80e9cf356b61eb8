// Devices (parsing, printing, equality), TensorOptions, and the DeviceError every CUDA request
// gets in this build (no CUDA backend yet, or no GPU). The GPU paths are tested in module 09.
#include "test_util.h"

using namespace tt;

TEST_CASE("Device parses and prints like torch.device", "[core][device]") {
  CHECK(Device("cpu") == Device(kCPU));
  CHECK(Device("cuda") == Device(kCUDA, 0));
  CHECK(Device("cuda:1") == Device(kCUDA, 1));
  CHECK(Device("cuda:12").index == 12);
  CHECK(Device("cpu").is_cpu());
  CHECK(Device("cuda:1").is_cuda());
  CHECK(Device(kCUDA, 1) != Device(kCUDA, 0));
  CHECK(Device(kCPU) != Device(kCUDA));
  CHECK(Device().is_cpu());
  CHECK(Device(kCPU).str() == "cpu");
  CHECK(Device(kCUDA).str() == "cuda:0");
  CHECK(Device(kCUDA, 3).str() == "cuda:3");
  std::ostringstream os;
  os << Device(kCUDA, 2) << ' ' << Device(kCPU);
  CHECK(os.str() == "cuda:2 cpu");

  CHECK(Device("cuda:127").index == 127);
  REQUIRE_THROWS_WITH(Device("cuda:128"), Catch::Contains("N <= 127") && Catch::Contains("'cuda:128'"));
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda1", "cuda:-1", "CPU", "", "cuda:300",
                          "cuda:99999999999999999999"}) {
    INFO("spec '" << bad << "'");
    REQUIRE_THROWS_AS(Device(bad), DeviceError);
    REQUIRE_THROWS_WITH(Device(bad), Catch::Contains("Device") && Catch::Contains("'cuda:N'") &&
                                         Catch::Contains(std::string("'") + bad + "'"));
  }
}

TEST_CASE("TensorOptions spells dtype, device and requires_grad like LibTorch", "[core][device]") {
  TensorOptions o;
  CHECK(o.dtype() == kFloat32);
  CHECK(o.device() == Device(kCPU));
  CHECK_FALSE(o.requires_grad());
  TensorOptions p = TensorOptions().dtype(kFloat64).device(kCPU).requires_grad(true);
  CHECK(p.dtype() == kFloat64);
  CHECK(p.requires_grad());
  CHECK(o.dtype() == kFloat32);  // the builders return copies
  CHECK(TensorOptions(kInt64).dtype() == kInt64);
  CHECK(TensorOptions(Device(kCUDA, 1)).device() == Device(kCUDA, 1));
  CHECK(dtype(kBool).dtype() == kBool);
  CHECK(requires_grad().requires_grad());

  Tensor t = zeros({2, 3}, TensorOptions().dtype(kFloat64).requires_grad(true));
  CHECK(t.dtype() == kFloat64);
  CHECK(t.requires_grad());
  CHECK(t.options().dtype() == kFloat64);
  CHECK(t.options().device() == Device(kCPU));
  CHECK(zeros({1}, kInt64).dtype() == kInt64);
  REQUIRE_THROWS_AS(zeros({2}, TensorOptions(kInt64).requires_grad(true)), DtypeError);
  REQUIRE_THROWS_WITH(zeros({2}, TensorOptions(kInt64).requires_grad(true)),
                      Catch::Contains("floating") && Catch::Contains("int64"));
}

TEST_CASE("asking for CUDA without a usable backend is a DeviceError naming CUDA", "[core][device]") {
  CHECK(cuda::device_count() >= 0);
  Tensor cpu = ones({2});
  if (cuda::is_available()) {
    // With a GPU, only a device index past the last one fails.
    const Device missing(kCUDA, cuda::device_count());
    REQUIRE_THROWS_AS(zeros({2}, missing), DeviceError);
    REQUIRE_THROWS_WITH(zeros({2}, missing), Catch::Contains("out of range"));
    REQUIRE_THROWS_WITH(cpu.to(missing), Catch::Contains("out of range"));
    return;
  }
  auto is_cuda_error = Catch::Contains("CUDA");

  REQUIRE_THROWS_AS(zeros({2}, Device(kCUDA)), DeviceError);
  REQUIRE_THROWS_WITH(zeros({2}, Device(kCUDA)), is_cuda_error);
  REQUIRE_THROWS_AS(empty({2}, Device("cuda:1")), DeviceError);
  REQUIRE_THROWS_AS(cpu.cuda(), DeviceError);
  REQUIRE_THROWS_WITH(cpu.cuda(), is_cuda_error);
  REQUIRE_THROWS_AS(cpu.to(Device(kCUDA)), DeviceError);
  REQUIRE_THROWS_AS(rand({2}, Device(kCUDA)), DeviceError);
  REQUIRE_THROWS_AS(arange(3, TensorOptions(kFloat32).device(kCUDA)), DeviceError);
  REQUIRE_THROWS_AS(tensor({1.0, 2.0}, Device(kCUDA)), DeviceError);
  REQUIRE_THROWS_AS(memory::stats(Device(kCUDA)), DeviceError);
  REQUIRE_THROWS_AS(allocator_for(Device(kCUDA)), DeviceError);
  REQUIRE_THROWS_AS(check_device_available(Device(kCUDA), "myop"), DeviceError);
  REQUIRE_THROWS_WITH(check_device_available(Device(kCUDA), "myop"),
                      Catch::Contains("myop") && is_cuda_error);
  REQUIRE_NOTHROW(check_device_available(Device(kCPU), "myop"));
  // The CPU tensor is untouched and still usable.
  CHECK(cpu.to_vector<float>() == std::vector<float>{1.f, 1.f});
  CHECK(cpu.cpu().is_same(cpu));
}

namespace {
// The reason every CUDA request gives in this build on this machine.
std::string no_cuda_reason() {
#ifdef TINYTORCH_HAS_CUDA
  return "no CUDA device is available, cannot use device cuda:0";
#else
  return "tinytorch was built without CUDA, cannot use device cuda:0 (rebuild with -DTINYTORCH_CUDA=ON on a "
         "machine with nvcc)";
#endif
}
}  // namespace

TEST_CASE("the first CUDA request without a GPU gets an exact message, and nothing changes", "[core][device]") {
  if (cuda::is_available()) {
    WARN("skipped: a GPU is visible, so CUDA requests succeed");
    return;
  }
  const std::string why = no_cuda_reason();
  REQUIRE_THROWS_AS(zeros({2}, kCUDA), DeviceError);
  REQUIRE_THROWS_WITH(zeros({2}, kCUDA), Catch::EndsWith(": " + why));
  REQUIRE_THROWS_WITH(ones({2}, TensorOptions(kFloat64).device(kCUDA)), Catch::EndsWith(": " + why));

  Tensor t = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  REQUIRE_THROWS_AS(t.cuda(), DeviceError);
  REQUIRE_THROWS_WITH(t.cuda(), Catch::Equals("to: " + why));
  REQUIRE_THROWS_WITH(t.to(Device(kCUDA)), Catch::Equals("to: " + why));
  CHECK(t.device() == Device(kCPU));
  CHECK(t.to_vector<double>() == std::vector<double>{1.0, 2.0, 3.0});

  nn::Linear layer(3, 2);
  Tensor w = layer.weight;
  layer.weight.set_grad(ones({2, 3}));
  REQUIRE_THROWS_AS(layer.to(kCUDA), DeviceError);
  REQUIRE_THROWS_WITH(layer.to(kCUDA), Catch::Equals("Module::to: " + why));
  REQUIRE_THROWS_WITH(layer.to(Device(kCUDA), kFloat64), Catch::Equals("Module::to: " + why));
  // A module with no tensors still refuses the device.
  nn::ReLU relu;
  REQUIRE_THROWS_WITH(relu.to(kCUDA), Catch::Equals("Module::to: " + why));
  // Nothing moved: the same parameter, on the CPU, with its gradient.
  CHECK(layer.weight.is_same(w));
  CHECK(layer.weight.device() == Device(kCPU));
  CHECK(layer.weight.dtype() == kFloat32);
  CHECK(layer.weight.grad().device() == Device(kCPU));
  REQUIRE_NOTHROW(layer.to(kCPU));
  CHECK(layer.weight.is_same(w));

  REQUIRE_THROWS_WITH(memory::stats(kCUDA), Catch::EndsWith(": " + why));
  CHECK_NOTHROW(cuda::empty_cache());  // nothing to release
  CHECK_FALSE(cuda::is_available());
}

TEST_CASE("Module::to keeps parameter identity and moves gradients and buffers", "[core][device]") {
  // Device-independent part (on the CPU): to(dtype) swaps the data under the same handles.
  nn::Linear layer(3, 2);
  Tensor w = layer.weight, b = layer.bias;
  layer.weight.set_grad(ones({2, 3}));
  layer.to(Device(kCPU), kFloat64);
  CHECK(layer.weight.is_same(w));
  CHECK(layer.bias.is_same(b));
  CHECK(w.dtype() == kFloat64);
  CHECK(w.requires_grad());
  CHECK(w.grad().dtype() == kFloat64);
  CHECK(layer.parameters()[0].is_same(w));
  REQUIRE_THROWS_AS(layer.to(Device(kCPU), kInt64), DtypeError);
  CHECK(w.dtype() == kFloat64);
}

TEST_CASE("Module::to(kCUDA) and an optimizer whose state lives on the GPU", "[core][device][cuda]") {
  TT_REQUIRE_CUDA();
  nn::Linear layer(3, 2);
  Tensor w = layer.weight;
  optim::Adam opt(layer.parameters(), optim::AdamOptions(0.1));
  // One step on the CPU, then the model moves: the state follows at the next step.
  layer.forward(ones({4, 3})).sum().backward();
  opt.step();
  layer.to(kCUDA);
  CHECK(layer.weight.is_same(w));
  CHECK(w.device() == Device(kCUDA, 0));
  CHECK(w.grad().device() == Device(kCUDA, 0));
  CHECK(w.is_leaf());
  CHECK(w.requires_grad());
  opt.zero_grad();
  layer.forward(ones({4, 3}, Device(kCUDA))).sum().backward();
  opt.step();
  CHECK(opt.state(w)["exp_avg"].device() == Device(kCUDA, 0));
  CHECK(opt.state(w)["exp_avg_sq"].device() == Device(kCUDA, 0));
  // A fresh optimizer creates its buffers on the parameter's device.
  optim::SGD sgd(layer.parameters(), optim::SGDOptions(0.1).momentum(0.9));
  sgd.step();
  CHECK(sgd.state(w)["momentum_buffer"].device() == Device(kCUDA, 0));
  layer.to(kCPU);
  CHECK(w.device() == Device(kCPU));
  CHECK(w.grad().device() == Device(kCPU));
}
