// How OpenMP's idle threads wait between parallel regions, and the advice tinytorch gives when
// the machine is busy and nobody chose (Note [threading policy], "Waiting", in core/threads.cpp).
#pragma once

#include <string>

namespace tt {

// What tt::relaunch_with_runtime_env (core/runtime_info.h) sets when the environment says nothing.
enum class WaitPolicy {
  Passive,        // OMP_WAIT_POLICY=passive: an idle thread sleeps at once (examples, walkthroughs)
  OpenMPDefault,  // leave OpenMP's default: spin for a while, then sleep (benchmarks, as PyTorch runs)
};

namespace detail {

// True when the environment already chose how OpenMP waits (OMP_WAIT_POLICY or GOMP_SPINCOUNT).
bool wait_policy_chosen();

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
