// CpuAutocast: LibTorch's CPU autocast in bf16 for one scope, what torch.autocast("cpu",
// dtype=torch.bfloat16) does in Python (the bf16 workloads' LibTorch side).
#pragma once

#include <ATen/autocast_mode.h>

namespace ttbench {

struct CpuAutocast {
  CpuAutocast() {
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
  ~CpuAutocast() {
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();  // the casts of the weights, as leaving torch.autocast does
  }
  CpuAutocast(const CpuAutocast&) = delete;
  CpuAutocast& operator=(const CpuAutocast&) = delete;
};

}  // namespace ttbench
