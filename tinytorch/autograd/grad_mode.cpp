// Grad mode's state: one flag per thread, so NoGradGuard on one thread never changes what another
// thread records (autograd/grad_mode.h).
#include "tinytorch/autograd/grad_mode.h"

namespace tt {

namespace {
thread_local bool grad_mode_enabled = true;
}  // namespace

bool GradMode::is_enabled() { return grad_mode_enabled; }
void GradMode::set_enabled(bool enabled) { grad_mode_enabled = enabled; }

}  // namespace tt
