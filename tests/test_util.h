// Helpers shared by the test suites: tolerance comparisons of tensors against values, a scratch
// directory with raw file reads for the suites that write files, and TT_REQUIRE_CUDA() for the
// [cuda] test cases.
#pragma once

#include <catch2/catch.hpp>

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.h>

namespace tt::testing {

// A fresh directory under the system's temp directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tinytorch_test_XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  // Names of everything in the directory, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  REQUIRE(f.good());
  f.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(f.good());
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// True when every element of `actual` is within atol + rtol * |expected| of `expected` (NaNs
// must match NaNs, infinities must match exactly) and the shapes agree.
inline bool allclose(const Tensor& actual, const Tensor& expected, double rtol = 1e-5, double atol = 1e-6) {
  if (actual.shape() != expected.shape()) return false;
  std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(e[i]) || std::isnan(a[i])) {
      if (!(std::isnan(e[i]) && std::isnan(a[i]))) return false;
      continue;
    }
    if (std::isinf(e[i]) || std::isinf(a[i])) {
      if (a[i] != e[i]) return false;
      continue;
    }
    if (std::fabs(a[i] - e[i]) > atol + rtol * std::fabs(e[i])) return false;
  }
  return true;
}

}  // namespace tt::testing

// CHECK_ALLCLOSE(actual, expected[, rtol, atol]) prints both tensors when it fails.
#define CHECK_ALLCLOSE(actual, expected, ...)                                          \
  do {                                                                                 \
    INFO("actual:   " << (actual) << "\nexpected: " << (expected));                    \
    CHECK(::tt::testing::allclose((actual), (expected), ##__VA_ARGS__));               \
  } while (0)

// The first line of every [cuda] test case. Without a usable GPU it exits with 77 when CTest runs
// this one test case (CTest's SKIP_RETURN_CODE: reported as skipped, never as passed), or returns
// with a warning when the whole binary runs, so that the other test cases still run.
#define TT_REQUIRE_CUDA()                                                                \
  do {                                                                                   \
    if (!::tt::cuda::is_available()) {                                                   \
      if (::Catch::getCurrentContext().getConfig()->hasTestFilters()) std::exit(77);     \
      WARN("skipped: no CUDA device");                                                   \
      return;                                                                            \
    }                                                                                    \
  } while (0)
