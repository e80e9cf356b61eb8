// Bad input across the ops: each misuse throws the right tt::Error subclass, and the message
// names the op, states the rule and shows the offending values. Device mismatches use a tensor
// that claims to live on cuda:0 (host memory, never read), so they run without a GPU.
#include "test_util.h"

using namespace tt;
using Catch::Contains;

namespace {
// Matches a message that contains every one of `parts`. Owns its strings, so unlike a stored
// `Contains(a) && Contains(b)` (which keeps pointers to temporaries) it can live in a variable.
class ContainsAll : public Catch::MatcherBase<std::string> {
 public:
  ContainsAll(std::initializer_list<std::string> parts) : parts_(parts) {}
  bool match(const std::string& s) const override {
    for (const std::string& p : parts_)
      if (s.find(p) == std::string::npos) return false;
    return true;
  }
  std::string describe() const override {
    std::string d = "contains all of:";
    for (const std::string& p : parts_) d += " \"" + p + "\"";
    return d;
  }

 private:
  std::vector<std::string> parts_;
};

// A tensor whose storage says cuda:0. Ops must reject the mix before touching its bytes.
Tensor fake_cuda(const Shape& shape, ScalarType dtype = kFloat32) {
  static double host[64] = {};
  auto storage = std::make_shared<StorageImpl>(host, sizeof host, Device(kCUDA, 0), nullptr);
  return detail::make_tensor(storage, 0, shape, contiguous_strides(shape), dtype);
}
}  // namespace

TEST_CASE("errors: broadcasting in binary ops", "[ops][errors]") {
  Tensor a = ones({2, 3}), b = ones({4});
  REQUIRE_THROWS_AS(a + b, ShapeError);
  REQUIRE_THROWS_WITH(a + b, Contains("add") && Contains("broadcast") && Contains("[2, 3]") && Contains("[4]"));
  REQUIRE_THROWS_WITH(a * b, Contains("mul"));
  REQUIRE_THROWS_WITH(a - b, Contains("sub"));
  REQUIRE_THROWS_WITH(a / b, Contains("div"));
  REQUIRE_THROWS_WITH(a.pow(b), Contains("pow"));
  REQUIRE_THROWS_WITH(maximum(a, b), Contains("maximum"));
  REQUIRE_THROWS_WITH(minimum(a, b), Contains("minimum"));
  REQUIRE_THROWS_WITH(a == b, Contains("eq") && Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(a < b, Contains("lt"));
  REQUIRE_THROWS_AS(ones({2, 3}) + ones({3, 2}), ShapeError);
  REQUIRE_THROWS_AS(ones({0}) + ones({2}), ShapeError);
  REQUIRE_THROWS_WITH(a.add_(ones({2, 1, 3})), Contains("add_") && Contains("[2, 3]") && Contains("[2, 1, 3]"));
  REQUIRE_THROWS_WITH(a.mul_(ones({2, 2})), Contains("mul") && Contains("broadcast"));
  CHECK(a.to_vector<float>() == std::vector<float>(6, 1.f));
}

TEST_CASE("errors: matmul shapes and dtypes", "[ops][errors]") {
  REQUIRE_THROWS_AS(ones({2, 3}).matmul(ones({4, 5})), ShapeError);
  REQUIRE_THROWS_WITH(ones({2, 3}).matmul(ones({4, 5})),
                      Contains("matmul: inner dimensions must match, got [2, 3] and [4, 5]"));
  REQUIRE_THROWS_WITH(ones({3}).matmul(ones({4})), Contains("[3]") && Contains("[4]"));
  REQUIRE_THROWS_WITH(ones({3}).matmul(ones({4, 2})), Contains("matmul") && Contains("[3]") && Contains("[4, 2]"));
  REQUIRE_THROWS_WITH(ones({2, 4}).matmul(ones({3})), Contains("matmul") && Contains("[2, 4]") && Contains("[3]"));
  REQUIRE_THROWS_AS(ones({2, 2, 3}).matmul(ones({3, 3, 4})), ShapeError);
  REQUIRE_THROWS_WITH(ones({2, 2, 3}).matmul(ones({3, 3, 4})), Contains("matmul") && Contains("broadcast"));
  REQUIRE_THROWS_AS(scalar_tensor(1.0).matmul(ones({2})), ShapeError);
  REQUIRE_THROWS_WITH(ones({2}).matmul(scalar_tensor(1.0)), Contains("matmul") && Contains("at least 1 dimension"));
  REQUIRE_THROWS_AS(ones({2, 2}).matmul(ones({2, 2}, kFloat64)), DtypeError);
  REQUIRE_THROWS_WITH(ones({2, 2}).matmul(ones({2, 2}, kInt64)),
                      Contains("matmul") && Contains("same dtype") && Contains("float32") && Contains("int64"));
  REQUIRE_THROWS_AS(ones({2, 2}, kBool).matmul(ones({2, 2}, kBool)), DtypeError);
  REQUIRE_THROWS_WITH(ones({2, 2}, kBool).matmul(ones({2, 2}, kBool)), Contains("bool"));
  REQUIRE_THROWS_AS(mm(ones({2}), ones({2, 2})), ShapeError);
  REQUIRE_THROWS_WITH(mm(ones({2, 2, 2}), ones({2, 2})), Contains("mm") && Contains("2-d") && Contains("[2, 2, 2]"));
  REQUIRE_THROWS_WITH(mm(ones({2, 3}), ones({2, 3})), Contains("mm") && Contains("inner dimensions"));
  REQUIRE_THROWS_AS(bmm(ones({2, 2}), ones({2, 2})), ShapeError);
  REQUIRE_THROWS_WITH(bmm(ones({2, 2, 3}), ones({3, 3, 2})), Contains("bmm") && Contains("batch sizes") &&
                                                                 Contains("[2, 2, 3]") && Contains("[3, 3, 2]"));
  REQUIRE_THROWS_WITH(dot(ones({2}), ones({3})), Contains("dot") && Contains("[2]") && Contains("[3]"));
  REQUIRE_THROWS_AS(dot(ones({2, 1}), ones({2})), ShapeError);
}

TEST_CASE("errors: dims out of range are IndexErrors that show the range", "[ops][errors]") {
  Tensor t = ones({2, 3});
  const ContainsAll range{"[-2, 1]", "got 2"};
  REQUIRE_THROWS_AS(t.sum({2}), IndexError);
  REQUIRE_THROWS_WITH(t.sum({2}), Contains("sum") && range);
  REQUIRE_THROWS_WITH(t.max(2), Contains("max") && range);
  REQUIRE_THROWS_WITH(t.argmin(2), Contains("argmin") && range);
  REQUIRE_THROWS_WITH(t.var({2}), Contains("var") && range);
  REQUIRE_THROWS_WITH(t.transpose(0, 2), Contains("transpose") && range);
  REQUIRE_THROWS_WITH(t.select(2, 0), Contains("select") && range);
  REQUIRE_THROWS_WITH(t.slice(2, 0, 1), Contains("slice") && range);
  REQUIRE_THROWS_WITH(t.narrow(2, 0, 1), Contains("narrow") && range);
  REQUIRE_THROWS_WITH(t.squeeze(2), Contains("squeeze") && range);
  REQUIRE_THROWS_WITH(t.flatten(2), Contains("flatten") && range);
  REQUIRE_THROWS_WITH(t.index_select(2, tensor({0})), Contains("index_select") && range);
  REQUIRE_THROWS_WITH(t.gather(2, zeros({2, 3}, kInt64)), Contains("gather") && range);
  REQUIRE_THROWS_WITH(cat({t, t}, 2), Contains("cat") && range);
  REQUIRE_THROWS_WITH(t.split(1, 2), Contains("split") && range);
  REQUIRE_THROWS_WITH(t.chunk(2, 2), Contains("chunk") && range);
  REQUIRE_THROWS_WITH(t.unsqueeze(3), Contains("unsqueeze") && Contains("[-3, 2]") && Contains("got 3"));
  REQUIRE_THROWS_WITH(stack({t, t}, 3), Contains("stack") && Contains("[-3, 2]"));
  REQUIRE_THROWS_WITH(t.permute({0, 2}), Contains("permute") && range);
}

TEST_CASE("errors: dtype misuse", "[ops][errors]") {
  REQUIRE_THROWS_WITH(tensor({true}) - tensor({false}), Contains("sub") && Contains("bool"));
  REQUIRE_THROWS_WITH(tensor({true}) - true, Contains("sub") && Contains("bool"));
  REQUIRE_THROWS_AS(tensor({true}) - true, DtypeError);
  REQUIRE_THROWS_WITH(-tensor({true}), Contains("neg") && Contains("bool"));
  REQUIRE_THROWS_WITH(tensor({1}).mul_(0.5), Contains("mul_") && Contains("float32") && Contains("int64"));
  REQUIRE_THROWS_WITH(tensor({true}).add_(1), Contains("add_") && Contains("int64") && Contains("bool"));
  Tensor i = tensor({4});
  REQUIRE_THROWS_AS(i.exp_(), DtypeError);
  REQUIRE_THROWS_WITH(i.exp_(), Contains("exp_") && Contains("float32") && Contains("int64"));
  REQUIRE_THROWS_WITH(i.div_(2), Contains("div_") && Contains("float32") && Contains("int64"));
  REQUIRE_THROWS_WITH(i.mean(), Contains("mean") && Contains("floating point") && Contains("int64"));
  REQUIRE_THROWS_WITH(i.std(), Contains("var") && Contains("int64"));
  REQUIRE_THROWS_WITH(where(i, i, i), Contains("where") && Contains("bool") && Contains("int64"));
  REQUIRE_THROWS_WITH(ones({2}).masked_fill(ones({2}), 0), Contains("masked_fill") && Contains("float32"));
  REQUIRE_THROWS_WITH(ones({2}).index_select(0, tensor({true})), Contains("index_select") && Contains("bool"));
  REQUIRE_THROWS_WITH(ones({2}).gather(0, ones({1})), Contains("gather") && Contains("int64") && Contains("float32"));
  REQUIRE_THROWS_WITH(ones({2}).scatter_add(0, tensor({0}), ones({1}, kFloat64)),
                      Contains("scatter_add_") && Contains("float64"));
  REQUIRE_THROWS_WITH(tensor({true}).argmax(), Contains("argmax") && Contains("bool"));
  REQUIRE_THROWS_WITH(rand({1}, kInt64), Contains("rand") && Contains("floating-point") && Contains("int64"));
  REQUIRE_THROWS_WITH(randn({1}, kBool), Contains("randn") && Contains("bool"));
  REQUIRE_THROWS_WITH(ones({1}).data_ptr<double>(), Contains("data_ptr") && Contains("float64") && Contains("float32"));
  CHECK(i.item<int64_t>() == 4);
}

TEST_CASE("errors: tensors on different devices", "[ops][errors]") {
  Tensor cpu = ones({2, 2}), gpu = fake_cuda({2, 2});
  REQUIRE(gpu.device() == Device(kCUDA, 0));
  const ContainsAll mixed{"same device", "cpu", "cuda:0"};
  REQUIRE_THROWS_AS(cpu + gpu, DeviceError);
  REQUIRE_THROWS_WITH(cpu + gpu, Contains("add") && mixed);
  REQUIRE_THROWS_WITH(gpu * cpu, Contains("mul") && mixed);
  REQUIRE_THROWS_WITH(cpu < gpu, Contains("lt") && mixed);
  REQUIRE_THROWS_WITH(maximum(cpu, gpu), Contains("maximum") && mixed);
  REQUIRE_THROWS_WITH(cpu.add_(gpu), Contains("add") && mixed);
  REQUIRE_THROWS_WITH(cpu.matmul(gpu), Contains("matmul") && mixed);
  REQUIRE_THROWS_WITH(mm(cpu, gpu), Contains("mm") && mixed);
  REQUIRE_THROWS_WITH(cat({cpu, gpu}), Contains("cat") && mixed);
  REQUIRE_THROWS_WITH(stack({cpu, gpu}), Contains("stack") && mixed);
  REQUIRE_THROWS_WITH(where(cpu > 0, cpu, gpu), Contains("where") && mixed);
  REQUIRE_THROWS_WITH(cpu.index_select(0, fake_cuda({1}, kInt64)), Contains("index_select") && mixed);
  REQUIRE_THROWS_WITH(cpu.gather(0, fake_cuda({1, 2}, kInt64)), Contains("gather") && mixed);
  REQUIRE_THROWS_WITH(cpu.scatter_add_(0, zeros({1, 2}, kInt64), gpu), Contains("scatter_add_") && mixed);
  REQUIRE_THROWS_WITH(cpu.masked_fill(fake_cuda({2, 2}, kBool), 0), Contains("masked_fill") && mixed);
  CHECK(cpu.to_vector<float>() == std::vector<float>(4, 1.f));
  CHECK(cpu.version() == 0);
}

// The fake tensor's bytes are host memory, so it is only moved where no GPU can be reached; with a
// GPU the same calls run on a real CUDA tensor and must succeed. Either way the CPU tensor is intact.
TEST_CASE("errors: moving data to or from CUDA", "[ops][errors]") {
  Tensor cpu = ones({2, 2});
  if (!cuda::is_available()) {  // no CUDA backend in this build, or no visible GPU: a loud error naming CUDA
    Tensor gpu = fake_cuda({2, 2});
    REQUIRE_THROWS_AS(cpu.copy_(gpu), DeviceError);
    REQUIRE_THROWS_WITH(cpu.copy_(gpu), Contains("CUDA"));
    REQUIRE_THROWS_AS(gpu.cpu(), DeviceError);
    REQUIRE_THROWS_AS(gpu.sum(), DeviceError);
    REQUIRE_THROWS_AS(to_string(gpu), DeviceError);
    REQUIRE_THROWS_AS(cpu.to(Device(kCUDA, 0)), DeviceError);
    CHECK(cpu.version() == 0);
  } else {
    Tensor gpu = full({2, 2}, 3.0).to(Device(kCUDA, 0));
    cpu.copy_(gpu);
    CHECK(cpu.to_vector<float>() == std::vector<float>(4, 3.f));
    CHECK(gpu.sum().item<double>() == 12.0);
    CHECK(gpu.cpu().to_vector<float>() == std::vector<float>(4, 3.f));
    CHECK_THAT(to_string(gpu), Contains("cuda:0"));
    REQUIRE_THROWS_AS(cpu + gpu, DeviceError);
    CHECK(cpu.version() == 1);
  }
  // Asking for a device that does not exist fails the same way everywhere.
  REQUIRE_THROWS_AS(cpu.to(Device(kCUDA, 127)), DeviceError);
  REQUIRE_THROWS_WITH(cpu.to(Device(kCUDA, 127)), Contains("127"));
  // An index that does not fit a Device is refused when the Device is made, not wrapped to cuda:0.
  REQUIRE_THROWS_WITH(Device(kCUDA, 4096), Contains("index 4096 is out of range"));
  REQUIRE_THROWS_WITH(Device(kCUDA, -1), Contains("index -1 is out of range"));
  REQUIRE_THROWS_WITH(Device(kCPU, 1), Contains("the CPU has only index 0, got 1"));
}
