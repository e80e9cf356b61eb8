// tt::detail::SharedLibrary (core/shared_library.h), the dlopen behind the CUDA libraries opened on
// first use: a missing file, a file that is not a library and a missing function each give a
// tt::Error naming the library, the file and the loader's reason, and the CPU keeps working after.
#include <fstream>

#include "test_util.h"
#include "tinytorch/core/shared_library.h"

using namespace tt;
using tt::detail::SharedLibrary;

namespace {

// A small CPU computation, to show that a failed load left nothing broken.
void check_cpu_still_works() {
  Tensor a = tensor({1.0f, 2.0f, 3.0f, 4.0f}).reshape({2, 2});
  CHECK(a.matmul(a).sum().item<float>() == 54.0f);  // [[7, 10], [15, 22]]
}

}  // namespace

TEST_CASE("SharedLibrary names every file it tried and why when none loads", "[core][shared_library]") {
  const std::vector<std::string> names = {"/nonexistent/libtt_missing.so.1", "libtt_missing.so.1"};
  REQUIRE_THROWS_AS(SharedLibrary::open("cuBLAS", names), Error);
  try {
    SharedLibrary::open("cuBLAS", names);
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::StartsWith("cuBLAS: cannot load the library; tried"));
    CHECK_THAT(msg, Catch::Contains("/nonexistent/libtt_missing.so.1: "));
    CHECK_THAT(msg, Catch::Contains("\n  libtt_missing.so.1: "));
    CHECK_THAT(msg, Catch::Contains("No such file or directory"));  // the loader's own reason
    CHECK_THAT(msg, Catch::Contains("the CPU works without it"));
  }
  check_cpu_still_works();
}

TEST_CASE("SharedLibrary refuses a file that is not a library, with the loader's reason", "[core][shared_library]") {
  testing::TempDir dir;
  const std::string path = dir.file("libbroken.so.13");
  {
    std::ofstream out(path);
    for (int i = 0; i < 20; ++i) out << "not an ELF file, a truncated download say\n";
  }
  REQUIRE_THROWS_WITH(SharedLibrary::open("cuBLASLt", {path}),
                      Catch::StartsWith("cuBLASLt: cannot load the library; tried\n  " + path + ": ") &&
                          Catch::Contains("invalid ELF header"));
  check_cpu_still_works();
}

TEST_CASE("SharedLibrary opens a real library and finds its functions", "[core][shared_library]") {
  // libm is on every glibc system; the first candidate is missing, so the second must be used.
  const SharedLibrary libm = SharedLibrary::open("libm", {"/nonexistent/libm.so.6", "libm.so.6"});
  CHECK(libm.path() == "libm.so.6");
  CHECK(libm.what() == "libm");
  auto* cos_fn = reinterpret_cast<double (*)(double)>(libm.symbol("cos"));
  CHECK(cos_fn(0.0) == 1.0);
  REQUIRE_THROWS_WITH(libm.symbol("tt_no_such_function"),
                      Catch::StartsWith("libm: libm.so.6 has no function tt_no_such_function (a different version"));
  REQUIRE_THROWS_WITH(SharedLibrary::open("nothing", {}), "SharedLibrary::open: no file names given for nothing");
  check_cpu_still_works();
}
