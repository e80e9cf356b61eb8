// The checks behind Note [threading policy] ("Waiting", "A busy machine") in backend/threads.cpp.
#include "tinytorch/core/runtime_policy.h"

#include <dirent.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace tt::detail {

namespace {

// The runnable tasks of the whole machine: "0.52 0.58 0.59 3/1082 4567" -> 3; -1 when unreadable.
int runnable_tasks(const std::string& proc) {
  std::ifstream in(proc + "/loadavg");
  double l1 = 0, l5 = 0, l15 = 0;
  int running = -1, total = 0;
  char slash = 0;
  if (!(in >> l1 >> l5 >> l15 >> running >> slash >> total) || slash != '/' || running < 0) return -1;
  return running;
}

// This process's threads in state R (running or ready to run) now.
int own_running_threads(const std::string& proc) {
  const std::string dir = proc + "/self/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 1;  // at least the thread reading
  int running = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream stat(dir + "/" + e->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "tid (comm) S ...": the state follows the last ')' (a thread's name may hold one).
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') ++running;
  }
  ::closedir(d);
  return std::max(running, 1);
}

}  // namespace

bool wait_policy_chosen() {
  return std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr;
}

int runnable_elsewhere(const std::string& proc, int samples, int interval_us) {
  std::vector<int> seen;
  for (int i = 0; i < std::max(samples, 1); ++i) {
    if (i > 0 && interval_us > 0) ::usleep(useconds_t(interval_us));
    const int all = runnable_tasks(proc);
    if (all < 0) return -1;
    seen.push_back(std::max(0, all - own_running_threads(proc)));
  }
  std::nth_element(seen.begin(), seen.begin() + seen.size() / 2, seen.end());
  return seen[seen.size() / 2];
}

int threads_for_busy(int cores, int busy) {
  if (cores < 1 || busy < 1) return 0;
  return busy >= cores ? 1 : cores - busy;
}

std::string busy_machine_advice(const char* omp_wait_policy, const char* gomp_spincount, int busy, int cores,
                                int threads) {
  if (omp_wait_policy != nullptr || gomp_spincount != nullptr || threads < 2 || cores < 1) return "";
  if (busy < cores) return "";
  return "this machine is busy (" + std::to_string(busy) + " tasks of other programs want its " +
         std::to_string(cores) +
         " cores) and OMP_WAIT_POLICY is unset, so OpenMP's idle threads spin between parallel regions on "
         "cores other programs need; a training step can run several times slower. Set OMP_WAIT_POLICY=passive "
         "and fewer OMP_NUM_THREADS, or call tt::relaunch_with_runtime_env(argv) first in main";
}

std::string busy_machine_advice_here(int threads) {
  // Sampling takes a few milliseconds: only when the answer could be a warning.
  if (wait_policy_chosen() || threads < 2) return "";
  const int busy = runnable_elsewhere();
  if (busy < 0) return "";
  return busy_machine_advice(std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT"), busy,
                             omp_get_num_procs(), threads);
}

}  // namespace tt::detail
