// The thread count: set_num_threads, get_num_threads and the lazy per-thread apply, plus the
// first-use checks of the BLAS (its kernel set and its threading).
//
// Note [threading policy]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Who owns the cores. One pool does: libgomp's (OpenMP). tinytorch's parallel loops
// (backend/cpu/loop.h: elementwise, reductions, softmax, normalization, the optimizers, the
// attention kernels' split over heads) are OpenMP regions, and the BLAS is OpenBLAS's *OpenMP*
// build (cmake/TinytorchBlas.cmake prefers it; Debian: libopenblas-openmp-dev), whose GEMMs run
// in the same libgomp pool. Measured on 2 cores (EPYC, tt_bench, 3 rounds, same binary, only the
// loader path switched between Debian's two OpenBLAS builds): with the pthreads build, gpt_step
// took 311-401 ms on 2 threads against 318 ms on 1 and mlp_chain_fb 73-75 ms against 62; with the
// OpenMP build 196 ms and 32-35 ms. Two pools each keep their idle threads spinning for a while
// after their work (libgomp's workers after a region, OpenBLAS's pthreads for up to 2^28
// cycles), so a step that alternates GEMMs with elementwise work runs twice as many busy threads
// as there are cores. On the 16-core host that was gpt_step's collapse past 8 threads
// (8 + 7 threads still fit 16 cores; 16 + 15 do not).
//
// Nesting. Our parallel regions call the BLAS on their own tiles (attention, flash attention).
// OpenBLAS's OpenMP build sees omp_in_parallel() and stays on the calling thread, and OpenMP
// runs nested regions on one thread (nesting stays off), so nothing oversubscribes. A pthreads
// BLAS would fan out from inside every region: BlasSingleThread (backend/cpu/blas_threads.h)
// sets it to one thread for the region's duration instead, and a warning at the first parallel
// op says what that build costs.
//
// The count. tt::set_num_threads(n) sets it for the whole process: OpenBLAS's count
// (process-wide) at once, OpenMP's (a per-thread setting) on the calling thread at once and on
// every other thread before its next op (apply_num_threads compares a thread-local epoch), as
// at::set_num_threads does. Until set_num_threads is called, each thread keeps OpenMP's own
// setting (so omp_set_num_threads on a thread governs that thread's regions, as tests use it):
// OMP_NUM_THREADS when set, else the cores the process may use. The first op of the process
// sets the BLAS to that thread's count, so OPENBLAS_NUM_THREADS matters only to a program that
// calls the BLAS before tinytorch does; set OMP_NUM_THREADS (or call tt::set_num_threads) instead.
//
// Small work stays on one thread. An elementwise op or reduction parallelises above
// kParallelGrain elements (backend/cpu/loop.h), row-wise kernels above their own grains; below
// them the region's start-up costs more than it saves. OpenBLAS keeps small GEMMs on one thread
// by itself (its GEMM_MULTITHREAD_THRESHOLD and small-matrix kernels): measured through
// tt::matmul on this 2-core EPYC, square products up to n = 96 ran at the same speed on 1 and 2
// threads (within 4%), n = 128 1.28x faster on 2, n = 256 1.80x; module 08's [128, 64] x [64, 64]
// layers the same on both. So no threshold of our own is needed in front of it.
//
// The kernel set. OpenBLAS picks its kernels at load from the CPU model; a model it does not
// know (virtual machines hide it) gets 'Prescott' (SSE3), about 5x slower than the AVX-512
// kernels. The first parallel op compares the kernel set with the CPU's features
// (backend/cpu/blas_info.h) and, if it falls short, warns once with the OPENBLAS_CORETYPE to set.
// It cannot be changed after load: tt::relaunch_with_runtime_env (backend/runtime_info.h) sets the
// variable and re-executes the program, which the examples and walkthroughs do first thing;
// tools/tt sets it too.
//
// Waiting. After a parallel region libgomp's idle threads spin before they sleep (with
// OMP_WAIT_POLICY unset: 300,000 pause loops, milliseconds), so the next region starts without a
// wake-up. On an idle machine that is cheap; on a busy one the spinning threads take cores that a
// thread of the same region, or another program, needs. Measured on the 2-core EPYC (tt_bench,
// 2 threads, best of 5 rounds, the two settings in alternate processes, four times): idle,
// passive waiting cost gpt_step 2-5% per round (best 155-211 ms unset, 162-217 passive) and
// mlp_chain_fb, mha_fb, linear_fb 0-2% in all but one noisy round. With two busy loops at the
// same priority, gpt_step took 2029 and 2559 ms unset, 465 and 495 ms passive; GOMP_SPINCOUNT
// of 10,000 or 30,000 landed anywhere from 679 to 3077 ms.
//
// A busy machine. Passive waiting is not enough where every core is taken: a region ends only
// when its last thread has run, and a thread that waits for a core waits a scheduler time slice
// (milliseconds) for each of the thousands of regions in a step. The tiny-GPT demo
// (examples/train_gpt_task, defaults) beside two busy loops: 82-136 s on 2 passive threads, over
// 150 s on 2 spinning ones, 10.3-10.7 s on 1 thread; 4.5 s alone on the idle machine. Walkthrough
// 14's training step (--step 7) the same way: 57-66 s passive, over 150 s spinning, 6.1 s on 1
// thread. So on a busy machine fewer threads are faster: the cores other programs leave idle, at
// least one (detail::threads_for_busy, core/runtime_policy.h). Busy means what runs now: the
// runnable tasks of /proc/loadavg less this process's own, the median of a few samples 2 ms apart
// (detail::runnable_elsewhere). Not the 1-minute load average (as OMP_DYNAMIC uses its 15-minute
// one): it decays over minutes, so right after `tools/tt demo` had built the example on both cores
// it still read 2.1, and the demo trained on 1 thread of an idle 2-core machine. A program keeps
// what it chose at its start; OMP_NUM_THREADS, or tt::set_num_threads, overrides it.
//
// Who gets what. relaunch_with_runtime_env(argv) (backend/runtime_info.h), which the examples and
// the walkthroughs call first, sets both where the environment says nothing
// (RuntimePolicy::SharedMachine): learners' machines are often busy, and there a 4x to 30x loss
// outweighs a few percent on an idle one. tools/tt runs tests, walkthroughs and the demo passive
// too. The benchmarks keep OpenMP's defaults (RuntimePolicy::OpenMPDefault), as PyTorch runs:
// they are meant for an idle machine and compare with it. libgomp reads the variables only when
// it loads, so a library cannot change them in a program that is already running: a program that
// does not call the relaunch is warned at its first parallel op when the machine is busy and
// nothing was chosen (detail::busy_machine_advice), and tt doctor lists the same problem.
#include "tinytorch/backend/threads.h"

#include <omp.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "tinytorch/backend/cpu/blas_info.h"
#include "tinytorch/core/error.h"
#include "tinytorch/core/runtime_policy.h"

namespace tt {

namespace {

std::atomic<int> g_threads{0};
std::atomic<int> g_epoch{0};  // 0: not initialised; 1: OpenMP's defaults; then +1 per set_num_threads
thread_local int tl_epoch = -1;

// Under mpirun each rank is a process of its own and would print the same warnings about the same
// machine, into the middle of rank 0's output: rank 0 speaks for the job. The launcher's variable
// is read because the warnings come before any process group exists.
bool first_rank_of_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* value = std::getenv(name)) return std::string(value) == "0";
  }
  return true;
}

// The first-use warnings: a BLAS kernel set below the CPU, a pthreads BLAS beside OpenMP, spinning
// threads on a busy machine.
void check_blas_once(int threads) {
  if (!first_rank_of_launcher()) return;
  const cpu::BlasCoreAdvice advice = cpu::blas_core_advice_here();
  if (!advice.message.empty()) std::fprintf(stderr, "tinytorch: warning: %s\n", advice.message.c_str());
  const std::string problem = cpu::blas_threading_problem(cpu::blas_info());
  if (!problem.empty() && threads > 1) std::fprintf(stderr, "tinytorch: warning: %s\n", problem.c_str());
  const std::string busy = detail::busy_machine_advice_here(threads);
  if (!busy.empty()) std::fprintf(stderr, "tinytorch: warning: %s\n", busy.c_str());
}

void init_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Runs before any set_num_threads stores (set_num_threads calls this first).
    g_threads.store(omp_get_max_threads());
    cpu::blas_set_num_threads(g_threads.load());
    g_epoch.store(1);
    check_blas_once(g_threads.load());
  });
}

}  // namespace

void set_num_threads(int n) {
  TT_CHECK(n >= 1, "set_num_threads: the thread count must be at least 1, got ", n);
  init_once();
  g_threads.store(n);
  cpu::blas_set_num_threads(n);
  tl_epoch = g_epoch.fetch_add(1) + 1;
  omp_set_num_threads(n);
}

int get_num_threads() {
  detail::apply_num_threads();
  return omp_get_max_threads();
}

namespace detail {

void apply_num_threads() {
  const int epoch = g_epoch.load(std::memory_order_acquire);
  if (tl_epoch == epoch) return;
  init_once();
  tl_epoch = g_epoch.load(std::memory_order_acquire);
  // Epoch 1: nobody called set_num_threads, so each thread keeps OpenMP's own setting.
  if (tl_epoch > 1) omp_set_num_threads(g_threads.load());
}

}  // namespace detail

}  // namespace tt
