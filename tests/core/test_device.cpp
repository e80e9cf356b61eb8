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
  if (cuda::is_available()) {
    WARN("a GPU is visible; the CUDA requests below still fail until the CUDA backend lands");
  }
  CHECK(cuda::device_count() >= 0);
  Tensor cpu = ones({2});
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
