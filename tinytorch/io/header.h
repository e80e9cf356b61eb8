// The JSON header of a safetensors file, on its own: parsing it with every check a hostile file
// needs, and writing it. Used by safetensors.cpp; not part of the public API (namespace detail).
// The JSON library (nlohmann) stays inside header.cpp. File access and tensor data live in
// safetensors.cpp. See Note [safetensors validation] in header.cpp for the rules.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tinytorch/core/dtype.h"
#include "tinytorch/core/shape.h"

namespace tt::io::detail {

// The reference implementation's limit (and ours): larger headers are refused before reading.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// At most this many tensors and metadata entries in one file. Real checkpoints hold a few
// thousand tensors per file; the limits bound the memory and time a hostile header can cost.
constexpr size_t kMaxTensors = 65'536;
constexpr size_t kMaxMetadataEntries = 65'536;

// One tensor of the header. Offsets are relative to the first byte after the header.
struct TensorEntry {
  std::string name;
  ScalarType dtype = kFloat32;
  Shape shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct Header {
  std::vector<TensorEntry> tensors;  // in the order the header lists them
  std::map<std::string, std::string> metadata;
};

// "F32", "F64", "I64", "BOOL".
const char* dtype_code(ScalarType t);

// Parses and validates header bytes `text` (everything between the length field and the data)
// of a file whose data part holds `data_size` bytes. Throws tt::IOError "<op>: <path>: <rule>,
// got <values>" on the first problem. Allocates only in proportion to `text`.
Header parse_header(const std::string& text, uint64_t data_size, const std::string& op,
                    const std::string& path);

// The JSON text for `header` ("__metadata__" first when non-empty, then the tensors in order),
// padded with spaces so that 8 + its length is a multiple of 8. Throws tt::Error when a name or
// metadata string is not valid UTF-8.
std::string write_header(const Header& header, const std::string& path);

// A string shortened to at most 64 characters for an error message, in quotes.
std::string quote_name(const std::string& s);

}  // namespace tt::io::detail
