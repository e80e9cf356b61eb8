// How a program shares the machine: how OpenMP's idle threads wait between parallel regions and
// how many threads run when other programs are busy, and the advice tinytorch gives when nobody
// chose (Note [threading policy], "Waiting" and "A busy machine", in backend/threads.cpp).
#pragma once

#include <string>

namespace tt {

// What tt::relaunch_with_runtime_env (backend/runtime_info.h) sets where the environment says nothing.
enum class RuntimePolicy {
  // OMP_WAIT_POLICY=passive (idle threads sleep at once), and on a busy machine only the cores the
  // other programs leave idle (OMP_NUM_THREADS): the examples and walkthroughs.
  SharedMachine,
  // OpenMP's own defaults, as PyTorch runs: idle threads spin for a while, every core: the benchmarks.
  OpenMPDefault,
};

namespace detail {

// True when the environment already chose how OpenMP waits (OMP_WAIT_POLICY or GOMP_SPINCOUNT).
bool wait_policy_chosen();

// How busy the machine is now, as tasks (threads) of other programs that want a core: the median of
// `samples` readings, `interval_us` apart, of the runnable tasks in <proc>/loadavg (its fourth field,
// "running/total"), each less this process's own running threads (<proc>/self/task/*/stat in state
// R). Not the load average, which still counts a build that ended a minute ago (Note [threading
// policy], "A busy machine"). -1 when <proc>/loadavg cannot be read. `proc` is "/proc" but for tests.
int runnable_elsewhere(const std::string& proc = "/proc", int samples = 5, int interval_us = 2000);

// The thread count for a machine where `busy` tasks of other programs want a core, when this
// process may use `cores` cores: the cores they leave idle, at least 1; 0 when none is taken (or
// `busy` is unknown, -1), meaning "keep OpenMP's default".
int threads_for_busy(int cores, int busy);

// The warning for a busy machine, or "" when there is nothing to say: nobody chose a wait policy
// (`omp_wait_policy` and `gomp_spincount` are the variables' values, nullptr when unset), the ops
// run on more than one thread, and other programs' runnable tasks (`busy`, as runnable_elsewhere)
// take every core this process may use. Pure, so tests can call it with any numbers.
std::string busy_machine_advice(const char* omp_wait_policy, const char* gomp_spincount, int busy, int cores,
                                int threads);

// busy_machine_advice for this process, now (runnable_elsewhere, the cores OpenMP sees).
std::string busy_machine_advice_here(int threads);

}  // namespace detail

}  // namespace tt
