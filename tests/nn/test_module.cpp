// nn::Module (nn/module.h): registration, dotted names, modes, conversion, state dicts (strict,
// atomic), printing; and the containers Sequential / ModuleList (nn/container.h).
#include <sstream>
#include <string>

#include "test_util.h"

using namespace tt;

namespace {

struct Block : nn::Module {
  Block() {
    fc = register_module("fc", std::make_shared<nn::Linear>(3, 4));
    scale = register_parameter("scale", ones({4}));
    steps = register_buffer("steps", zeros({1}, kInt64));
    running = register_buffer("running", zeros({4}));
  }
  Tensor forward(const Tensor& x) { return fc->forward(x) * scale; }
  std::shared_ptr<nn::Linear> fc;
  Tensor scale, steps, running;
};

struct Net : nn::Module {
  Net() {
    embed = register_module("embed", std::make_shared<nn::Linear>(2, 3));
    blocks = register_module("blocks", std::make_shared<nn::ModuleList>());
    blocks->push_back(std::make_shared<Block>());
    blocks->push_back(std::make_shared<Block>());
    head = register_module("head", std::make_shared<nn::Linear>(nn::LinearOptions(4, 2).bias(false)));
    drop = register_module("drop", std::make_shared<nn::Dropout>(0.5));
  }
  std::shared_ptr<nn::Linear> embed, head;
  std::shared_ptr<nn::ModuleList> blocks;
  std::shared_ptr<nn::Dropout> drop;
};

}  // namespace

TEST_CASE("named_parameters uses dotted names in registration order", "[nn][module]") {
  Net net;
  std::vector<std::string> expected = {"embed.weight",       "embed.bias",     "blocks.0.scale",
                                       "blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.1.scale",
                                       "blocks.1.fc.weight", "blocks.1.fc.bias", "head.weight"};
  CHECK(net.named_parameters().keys() == expected);
  CHECK(net.parameters().size() == expected.size());
  for (const Tensor& p : net.parameters()) CHECK(p.requires_grad());
  // Non-recursive: only the module's own.
  CHECK(net.named_parameters(false).empty());
  CHECK(net.blocks->ptr<Block>(0)->named_parameters(false).keys() == std::vector<std::string>{"scale"});
  CHECK(net.named_buffers().keys() ==
        std::vector<std::string>{"blocks.0.steps", "blocks.0.running", "blocks.1.steps", "blocks.1.running"});
  CHECK(net.children().size() == 4);
  CHECK(net.named_modules().keys() == std::vector<std::string>{"", "embed", "blocks", "blocks.0", "blocks.0.fc",
                                                               "blocks.1", "blocks.1.fc", "head", "drop"});
  // Handles: the member and the entry are one tensor.
  CHECK(net.named_parameters()["head.weight"].is_same(net.head->weight));
  // 2*3+3 + 2*(4 + 3*4+4) + 4*2 = 9 + 40 + 8
  CHECK(net.num_parameters() == 57);
}

TEST_CASE("registration rejects bad names and duplicates", "[nn][module][errors]") {
  nn::Module m;
  m.register_parameter("w", zeros({2}));
  REQUIRE_THROWS_WITH(m.register_parameter("w", zeros({2})), Catch::Contains("\"w\" is already a parameter"));
  REQUIRE_THROWS_WITH(m.register_buffer("w", zeros({2})), Catch::Contains("already a parameter"));
  REQUIRE_THROWS_WITH(m.register_parameter("a.b", zeros({2})), Catch::Contains("must not contain '.'"));
  REQUIRE_THROWS_WITH(m.register_parameter("", zeros({2})), Catch::Contains("must not be empty"));
  REQUIRE_THROWS_WITH(m.register_module("w", std::make_shared<nn::ReLU>()), Catch::Contains("already a parameter"));
  REQUIRE_THROWS_WITH(m.register_module("x", std::shared_ptr<nn::ReLU>()), Catch::Contains("null module"));
  REQUIRE_THROWS_WITH(m.register_parameter("i", zeros({2}, kInt64)), Catch::Contains("floating-point"));
  Tensor leaf = ones({2}, TensorOptions().requires_grad(true));
  REQUIRE_THROWS_WITH(m.register_parameter("nl", leaf * 2), Catch::Contains("leaf"));
}

TEST_CASE("train and eval reach every descendant", "[nn][module]") {
  Net net;
  CHECK(net.is_training());
  net.eval();
  CHECK_FALSE(net.is_training());
  CHECK_FALSE(net.drop->is_training());
  CHECK_FALSE(net.blocks->ptr<Block>(1)->fc->is_training());
  net.train();
  CHECK(net.blocks->ptr<Block>(1)->fc->is_training());
}

TEST_CASE("EvalModeGuard gives eval behaviour on its thread without changing any flag", "[nn][module]") {
  Net net;
  {
    nn::EvalModeGuard outer;
    CHECK(nn::EvalModeGuard::is_active());
    CHECK_FALSE(net.is_training());
    CHECK_FALSE(net.drop->is_training());
    {
      nn::EvalModeGuard inner;  // nests
    }
    CHECK(nn::EvalModeGuard::is_active());
    net.train();  // the flag changes, the behaviour on this thread stays eval
    CHECK_FALSE(net.is_training());
  }
  CHECK_FALSE(nn::EvalModeGuard::is_active());
  CHECK(net.is_training());
  CHECK(net.blocks->ptr<Block>(1)->fc->is_training());
}

TEST_CASE("state_dict round trips and shares storage", "[nn][module][state_dict]") {
  manual_seed(1);
  Net a;
  manual_seed(2);
  Net b;
  nn::StateDict sd = a.state_dict();
  CHECK(sd.size() == 13);  // 9 parameters + 4 buffers
  CHECK(sd.keys()[2] == "blocks.0.scale");
  CHECK(sd.keys()[3] == "blocks.0.steps");  // a module's own parameters, then its own buffers, then children
  CHECK(sd["embed.weight"].data_ptr<float>() == a.embed->weight.data_ptr<float>());
  CHECK_FALSE(sd["embed.weight"].requires_grad());
  CHECK_FALSE(testing::allclose(a.head->weight, b.head->weight));
  Tensor b_head = b.head->weight;
  nn::LoadResult r = b.load_state_dict(sd);
  CHECK(r.missing_keys.empty());
  CHECK(r.unexpected_keys.empty());
  CHECK_ALLCLOSE(b.head->weight, a.head->weight, 0, 0);
  CHECK(b.head->weight.is_same(b_head));  // loaded in place: same tensor
  CHECK(b.head->weight.requires_grad());
}

TEST_CASE("load_state_dict checks everything and changes nothing on error", "[nn][module][state_dict][errors]") {
  manual_seed(3);
  Net net;
  nn::StateDict before = net.state_dict();
  std::vector<Tensor> saved;
  for (const auto& [k, t] : before) saved.push_back(t.clone());
  auto unchanged = [&] {
    size_t i = 0;
    for (const auto& [k, t] : net.state_dict()) {
      CHECK_ALLCLOSE(t, saved[i], 0, 0);
      ++i;
    }
  };

  SECTION("missing key") {
    nn::StateDict sd;
    for (const auto& [k, t] : before)
      if (k != "head.weight") sd.insert(k, zeros_like(t));
    REQUIRE_THROWS_WITH(net.load_state_dict(sd), Catch::Contains("missing keys: head.weight"));
    unchanged();
    nn::LoadResult r = net.load_state_dict(sd, /*strict=*/false);
    CHECK(r.missing_keys == std::vector<std::string>{"head.weight"});
    CHECK(net.embed->weight.sum().item<float>() == 0.0f);
  }
  SECTION("unexpected key") {
    nn::StateDict sd;
    for (const auto& [k, t] : before) sd.insert(k, zeros_like(t));
    sd.insert("tail.weight", zeros({1}));
    REQUIRE_THROWS_WITH(net.load_state_dict(sd), Catch::Contains("unexpected keys: tail.weight"));
    unchanged();
    CHECK(net.load_state_dict(sd, false).unexpected_keys == std::vector<std::string>{"tail.weight"});
  }
  SECTION("shape mismatch, even when not strict") {
    nn::StateDict sd;
    for (const auto& [k, t] : before) sd.insert(k, k == "blocks.1.fc.bias" ? zeros({5}) : zeros_like(t));
    REQUIRE_THROWS_AS(net.load_state_dict(sd, false), ShapeError);
    REQUIRE_THROWS_WITH(net.load_state_dict(sd), Catch::Contains("blocks.1.fc.bias: shape [5] in the state dict, [4] "
                                                                 "in the module"));
    unchanged();
  }
  SECTION("int64 and bool values load into float32 parameters, as PyTorch's copy_ converts them") {
    nn::StateDict sd;
    for (const auto& [k, t] : before) {
      if (k == "embed.bias")
        sd.insert(k, tensor({-2, 0, 7}));  // int64
      else if (k == "embed.weight")
        sd.insert(k, ones(t.shape(), kBool));
      else
        sd.insert(k, t);
    }
    net.load_state_dict(sd);
    CHECK(net.embed->bias.dtype() == kFloat32);
    CHECK(net.embed->bias.to_vector<float>() == std::vector<float>{-2.0f, 0.0f, 7.0f});
    CHECK(net.embed->weight.dtype() == kFloat32);
    CHECK(net.embed->weight.sum().item<float>() == float(net.embed->weight.numel()));
  }
  SECTION("float64 values load into float32 parameters") {
    nn::StateDict sd;
    for (const auto& [k, t] : before) sd.insert(k, t.to(t.is_floating_point() ? kFloat64 : t.dtype()));
    net.load_state_dict(sd);
    CHECK(net.embed->weight.dtype() == kFloat32);
    unchanged();
  }
}

TEST_CASE("to(dtype) converts in place and keeps integer buffers", "[nn][module]") {
  Net net;
  Tensor w = net.embed->weight;
  Tensor x = randn({5, 2});
  net.embed->forward(x).sum().backward();
  REQUIRE(w.grad().defined());
  std::vector<float> before = w.to_vector<float>();
  net.to(kFloat64);
  CHECK(w.dtype() == kFloat64);  // the same handle sees the new data
  CHECK(net.embed->weight.is_same(w));
  CHECK(w.requires_grad());
  CHECK(w.grad().defined());
  CHECK(w.grad().dtype() == kFloat64);
  CHECK(net.blocks->ptr<Block>(0)->steps.dtype() == kInt64);
  CHECK(net.blocks->ptr<Block>(0)->running.dtype() == kFloat64);
  std::vector<double> after = w.to_vector<double>();
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i] == double(before[i]));
  // The converted module computes in float64 and trains.
  Tensor y = net.embed->forward(x.to(kFloat64));
  CHECK(y.dtype() == kFloat64);
  REQUIRE_THROWS_WITH(net.to(kInt64), Catch::Contains("floating-point"));
  net.to(Device(kCPU));
  CHECK(w.device() == Device(kCPU));
}

TEST_CASE("zero_grad sets to none or zeroes", "[nn][module]") {
  nn::Linear fc(3, 2);
  fc(ones({4, 3})).sum().backward();
  REQUIRE(fc.weight.grad().defined());
  fc.zero_grad(/*set_to_none=*/false);
  REQUIRE(fc.weight.grad().defined());
  CHECK(fc.weight.grad().abs().sum().item<float>() == 0.0f);
  fc.zero_grad();
  CHECK_FALSE(fc.weight.grad().defined());
  CHECK_FALSE(fc.bias.grad().defined());
}

TEST_CASE("a module prints as a tree with parameter counts", "[nn][module][print]") {
  nn::Sequential seq(nn::Linear(784, 256), nn::ReLU(), nn::Dropout(0.1), nn::Linear(256, 10));
  std::ostringstream os;
  os << seq;
  CHECK(os.str() ==
        "Sequential(\n"
        "  (0): Linear(in_features=784, out_features=256, bias=true)  # 200,960 params\n"
        "  (1): ReLU()\n"
        "  (2): Dropout(p=0.1)\n"
        "  (3): Linear(in_features=256, out_features=10, bias=true)  # 2,570 params\n"
        ")\n"
        "parameters: 203,530");
  Net net;
  std::ostringstream os2;
  os2 << net;
  CHECK(os2.str().rfind("Net(\n  (embed): Linear(in_features=2, out_features=3, bias=true)  # 9 params\n", 0) == 0);
  CHECK(os2.str().find("    (0): Block(\n      (fc): Linear") != std::string::npos);
  CHECK(os2.str().find("(head): Linear(in_features=4, out_features=2, bias=false)  # 8 params") != std::string::npos);
}

TEST_CASE("Sequential chains items and names them by index", "[nn][container]") {
  manual_seed(5);
  auto fc1 = std::make_shared<nn::Linear>(4, 8);
  nn::Sequential seq(fc1, nn::GELU(), nn::Linear(8, 2));
  CHECK(seq.size() == 3);
  CHECK(seq.named_parameters().keys() == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(seq.ptr<nn::Linear>(0) == fc1);  // shared with the caller
  Tensor x = randn({5, 4});
  Tensor expected = seq.ptr<nn::Linear>(2)->forward(gelu(fc1->forward(x)));
  CHECK_ALLCLOSE(seq(x), expected, 0, 0);
  CHECK(seq[-1]->name() == "Linear");
  REQUIRE_THROWS_WITH(seq.ptr<nn::ReLU>(1), Catch::Contains("item 1 is a GELU"));
  REQUIRE_THROWS_WITH(seq[3], Catch::Contains("index 3 is out of range for 3 items"));
  nn::Sequential empty_seq;
  CHECK(empty_seq(x).is_same(x));
  // Nested containers keep dotted names.
  nn::Sequential outer(std::make_shared<nn::Sequential>(nn::Linear(2, 2)), nn::Identity(), nn::Flatten());
  CHECK(outer.named_parameters().keys() == std::vector<std::string>{"0.0.weight", "0.0.bias"});
}

TEST_CASE("apply visits every module, children first", "[nn][module]") {
  Net net;
  std::vector<std::string> seen;
  net.apply([&](nn::Module& m) { seen.push_back(m.name()); });
  CHECK(seen == std::vector<std::string>{"Linear", "Linear", "Block", "Linear", "Block", "ModuleList", "Linear",
                                         "Dropout", "Net"});
  // Typical use: re-initialize every Linear.
  net.apply([](nn::Module& m) {
    if (auto* fc = dynamic_cast<nn::Linear*>(&m)) nn::init::zeros_(fc->weight);
  });
  CHECK(net.head->weight.abs().sum().item<float>() == 0.0f);
}

TEST_CASE("a tensor shared by two places is one parameter", "[nn][module]") {
  auto fc = std::make_shared<nn::Linear>(3, 3);
  nn::Sequential seq(fc, nn::ReLU(), fc);  // the same layer twice: tied weights
  CHECK(seq.named_parameters().keys() == std::vector<std::string>{"0.weight", "0.bias"});
  CHECK(seq.state_dict().keys() == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(seq.named_modules().size() == 3);  // "", "0", "1": the second use of fc is not listed again
  optim::SGD opt(seq.parameters(), optim::SGDOptions(0.1));  // each tensor once, so no error
  seq(ones({2, 3})).sum().backward();
  opt.step();
  CHECK(seq.num_parameters() == 12);
}

TEST_CASE("a module tree cannot become a cycle", "[nn][module][errors]") {
  auto a = std::make_shared<nn::Sequential>();
  auto b = std::make_shared<nn::Sequential>();
  a->register_module("b", b);
  REQUIRE_THROWS_WITH(b->register_module("a", a), Catch::Contains("would make the module tree a cycle"));
  auto c = std::make_shared<nn::Sequential>();
  b->register_module("c", c);
  REQUIRE_THROWS_WITH(c->register_module("a", a), Catch::Contains("cycle"));
}

TEST_CASE("registration details: flags, buffers made by ops, zero-size Linear", "[nn][module]") {
  nn::Module m;
  Tensor frozen = ones({2}, TensorOptions().requires_grad(true));
  m.register_parameter("frozen", frozen, /*requires_grad=*/false);
  CHECK_FALSE(frozen.requires_grad());  // LibTorch sets the flag either way
  REQUIRE_THROWS(m.register_parameter("frozen", ones({2})));
  Tensor w = ones({2}, TensorOptions().requires_grad(true));
  Tensor& scaled = m.register_buffer("scaled", w * 2);  // computed by an op: kept detached
  CHECK(scaled.is_leaf());
  CHECK_FALSE(scaled.requires_grad());
  m.to(kFloat64);  // works: every registered tensor is a leaf
  CHECK(scaled.dtype() == kFloat64);
  // Zero-size layers behave as PyTorch's: the output is the bias over the rows.
  nn::Linear empty_in(0, 3);
  CHECK_ALLCLOSE(empty_in(zeros({4, 0})), empty_in.bias.detach().expand({4, 3}), 0, 0);
  nn::Linear empty_out(3, 0);
  Tensor x = ones({2, 3}, TensorOptions().requires_grad(true));
  Tensor y = empty_out(x);
  CHECK(y.shape() == Shape{2, 0});
  y.sum().backward();
  CHECK_ALLCLOSE(x.grad(), zeros({2, 3}), 0, 0);
}

TEST_CASE("a failed load or conversion changes nothing", "[nn][module][state_dict][errors]") {
  nn::Module m;
  Tensor w = m.register_parameter("w", ones({3}));
  m.register_buffer("shared", ones({1}).expand({3}));  // an expanded view: not writable
  nn::StateDict sd;
  sd.insert("w", full({3}, 7.0));
  sd.insert("shared", full({3}, 7.0));
  REQUIRE_THROWS_WITH(m.load_state_dict(sd), Catch::Contains("shared: load_state_dict: unsupported operation"));
  // Not a shape problem, so not a ShapeError (the tt::Error above, of another kind).
  try {
    m.load_state_dict(sd);
  } catch (const ShapeError&) {
    FAIL("a tensor that cannot be written is not a ShapeError");
  } catch (const Error&) {
  }
  CHECK(w.sum().item<double>() == 3.0);  // w was not written before the failure was found
  // A state dict is a value: it copies and assigns.
  nn::StateDict copy;
  copy = sd;
  CHECK(copy.keys() == sd.keys());
  CHECK(copy["w"].is_same(sd["w"]));
}

TEST_CASE("replacing data is seen by a backward that saved the old data", "[nn][module]") {
  nn::Linear fc(2, 2);
  Tensor y = fc(ones({1, 2}, TensorOptions().requires_grad(true))).sum();
  fc.to(kFloat64);  // the weight saved for backward has been replaced
  REQUIRE_THROWS_WITH(y.backward(), Catch::Contains("modified by an inplace operation"));
}

TEST_CASE("a loss module's class weights are its own buffer", "[nn][module]") {
  Tensor w = tensor({1.0, 2.0, 3.0});
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(w));
  ce.to(kFloat64);
  CHECK(w.dtype() == kFloat32);  // the caller's tensor is untouched
  CHECK(ce.named_buffers()["weight"].dtype() == kFloat64);
}
