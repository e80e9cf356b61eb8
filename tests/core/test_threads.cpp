// The threading policy (Note [threading policy]): tt::set_num_threads governs OpenMP regions on
// every thread and the BLAS; the BLAS never takes our region down to one thread; the check of
// OpenBLAS's kernel set against the CPU; the relaunch that sets the wait policy; the doctor's report.
#include <omp.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"
#include "tinytorch/backend/cpu/blas_info.h"
#include "tinytorch/backend/cpu/blas_threads.h"
#include "tinytorch/backend/cpu/loop.h"

using namespace tt;
using Catch::Contains;
using cpu::SimdLevel;

namespace {
// Puts the process back at its starting count when a test is done.
struct RestoreThreads {
  int saved = get_num_threads();
  ~RestoreThreads() { set_num_threads(saved); }
};
}  // namespace

TEST_CASE("set_num_threads refuses counts below one", "[core][threads]") {
  REQUIRE_THROWS_WITH(set_num_threads(0), Contains("set_num_threads: the thread count must be at least 1, got 0"));
  REQUIRE_THROWS_WITH(set_num_threads(-3), Contains("got -3"));
}

TEST_CASE("set_num_threads governs OpenMP and the BLAS, on every thread", "[core][threads]") {
  RestoreThreads restore;
  for (int n : {1, 3, 2}) {
    set_num_threads(n);
    CHECK(get_num_threads() == n);
    CHECK(omp_get_max_threads() == n);
    if (cpu::blas_info().vendor != "BLAS") CHECK(cpu::blas_get_num_threads() == n);
    // A thread that existed before, or starts after, takes the count before its next op.
    int seen = -1, region = -1;
    std::thread other([&] {
      seen = get_num_threads();
#pragma omp parallel
      {
#pragma omp single
        region = omp_get_num_threads();
      }
    });
    other.join();
    CHECK(seen == n);
    CHECK(region == n);
  }
}

TEST_CASE("a parallel op gives the same result on one thread and on three", "[core][threads]") {
  RestoreThreads restore;
  manual_seed(7);
  Tensor x = rand({1 << 20}, kFloat64);
  Tensor w = rand({1 << 20}, kFloat64);
  set_num_threads(1);
  const double one = (x * w + 1.0).sum().item<double>();
  set_num_threads(3);
  const double three = (x * w + 1.0).sum().item<double>();
  CHECK(one == Approx(three).epsilon(1e-12));
}

TEST_CASE("BlasSingleThread keeps our own region at its full count", "[core][threads]") {
  // OpenBLAS's openblas_set_num_threads also calls omp_set_num_threads: with its OpenMP build,
  // setting the BLAS to one thread around a region would run the region itself on one thread.
  RestoreThreads restore;
  set_num_threads(2);
  int in_scope = 0, blas_in_scope = 0;
  {
    cpu::BlasSingleThread single;
    in_scope = cpu::parallel_threads();
    blas_in_scope = cpu::blas_get_num_threads();
  }
  CHECK(in_scope == 2);
  if (cpu::blas_nests_in_openmp()) {
    CHECK(blas_in_scope == 2);  // it stays on the calling thread inside a region by itself
  } else {
    CHECK(blas_in_scope == 1);
  }
  CHECK(get_num_threads() == 2);
  if (cpu::blas_info().vendor != "BLAS") CHECK(cpu::blas_get_num_threads() == 2);
}

TEST_CASE("OpenBLAS kernel sets are ranked by the SIMD their GEMM uses", "[core][threads]") {
  CHECK(cpu::openblas_core_level("Prescott") == SimdLevel::kSse);
  CHECK(cpu::openblas_core_level("NEHALEM") == SimdLevel::kSse);
  CHECK(cpu::openblas_core_level("Sandybridge") == SimdLevel::kAvx);
  CHECK(cpu::openblas_core_level("Haswell") == SimdLevel::kAvx2);
  CHECK(cpu::openblas_core_level("Zen") == SimdLevel::kAvx2);
  CHECK(cpu::openblas_core_level("SkylakeX") == SimdLevel::kAvx512);
  CHECK(cpu::openblas_core_level("Cooperlake") == SimdLevel::kAvx512Bf16);
  CHECK(cpu::openblas_core_level("armv8") == SimdLevel::kUnknown);
  for (SimdLevel level : {SimdLevel::kSse, SimdLevel::kAvx, SimdLevel::kAvx2, SimdLevel::kAvx512,
                          SimdLevel::kAvx512Bf16}) {
    CHECK(cpu::openblas_core_level(cpu::openblas_core_for(level)) == level);
  }
}

TEST_CASE("a generic OpenBLAS kernel set on a capable CPU is caught, with the fix", "[core][threads]") {
  // The 16-core GPU host: a hidden CPU model, Prescott picked on an AVX-512 CPU.
  cpu::BlasCoreAdvice a = cpu::blas_core_advice("OpenBLAS", "Prescott", SimdLevel::kAvx512, nullptr);
  CHECK(a.generic);
  CHECK(a.coretype == "SkylakeX");
  CHECK_THAT(a.message, Contains("'Prescott'") && Contains("OPENBLAS_CORETYPE=SkylakeX"));
  a = cpu::blas_core_advice("OpenBLAS", "Haswell", SimdLevel::kAvx512Bf16, "");
  CHECK(a.coretype == "Cooperlake");
  // The user chose a kernel set: say so, change nothing.
  a = cpu::blas_core_advice("OpenBLAS", "Prescott", SimdLevel::kAvx512, "Prescott");
  CHECK(a.generic);
  CHECK(a.coretype.empty());
  CHECK_THAT(a.message, Contains("OPENBLAS_CORETYPE=Prescott was set") && Contains("OPENBLAS_CORETYPE=SkylakeX"));
  // Nothing to say: the right kernels, a kernel set above the CPU's level, an unknown name or
  // CPU, another BLAS.
  for (const auto& [vendor, core, level] :
       {std::tuple<std::string, std::string, SimdLevel>{"OpenBLAS", "Cooperlake", SimdLevel::kAvx512Bf16},
        {"OpenBLAS", "SkylakeX", SimdLevel::kAvx512},
        {"OpenBLAS", "Haswell", SimdLevel::kAvx2},
        {"OpenBLAS", "SkylakeX", SimdLevel::kAvx2},
        {"OpenBLAS", "neoversen1", SimdLevel::kUnknown},
        {"OpenBLAS", "Prescott", SimdLevel::kUnknown},
        {"BLIS", "zen3", SimdLevel::kAvx512}}) {
    const cpu::BlasCoreAdvice ok = cpu::blas_core_advice(vendor, core, level, nullptr);
    CHECK_FALSE(ok.generic);
    CHECK(ok.coretype.empty());
    CHECK(ok.message.empty());
  }
}

TEST_CASE("the CPU's SIMD level follows its features", "[core][threads]") {
  const cpu::CpuFeatures& f = cpu::cpu_features();
  const SimdLevel level = cpu::simd_level(f);
  if (f.avx512_bf16 && f.avx512bw && f.avx512vl && f.avx512dq) CHECK(level == SimdLevel::kAvx512Bf16);
  if (level >= SimdLevel::kAvx2) CHECK((f.avx2 && f.fma));
  if (level >= SimdLevel::kAvx512) CHECK(f.avx512f);
  cpu::CpuFeatures bare;
#if defined(__x86_64__)
  CHECK(cpu::simd_level(bare) == SimdLevel::kSse);
#endif
  bare.avx = bare.avx2 = bare.fma = true;
#if defined(__x86_64__)
  CHECK(cpu::simd_level(bare) == SimdLevel::kAvx2);
#endif
  CHECK(cpu::feature_list(bare) == "avx fma avx2");
}

TEST_CASE("config_report names the BLAS, its kernels and the thread counts", "[core][threads]") {
  const std::string report = config_report();
  const cpu::BlasInfo blas = cpu::blas_info();
  CHECK_THAT(report, Contains("vendor          " + blas.vendor));
  CHECK_THAT(report, Contains("tinytorch       " + std::to_string(get_num_threads())));
  CHECK_THAT(report, Contains("threading       ") && Contains("OMP_NUM_THREADS") && Contains("cuda\n"));
  const bool problems = report.find("problems\n") != std::string::npos;
  CHECK(problems == (report.find("no problems found") == std::string::npos));
}

TEST_CASE("relaunch_with_runtime_env does nothing without argv or when told not to", "[core][threads]") {
  relaunch_with_runtime_env(nullptr);  // returns: nothing to exec
  char name[] = "test_core";
  char* argv[] = {name, nullptr};
  ::setenv("TT_NO_RELAUNCH", "1", 1);
  relaunch_with_runtime_env(argv);  // returns even where the kernels fall short and no policy is set
  ::unsetenv("TT_NO_RELAUNCH");
  // Nothing to fix: OpenMP's default asked for, and kernels that match the CPU.
  if (cpu::blas_core_advice_here().coretype.empty()) relaunch_with_runtime_env(argv, RuntimePolicy::OpenMPDefault);
  SUCCEED("still running");
}

TEST_CASE("threads_for_busy leaves the cores other programs take", "[core][threads]") {
  using detail::threads_for_busy;
  CHECK(threads_for_busy(2, 0) == 0);    // idle: keep OpenMP's default
  CHECK(threads_for_busy(2, -1) == 0);   // unknown: keep the default
  CHECK(threads_for_busy(2, 1) == 1);
  CHECK(threads_for_busy(2, 5) == 1);    // never fewer than one
  CHECK(threads_for_busy(16, 4) == 12);
  CHECK(threads_for_busy(16, 16) == 1);
  CHECK(threads_for_busy(0, 5) == 0);    // no cores reported: keep the default
}

namespace {

// A fake /proc: loadavg with `running` runnable tasks, and this process's threads in `states`.
struct FakeProc {
  testing::TempDir dir;
  FakeProc(const std::string& loadavg, const std::string& states) {
    std::ofstream(dir.file("loadavg")) << loadavg << "\n";
    std::filesystem::create_directories(dir.path() / "self" / "task");
    for (size_t i = 0; i < states.size(); ++i) {
      const std::filesystem::path task = dir.path() / "self" / "task" / std::to_string(100 + i);
      std::filesystem::create_directories(task);
      // A thread name with a space and a ')' in it, as the kernel allows: the state follows the last ')'.
      std::ofstream(task / "stat") << 100 + i << " (train (x) 1) " << states[i] << " 1 100 100 0 -1\n";
    }
  }
  std::string root() const { return dir.path().string(); }
};

}  // namespace

TEST_CASE("runnable_elsewhere counts what runs now, not the load average", "[core][threads]") {
  using detail::runnable_elsewhere;
  using detail::threads_for_busy;
  // Right after a build on both cores: the 1-minute load average still says 2.1, but only this
  // process (its main thread) runs. Every core is used.
  FakeProc after_build("2.10 0.90 0.40 1/312 4567", "RS");
  CHECK(runnable_elsewhere(after_build.root(), 3, 0) == 0);
  CHECK(threads_for_busy(2, runnable_elsewhere(after_build.root(), 3, 0)) == 0);  // OpenMP's default: all
  // Really busy: two other programs' loops running beside this process's one running thread, on a
  // machine whose load average had not caught up yet. One thread.
  FakeProc busy("0.40 0.20 0.10 3/300 999", "RSS");
  CHECK(runnable_elsewhere(busy.root(), 3, 0) == 2);
  CHECK(threads_for_busy(2, runnable_elsewhere(busy.root(), 3, 0)) == 1);
  CHECK(threads_for_busy(16, runnable_elsewhere(busy.root(), 3, 0)) == 14);
  // Our own running threads are not someone else's: 3 runnable, all of them ours.
  FakeProc own("1.00 1.00 1.00 3/200 50", "RRR");
  CHECK(runnable_elsewhere(own.root(), 1, 0) == 0);
  // Unreadable or malformed: unknown (-1), and the default is kept.
  testing::TempDir empty;
  CHECK(runnable_elsewhere(empty.path().string(), 1, 0) == -1);
  FakeProc garbled("not a loadavg", "R");
  CHECK(runnable_elsewhere(garbled.root(), 1, 0) == -1);
  // The real /proc answers something sensible: at least 0 (this test's own thread does not count).
  CHECK(runnable_elsewhere() >= 0);
}

TEST_CASE("busy_machine_advice warns only when the machine is busy and nobody chose", "[core][threads]") {
  using detail::busy_machine_advice;
  const std::string advice = busy_machine_advice(nullptr, nullptr, 3, 2, 2);
  CHECK_THAT(advice, Contains("3 tasks of other programs want its 2 cores") && Contains("OMP_WAIT_POLICY=passive") &&
                         Contains("relaunch_with_runtime_env"));
  CHECK(busy_machine_advice(nullptr, nullptr, 2, 2, 2) != "");   // every core taken is busy
  CHECK(busy_machine_advice(nullptr, nullptr, 1, 2, 2) == "");   // an idle core left
  CHECK(busy_machine_advice("active", nullptr, 8, 2, 2) == "");  // the user chose
  CHECK(busy_machine_advice(nullptr, "1000", 8, 2, 2) == "");    // the user chose
  CHECK(busy_machine_advice(nullptr, nullptr, 8, 2, 1) == "");   // one thread: nothing spins
}

// The relaunch, end to end: this test binary is started again with OMP_WAIT_POLICY unset and asked
// to run the hidden case below, which calls relaunch_with_runtime_env with its own command line.
// The process that exec starts (the same case again) must see OMP_WAIT_POLICY=passive.
TEST_CASE("relaunch_with_runtime_env child", "[.relaunch_child]") {
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(cmdline, arg, '\0');) args.push_back(arg);
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) relaunch_with_runtime_env(argv.data());
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  REQUIRE(policy != nullptr);
  CHECK(std::string(policy) == "passive");
}

TEST_CASE("relaunch_with_runtime_env makes idle threads passive when nobody chose", "[core][threads]") {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var = *e;
    if (var.rfind("OMP_WAIT_POLICY=", 0) != 0 && var.rfind("GOMP_SPINCOUNT=", 0) != 0 &&
        var.rfind("TT_NO_RELAUNCH=", 0) != 0)
      env.push_back(var);
  }
  std::vector<char*> envp;
  for (std::string& var : env) envp.push_back(var.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe", tag = "[.relaunch_child]";
  char* argv[] = {self.data(), tag.data(), nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
