// The checks behind Note [threading policy] ("Waiting", "A busy machine") in core/threads.cpp.
#include "tinytorch/core/runtime_policy.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tt::detail {

bool wait_policy_chosen() {
  return std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr;
}

int threads_for_load(int cores, double load_1min) {
  if (cores < 1 || !(load_1min >= 1.0)) return 0;
  const double taken = std::floor(load_1min);
  return taken >= cores ? 1 : std::max(1, cores - static_cast<int>(taken));
}

std::string busy_machine_advice(const char* omp_wait_policy, const char* gomp_spincount, double load_1min,
                                int cores, int threads) {
  if (omp_wait_policy != nullptr || gomp_spincount != nullptr || threads < 2 || cores < 1) return "";
  if (load_1min < cores) return "";
  char load[32];
  std::snprintf(load, sizeof load, "%.1f", load_1min);
  return std::string("this machine is busy (load average ") + load + " on " + std::to_string(cores) +
         " cores) and OMP_WAIT_POLICY is unset, so OpenMP's idle threads spin between parallel regions on "
         "cores other programs need; a training step can run several times slower. Set OMP_WAIT_POLICY=passive "
         "and fewer OMP_NUM_THREADS, or call tt::relaunch_with_runtime_env(argv) first in main";
}

std::string busy_machine_advice_here(int threads) {
  double load[1] = {0.0};
  if (getloadavg(load, 1) != 1) return "";
  return busy_machine_advice(std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT"), load[0],
                             omp_get_num_procs(), threads);
}

}  // namespace tt::detail
