// tt::save / tt::load (io/safetensors.h): round trips of every dtype and layout, metadata,
// modules (identical outputs, strict errors, failed loads that change nothing), argument errors,
// and atomic writes (a failed save keeps the old file and leaves no temporary file behind).
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <limits>

#include "io_test_util.h"

using namespace tt;
using tt::testing::read_bytes;
using tt::testing::same_tensor;
using tt::testing::TempDir;
using tt::testing::write_bytes;

namespace {

struct Net : nn::Module {
  Net() : nn::Module("Net") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 8));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 3));
    steps = register_buffer("steps", tt::tensor({int64_t(0)}));
    mask = register_buffer("mask", tt::tensor({true, false, true}));
  }
  Tensor forward(const Tensor& x) { return fc2->forward(fc1->forward(x).relu()); }
  std::shared_ptr<nn::Linear> fc1, fc2;
  Tensor steps, mask;
};

// Deep copies of a module's state, to compare against after a failed load.
nn::StateDict snapshot(const nn::Module& m) {
  nn::StateDict out;
  for (const auto& [k, v] : m.state_dict()) out.insert(k, v.clone());
  return out;
}

bool same_state(const nn::StateDict& a, const nn::StateDict& b) {
  if (a.keys() != b.keys()) return false;
  for (const auto& [k, v] : a)
    if (!same_tensor(v, b[k])) return false;
  return true;
}

}  // namespace

TEST_CASE("save and load round-trip every dtype bit for bit", "[io]") {
  TempDir dir;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  nn::StateDict sd;
  sd.insert("f32", tt::tensor({1.5, -0.0, inf, -inf, nan, 3.25e-39}, kFloat32));
  sd.insert("f64", tt::tensor({{1.0 / 3, -2.0}, {nan, 1e308}}, kFloat64));
  sd.insert("i64", tt::tensor(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -1, 0,
                                                   std::numeric_limits<int64_t>::max()}));
  sd.insert("bool", tt::tensor({true, false, false, true, true}));
  sd.insert("scalar_f32", tt::scalar_tensor(2.5, kFloat32));
  sd.insert("scalar_f64", tt::scalar_tensor(-7.125, kFloat64));
  sd.insert("scalar_i64", tt::scalar_tensor(42, kInt64));
  sd.insert("scalar_bool", tt::scalar_tensor(true, kBool));
  sd.insert("empty_f32", tt::empty({0}, kFloat32));
  sd.insert("empty_i64", tt::empty({2, 0, 3}, kInt64));
  sd.insert("empty_bool", tt::empty({0, 4}, kBool));
  sd.insert("randn", tt::randn({3, 5, 2}, kFloat64));
  std::string path = dir.file("all.safetensors");
  save(sd, path);

  nn::StateDict back = load(path);
  REQUIRE(back.keys() == sd.keys());  // the order the state dict had
  for (const auto& [name, t] : sd) {
    INFO(name);
    CHECK(same_tensor(back[name], t));
    CHECK(back[name].device() == Device(kCPU));
    CHECK_FALSE(back[name].requires_grad());
  }
  CHECK(dir.entries() == std::vector<std::string>{"all.safetensors"});  // no temporary file left
}

TEST_CASE("non-contiguous tensors are saved packed", "[io]") {
  TempDir dir;
  Tensor base = tt::arange(0, 24, 1, kFloat32).reshape({4, 6});
  nn::StateDict sd;
  sd.insert("transposed", base.t());
  sd.insert("strided", base.slice(1, 1, 6, 2));  // [4, 3], step 2
  sd.insert("offset_row", base.select(0, 2));    // a view that starts mid-storage
  sd.insert("expanded", tt::tensor({1.0, 2.0}).unsqueeze(1).expand({2, 3}));  // stride 0
  sd.insert("permuted", tt::arange(0, 24, 1, kInt64).reshape({2, 3, 4}).permute({2, 0, 1}));
  sd.insert("bool_view", (base > 10.0).t());
  for (const auto& [name, t] : sd)
    if (name != "offset_row") REQUIRE_FALSE(t.is_contiguous());
  std::string path = dir.file("views.safetensors");
  save(sd, path);
  nn::StateDict back = load(path);
  for (const auto& [name, t] : sd) {
    INFO(name);
    CHECK(back[name].is_contiguous());
    CHECK(same_tensor(back[name], t));
  }
}

TEST_CASE("tensors that require grad are saved by value", "[io]") {
  TempDir dir;
  Tensor w = tt::randn({3, 3}).requires_grad_();
  Tensor y = (w * 2.0).sum();  // w is part of a graph
  nn::StateDict sd;
  sd.insert("w", w);
  save(sd, dir.file("w.safetensors"));
  nn::StateDict back = load(dir.file("w.safetensors"));
  CHECK(same_tensor(back["w"], w.detach()));
  CHECK_FALSE(back["w"].requires_grad());
  y.backward();  // the graph is untouched
  CHECK(w.grad().defined());
}

TEST_CASE("metadata round-trips and stays apart from the tensors", "[io]") {
  TempDir dir;
  std::map<std::string, std::string> meta{
      {"format", "pt"}, {"epoch", "3"}, {"empty", ""},
      {"quotes \" and \\ backslash", "line\nbreak\ttab"}, {"unicode", "λ → 😀"}};
  nn::StateDict sd;
  sd.insert("x", tt::ones({2}));
  std::string path = dir.file("meta.safetensors");
  save(sd, path, meta);
  CHECK(load_metadata(path) == meta);
  nn::StateDict back = load(path);
  CHECK(back.keys() == std::vector<std::string>{"x"});

  save(sd, path);  // no metadata at all
  CHECK(load_metadata(path).empty());
  CHECK(read_bytes(path).find("__metadata__") == std::string::npos);

  save(nn::StateDict(), path, {{"only", "metadata"}});  // no tensors
  CHECK(load(path).empty());
  CHECK(load_metadata(path) == std::map<std::string, std::string>{{"only", "metadata"}});
}

TEST_CASE("a module saved and loaded into a fresh module gives identical outputs", "[io]") {
  TempDir dir;
  manual_seed(1);
  Net a;
  a.steps.fill_(17);
  a.mask.copy_(tt::tensor({false, true, true}));
  std::string path = dir.file("net.safetensors");
  save(a, path, {{"step", "17"}});

  manual_seed(2);
  Net b;  // different initial weights
  Tensor x = tt::randn({5, 4});
  REQUIRE_FALSE(same_tensor(a.forward(x), b.forward(x)));
  nn::LoadResult r = load(b, path);
  CHECK(r.missing_keys.empty());
  CHECK(r.unexpected_keys.empty());
  CHECK(same_tensor(a.forward(x), b.forward(x)));
  CHECK(same_state(snapshot(a), snapshot(b)));
  CHECK(b.steps.item<int64_t>() == 17);
  CHECK(b.fc1->weight.requires_grad());  // parameters stay parameters
  CHECK(load_metadata(path).at("step") == "17");
}

TEST_CASE("loading converts to the module's dtype", "[io]") {
  TempDir dir;
  Net a;
  std::string path = dir.file("net32.safetensors");
  save(a, path);
  Net b;
  b.to(kFloat64);
  load(b, path);
  CHECK(b.fc1->weight.dtype() == kFloat64);
  CHECK_ALLCLOSE(b.fc1->weight, a.fc1->weight.to(kFloat64), 0.0, 0.0);
  CHECK(b.steps.dtype() == kInt64);
}

TEST_CASE("load into a module reports strict errors and changes nothing", "[io]") {
  TempDir dir;
  Net a;
  Net b;
  nn::StateDict before = snapshot(b);
  std::string path = dir.file("partial.safetensors");

  SECTION("a missing key") {
    nn::StateDict sd = a.state_dict();
    nn::StateDict partial;
    for (const auto& [k, v] : sd)
      if (k != "fc2.bias") partial.insert(k, v);
    save(partial, path);
    REQUIRE_THROWS_AS(load(b, path), Error);
    REQUIRE_THROWS_WITH(load(b, path), Catch::Contains("missing keys: fc2.bias"));
    CHECK(same_state(snapshot(b), before));
    nn::LoadResult r = load(b, path, /*strict=*/false);  // non-strict: loads the rest
    CHECK(r.missing_keys == std::vector<std::string>{"fc2.bias"});
    CHECK(same_tensor(b.fc1->weight, a.fc1->weight));
    CHECK(same_tensor(b.fc2->bias, before["fc2.bias"]));
  }
  SECTION("an unexpected key") {
    nn::StateDict sd = a.state_dict();
    sd.insert("extra", tt::zeros({1}));
    save(sd, path);
    REQUIRE_THROWS_WITH(load(b, path), Catch::Contains("unexpected keys: extra"));
    CHECK(same_state(snapshot(b), before));
    nn::LoadResult r = load(b, path, /*strict=*/false);
    CHECK(r.unexpected_keys == std::vector<std::string>{"extra"});
  }
  SECTION("a shape mismatch, strict or not") {
    nn::StateDict sd = a.state_dict();
    sd["fc1.weight"] = tt::zeros({8, 5});
    save(sd, path);
    REQUIRE_THROWS_AS(load(b, path), ShapeError);
    REQUIRE_THROWS_AS(load(b, path, false), ShapeError);
    REQUIRE_THROWS_WITH(load(b, path), Catch::Contains("fc1.weight") && Catch::Contains("[8, 5]"));
    CHECK(same_state(snapshot(b), before));
  }
}

TEST_CASE("a load that fails on the file leaves the module as it was", "[io]") {
  TempDir dir;
  Net a, b;
  nn::StateDict before = snapshot(b);
  std::string path = dir.file("net.safetensors");
  save(a, path);
  std::string good = read_bytes(path);

  SECTION("a missing file") {
    REQUIRE_THROWS_AS(load(b, dir.file("nope.safetensors")), IOError);
    REQUIRE_THROWS_WITH(load(b, dir.file("nope.safetensors")),
                        Catch::StartsWith("load: " + dir.file("nope.safetensors") + ": cannot open the file") &&
                            Catch::Contains("No such file or directory"));
  }
  SECTION("a truncated file") {
    write_bytes(path, good.substr(0, good.size() - 1));
    REQUIRE_THROWS_AS(load(b, path), IOError);
  }
  SECTION("a BOOL byte that is neither 0 nor 1") {
    // The data holds steps (8 bytes), then mask (3 bytes), then the Linear layers' tensors.
    std::string bad = good;
    bad[8 + tt::testing::read_u64le(good) + 8 + 1] = char(7);
    write_bytes(path, bad);
    REQUIRE_THROWS_WITH(load(b, path),
                        Catch::Contains("tensor \"mask\": BOOL bytes must be 0 or 1, got 7 at element 1"));
  }
  CHECK(same_state(snapshot(b), before));
}

TEST_CASE("save refuses names and tensors it cannot write", "[io]") {
  TempDir dir;
  std::string path = dir.file("x.safetensors");
  nn::StateDict ok;
  ok.insert("x", tt::ones({2}));
  save(ok, path);
  std::string old = read_bytes(path);

  nn::StateDict sd;
  SECTION("an empty name") {
    sd.insert("", tt::ones({1}));
    REQUIRE_THROWS_WITH(save(sd, path), "save: " + path + ": tensor names must be non-empty");
  }
  SECTION("the reserved name") {
    sd.insert("__metadata__", tt::ones({1}));
    REQUIRE_THROWS_WITH(save(sd, path), Catch::Contains("\"__metadata__\" is the metadata's key"));
  }
  SECTION("an undefined tensor") {
    sd.insert("w", Tensor());
    REQUIRE_THROWS_WITH(save(sd, path), Catch::Contains("tensor \"w\" is undefined"));
  }
  SECTION("a name that is not UTF-8") {
    sd.insert("bad\xff", tt::ones({1}));
    REQUIRE_THROWS_WITH(save(sd, path), Catch::Contains("must be valid UTF-8"));
  }
  SECTION("metadata that is not UTF-8") {
    sd.insert("w", tt::ones({1}));
    REQUIRE_THROWS_AS(save(sd, path, {{"k", "\xc3"}}), Error);
  }
  CHECK(read_bytes(path) == old);
  CHECK(dir.entries() == std::vector<std::string>{"x.safetensors"});
}

TEST_CASE("saving over an existing file replaces it whole", "[io]") {
  TempDir dir;
  std::string path = dir.file("ckpt.safetensors");
  nn::StateDict first, second;
  first.insert("w", tt::randn({100}));
  second.insert("v", tt::arange(0, 3, 1, kInt64));
  save(first, path);
  save(second, path);
  nn::StateDict back = load(path);
  CHECK(back.keys() == std::vector<std::string>{"v"});
  CHECK(same_tensor(back["v"], second["v"]));
  CHECK(dir.entries() == std::vector<std::string>{"ckpt.safetensors"});
}

TEST_CASE("a save that fails while writing keeps the old file and no temporary file", "[io]") {
  // RLIMIT_FSIZE makes write() fail with EFBIG past 64 KiB (SIGXFSZ ignored): a deterministic
  // disk-full in the middle of the data, which also works as root.
  TempDir dir;
  std::string path = dir.file("ckpt.safetensors");
  nn::StateDict small, big;
  small.insert("w", tt::ones({4}));
  big.insert("w", tt::ones({1 << 18}));  // 1 MiB
  save(small, path);
  std::string old = read_bytes(path);

  struct rlimit saved {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limited = saved;
  limited.rlim_cur = 64 * 1024;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
  std::string message;
  try {
    save(big, path);
  } catch (const IOError& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, old_handler);

  CHECK_THAT(message, Catch::StartsWith("save: " + path + ": cannot write the temporary file " + path + ".tmp-") &&
                          Catch::Contains("File too large"));
  CHECK(read_bytes(path) == old);
  CHECK(dir.entries() == std::vector<std::string>{"ckpt.safetensors"});
  CHECK(same_tensor(load(path)["w"], small["w"]));
}

TEST_CASE("a save onto a directory or into a missing directory fails cleanly", "[io]") {
  TempDir dir;
  nn::StateDict sd;
  sd.insert("w", tt::ones({3}));

  std::string target = dir.file("is_a_dir");
  std::filesystem::create_directory(target);
  write_bytes(target + "/inside", "keep me");
  REQUIRE_THROWS_AS(save(sd, target), IOError);
  REQUIRE_THROWS_WITH(save(sd, target), Catch::StartsWith("save: " + target + ": cannot rename"));
  CHECK(dir.entries() == std::vector<std::string>{"is_a_dir"});  // no temporary file
  CHECK(read_bytes(target + "/inside") == "keep me");

  std::string missing = dir.file("no/such/dir/w.safetensors");
  REQUIRE_THROWS_WITH(save(sd, missing),
                      Catch::StartsWith("save: " + missing + ": cannot create the temporary file") &&
                          Catch::Contains("No such file or directory"));
}

TEST_CASE("load refuses what is not a regular file", "[io]") {
  TempDir dir;
  REQUIRE_THROWS_AS(load(dir.path().string()), IOError);
  REQUIRE_THROWS_WITH(load(dir.path().string()), "load: " + dir.path().string() + ": not a regular file");
  REQUIRE_THROWS_WITH(load_metadata(dir.path().string()), Catch::StartsWith("load_metadata: "));
  std::string fifo = dir.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE_THROWS_WITH(load(fifo), "load: " + fifo + ": not a regular file");  // without waiting for a writer
}

TEST_CASE("CUDA tensors and modules save and load", "[io][cuda]") {
  TT_REQUIRE_CUDA();
  TempDir dir;
  std::string path = dir.file("gpu.safetensors");
  nn::StateDict sd;
  sd.insert("a", tt::randn({4, 5}).cuda());
  sd.insert("b", tt::randn({4, 5}).cuda().t());  // non-contiguous on the device
  sd.insert("i", tt::arange(0, 6, 1, kInt64).cuda());
  save(sd, path);
  nn::StateDict back = load(path);
  for (const auto& [name, t] : sd) {
    INFO(name);
    CHECK(back[name].device() == Device(kCPU));
    CHECK(same_tensor(back[name], t.cpu()));
  }

  Net a;
  save(a, path);
  Net b;
  b.to(Device(kCUDA, 0));
  load(b, path);
  CHECK(b.fc1->weight.is_cuda());
  Tensor x = tt::randn({2, 4});
  CHECK(same_tensor(b.fc1->weight.cpu(), a.fc1->weight));
  CHECK_ALLCLOSE(b.forward(x.cuda()).cpu(), a.forward(x));
  save(b, path);  // from the device
  Net c;
  load(c, path);
  CHECK(same_tensor(c.forward(x), a.forward(x)));
}
