// The image set readers: a byte stream over zlib's gz* API (gzip or plain, told apart by the magic
// bytes), the IDX reader, the digits CSV parser, and the conversion to tensors. Each reader
// checks the whole file into local buffers first and makes the tensors last.
#include "tinytorch/data/image_datasets.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <system_error>

#include "tinytorch/core/error.h"
#include "tinytorch/ops/factory.h"

namespace tt::data {

namespace {

std::string errno_message(int err) { return std::error_code(err, std::generic_category()).message(); }

// "1 byte", "2 bytes".
std::string count_of(int64_t n, const char* noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", unsigned(v));
  return buf;
}
std::string hex8(uint8_t v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02x", unsigned(v));
  return buf;
}

// Where a missing file comes from, appended to the "not found" message.
std::string install_hint(const char* what, const char* package) {
  return detail::concat("; ", what, " come with Debian's package ", package, ": sudo apt-get install ", package,
                        " (or tools/tt setup)");
}

// A file opened for reading through zlib: gzread inflates a gzip file (one that starts with 1f 8b)
// and passes any other file through unchanged, so the name's ending does not matter.
class InputStream {
 public:
  InputStream(std::string path, std::string op, const std::string& missing_hint)
      : path_(std::move(path)), op_(std::move(op)) {
    std::error_code ec;
    if (std::filesystem::is_directory(path_, ec)) fail("is a directory, expected a file");
    errno = 0;
    file_ = gzopen(path_.c_str(), "rb");
    if (file_ == nullptr) {
      const int err = errno;
      if (err == ENOENT) throw IOError(op_ + ": " + path_ + ": not found" + missing_hint);
      fail("cannot open the file: " + (err != 0 ? errno_message(err) : std::string("out of memory")));
    }
    gzbuffer(file_, 1u << 18);  // fewer, larger reads than zlib's 8 KiB default
  }
  ~InputStream() {
    if (file_ != nullptr) gzclose(file_);
  }
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Reads up to n bytes into dst; fewer only where the data ends. A gzip stream that ends in the
  // middle returns what it held and sets cut(); corrupt gzip data or a read error throws.
  size_t read(void* dst, size_t n) {
    auto* out = static_cast<unsigned char*>(dst);
    size_t got = 0;
    while (got < n) {
      const unsigned want = unsigned(std::min<size_t>(n - got, size_t(1) << 30));
      const int r = gzread(file_, out + got, want);
      if (r < 0) {
        int errnum = 0;
        const char* msg = gzerror(file_, &errnum);
        if (errnum == Z_ERRNO) fail("read error: " + errno_message(errno));
        fail(detail::concat("corrupt gzip data after ", total_ + got, " decompressed bytes: ", msg));
      }
      got += size_t(r);
      if (unsigned(r) < want) break;
    }
    if (got < n) {
      int errnum = 0;
      gzerror(file_, &errnum);
      cut_ = errnum == Z_BUF_ERROR;  // zlib: "the input file ended in the middle of a gzip stream"
    }
    total_ += got;
    return got;
  }
  // The whole rest of the data.
  std::string read_all() {
    std::string text;
    constexpr size_t kChunk = size_t(1) << 20;
    for (;;) {
      const size_t old = text.size();
      text.resize(old + kChunk);
      const size_t got = read(text.data() + old, kChunk);
      text.resize(old + got);
      if (got < kChunk) return text;
    }
  }
  // Whether the last short read ended inside a gzip stream (a cut .gz file), and words saying so.
  bool cut() const { return cut_; }
  std::string cut_note() const { return cut_ ? "; the gzip stream ends in the middle: the file is cut short" : ""; }

  [[noreturn]] void fail(const std::string& rule) const { throw IOError(op_ + ": " + path_ + ": " + rule); }

 private:
  std::string path_, op_;
  gzFile file_ = nullptr;
  size_t total_ = 0;  // bytes read so far
  bool cut_ = false;
};

// Note [IDX format]: the MNIST family's files. A 4-byte magic: two zero bytes, the element type
// (0x08 unsigned byte, 0x09 signed byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64) and
// the number of dims; then each dim as a big-endian uint32; then the elements, row-major
// (multi-byte ones big-endian). MNIST's images are 0x00000803 [N, rows, cols], its labels
// 0x00000801 [N]. Only unsigned bytes are read here, the type MNIST-like datasets ship.
struct IdxData {
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;  // prod(dims) elements
};

const char* idx_type_name(uint8_t code) {
  switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown";
  }
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Reads a whole IDX file of unsigned bytes. expected_ndim > 0 requires exactly that magic
// (0x00000800 + ndim), as a loader of images or labels does; 0 takes any rank.
IdxData read_idx_data(InputStream& in, int expected_ndim) {
  uint8_t magic[4] = {0, 0, 0, 0};
  const size_t got_magic = in.read(magic, 4);
  if (got_magic < 4)
    in.fail(detail::concat("truncated: an IDX file starts with a 4-byte magic number, found ",
                           count_of(int64_t(got_magic), "byte"), in.cut_note()));
  const uint32_t m = uint32_t(magic[0]) << 24 | uint32_t(magic[1]) << 16 | uint32_t(magic[2]) << 8 | magic[3];
  if (expected_ndim > 0) {
    const uint32_t want = 0x800u + uint32_t(expected_ndim);
    if (m != want)
      in.fail(detail::concat("wrong magic number: expected ", hex32(want), " (IDX, unsigned bytes, ", expected_ndim,
                             expected_ndim == 1 ? " dim" : " dims", "), got ", hex32(m)));
  } else if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0) {
    in.fail("wrong magic number: expected 0x0000TTNN (IDX: type TT, NN >= 1 dims), got " + hex32(m));
  }
  if (magic[2] != 0x08)
    in.fail(detail::concat("IDX element type ", hex8(magic[2]), " (", idx_type_name(magic[2]),
                           ") is not supported: only unsigned bytes (0x08) are read"));

  const int ndim = magic[3];
  std::vector<uint8_t> raw(size_t(ndim) * 4);
  const size_t got_dims = in.read(raw.data(), raw.size());
  if (got_dims < raw.size())
    in.fail(detail::concat("truncated: the header's ", ndim, " dims need ", raw.size(),
                           " bytes after the magic, found ", got_dims, in.cut_note()));
  IdxData out;
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) {
    const uint8_t* b = &raw[size_t(d) * 4];
    const int64_t n = int64_t(uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3]);
    out.dims.push_back(n);
    if (n != 0 && numel > std::numeric_limits<int64_t>::max() / n)
      in.fail("the header's dims multiply to more elements than an int64 counts");
    numel *= n;
  }

  // Grow the buffer as bytes arrive, so a header that claims far more than the file holds
  // costs no more memory than the file.
  constexpr size_t kChunk = size_t(1) << 24;
  size_t have = 0;
  while (have < size_t(numel)) {
    const size_t step = std::min(kChunk, size_t(numel) - have);
    out.bytes.resize(have + step);
    const size_t got = in.read(out.bytes.data() + have, step);
    have += got;
    if (got < step)
      in.fail(detail::concat("truncated: the header's dims ", shape_text(out.dims), " need ", numel,
                             " bytes of data, found ", have, in.cut_note()));
  }
  uint8_t extra = 0;
  if (in.read(&extra, 1) != 0)
    in.fail(
        detail::concat("more data than the header's dims ", shape_text(out.dims), " account for (", numel, " bytes)"));
  if (in.cut())
    in.fail(detail::concat("truncated: all ", numel,
                           " bytes of data are there, but the gzip stream ends in the "
                           "middle (its end, with the checksum, is missing): the file is cut short"));
  return out;
}

template <typename T>
void fill_from_bytes(Tensor& t, const std::vector<uint8_t>& bytes, T scale) {
  T* dst = t.data_ptr<T>();
  const uint8_t* src = bytes.data();
  const size_t n = bytes.size();
  for (size_t i = 0; i < n; ++i) dst[i] = T(src[i]) / scale;
}

// --- the digits CSV ---------------------------------------------------------------------------------

constexpr int kDigitsSide = 8, kDigitsPixels = kDigitsSide * kDigitsSide, kDigitsFields = kDigitsPixels + 1;
constexpr int64_t kDigitsMaxPixel = 16, kDigitsClasses = 10;

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Parses "  12 " as 12; false for anything that is not one decimal integer.
bool parse_int(const char* first, const char* last, int64_t& value) {
  while (first < last && is_blank(*first)) ++first;
  while (last > first && is_blank(last[-1])) --last;
  if (first == last) return false;
  auto [end, ec] = std::from_chars(first, last, value);
  return ec == std::errc() && end == last;
}

}  // namespace

ImageSet load_digits(const std::string& path) {
  InputStream in(path, "load_digits", install_hint("scikit-learn's digits", "python3-sklearn"));
  const std::string text = in.read_all();
  if (in.cut())
    in.fail(detail::concat("truncated: found ", count_of(int64_t(text.size()), "byte"), " of CSV (",
                           count_of(std::count(text.begin(), text.end(), '\n'), "complete line"), ")", in.cut_note()));

  std::vector<float> pixels;
  std::vector<int64_t> labels;
  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const char* line = text.data() + pos;
    const char* line_end = text.data() + end;
    pos = end + 1;
    ++line_no;
    if (std::all_of(line, line_end, is_blank)) continue;

    const int64_t fields = std::count(line, line_end, ',') + 1;
    if (fields != kDigitsFields)
      in.fail(detail::concat("line ", line_no, " has ", count_of(fields, "field"), ", expected ", kDigitsFields, " (",
                             kDigitsPixels, " pixels, then the label)"));
    int64_t values[kDigitsFields];
    const char* field = line;
    for (int j = 0; j < kDigitsFields; ++j) {
      const char* comma = std::find(field, line_end, ',');
      if (!parse_int(field, comma, values[j]))
        in.fail(detail::concat("line ", line_no, ", field ", j + 1, ": expected an integer, got \"",
                               std::string(field, comma), "\""));
      field = comma + 1;
    }
    for (int j = 0; j < kDigitsPixels; ++j) {
      if (values[j] < 0 || values[j] > kDigitsMaxPixel)
        in.fail(
            detail::concat("line ", line_no, ", pixel ", j + 1, " is ", values[j], ", outside 0..", kDigitsMaxPixel));
      pixels.push_back(float(values[j]) / float(kDigitsMaxPixel));
    }
    const int64_t label = values[kDigitsPixels];
    if (label < 0 || label >= kDigitsClasses)
      in.fail(detail::concat("line ", line_no, ": label ", label, " is outside 0..", kDigitsClasses - 1));
    labels.push_back(label);
  }
  if (labels.empty()) in.fail(detail::concat("no rows: expected lines of ", kDigitsFields, " integers"));

  const int64_t n = int64_t(labels.size());
  ImageSet set;
  set.images = tensor(pixels, Shape{n, 1, kDigitsSide, kDigitsSide}, kFloat32);
  set.labels = tensor(labels, Shape{n}, kInt64);
  for (int64_t c = 0; c < kDigitsClasses; ++c) set.class_names.push_back(std::to_string(c));
  return set;
}

ImageSet load_fashion_mnist(Split split, const std::string& dir) {
  static const char* const kOp = "load_fashion_mnist";
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  // NAME.gz if it exists, else NAME; a missing file names both.
  auto locate = [&](const std::string& name) {
    const std::filesystem::path base = std::filesystem::path(dir) / name;
    std::error_code ec;
    const std::string gz = base.string() + ".gz";
    if (std::filesystem::exists(gz, ec)) return gz;
    if (std::filesystem::exists(base, ec)) return base.string();
    throw IOError(detail::concat(kOp, ": ", gz, " not found (nor ", name, " beside it)",
                                 install_hint("Fashion-MNIST's files", "dataset-fashion-mnist")));
  };
  const std::string images_path = locate(prefix + "-images-idx3-ubyte");
  const std::string labels_path = locate(prefix + "-labels-idx1-ubyte");

  IdxData images, labels;
  {
    InputStream in(images_path, kOp, "");
    images = read_idx_data(in, 3);
  }
  {
    InputStream in(labels_path, kOp, "");
    labels = read_idx_data(in, 1);
  }

  const int64_t n = images.dims[0], rows = images.dims[1], cols = images.dims[2];
  if (labels.dims[0] != n)
    throw IOError(detail::concat(kOp, ": ", images_path, " holds ", n, " images but ", labels_path, " holds ",
                                 labels.dims[0], " labels"));
  static const std::vector<std::string> kNames = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                  "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  for (size_t i = 0; i < labels.bytes.size(); ++i) {
    if (labels.bytes[i] >= kNames.size())
      throw IOError(detail::concat(kOp, ": ", labels_path, ": label ", int(labels.bytes[i]), " at index ", i,
                                   " is outside 0..", kNames.size() - 1));
  }

  ImageSet set;
  set.images = empty(Shape{n, 1, rows, cols}, kFloat32);
  fill_from_bytes<float>(set.images, images.bytes, 255.0f);
  set.labels = empty(Shape{n}, kInt64);
  fill_from_bytes<int64_t>(set.labels, labels.bytes, 1);
  set.class_names = kNames;
  return set;
}

Tensor read_idx(const std::string& path, ScalarType dtype) {
  TT_CHECK_DTYPE(dtype == kInt64 || dtype == kFloat32 || dtype == kFloat64,
                 "read_idx: dtype must be int64, float32 or float64, got ", dtype);
  InputStream in(path, "read_idx", "");
  const IdxData data = read_idx_data(in, 0);
  Tensor t = empty(Shape(data.dims), dtype);
  if (dtype == kInt64) fill_from_bytes<int64_t>(t, data.bytes, 1);
  if (dtype == kFloat32) fill_from_bytes<float>(t, data.bytes, 1.0f);
  if (dtype == kFloat64) fill_from_bytes<double>(t, data.bytes, 1.0);
  return t;
}

}  // namespace tt::data
