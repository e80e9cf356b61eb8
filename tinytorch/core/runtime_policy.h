// How a program shares the machine: how OpenMP's idle threads wait between parallel regions and
// how many threads run when other programs are busy, and the advice tinytorch gives when nobody
// chose (Note [threading policy], "Waiting" and "A busy machine", in core/threads.cpp).
#pragma once

#include <string>

namespace tt {

// What tt::relaunch_with_runtime_env (core/runtime_info.h) sets where the environment says nothing.
enum class RuntimePolicy {
  // OMP_WAIT_POLICY=passive (idle threads sleep at once), and on a busy machine only the cores the
  // load leaves idle (OMP_NUM_THREADS): the examples and walkthroughs.
  SharedMachine,
  // OpenMP's own defaults, as PyTorch runs: idle threads spin for a while, every core: the benchmarks.
  OpenMPDefault,
};

namespace detail {

// True when the environment already chose how OpenMP waits (OMP_WAIT_POLICY or GOMP_SPINCOUNT).
bool wait_policy_chosen();

// The thread count for a machine whose 1-minute load average is `load_1min` when this process may
// use `cores` cores: the cores the load leaves idle, at least 1; 0 when no core is taken (the
// load is under 1), meaning "keep OpenMP's default".
int threads_for_load(int cores, double load_1min);

// The warning for a busy machine, or "" when there is nothing to say: nobody chose a wait policy
// (`omp_wait_policy` and `gomp_spincount` are the variables' values, nullptr when unset), the ops
// run on more than one thread, and the 1-minute load average is at least the cores this process
// may use. Pure, so tests can call it with any numbers.
std::string busy_machine_advice(const char* omp_wait_policy, const char* gomp_spincount, double load_1min,
                                int cores, int threads);

// busy_machine_advice for this process, now (getloadavg, the cores OpenMP sees).
std::string busy_machine_advice_here(int threads);

}  // namespace detail

}  // namespace tt
