// What this CPU can do for the BLAS: its model and the x86 SIMD extensions both the CPU and the
// operating system support (cpuid + xgetbv), ranked as levels a BLAS kernel set is built for.
#pragma once

#include <string>

namespace tt::cpu {

struct CpuFeatures {
  std::string model;  // "AMD EPYC ...", or "" where the CPU does not say
  std::string vendor;  // "GenuineIntel", "AuthenticAMD", ... ("" off x86)
  bool avx = false, fma = false, avx2 = false;
  bool avx512f = false, avx512dq = false, avx512bw = false, avx512vl = false;
  bool avx512_bf16 = false, amx_tile = false, amx_bf16 = false;
};

// The SIMD level of a CPU or of a BLAS kernel set: what the fastest GEMM kernel may use.
enum class SimdLevel { kUnknown = 0, kSse = 1, kAvx = 2, kAvx2 = 3, kAvx512 = 4, kAvx512Bf16 = 5 };

const CpuFeatures& cpu_features();           // read once
SimdLevel simd_level(const CpuFeatures& f);  // kSse on an x86-64 without AVX; kUnknown off x86
std::string feature_list(const CpuFeatures& f);  // "avx avx2 fma avx512f ... amx_tile"
const char* simd_level_name(SimdLevel level);    // "AVX-512", ...

}  // namespace tt::cpu
