// main() of the suites that run under mpirun (tt_add_mpi_test): joins the job (init_process_group
// when started by mpirun, else a world of one), runs the Catch2 session on every rank, and ends the
// whole job at the first failed test case on any rank, naming it (tt::distributed::abort), so that
// no rank is left waiting in a collective its partner will never reach.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <string>

#include "tinytorch/distributed/distributed.h"

namespace {

struct AbortOnFailure : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    if (stats.totals.assertions.failed == 0 || tt::distributed::get_world_size() == 1) return;
    std::fflush(stdout);
    tt::distributed::abort("test case '" + stats.testInfo.name + "' failed on this rank (its output is above)");
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(AbortOnFailure)

int main(int argc, char** argv) {
  namespace dist = tt::distributed;
  if (argc > 1 && std::strcmp(argv[1], "--tt-skip-without-mpi") == 0) {
    std::printf("skipped: tinytorch was built without MPI (install OpenMPI: tools/tt setup)\n");
    return 77;
  }
  if (dist::launched_by_mpirun()) dist::init_process_group(dist::Backend::MPI);
  const int failed = Catch::Session().run(argc, argv);
  dist::destroy_process_group();
  return failed == 0 ? 0 : 1;
}
