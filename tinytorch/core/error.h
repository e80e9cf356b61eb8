// Errors: tt::Error and its subclasses, and TT_CHECK, the one way the library rejects input.
// Every message names the op, states the rule and shows the offending values. Nothing here
// aborts: a failed check throws and leaves every tensor as it was.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tt {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};
class ShapeError : public Error { using Error::Error; };
class DtypeError : public Error { using Error::Error; };
class DeviceError : public Error { using Error::Error; };
class IndexError : public Error { using Error::Error; };
class IOError : public Error { using Error::Error; };
// A CUDA runtime or cuBLAS call failed; the message names the call, the file and the line.
class CudaError : public Error { using Error::Error; };
// A device allocation failed even after the cache was released; the message gives the bytes
// requested, allocated and reserved.
class OutOfMemoryError : public Error { using Error::Error; };

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace tt

// TT_CHECK(cond, "op: rule, got ", a.shape(), " and ", b.shape()) throws tt::Error.
// The _SHAPE/_DTYPE/_DEVICE/_INDEX variants throw the matching subclass.
#define TT_CHECK_T(ErrType, cond, ...)                         \
  do {                                                         \
    if (!(cond)) throw ErrType(::tt::detail::concat(__VA_ARGS__)); \
  } while (0)
#define TT_CHECK(cond, ...) TT_CHECK_T(::tt::Error, cond, __VA_ARGS__)
#define TT_CHECK_SHAPE(cond, ...) TT_CHECK_T(::tt::ShapeError, cond, __VA_ARGS__)
#define TT_CHECK_DTYPE(cond, ...) TT_CHECK_T(::tt::DtypeError, cond, __VA_ARGS__)
#define TT_CHECK_DEVICE(cond, ...) TT_CHECK_T(::tt::DeviceError, cond, __VA_ARGS__)
#define TT_CHECK_INDEX(cond, ...) TT_CHECK_T(::tt::IndexError, cond, __VA_ARGS__)
