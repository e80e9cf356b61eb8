// The safetensors JSON header: a SAX parser that checks the schema while it reads (so a hostile
// header never builds a large JSON tree), the semantic checks that follow, and the writer.
// Not here: opening files, reading tensor data (safetensors.cpp).
#include "tinytorch/io/header.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "tinytorch/core/error.h"

namespace tt::io::detail {

// Note [safetensors validation]
// A file is trusted only after every rule below holds; tensors are allocated only then, so no
// allocation is ever sized by an unchecked number: tensors add up to at most the file's size,
// and parsing keeps no JSON tree, only the entries, in proportion to the header's bytes.
//  1. (safetensors.cpp) The file holds at least the 8-byte length N; N <= 100,000,000 and
//     N <= file size - 8.
//  2. The header starts with '{' (as the reference implementation requires) and is one UTF-8
//     JSON object; trailing whitespace is allowed (writers pad with spaces), nothing else, and
//     no raw NUL byte anywhere (nlohmann's lexer would take it for the end of the input).
//  3. Keys are unique at every level (the format disallows duplicates; a DOM parser would keep
//     one silently, so we parse with SAX and see every key).
//  4. "__metadata__" is optional and maps strings to strings.
//  5. Every other key is a non-empty tensor name whose value is an object with exactly the
//     fields dtype (a string), shape (an array of at most kMaxDims non-negative integers) and
//     data_offsets (an array of two non-negative integers). Unknown fields are errors.
//  6. dtype is F32, F64, I64, BOOL or BF16; the format's other dtypes (F16, I32, U8, ...) are
//     "unsupported", anything else "unknown".
//  7. The product of the dimensions (zeros counted as one, so strides cannot overflow either)
//     fits in int64; begin <= end <= data size; end - begin == numel * element size.
//  8. Sorted by offset, the tensors tile the data exactly: no overlap, no hole, nothing after
//     the last one (the reference implementation's rule; it rules out polyglot files, whose
//     unindexed bytes could hide another format).
//  9. (safetensors.cpp) BOOL bytes are 0 or 1.
// At most kMaxTensors tensors and kMaxMetadataEntries metadata entries.

namespace {

using json = nlohmann::json;

struct DtypeCode {
  const char* code;
  ScalarType dtype;
};
constexpr DtypeCode kCodes[] = {
    {"F32", kFloat32}, {"F64", kFloat64}, {"I64", kInt64}, {"BOOL", kBool}, {"BF16", kBFloat16}};
static_assert(sizeof(kCodes) / sizeof(kCodes[0]) == size_t(ScalarType::NumTypes),
              "every dtype needs a safetensors code");
// The format's dtypes we cannot hold.
constexpr const char* kUnsupported[] = {"F16", "I8", "U8", "I16", "U16", "I32", "U32",
                                        "U64", "C64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3",
                                        "F6_E3M2", "F4"};

std::string shorten(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

std::string offsets_str(const TensorEntry& e) {
  return ::tt::detail::concat("[", e.begin, ", ", e.end, "]");
}

// Reads the header's events and checks the schema (rules 2-5) as they come; stops at the first
// problem, recorded in error().
class SchemaHandler final : public nlohmann::json_sax<json> {
 public:
  const std::string& error() const { return error_; }
  Header& header() { return header_; }
  const std::vector<std::string>& dtype_names() const { return dtype_names_; }

  bool null() override { return wrong_type("null"); }
  bool boolean(bool) override { return wrong_type("a boolean"); }
  bool binary(binary_t&) override { return wrong_type("binary data"); }

  bool number_integer(number_integer_t v) override {
    if (v >= 0) return number_unsigned(number_unsigned_t(v));
    if (state_ == kShape || state_ == kOffsets) return fail(array_rule(), ", got ", v);
    return wrong_type("a number");
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (state_ == kShape) {
      if (shape_.size() == kMaxDims)
        return fail(tensor(), "shape has more than ", kMaxDims, " dimensions, tinytorch's limit");
      if (v > uint64_t(std::numeric_limits<int64_t>::max()))
        return fail(tensor(), "shape entry ", v, " does not fit in int64");
      shape_.push_back(int64_t(v));
      return true;
    }
    if (state_ == kOffsets) {
      if (n_offsets_ == 2) return fail(array_rule(), ", got more than two");
      (n_offsets_ == 0 ? entry().begin : entry().end) = v;
      ++n_offsets_;
      return true;
    }
    return wrong_type("a number");
  }
  bool number_float(number_float_t, const string_t& text) override {
    if (state_ == kShape || state_ == kOffsets) return fail(array_rule(), ", got ", shorten(text, 32));
    return wrong_type("a number");
  }

  bool string(string_t& s) override {
    if (state_ == kMetaValue) {
      header_.metadata.emplace(std::move(meta_key_), std::move(s));
      state_ = kMeta;
      return true;
    }
    if (state_ == kFieldValue && field_ == kFieldDtype) {
      dtype_names_.back() = std::move(s);
      state_ = kEntry;
      return true;
    }
    return wrong_type("a string");
  }

  bool start_object(std::size_t) override {
    if (state_ == kStart) {
      state_ = kTop;
      return true;
    }
    if (state_ != kTopValue) return wrong_type("an object");
    if (key_ == "__metadata__") {
      state_ = kMeta;
      return true;
    }
    if (header_.tensors.size() == kMaxTensors)
      return fail("the header lists more than ", kMaxTensors, " tensors");
    header_.tensors.emplace_back();
    header_.tensors.back().name = std::move(key_);
    dtype_names_.emplace_back();
    std::fill(std::begin(seen_), std::end(seen_), false);
    state_ = kEntry;
    return true;
  }
  bool key(string_t& k) override {
    if (state_ == kTop) {
      if (!names_.insert(k).second) return fail("duplicate key ", quote_name(k));
      if (k.empty()) return fail("tensor names must be non-empty, got \"\"");
      key_ = std::move(k);
      state_ = kTopValue;
      return true;
    }
    if (state_ == kMeta) {
      if (header_.metadata.count(k)) return fail("duplicate key ", quote_name(k), " in __metadata__");
      if (header_.metadata.size() == kMaxMetadataEntries)
        return fail("__metadata__ has more than ", kMaxMetadataEntries, " entries");
      meta_key_ = std::move(k);
      state_ = kMetaValue;
      return true;
    }
    // state_ == kEntry: the only other place keys occur, since objects nest nowhere else.
    const char* names[] = {"dtype", "shape", "data_offsets"};
    auto it = std::find_if(std::begin(names), std::end(names), [&](const char* n) { return k == n; });
    if (it == std::end(names))
      return fail(tensor(), "unknown field ", quote_name(k), " (expected dtype, shape and data_offsets)");
    field_ = Field(it - std::begin(names));
    if (seen_[field_]) return fail(tensor(), "duplicate field ", quote_name(k));
    seen_[field_] = true;
    state_ = kFieldValue;
    return true;
  }
  bool end_object() override {
    if (state_ == kEntry) {
      for (int f = 0; f < 3; ++f)
        if (!seen_[f])
          return fail(tensor(), "missing field ",
                      f == kFieldDtype ? "dtype" : f == kFieldShape ? "shape" : "data_offsets");
      state_ = kTop;
    } else {
      state_ = state_ == kMeta ? kTop : kDone;  // kTop: the header's own closing brace
    }
    return true;
  }

  bool start_array(std::size_t) override {
    if (state_ == kFieldValue && field_ == kFieldShape) {
      shape_ = Shape();
      state_ = kShape;
      return true;
    }
    if (state_ == kFieldValue && field_ == kFieldOffsets) {
      n_offsets_ = 0;
      state_ = kOffsets;
      return true;
    }
    return wrong_type("an array");
  }
  bool end_array() override {
    if (state_ == kShape) {
      entry().shape = shape_;
    } else if (n_offsets_ != 2) {  // state_ == kOffsets
      return fail(array_rule(), ", got ", n_offsets_, " value(s)");
    }
    state_ = kEntry;
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    // The message quotes the last token read, which a hostile header can make huge: shorten.
    return fail("the header is not valid JSON: ", shorten(ex.what(), 300));
  }

 private:
  enum State { kStart, kTop, kTopValue, kMeta, kMetaValue, kEntry, kFieldValue, kShape, kOffsets, kDone };
  enum Field { kFieldDtype, kFieldShape, kFieldOffsets };

  template <typename... Args>
  bool fail(const Args&... args) {
    if (error_.empty()) error_ = ::tt::detail::concat(args...);
    return false;
  }
  TensorEntry& entry() { return header_.tensors.back(); }
  std::string tensor() { return "tensor " + quote_name(entry().name) + ": "; }
  std::string array_rule() {
    return state_ == kShape ? tensor() + "shape entries must be non-negative integers"
                            : tensor() + "data_offsets must be two non-negative integers";
  }
  bool wrong_type(const char* got) {
    switch (state_) {
      case kStart: return fail("the header must be a JSON object, got ", got);
      case kTopValue:
        if (key_ == "__metadata__") return fail("__metadata__ must be an object of strings, got ", got);
        return fail("tensor ", quote_name(key_), " must be an object with dtype, shape and data_offsets, got ", got);
      case kMetaValue: return fail("__metadata__ values must be strings, got ", got, " for ", quote_name(meta_key_));
      case kFieldValue:
        if (field_ == kFieldDtype) return fail(tensor(), "dtype must be a string, got ", got);
        if (field_ == kFieldShape) return fail(tensor(), "shape must be an array of integers, got ", got);
        return fail(tensor(), "data_offsets must be an array of two integers, got ", got);
      case kShape:
      case kOffsets: return fail(array_rule(), ", got ", got);
      default: return fail("unexpected ", got, " in the header");
    }
  }

  Header header_;
  std::vector<std::string> dtype_names_;  // one per tensor, checked after parsing
  std::unordered_set<std::string> names_;
  std::string error_, key_, meta_key_;
  State state_ = kStart;
  Field field_ = kFieldDtype;
  bool seen_[3] = {};
  Shape shape_;
  int n_offsets_ = 0;
};

// Rules 6 and 7 for one tensor; returns the problem, or "" when there is none.
std::string check_entry(TensorEntry& e, const std::string& dtype_name, uint64_t data_size) {
  std::string t = "tensor " + quote_name(e.name) + ": ";
  const DtypeCode* code = std::find_if(std::begin(kCodes), std::end(kCodes),
                                       [&](const DtypeCode& c) { return dtype_name == c.code; });
  if (code == std::end(kCodes)) {
    bool known = std::any_of(std::begin(kUnsupported), std::end(kUnsupported),
                             [&](const char* c) { return dtype_name == c; });
    if (known) return t + "unsupported dtype " + dtype_name + " (tinytorch reads F32, F64, I64, BOOL and BF16)";
    return t + "unknown dtype " + quote_name(dtype_name);
  }
  e.dtype = code->dtype;
  int64_t span = 1;  // product of the dims, zeros counted as one
  for (int64_t d : e.shape)
    if (__builtin_mul_overflow(span, std::max<int64_t>(d, 1), &span))
      return ::tt::detail::concat(t, "shape ", e.shape, " has more elements than int64 can count");
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(uint64_t(numel_of(e.shape)), uint64_t(element_size(e.dtype)), &nbytes))
    return ::tt::detail::concat(t, "shape ", e.shape, " needs more bytes than 64 bits can count");
  if (e.begin > e.end)
    return ::tt::detail::concat(t, "data_offsets must satisfy begin <= end, got ", offsets_str(e));
  if (e.end > data_size)
    return ::tt::detail::concat(t, "data_offsets must lie inside the data (", data_size, " bytes), got ",
                          offsets_str(e));
  if (e.end - e.begin != nbytes)
    return ::tt::detail::concat(t, "dtype ", dtype_name, " and shape ", e.shape, " need ", nbytes,
                          " bytes, but data_offsets ", offsets_str(e), " hold ", e.end - e.begin);
  return "";
}

// Rule 8: the sorted tensors tile [0, data_size) exactly.
std::string check_tiling(const std::vector<TensorEntry>& tensors, uint64_t data_size) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(tensors[a].begin, tensors[a].end) < std::make_pair(tensors[b].begin, tensors[b].end);
  });
  uint64_t pos = 0;
  const TensorEntry* prev = nullptr;
  for (size_t i : order) {
    const TensorEntry& e = tensors[i];
    if (e.begin < pos)
      return ::tt::detail::concat("tensors ", quote_name(prev->name), " ", offsets_str(*prev), " and ",
                            quote_name(e.name), " ", offsets_str(e), " overlap");
    if (e.begin > pos)
      return ::tt::detail::concat("data bytes [", pos, ", ", e.begin,
                            ") belong to no tensor (the tensors must cover the data without holes)");
    pos = e.end;
    prev = &e;
  }
  if (pos != data_size)
    return ::tt::detail::concat("data bytes [", pos, ", ", data_size,
                          ") after the last tensor belong to no tensor (the tensors must cover the data)");
  return "";
}

}  // namespace

const char* dtype_code(ScalarType t) {
  for (const DtypeCode& c : kCodes)
    if (c.dtype == t) return c.code;
  TT_CHECK_DTYPE(false, "safetensors: no code for dtype ", t);
  return "";
}

std::string quote_name(const std::string& s) { return "\"" + shorten(s, 64) + "\""; }

Header parse_header(const std::string& text, uint64_t data_size, const std::string& op,
                    const std::string& path) {
  auto fail = [&](const std::string& rule) { throw IOError(op + ": " + path + ": " + rule); };
  if (text.empty() || text[0] != '{') {
    char got[8];
    std::snprintf(got, sizeof(got), "0x%02x", text.empty() ? 0u : unsigned(uint8_t(text[0])));
    fail(text.empty() ? std::string("the header is empty, expected a JSON object")
                      : std::string("the header must start with '{', got byte ") + got);
  }
  // JSON never holds a raw NUL byte, but nlohmann's lexer reads one as the end of the input,
  // which would let anything hide after "{...}\0" in the header.
  size_t nul = text.find('\0');
  if (nul != std::string::npos)
    fail(::tt::detail::concat("the header is not valid JSON: it holds a NUL byte at offset ", nul));
  SchemaHandler handler;
  bool ok = false;
  try {
    ok = json::sax_parse(text, &handler, json::input_format_t::json, /*strict=*/true);
  } catch (const json::exception& ex) {  // not expected with a SAX handler; never let one escape
    fail(std::string("the header is not valid JSON: ") + shorten(ex.what(), 300));
  }
  if (!ok || !handler.error().empty())
    fail(handler.error().empty() ? std::string("the header is not valid JSON") : handler.error());

  Header& header = handler.header();
  for (size_t i = 0; i < header.tensors.size(); ++i) {
    std::string problem = check_entry(header.tensors[i], handler.dtype_names()[i], data_size);
    if (!problem.empty()) fail(problem);
  }
  std::string problem = check_tiling(header.tensors, data_size);
  if (!problem.empty()) fail(problem);
  return std::move(header);
}

std::string write_header(const Header& header, const std::string& path) {
  using ojson = nlohmann::ordered_json;
  ojson j = ojson::object();
  if (!header.metadata.empty()) {
    ojson meta = ojson::object();
    for (const auto& [k, v] : header.metadata) meta[k] = v;
    j["__metadata__"] = std::move(meta);
  }
  for (const TensorEntry& e : header.tensors) {
    ojson entry = ojson::object();
    entry["dtype"] = dtype_code(e.dtype);
    entry["shape"] = ojson::array();
    for (int64_t d : e.shape) entry["shape"].push_back(d);
    entry["data_offsets"] = ojson::array({e.begin, e.end});
    j[e.name] = std::move(entry);
  }
  std::string text;
  try {
    text = j.dump();
  } catch (const ojson::exception& ex) {  // type_error 316: invalid UTF-8
    TT_CHECK(false, "save: ", path, ": tensor names and metadata must be valid UTF-8: ", ex.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace tt::io::detail
