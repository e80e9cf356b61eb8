// tt::set_num_threads / tt::get_num_threads: the one thread count that governs tinytorch's
// OpenMP regions and the BLAS (Note [threading policy] in backend/threads.cpp).
#pragma once

namespace tt {

// Threads for every parallel op from now on, process-wide: tinytorch's OpenMP regions (on every
// thread that runs ops) and the BLAS's GEMMs. n >= 1. Like at::set_num_threads.
void set_num_threads(int n);

// Threads the next parallel op on this thread will use. Before any set_num_threads: OpenMP's
// default, i.e. OMP_NUM_THREADS when set, else the cores this process may run on.
int get_num_threads();

namespace detail {
// Applies the count to this thread (and, the first time in the process, to the BLAS; that first
// time also checks the BLAS's kernel set against the CPU and warns once). Kernels call it before
// a parallel region or a BLAS call; after the first call it is one thread-local comparison.
void apply_num_threads();
}  // namespace detail

}  // namespace tt
