// Image dataset readers (data/image_datasets.h) on small files written here, plain and gzip: shapes,
// values, class names; every rejection (missing, truncated in the header, in the data, in the gzip
// stream, wrong magic, counts that disagree, bad labels, bad CSV lines) with its message. Then the
// real Debian files where they are installed (skipped where they are not).
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <set>

#include "test_util.h"

using namespace tt;
using namespace tt::data;
using Catch::Contains;
using tt::testing::TempDir;

namespace {

// The message of the tt::IOError that f throws; fails the test if it throws nothing (any other
// exception escapes and fails it too).
std::string io_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const IOError& e) {
    return e.what();
  }
  FAIL("expected a tt::IOError, nothing was thrown");
  return "";
}

std::string be32(uint32_t v) { return {char(v >> 24), char(v >> 16 & 0xff), char(v >> 8 & 0xff), char(v & 0xff)}; }

// An IDX file: magic, dims, then the data bytes as given (not checked against the dims).
std::string idx(uint32_t magic, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string out = be32(magic);
  for (uint32_t d : dims) out += be32(d);
  return out + data;
}

std::string bytes_of(const std::vector<int>& values) {
  std::string s;
  for (int v : values) s.push_back(char(uint8_t(v)));
  return s;
}

// Bytes that do not compress (a linear congruential sequence), so a cut in the middle of their
// gzip stream falls in the middle of the data.
std::string noise_bytes(size_t n) {
  std::string s(n, '\0');
  uint32_t x = 12345;
  for (char& c : s) {
    x = x * 1664525u + 1013904223u;
    c = char(x >> 24);
  }
  return s;
}

// Writes `bytes` gzip-compressed through zlib's gz* API.
void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), unsigned(bytes.size())) == int(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

// Writes `bytes` gzip-compressed, then keeps only the first `keep` bytes of the compressed file
// (keep < 0: all but the last -keep).
void write_gz_cut(const std::string& path, const std::string& bytes, long keep) {
  write_gz(path, bytes);
  std::string gz = tt::testing::read_bytes(path);
  const size_t n = keep >= 0 ? size_t(keep) : gz.size() - size_t(-keep);
  REQUIRE(n < gz.size());
  tt::testing::write_bytes(path, gz.substr(0, n));
}

void write_file(const std::string& path, const std::string& bytes, bool gzip) {
  if (gzip) {
    write_gz(path, bytes);
  } else {
    tt::testing::write_bytes(path, bytes);
  }
}

// Three 2×2 images and their labels, as Fashion-MNIST's training files in `dir`.
const std::string kPixels = bytes_of({0, 255, 51, 102, 1, 2, 3, 4, 254, 253, 252, 128});
const std::string kImages = idx(0x803, {3, 2, 2}, kPixels);
const std::string kLabels = idx(0x801, {3}, bytes_of({9, 0, 4}));

// Like TT_REQUIRE_CUDA (test_util.h): without the file, exit 77 (CTest: skipped) when CTest runs
// this case alone, or warn and return when the whole binary runs.
#define TT_REQUIRE_FILE(path, package)                                                  \
  do {                                                                                  \
    if (!std::filesystem::exists(path)) {                                               \
      if (::Catch::getCurrentContext().getConfig()->hasTestFilters()) std::exit(77);    \
      WARN("skipped: " << (path) << " is absent (Debian package " << (package) << ")"); \
      return;                                                                           \
    }                                                                                   \
  } while (0)

// One digits CSV line: 64 pixels (pixel j = (j + shift) % 17) and the label.
std::string digits_line(int shift, int label) {
  std::string s;
  for (int j = 0; j < 64; ++j) s += std::to_string((j + shift) % 17) + ",";
  return s + std::to_string(label);
}

}  // namespace

TEST_CASE("read_idx reads plain and gzip files of any rank, as int64 or floats") {
  TempDir dir;
  for (bool gzip : {false, true}) {
    INFO("gzip: " << gzip);
    const std::string name = gzip ? "a.idx.gz" : "a.idx";
    write_file(dir.file(name), idx(0x803, {3, 2, 2}, kPixels), gzip);
    Tensor t = read_idx(dir.file(name));
    CHECK(t.dtype() == kInt64);
    CHECK(t.shape() == Shape{3, 2, 2});
    CHECK(t.to_vector<int64_t>() == std::vector<int64_t>{0, 255, 51, 102, 1, 2, 3, 4, 254, 253, 252, 128});
    Tensor f = read_idx(dir.file(name), kFloat32);
    CHECK(f.dtype() == kFloat32);
    CHECK(f.to_vector<float>()[1] == 255.0f);

    write_file(dir.file("rank1"), idx(0x801, {4}, bytes_of({7, 0, 200, 3})), gzip);
    CHECK(read_idx(dir.file("rank1"), kFloat64).to_vector<double>() == std::vector<double>{7, 0, 200, 3});
    write_file(dir.file("rank4"), idx(0x804, {1, 2, 1, 3}, bytes_of({1, 2, 3, 4, 5, 6})), gzip);
    CHECK(read_idx(dir.file("rank4")).shape() == Shape{1, 2, 1, 3});
    write_file(dir.file("empty"), idx(0x803, {0, 28, 28}, ""), gzip);
    CHECK(read_idx(dir.file("empty")).shape() == Shape{0, 28, 28});
  }
}

TEST_CASE("read_idx tells gzip from plain by the magic bytes, not the name") {
  TempDir dir;
  write_gz(dir.file("labels.idx"), kLabels);                     // gzip without .gz
  tt::testing::write_bytes(dir.file("labels.idx.gz"), kLabels);  // plain with .gz
  CHECK(read_idx(dir.file("labels.idx")).to_vector<int64_t>() == std::vector<int64_t>{9, 0, 4});
  CHECK(read_idx(dir.file("labels.idx.gz")).to_vector<int64_t>() == std::vector<int64_t>{9, 0, 4});
}

TEST_CASE("read_idx rejects bad headers, cut files and other element types") {
  TempDir dir;
  const std::string path = dir.file("bad.idx");
  auto error_for = [&](const std::string& bytes, bool gzip = false) {
    write_file(path, bytes, gzip);
    return io_error([&] { read_idx(path); });
  };
  CHECK_THAT(error_for(""), Contains("read_idx: " + path +
                                     ": truncated: an IDX file starts with a 4-byte magic "
                                     "number, found 0 bytes"));
  CHECK_THAT(error_for(std::string("\0\0", 2)), Contains("found 2 bytes"));
  CHECK_THAT(error_for("P5 28 28\n"),
             Contains("wrong magic number: expected 0x0000TTNN") && Contains("got 0x50352032"));
  CHECK_THAT(error_for(be32(0x800)), Contains("wrong magic number") && Contains("got 0x00000800"));
  CHECK_THAT(error_for(idx(0x0d01, {1}, "abcd")),
             Contains("IDX element type 0x0d (float32) is not supported: only unsigned bytes (0x08) are read"));
  // Cut in the header, in the data, and too long.
  CHECK_THAT(error_for(idx(0x803, {3, 2}, "")),
             Contains("truncated: the header's 3 dims need 12 bytes after the magic, found 8"));
  CHECK_THAT(error_for(idx(0x803, {3, 2, 2}, kPixels.substr(0, 7))),
             Contains("truncated: the header's dims [3, 2, 2] need 12 bytes of data, found 7"));
  CHECK_THAT(error_for(idx(0x803, {3, 2, 2}, kPixels.substr(0, 7)), true), Contains("need 12 bytes of data, found 7"));
  CHECK_THAT(error_for(idx(0x803, {3, 2, 2}, kPixels + "x")),
             Contains("more data than the header's dims [3, 2, 2] account for (12 bytes)"));
  // A header that claims far more than the file holds fails on the data, without allocating it.
  CHECK_THAT(error_for(idx(0x803, {0xffffffffu, 0xffffffffu, 0xffff}, "abc")),
             Contains("the header's dims multiply to more elements than an int64 counts"));
  CHECK_THAT(error_for(idx(0x801, {0x7fffffffu}, "abc")), Contains("need 2147483647 bytes of data, found 3"));

  CHECK_THROWS_AS(read_idx(dir.file("nope.idx")), IOError);
  CHECK_THAT(io_error([&] { read_idx(dir.file("nope.idx")); }), Contains(dir.file("nope.idx") + ": not found"));
  CHECK_THAT(io_error([&] { read_idx(dir.path().string()); }), Contains("is a directory"));
  write_file(path, kLabels, false);
  CHECK_THROWS_AS(read_idx(path, kBool), DtypeError);
}

TEST_CASE("read_idx rejects a gzip stream cut in the middle or before its end") {
  TempDir dir;
  const std::string path = dir.file("cut.idx.gz");
  const std::string data = noise_bytes(20000);
  const std::string file = idx(0x803, {20, 25, 40}, data);
  // Cut in the middle of the data: fewer bytes than the header's counts, and the reason.
  write_gz_cut(path, file, 10000);
  std::string msg = io_error([&] { read_idx(path); });
  CHECK_THAT(msg, Contains("read_idx: " + path +
                           ": truncated: the header's dims [20, 25, 40] need 20000 bytes of "
                           "data, found ") &&
                      Contains("the gzip stream ends in the middle: the file is cut short"));
  // Cut in the middle of the header (the compressed stream's first bytes only).
  write_gz_cut(path, file, 12);
  CHECK_THAT(io_error([&] { read_idx(path); }),
             Contains("truncated") && Contains("the gzip stream ends in the middle"));
  // Every data byte there, but not the gzip trailer (CRC-32 and length).
  write_gz_cut(path, file, -8);
  CHECK_THAT(io_error([&] { read_idx(path); }),
             Contains("truncated: all 20000 bytes of data are there, but the gzip stream ends in the middle"));
  // Corrupt compressed data.
  write_gz(path, file);
  std::string gz = tt::testing::read_bytes(path);
  for (size_t i = 20; i < 60; ++i) gz[i] = char(gz[i] ^ 0x5a);
  tt::testing::write_bytes(path, gz);
  CHECK_THAT(io_error([&] { read_idx(path); }), Contains("corrupt gzip data"));
}

TEST_CASE("load_fashion_mnist reads both splits, gzip or plain, into [N, 1, H, W] in [0, 1]") {
  TempDir dir;
  for (bool gzip : {false, true}) {
    INFO("gzip: " << gzip);
    const std::string gz = gzip ? ".gz" : "";
    write_file(dir.file("train-images-idx3-ubyte" + gz), kImages, gzip);
    write_file(dir.file("train-labels-idx1-ubyte" + gz), kLabels, gzip);
    write_file(dir.file("t10k-images-idx3-ubyte" + gz), idx(0x803, {1, 1, 3}, bytes_of({255, 0, 17})), gzip);
    write_file(dir.file("t10k-labels-idx1-ubyte" + gz), idx(0x801, {1}, bytes_of({8})), gzip);

    ImageSet train = load_fashion_mnist(Split::kTrain, dir.path().string());
    CHECK(train.images.dtype() == kFloat32);
    CHECK(train.images.shape() == Shape{3, 1, 2, 2});
    std::vector<float> expected;
    for (char c : kPixels) expected.push_back(float(uint8_t(c)) / 255.0f);
    CHECK(train.images.to_vector<float>() == expected);
    CHECK(train.labels.dtype() == kInt64);
    CHECK(train.labels.to_vector<int64_t>() == std::vector<int64_t>{9, 0, 4});
    REQUIRE(train.class_names.size() == 10);
    CHECK(train.class_names[0] == "T-shirt/top");
    CHECK(train.class_names[6] == "Shirt");
    CHECK(train.class_names[9] == "Ankle boot");

    ImageSet test = load_fashion_mnist(Split::kTest, dir.path().string());
    CHECK(test.images.shape() == Shape{1, 1, 1, 3});
    CHECK(test.images.to_vector<float>() == std::vector<float>{1.0f, 0.0f, 17.0f / 255.0f});
    CHECK(test.labels.to_vector<int64_t>() == std::vector<int64_t>{8});
  }
  // Both present: NAME.gz is read, NAME is not.
  tt::testing::write_bytes(dir.file("train-labels-idx1-ubyte"), "not an IDX file");
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), kLabels);
  CHECK(load_fashion_mnist(Split::kTrain, dir.path().string()).labels.to_vector<int64_t>() ==
        std::vector<int64_t>{9, 0, 4});
}

TEST_CASE("load_fashion_mnist rejects missing files, wrong magic, disagreeing counts and bad labels") {
  TempDir dir;
  const std::string d = dir.path().string();
  const std::string images = dir.file("train-images-idx3-ubyte"), labels = dir.file("train-labels-idx1-ubyte");

  std::string msg = io_error([&] { load_fashion_mnist(Split::kTrain, d); });
  CHECK_THAT(msg, Contains("load_fashion_mnist: " + images + ".gz not found (nor train-images-idx3-ubyte beside it)"));
  CHECK_THAT(msg, Contains("dataset-fashion-mnist: sudo apt-get install dataset-fashion-mnist") &&
                      Contains("(or tools/tt setup)"));
  tt::testing::write_bytes(images, kImages);
  CHECK_THAT(io_error([&] { load_fashion_mnist(Split::kTrain, d); }), Contains(labels + ".gz not found"));
  CHECK_THAT(io_error([&] { load_fashion_mnist(Split::kTest, d); }), Contains("t10k-images-idx3-ubyte.gz not found"));

  // The labels where the images belong, and the other way round.
  tt::testing::write_bytes(labels, kImages);
  CHECK_THAT(
      io_error([&] { load_fashion_mnist(Split::kTrain, d); }),
      Contains(labels + ": wrong magic number: expected 0x00000801 (IDX, unsigned bytes, 1 dim), got 0x00000803"));
  tt::testing::write_bytes(images, kLabels);
  CHECK_THAT(
      io_error([&] { load_fashion_mnist(Split::kTrain, d); }),
      Contains(images + ": wrong magic number: expected 0x00000803 (IDX, unsigned bytes, 3 dims), got 0x00000801"));

  tt::testing::write_bytes(images, kImages);
  tt::testing::write_bytes(labels, idx(0x801, {2}, bytes_of({1, 2})));
  CHECK_THAT(io_error([&] { load_fashion_mnist(Split::kTrain, d); }),
             Contains(images + " holds 3 images but " + labels + " holds 2 labels"));
  tt::testing::write_bytes(labels, idx(0x801, {3}, bytes_of({1, 10, 2})));
  CHECK_THAT(io_error([&] { load_fashion_mnist(Split::kTrain, d); }),
             Contains(labels + ": label 10 at index 1 is outside 0..9"));
  tt::testing::write_bytes(labels, idx(0x801, {3}, bytes_of({1, 2})));
  CHECK_THAT(io_error([&] { load_fashion_mnist(Split::kTrain, d); }),
             Contains(labels + ": truncated: the header's dims [3] need 3 bytes of data, found 2"));

  // A cut .gz beside a good plain file: the .gz is the one read, and its cut is reported.
  tt::testing::write_bytes(labels, kLabels);
  write_gz_cut(images + ".gz", idx(0x803, {10, 50, 40}, noise_bytes(20000)), 9000);
  CHECK_THAT(io_error([&] { load_fashion_mnist(Split::kTrain, d); }),
             Contains(images + ".gz: truncated: the header's dims [10, 50, 40] need 20000 bytes of data, found ") &&
                 Contains("the gzip stream ends in the middle"));
}

TEST_CASE("load_digits reads a CSV, gzip or plain, into [N, 1, 8, 8] in [0, 1]") {
  TempDir dir;
  // CRLF line ends and a blank last line are accepted, as are spaces around a field.
  const std::string csv =
      digits_line(0, 3) + "\r\n" + digits_line(5, 0) + "\n" + " 16 ," + digits_line(1, 9).substr(2) + "\n\n";
  for (bool gzip : {false, true}) {
    INFO("gzip: " << gzip);
    const std::string path = dir.file(gzip ? "digits.csv" : "digits.csv.gz");  // names that mislead
    write_file(path, csv, gzip);
    ImageSet set = load_digits(path);
    CHECK(set.images.dtype() == kFloat32);
    CHECK(set.images.shape() == Shape{3, 1, 8, 8});
    CHECK(set.labels.to_vector<int64_t>() == std::vector<int64_t>{3, 0, 9});
    const std::vector<float> px = set.images.to_vector<float>();
    CHECK(px[0] == 0.0f);
    CHECK(px[16] == 1.0f);           // (16 + 0) % 17
    CHECK(px[64 + 1] == 6 / 16.0f);  // second image, second pixel: (1 + 5) % 17
    CHECK(px[128] == 1.0f);          // the " 16 " field
    CHECK(px[128 + 63] == 64 % 17 / 16.0f);
    REQUIRE(set.class_names.size() == 10);
    CHECK(set.class_names[0] == "0");
    CHECK(set.class_names[9] == "9");
  }
}

TEST_CASE("load_digits rejects missing files, bad lines and cut gzip streams") {
  TempDir dir;
  const std::string path = dir.file("digits.csv");
  auto error_for = [&](const std::string& text) {
    tt::testing::write_bytes(path, text);
    return io_error([&] { load_digits(path); });
  };
  const std::string good = digits_line(0, 1) + "\n";

  std::string msg = io_error([&] { load_digits(dir.file("none.csv.gz")); });
  CHECK_THAT(msg, Contains("load_digits: " + dir.file("none.csv.gz") + ": not found") &&
                      Contains("python3-sklearn: sudo apt-get install python3-sklearn"));
  CHECK_THAT(error_for(""), Contains("load_digits: " + path + ": no rows: expected lines of 65 integers"));
  CHECK_THAT(error_for(good + digits_line(0, 1).substr(2) + "\n"),
             Contains("line 2 has 64 fields, expected 65 (64 pixels, then the label)"));
  CHECK_THAT(error_for(good + digits_line(0, 1) + ",0\n"), Contains("line 2 has 66 fields, expected 65"));
  CHECK_THAT(error_for("0,3.5" + digits_line(0, 1).substr(3)),
             Contains("line 1, field 2: expected an integer, got \"3.5\""));
  CHECK_THAT(error_for("0," + digits_line(0, 1).substr(3)), Contains("line 1, field 2: expected an integer, got \"\""));
  CHECK_THAT(error_for("0,1,2,3,17" + digits_line(0, 1).substr(9)), Contains("line 1, pixel 5 is 17, outside 0..16"));
  CHECK_THAT(error_for("-1" + digits_line(0, 1).substr(1)), Contains("line 1, pixel 1 is -1, outside 0..16"));
  CHECK_THAT(error_for(good + good + digits_line(0, 10)), Contains("line 3: label 10 is outside 0..9"));
  CHECK_THAT(error_for("\n" + good + digits_line(0, 1).substr(0, 40)), Contains("line 3 has"));

  std::string big;
  for (int i = 0; i < 300; ++i) big += digits_line(i, i % 10) + "\n";
  write_gz_cut(path, big, 500);
  CHECK_THAT(io_error([&] { load_digits(path); }),
             Contains("truncated: found ") && Contains("bytes of CSV (") &&
                 Contains("the gzip stream ends in the middle: the file is cut short"));
}

TEST_CASE("the installed Fashion-MNIST: 60000 training and 10000 test images of 28x28") {
  const std::string dir = kFashionMnistDir;
  TT_REQUIRE_FILE(dir + "/train-images-idx3-ubyte.gz", "dataset-fashion-mnist");
  ImageSet train = load_fashion_mnist(Split::kTrain);
  CHECK(train.images.shape() == Shape{60000, 1, 28, 28});
  CHECK(train.labels.shape() == Shape{60000});
  CHECK(train.labels.to_vector<int64_t>()[0] == 9);  // the first training image is an ankle boot
  CHECK(train.images.min().item<double>() == 0.0);
  CHECK(train.images.max().item<double>() == 1.0);
  std::vector<int64_t> counts(10, 0);
  for (int64_t y : train.labels.to_vector<int64_t>()) counts[size_t(y)]++;
  CHECK(counts == std::vector<int64_t>(10, 6000));

  ImageSet test = load_fashion_mnist(Split::kTest);
  CHECK(test.images.shape() == Shape{10000, 1, 28, 28});
  CHECK(test.labels.to_vector<int64_t>()[0] == 9);
}

TEST_CASE("the installed scikit-learn digits: 1797 images of 8x8, every class") {
  TT_REQUIRE_FILE(std::string(kDigitsPath), "python3-sklearn");
  ImageSet set = load_digits();
  CHECK(set.images.shape() == Shape{1797, 1, 8, 8});
  const std::vector<int64_t> labels = set.labels.to_vector<int64_t>();
  CHECK(labels[0] == 0);
  CHECK(std::set<int64_t>(labels.begin(), labels.end()).size() == 10);
  CHECK(set.images.max().item<double>() == 1.0);
}
