// Fuzz-style tests of the loader: thousands of seeded mutations of a few valid files (bit flips,
// interesting bytes, truncations at every length, length fields near the edges, token-level and
// JSON-level edits). Every load must either succeed with tensors that match the header — read
// here by an independent JSON parser — or throw tt::IOError: never another exception, never a
// crash (CI runs this suite under AddressSanitizer and UBSan too, so the count stays modest).
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io_test_util.h"

using namespace tt;
using tt::testing::raw;
using tt::testing::read_bytes;
using tt::testing::read_u64le;
using tt::testing::st_file;
using tt::testing::TempDir;
using tt::testing::tensor_bytes;
using tt::testing::u64le;
using tt::testing::write_bytes;

namespace {

using json = nlohmann::json;

// Why `sd` does not match the file `bytes` (which load() accepted), or "" when it does.
std::string mismatch(const std::string& bytes, const nn::StateDict& sd) {
  uint64_t n = read_u64le(bytes);
  json j = json::parse(bytes.substr(8, n), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "the header is not a JSON object";
  size_t count = 0;
  uint64_t covered = 0;
  for (const auto& [name, info] : j.items()) {
    if (name == "__metadata__") continue;
    ++count;
    const Tensor* t = sd.find(name);
    if (!t) return "missing tensor " + name;
    std::string dtype = info.at("dtype");
    const char* expected = t->dtype() == kFloat32 ? "F32" : t->dtype() == kFloat64 ? "F64"
                         : t->dtype() == kInt64   ? "I64" : "BOOL";
    if (dtype != expected) return name + ": dtype " + dtype + " loaded as " + expected;
    if (Shape(info.at("shape").get<std::vector<int64_t>>()) != t->shape()) return name + ": shape differs";
    uint64_t begin = info.at("data_offsets").at(0), end = info.at("data_offsets").at(1);
    if (tensor_bytes(*t) != bytes.substr(8 + n + begin, end - begin)) return name + ": bytes differ";
    covered += end - begin;
  }
  if (count != sd.size()) return "the state dict has extra tensors";
  if (covered != bytes.size() - 8 - n) return "the tensors do not cover the data";
  return "";
}

std::string hex_prefix(const std::string& bytes) {
  std::ostringstream os;
  os << bytes.size() << " bytes:";
  for (size_t i = 0; i < bytes.size() && i < 256; ++i) os << ' ' << std::hex << int(uint8_t(bytes[i]));
  return os.str();
}

class Fuzzer {
 public:
  Fuzzer() : path_(dir_.file("fuzz.safetensors")) {}

  // Loads `bytes` (and, every fourth time, its metadata): IOError or a faithful result.
  void check(const std::string& bytes) {
    // A new file each time: truncating and rewriting one makes ext4 flush it on close (its
    // auto_da_alloc heuristic), which turns this CPU-bound loop into seconds of I/O waits.
    std::filesystem::remove(path_);
    write_bytes(path_, bytes);
    std::string problem;
    bool loaded = false;
    try {
      nn::StateDict sd = load(path_);
      loaded = true;
      try {
        problem = mismatch(bytes, sd);
      } catch (const std::exception& e) {  // the header did not have the shape load() promised
        problem = std::string("the accepted header does not read back: ") + e.what();
      }
    } catch (const IOError& e) {
      if (std::string(e.what()).rfind("load: " + path_ + ": ", 0) != 0)
        problem = std::string("an IOError without the op and path: ") + e.what();
    } catch (const std::exception& e) {
      problem = std::string("not an IOError: ") + e.what();
    }
    if (problem.empty() && ++count_ % 4 == 0) {
      try {
        load_metadata(path_);  // it checks the header as strictly, but reads no data
      } catch (const IOError& e) {
        if (loaded) problem = std::string("load_metadata refused what load accepted: ") + e.what();
      } catch (const std::exception& e) {
        problem = std::string("load_metadata threw something other than IOError: ") + e.what();
      }
    }
    (loaded ? loaded_ : rejected_)++;
    if (!problem.empty()) FAIL(problem << "\nfile: " << hex_prefix(bytes));
  }

  int loaded() const { return loaded_; }
  int rejected() const { return rejected_; }

 private:
  TempDir dir_;
  std::string path_;
  int count_ = 0, loaded_ = 0, rejected_ = 0;
};

// Seeds: our writer's file (every dtype, a 0-d and an empty tensor, metadata), a hand-made file
// with offsets out of order, and a tiny one.
std::vector<std::string> seed_files() {
  TempDir dir;
  nn::StateDict sd;
  manual_seed(7);
  sd.insert("weight", tt::randn({2, 3}));
  sd.insert("step", tt::scalar_tensor(3, kInt64));
  sd.insert("mask", tt::tensor({true, false, true, true}));
  sd.insert("empty", tt::empty({0}, kFloat64));
  sd.insert("bias", tt::tensor({0.5, -1.5}, kFloat64));
  save(sd, dir.file("seed.safetensors"), {{"format", "pt"}, {"epoch", "3"}});
  std::string ours = read_bytes(dir.file("seed.safetensors"));
  std::string handmade = st_file(
      R"({"b": {"dtype": "I64", "shape": [2], "data_offsets": [8, 24]}, )"
      R"("a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
      raw(std::vector<float>{1.0f, 2.0f}) + raw(std::vector<int64_t>{-3, 4}));
  std::string tiny =
      st_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", raw(std::vector<float>{9.0f}));
  return {ours, handmade, tiny};
}

const unsigned char kInteresting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '{', '}', '[', ']', '"', ',', ':',
                                      '-', '0', '1', '9', ' ', '\\', 'e', '.', 'n', 0xc3, 0xf0};

std::string mutate(std::string b, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return size_t(rng() % std::max<size_t>(n, 1)); };
  size_t kind = pick(8);
  if (b.empty()) return std::string(1, char(rng()));
  switch (kind) {
    case 0:  // flip 1-4 bits
      for (size_t i = 0, k = 1 + pick(4); i < k; ++i) b[pick(b.size())] ^= char(1 << pick(8));
      break;
    case 1:  // an interesting byte
      b[pick(b.size())] = char(kInteresting[pick(sizeof(kInteresting))]);
      break;
    case 2:  // truncate
      b.resize(pick(b.size()));
      break;
    case 3:  // insert a random or interesting byte
      b.insert(b.begin() + long(pick(b.size() + 1)),
               char(rng() % 2 ? rng() : kInteresting[pick(sizeof(kInteresting))]));
      break;
    case 4: {  // delete a range
      size_t at = pick(b.size());
      b.erase(at, 1 + pick(std::min<size_t>(16, b.size() - at)));
      break;
    }
    case 5: {  // copy a chunk over another place (duplicates tokens and entries)
      size_t from = pick(b.size()), len = 1 + pick(std::min<size_t>(40, b.size() - from)), to = pick(b.size());
      b.insert(to, b.substr(from, len));
      break;
    }
    case 6: {  // change a digit inside the header: shapes and offsets move
      uint64_t n = b.size() >= 8 ? std::min<uint64_t>(read_u64le(b), b.size() - 8) : 0;
      for (int tries = 0; tries < 32 && n > 0; ++tries) {
        size_t at = 8 + pick(n);
        if (b[at] >= '0' && b[at] <= '9') {
          b[at] = char('0' + pick(10));
          break;
        }
      }
      break;
    }
    default: {  // swap a dtype name for another
      const char* names[] = {"F32", "F64", "I64", "BOOL", "F16", "I32", "U8", "F3", "BF16"};
      for (const char* from : names) {
        size_t at = b.find(std::string("\"") + from + "\"");
        if (at != std::string::npos && pick(2)) {
          b.replace(at + 1, std::strlen(from), names[pick(9)]);
          break;
        }
      }
      break;
    }
  }
  return b;
}

// A random file with 1-3 tensors: a third of them valid, the others with one kind of fault
// (in one tensor) or, for "chaos", any mix of faults anywhere. The data has the right length unless
// the fault is the data's.
std::string random_file(std::mt19937_64& rng) {
  enum Fault { kNone, kDtype, kShape, kRank, kOffsets, kName, kMissingField, kDupField, kExtraField, kData, kMeta,
               kChaos };
  auto pick = [&](size_t n) { return size_t(rng() % n); };
  const Fault fault = pick(3) == 0 ? kNone : Fault(1 + pick(kChaos));
  const size_t n_entries = 1 + pick(3), victim = pick(n_entries);  // the tensor with the fault
  size_t e = 0;
  auto wrong = [&](Fault f) {
    bool here = f == kMeta || f == kData || e == victim;
    return (fault == f && here) || (fault == kChaos && pick(3) == 0);
  };
  const char* dtypes[] = {"\"F32\"", "\"F64\"", "\"I64\"", "\"BOOL\"", "\"F16\"", "\"X\"", "5", "null"};
  const size_t sizes[] = {4, 8, 8, 1};
  const char* bad_dims[] = {"-1", "4294967296", "9223372036854775807", "9223372036854775808", "1.5", "\"2\"", "[]"};
  const char* names[] = {"__metadata__", "", "c.d"};

  std::ostringstream h;
  h << "{";
  if (wrong(kMeta)) h << (pick(2) ? R"("__metadata__":{"k":1},)" : R"("__metadata__":[],)");
  else if (pick(4) == 0) h << R"("__metadata__":{"k":"v"},)";
  uint64_t offset = 0;
  for (e = 0; e < n_entries; ++e) {
    if (e) h << ",";
    size_t d = wrong(kDtype) ? 4 + pick(4) : pick(4);
    uint64_t numel = 1;
    std::ostringstream shape;
    shape << "[";
    bool bad_shape = wrong(kShape);
    size_t rank = wrong(kRank) ? 17 : bad_shape ? 1 + pick(3) : pick(4);
    for (size_t i = 0; i < rank; ++i) {
      if (i) shape << ",";
      if (bad_shape && i == 0) {
        shape << bad_dims[pick(7)];
      } else {
        size_t dim = pick(4);
        shape << dim;
        numel *= dim;
      }
    }
    shape << "]";
    uint64_t nbytes = numel * (d < 4 ? sizes[d] : 4);
    uint64_t begin = offset, end = offset + nbytes, back = std::min<uint64_t>(begin, 4);
    std::string offsets;
    switch (wrong(kOffsets) ? pick(7) : 7) {
      case 0: offsets = "[" + std::to_string(end) + "," + std::to_string(begin) + "]"; break;  // swapped
      case 1: offsets = "[" + std::to_string(begin) + "," + std::to_string(end + 1) + "]"; break;
      case 2: offsets = "[" + std::to_string(begin) + ",18446744073709551615]"; break;
      case 3: offsets = "[-" + std::to_string(begin + 1) + "," + std::to_string(end) + "]"; break;
      case 4: offsets = "[" + std::to_string(begin) + "]"; break;
      case 5: offsets = "[" + std::to_string(begin + 4) + "," + std::to_string(end + 4) + "]"; break;  // a hole
      case 6:  // reaches back into the previous tensor
        offsets = "[" + std::to_string(begin - back) + "," + std::to_string(end - back) + "]";
        break;
      default: offsets = "[" + std::to_string(begin) + "," + std::to_string(end) + "]";
    }
    offset = end;
    std::string name = std::string("t") + char('0' + e);
    if (wrong(kName)) name = pick(4) == 0 ? std::string("t") + char('0' + (e ? e - 1 : 0)) : names[pick(3)];
    h << "\"" << name << "\":{";
    std::vector<std::string> fields = {"\"dtype\":" + std::string(dtypes[d]), "\"shape\":" + shape.str(),
                                       "\"data_offsets\":" + offsets};
    if (wrong(kMissingField)) fields.erase(fields.begin() + long(pick(3)));
    if (wrong(kDupField)) fields.push_back(fields[pick(fields.size())]);
    if (wrong(kExtraField)) fields.push_back("\"extra\":0");
    std::shuffle(fields.begin(), fields.end(), rng);
    for (size_t i = 0; i < fields.size(); ++i) h << (i ? "," : "") << fields[i];
    h << "}";
  }
  h << "}";
  std::string header = h.str();
  header.append(pick(9), ' ');
  std::string data(size_t(offset), '\0');
  for (char& c : data) c = char(pick(2));  // valid BOOL bytes, arbitrary numbers
  if (wrong(kData))  // shorter or longer than the tensors need
    data.resize(pick(2) && !data.empty() ? data.size() - 1 - pick(data.size()) : data.size() + 1 + pick(3));
  return st_file(header, data);
}

}  // namespace

TEST_CASE("the fuzz seeds load and match their headers", "[io][fuzz]") {
  Fuzzer f;
  for (const std::string& seed : seed_files()) f.check(seed);
  CHECK(f.loaded() == 3);
}

TEST_CASE("mutated files load faithfully or throw IOError", "[io][fuzz]") {
  Fuzzer f;
  std::mt19937_64 rng(20240611);
  for (const std::string& seed : seed_files())
    for (int i = 0; i < 2000; ++i) {
      std::string b = seed;
      for (size_t k = 0, rounds = 1 + rng() % 3; k < rounds; ++k) b = mutate(b, rng);
      f.check(b);
    }
  INFO("loaded " << f.loaded() << ", rejected " << f.rejected());
  CHECK(f.rejected() > 5000);
  CHECK(f.loaded() > 100);  // data-byte mutations keep files valid: the success path is exercised
}

TEST_CASE("truncation at every length and edgy length fields throw IOError", "[io][fuzz]") {
  Fuzzer f;
  std::vector<std::string> seeds = seed_files();
  for (const std::string& seed : seeds) {
    for (size_t len = 0; len < seed.size(); ++len) f.check(seed.substr(0, len));
    f.check(seed + " ");  // one byte too many: it belongs to no tensor
    uint64_t n = read_u64le(seed), size = seed.size();
    for (uint64_t len : {uint64_t(0), uint64_t(1), uint64_t(7), n - 1, n + 1, size - 9, size - 8, size - 7, size,
                         uint64_t(1) << 31, uint64_t(1) << 32, uint64_t(100'000'000), uint64_t(100'000'001),
                         uint64_t(1) << 63, ~uint64_t(0)})
      f.check(u64le(len) + seed.substr(8));
  }
  CHECK(f.loaded() == 0);
}

TEST_CASE("random headers built from right and wrong parts load faithfully or throw IOError", "[io][fuzz]") {
  Fuzzer f;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; ++i) f.check(random_file(rng));
  INFO("loaded " << f.loaded() << ", rejected " << f.rejected());
  CHECK(f.loaded() > 800);  // the valid third, and faults that happen to be harmless
  CHECK(f.rejected() > 1500);
}
