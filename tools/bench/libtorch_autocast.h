// CpuAutocast: LibTorch's CPU autocast in bf16 for one scope, what torch.autocast("cpu",
// dtype=torch.bfloat16, enabled=...) does in Python (the bf16 workloads' LibTorch side).
#pragma once

#include <ATen/autocast_mode.h>

namespace ttbench {

class CpuAutocast {
 public:
  explicit CpuAutocast(bool enabled = true) : prev_(at::autocast::is_cpu_enabled()) {
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(enabled);
  }
  ~CpuAutocast() {
    at::autocast::set_cpu_enabled(prev_);
    if (!prev_) at::autocast::clear_cache();  // the weights' casts, as leaving torch.autocast does
  }
  CpuAutocast(const CpuAutocast&) = delete;
  CpuAutocast& operator=(const CpuAutocast&) = delete;

 private:
  bool prev_;
};

}  // namespace ttbench
