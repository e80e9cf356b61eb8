// Every rule of Note [safetensors validation] (tinytorch/io/header.cpp), each with a crafted
// file that breaks it: load() must throw tt::IOError "load: <path>: <rule>, got <values>".
#include <sstream>

#include "io_test_util.h"

using namespace tt;
using tt::testing::raw;
using tt::testing::st_file;
using tt::testing::TempDir;
using tt::testing::u64le;
using tt::testing::write_bytes;

namespace {

// One F32 tensor [2] over 8 bytes: the base most cases bend.
const std::string kF32Data = raw(std::vector<float>{1.0f, 2.0f});

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

// A header object of the given entries.
std::string obj(std::initializer_list<std::string> entries) {
  std::string out = "{";
  for (const std::string& e : entries) out += (out.size() > 1 ? "," : "") + e;
  return out + "}";
}

// A header with the one tensor "a".
std::string one(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return obj({entry("a", dtype, shape, offsets)});
}

// Writes `bytes` and requires load() and load_metadata() to throw IOError with `fragment` in a
// message that starts with "<op>: <path>: ".
void require_rejected(const std::string& bytes, const std::string& fragment) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  write_bytes(path, bytes);
  INFO("expected: " << fragment);
  REQUIRE_THROWS_AS(load(path), IOError);
  REQUIRE_THROWS_WITH(load(path), Catch::StartsWith("load: " + path + ": ") && Catch::Contains(fragment));
  // load_metadata validates the header as strictly (it skips only the data checks).
  if (fragment.find("BOOL") == std::string::npos)
    REQUIRE_THROWS_WITH(load_metadata(path), Catch::StartsWith("load_metadata: " + path + ": ") &&
                                                 Catch::Contains(fragment));
}

nn::StateDict load_bytes(const std::string& bytes) {
  TempDir dir;
  write_bytes(dir.file("ok.safetensors"), bytes);
  return load(dir.file("ok.safetensors"));
}

}  // namespace

TEST_CASE("the crafted base file is valid", "[io]") {
  nn::StateDict sd = load_bytes(st_file(one("F32", "[2]", "[0,8]"), kF32Data));
  REQUIRE(sd.size() == 1);
  CHECK(sd["a"].to_vector<float>() == std::vector<float>{1.0f, 2.0f});
}

TEST_CASE("the length field must fit the file and the limit", "[io]") {
  require_rejected("", "the file must start with an 8-byte header length, got a file of 0 bytes");
  require_rejected(std::string(7, '\0'), "got a file of 7 bytes");
  require_rejected(u64le(~uint64_t(0)) + "{}",
                   "the header length must be at most 100000000 bytes, got 18446744073709551615");
  require_rejected(u64le(100'000'001) + "{}", "at most 100000000 bytes, got 100000001");
  require_rejected(u64le(3) + "{}", "the header length must fit in the file (2 bytes after the length field), got 3");
  require_rejected(u64le(0), "the header is empty");
}

TEST_CASE("the header must be one JSON object starting with a brace", "[io]") {
  require_rejected(st_file(" {}"), "the header must start with '{', got byte 0x20");
  require_rejected(st_file("[]"), "must start with '{', got byte 0x5b");
  require_rejected(st_file("{\"a\":"), "the header is not valid JSON");
  require_rejected(st_file("{} x"), "the header is not valid JSON");
  require_rejected(st_file("{}{}"), "the header is not valid JSON");
  require_rejected(st_file(std::string("{}\0", 3)), "the header is not valid JSON");
  require_rejected(st_file("{\"a\xff\":1}"), "the header is not valid JSON");  // not UTF-8
  require_rejected(st_file("{\"a\":{\"dtype\":\"F32\",}}"), "the header is not valid JSON");
  // A hostile token is quoted, shortened, in the message.
  TempDir dir;
  write_bytes(dir.file("long"), st_file("{\"" + std::string(100000, 'x')));
  try {
    load(dir.file("long"));
    FAIL("expected an IOError");
  } catch (const IOError& e) {
    CHECK(std::string(e.what()).size() < 600);
  }
}

TEST_CASE("padding and whitespace after the object are accepted", "[io]") {
  std::string h = one("F32", "[2]", "[0,8]");
  CHECK(load_bytes(st_file(h + "      ", kF32Data)).size() == 1);
  CHECK(load_bytes(st_file(h + "\n", kF32Data)).size() == 1);
  CHECK(load_bytes(st_file("{ \"a\" : { \"data_offsets\" : [ 0 , 8 ], \"shape\" : [ 2 ], \"dtype\" : \"F32\" } }",
                           kF32Data)).size() == 1);
  CHECK(load_bytes(st_file("{}")).empty());
  CHECK(load_bytes(st_file("{\"__metadata__\":{}}")).empty());
}

TEST_CASE("keys must be unique at every level", "[io]") {
  require_rejected(st_file(obj({entry("a", "F32", "[1]", "[0,4]"), entry("a", "F32", "[1]", "[4,8]")}), kF32Data),
                   "duplicate key \"a\"");
  require_rejected(st_file("{\"__metadata__\":{},\"__metadata__\":{}}"), "duplicate key \"__metadata__\"");
  require_rejected(st_file("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}"), "duplicate key \"k\" in __metadata__");
  require_rejected(st_file(R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", kF32Data),
                   "tensor \"a\": duplicate field \"dtype\"");
}

TEST_CASE("metadata must map strings to strings", "[io]") {
  require_rejected(st_file("{\"__metadata__\":[]}"), "__metadata__ must be an object of strings, got an array");
  require_rejected(st_file("{\"__metadata__\":\"x\"}"), "__metadata__ must be an object of strings, got a string");
  require_rejected(st_file("{\"__metadata__\":{\"k\":1}}"),
                   "__metadata__ values must be strings, got a number for \"k\"");
  require_rejected(st_file("{\"__metadata__\":{\"k\":null}}"), "got null for \"k\"");
  require_rejected(st_file("{\"__metadata__\":{\"k\":{}}}"), "got an object for \"k\"");
}

TEST_CASE("tensor entries must hold exactly dtype, shape and data_offsets", "[io]") {
  require_rejected(st_file("{\"a\":1}"),
                   "tensor \"a\" must be an object with dtype, shape and data_offsets, got a number");
  require_rejected(st_file("{\"a\":[]}"), "got an array");
  require_rejected(st_file("{\"\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}"),
                   "tensor names must be non-empty");
  require_rejected(st_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", kF32Data),
                   "tensor \"a\": missing field data_offsets");
  require_rejected(st_file("{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", kF32Data), "missing field dtype");
  require_rejected(st_file("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", kF32Data), "missing field shape");
  require_rejected(st_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"offsets\":[0,8]}}", kF32Data),
                   "tensor \"a\": unknown field \"offsets\"");
  require_rejected(st_file("{\"a\":{\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]}}", kF32Data),
                   "tensor \"a\": dtype must be a string, got a number");
  require_rejected(st_file("{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", kF32Data),
                   "tensor \"a\": shape must be an array of integers, got a number");
  require_rejected(st_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":{}}}", kF32Data),
                   "tensor \"a\": data_offsets must be an array of two integers, got an object");
}

TEST_CASE("shapes must be small non-negative integers", "[io]") {
  require_rejected(st_file(one("F32", "[-1]", "[0,8]"), kF32Data),
                   "tensor \"a\": shape entries must be non-negative integers, got -1");
  require_rejected(st_file(one("F32", "[2.0]", "[0,8]"), kF32Data), "non-negative integers, got 2.0");
  require_rejected(st_file(one("F32", "[1e3]", "[0,8]"), kF32Data), "non-negative integers, got 1e3");
  require_rejected(st_file(one("F32", "[\"2\"]", "[0,8]"), kF32Data), "non-negative integers, got a string");
  require_rejected(st_file(one("F32", "[[2]]", "[0,8]"), kF32Data), "non-negative integers, got an array");
  require_rejected(st_file(one("F32", "[99999999999999999999]", "[0,8]"), kF32Data),
                   "non-negative integers, got 99999999999999999999");
  require_rejected(st_file(one("F32", "[9223372036854775808]", "[0,8]"), kF32Data),
                   "shape entry 9223372036854775808 does not fit in int64");
  std::string dims17 = "[1";
  for (int i = 0; i < 16; ++i) dims17 += ",1";
  require_rejected(st_file(one("F32", dims17 + "]", "[0,4]"), kF32Data.substr(0, 4)),
                   "shape has more than 16 dimensions");
  require_rejected(st_file(one("F32", "[4294967296,4294967296]", "[0,8]"), kF32Data),
                   "shape [4294967296, 4294967296] has more elements than int64 can count");
  // Zeros do not hide an overflow in the other dimensions (strides must stay representable).
  require_rejected(st_file(one("F32", "[0,4294967296,4294967296]", "[0,0]")),
                   "has more elements than int64 can count");
  require_rejected(st_file(one("F64", "[2305843009213693952]", "[0,8]"), kF32Data),
                   "shape [2305843009213693952] needs more bytes than 64 bits can count");
}

TEST_CASE("dtypes must be ones tinytorch holds", "[io]") {
  for (const char* d : {"F16", "I32", "U8", "I8", "F8_E4M3"})
    require_rejected(st_file(one(d, "[2]", "[0,8]"), kF32Data),
                     std::string("tensor \"a\": unsupported dtype ") + d +
                         " (tinytorch reads F32, F64, I64, BOOL and BF16)");
  require_rejected(st_file(one("F33", "[2]", "[0,8]"), kF32Data), "tensor \"a\": unknown dtype \"F33\"");
  require_rejected(st_file(one("f32", "[2]", "[0,8]"), kF32Data), "unknown dtype \"f32\"");
  require_rejected(st_file(one(std::string(1000, 'Z'), "[2]", "[0,8]"), kF32Data),
                   "unknown dtype \"" + std::string(64, 'Z') + "...\"");
}

TEST_CASE("data_offsets must be two ordered integers inside the data that match the size", "[io]") {
  require_rejected(st_file(one("F32", "[2]", "[0]"), kF32Data),
                   "tensor \"a\": data_offsets must be two non-negative integers, got 1 value(s)");
  require_rejected(st_file(one("F32", "[2]", "[0,8,8]"), kF32Data), "got more than two");
  require_rejected(st_file(one("F32", "[2]", "[-8,0]"), kF32Data), "two non-negative integers, got -8");
  require_rejected(st_file(one("F32", "[2]", "[0,8.5]"), kF32Data), "got 8.5");
  require_rejected(st_file(one("F32", "[2]", "[8,0]"), kF32Data),
                   "tensor \"a\": data_offsets must satisfy begin <= end, got [8, 0]");
  require_rejected(st_file(one("F32", "[2]", "[0,16]"), kF32Data),
                   "tensor \"a\": data_offsets must lie inside the data (8 bytes), got [0, 16]");
  require_rejected(st_file(one("F32", "[2]", "[4,12]"), kF32Data), "must lie inside the data");
  require_rejected(st_file(one("F32", "[2]", "[18446744073709551615,18446744073709551615]"), kF32Data),
                   "must lie inside the data");
  require_rejected(st_file(one("F32", "[3]", "[0,8]"), kF32Data),
                   "tensor \"a\": dtype F32 and shape [3] need 12 bytes, but data_offsets [0, 8] hold 8");
  require_rejected(st_file(one("F64", "[2]", "[0,8]"), kF32Data), "need 16 bytes");
  // A truncated file: the data ends before the tensor does.
  require_rejected(st_file(one("F32", "[2]", "[0,8]"), kF32Data.substr(0, 5)),
                   "must lie inside the data (5 bytes), got [0, 8]");
}

TEST_CASE("tensors must tile the data without overlap or holes", "[io]") {
  std::string data12 = raw(std::vector<float>{1, 2, 3});
  require_rejected(st_file(obj({entry("a", "F32", "[2]", "[0,8]"), entry("b", "F32", "[2]", "[4,12]")}), data12),
                   "tensors \"a\" [0, 8] and \"b\" [4, 12] overlap");
  require_rejected(st_file(obj({entry("a", "F32", "[2]", "[0,8]"), entry("b", "F32", "[2]", "[0,8]")}), kF32Data),
                   "overlap");
  require_rejected(st_file(obj({entry("a", "F32", "[1]", "[0,4]"), entry("b", "F32", "[1]", "[8,12]")}), data12),
                   "data bytes [4, 8) belong to no tensor (the tensors must cover the data without holes)");
  require_rejected(st_file(obj({entry("b", "F32", "[1]", "[4,8]")}), kF32Data),
                   "data bytes [0, 4) belong to no tensor");
  require_rejected(st_file(one("F32", "[2]", "[0,8]"), data12),
                   "data bytes [8, 12) after the last tensor belong to no tensor");
  require_rejected(st_file("{}", "x"), "data bytes [0, 1) after the last tensor");
  // A zero-size tensor inside another one is an overlap too.
  require_rejected(st_file(obj({entry("a", "F32", "[2]", "[0,8]"), entry("e", "F32", "[0]", "[4,4]")}), kF32Data),
                   "overlap");
}

TEST_CASE("offsets in any order and zero-size tensors at a boundary are fine", "[io]") {
  std::string data = raw(std::vector<int64_t>{-5}) + raw(std::vector<float>{0.5f});
  std::string header = obj({entry("f", "F32", "[]", "[8,12]"), entry("e", "BOOL", "[0,3]", "[8,8]"),
                            entry("i", "I64", "[1,1]", "[0,8]"), entry("z", "F64", "[0]", "[12,12]")});
  nn::StateDict sd = load_bytes(st_file(header, data));
  CHECK(sd.keys() == std::vector<std::string>{"f", "e", "i", "z"});  // the header's order
  CHECK(sd["f"].dim() == 0);
  CHECK(sd["f"].item<float>() == 0.5f);
  CHECK(sd["e"].shape() == Shape{0, 3});
  CHECK(sd["i"].item<int64_t>() == -5);
  CHECK(sd["z"].dtype() == kFloat64);
}

TEST_CASE("BOOL bytes must be 0 or 1", "[io]") {
  require_rejected(st_file(obj({entry("m", "BOOL", "[3]", "[0,3]")}), std::string("\x01\x02\x00", 3)),
                   "tensor \"m\": BOOL bytes must be 0 or 1, got 2 at element 1");
  nn::StateDict sd = load_bytes(st_file(obj({entry("m", "BOOL", "[3]", "[0,3]")}), std::string("\x01\x00\x01", 3)));
  CHECK(sd["m"].to_vector<bool>() == std::vector<bool>{true, false, true});
}

TEST_CASE("the number of tensors and metadata entries is bounded", "[io]") {
  auto many = [](bool metadata, size_t n) {
    std::ostringstream h;
    h << (metadata ? "{\"__metadata__\":{" : "{");
    for (size_t i = 0; i < n; ++i) {
      if (i) h << ",";
      if (metadata)
        h << "\"k" << i << "\":\"\"";
      else
        h << "\"t" << i << "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}";
    }
    h << (metadata ? "}}" : "}");
    return st_file(h.str());
  };
  require_rejected(many(false, 65537), "the header lists more than 65536 tensors");
  require_rejected(many(true, 65537), "__metadata__ has more than 65536 entries");
  CHECK(load_bytes(many(false, 1000)).size() == 1000);
}
