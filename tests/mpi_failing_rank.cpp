// A job in which one rank fails, for the tests that check failures end the job promptly, naming
// the rank (tests/CMakeLists.txt, test distributed_failure_*): the last rank either throws an
// uncaught tt::Error (`throw`) or calls tt::distributed::abort (`abort`) while the others wait in
// a barrier that it will never reach.
#include <cstdio>
#include <cstring>

#include <tinytorch/tinytorch.h>

int main(int argc, char** argv) {
  namespace dist = tt::distributed;
  dist::init_process_group(dist::Backend::MPI);
  const bool use_abort = argc > 1 && std::strcmp(argv[1], "abort") == 0;
  if (dist::get_rank() == dist::get_world_size() - 1) {
    if (use_abort) dist::abort("giving up on purpose");
    TT_CHECK(false, "a failure on purpose");
  }
  dist::barrier();  // never completes: the last rank is gone
  std::printf("rank %d: passed a barrier the last rank never reached\n", dist::get_rank());
  return 0;
}
