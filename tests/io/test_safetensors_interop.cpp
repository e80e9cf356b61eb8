// Interoperability with the published format (github.com/huggingface/safetensors, "Format"):
// 8 bytes N (u64, little-endian), N bytes of UTF-8 JSON {"name": {"dtype", "shape",
// "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then the byte buffer, offsets
// relative to its start, little-endian, row-major. Both directions are checked by hand here:
// a file built byte by byte (not by our writer) loads, and our writer's bytes are what the
// description says.
#include <nlohmann/json.hpp>

#include "io_test_util.h"

using namespace tt;
using tt::testing::read_bytes;
using tt::testing::read_u64le;
using tt::testing::TempDir;
using tt::testing::u64le;
using tt::testing::write_bytes;

TEST_CASE("a file written byte by byte from the format description loads", "[io][interop]") {
  // The header as Python's json.dumps would space it, metadata first, tensors out of offset order.
  std::string header =
      "{\"__metadata__\": {\"format\": \"pt\"}, "
      "\"weight\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [24, 40]}, "
      "\"ids\": {\"dtype\": \"I64\", \"shape\": [3], \"data_offsets\": [0, 24]}}";
  header.append((8 - header.size() % 8) % 8, ' ');  // writers pad so the data starts 8-aligned
  std::string data;
  // ids, I64 little-endian: 7, -1, 2^40
  data += std::string("\x07\x00\x00\x00\x00\x00\x00\x00", 8);
  data += std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8);
  data += std::string("\x00\x00\x00\x00\x00\x01\x00\x00", 8);
  // weight, F32 little-endian (IEEE 754 bits): 1.0 = 0x3f800000, -2.5 = 0xc0200000,
  // 0.5 = 0x3f000000, 3.0 = 0x40400000
  data += std::string("\x00\x00\x80\x3f", 4);
  data += std::string("\x00\x00\x20\xc0", 4);
  data += std::string("\x00\x00\x00\x3f", 4);
  data += std::string("\x00\x00\x40\x40", 4);
  std::string bytes = u64le(header.size()) + header + data;

  TempDir dir;
  std::string path = dir.file("handmade.safetensors");
  write_bytes(path, bytes);
  nn::StateDict sd = load(path);
  REQUIRE(sd.keys() == std::vector<std::string>{"weight", "ids"});
  CHECK(sd["weight"].dtype() == kFloat32);
  CHECK(sd["weight"].shape() == Shape{2, 2});
  CHECK(sd["weight"].to_vector<float>() == std::vector<float>{1.0f, -2.5f, 0.5f, 3.0f});
  CHECK(sd["ids"].dtype() == kInt64);
  CHECK(sd["ids"].shape() == Shape{3});
  CHECK(sd["ids"].to_vector<int64_t>() == std::vector<int64_t>{7, -1, int64_t(1) << 40});
  CHECK(load_metadata(path) == std::map<std::string, std::string>{{"format", "pt"}});
}

TEST_CASE("our writer's bytes follow the format description", "[io][interop]") {
  nn::StateDict sd;
  sd.insert("w", tt::tensor({1.0, -2.5}, kFloat32));
  sd.insert("n", tt::scalar_tensor(7, kInt64));
  sd.insert("m", tt::tensor({true, false, true}));
  TempDir dir;
  std::string path = dir.file("ours.safetensors");
  save(sd, path, {{"format", "pt"}});
  std::string bytes = read_bytes(path);

  // 8 bytes: N, little-endian; the data then starts at a multiple of 8.
  REQUIRE(bytes.size() >= 8);
  uint64_t n = read_u64le(bytes);
  REQUIRE(8 + n <= bytes.size());
  CHECK((8 + n) % 8 == 0);
  std::string header = bytes.substr(8, n);

  // N bytes: compact JSON, metadata first, tensors in order, offsets packed, padded with spaces.
  const std::string expected =
      R"({"__metadata__":{"format":"pt"},)"
      R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("n":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
      R"("m":{"dtype":"BOOL","shape":[3],"data_offsets":[16,19]}})";
  REQUIRE(header.size() >= expected.size());
  CHECK(header.substr(0, expected.size()) == expected);
  CHECK(header.substr(expected.size()) == std::string(header.size() - expected.size(), ' '));
  CHECK(header.size() - expected.size() < 8);

  // The same, read by an independent JSON parser.
  nlohmann::json j = nlohmann::json::parse(header);
  CHECK(j["__metadata__"] == nlohmann::json{{"format", "pt"}});
  CHECK(j["w"]["dtype"] == "F32");
  CHECK(j["w"]["shape"] == nlohmann::json::array({2}));
  CHECK(j["w"]["data_offsets"] == nlohmann::json::array({0, 8}));
  CHECK(j["n"]["shape"] == nlohmann::json::array());
  CHECK(j["m"]["data_offsets"] == nlohmann::json::array({16, 19}));

  // The byte buffer: raw little-endian values, row-major, nothing else after them.
  std::string data = bytes.substr(8 + n);
  CHECK(data == std::string("\x00\x00\x80\x3f"       // 1.0f
                            "\x00\x00\x20\xc0"       // -2.5f
                            "\x07\x00\x00\x00\x00\x00\x00\x00"  // 7
                            "\x01\x00\x01",          // true, false, true
                            19));
}
