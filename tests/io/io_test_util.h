// Helpers for the io suites (TempDir and read_bytes are in test_util.h): raw file bytes, safetensors files
// assembled by hand (length field + header text + data), bitwise tensor comparison.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_util.h"

namespace tt::testing {

// n as 8 little-endian bytes, built byte by byte (independent of the host's byte order).
inline std::string u64le(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  return out;
}

inline uint64_t read_u64le(const std::string& bytes, size_t at = 0) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes.at(at + i));
  return n;
}

// A safetensors file: the length of `header`, `header`, then `data`.
inline std::string st_file(const std::string& header, const std::string& data = "") {
  return u64le(header.size()) + header + data;
}

// The raw bytes of values as the host holds them (little-endian on every host we build for).
template <typename T>
std::string raw(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// The bytes of a tensor, packed, as a string.
inline std::string tensor_bytes(const Tensor& t) {
  Tensor c = t.detach().cpu().contiguous();
  std::string out(size_t(c.numel()) * c.element_size(), '\0');
  if (!out.empty()) std::memcpy(out.data(), c.raw_data_ptr(), out.size());
  return out;
}

// Same dtype, same shape, same bytes (so NaN payloads and -0.0 count).
inline bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && tensor_bytes(a) == tensor_bytes(b);
}

}  // namespace tt::testing
