// cpu_features(): the CPU's model and SIMD extensions from cpuid, each one counted only when the
// operating system saves its registers (xgetbv), as a kernel may only use what both support.
#include "tinytorch/backend/cpu/cpu_features.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TT_X86 1
#endif

namespace tt::cpu {

namespace {

#ifdef TT_X86
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub) {
  Regs r;
  if (leaf > __get_cpuid_max(leaf & 0x80000000u, nullptr)) return r;
  __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
  return r;
}

bool bit(unsigned v, int n) { return (v >> n) & 1u; }

// XCR0: the register state the OS saves on a context switch.
uint64_t xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

CpuFeatures probe() {
  CpuFeatures f;
  char brand[49] = {};
  if (__get_cpuid_max(0x80000000u, nullptr) >= 0x80000004u) {
    for (unsigned i = 0; i < 3; ++i) {
      Regs r = cpuid(0x80000002u + i, 0);
      std::memcpy(brand + 16 * i, &r, 16);
    }
  }
  f.model = brand;
  const Regs l0 = cpuid(0, 0);
  char vendor[13] = {};
  std::memcpy(vendor, &l0.b, 4);
  std::memcpy(vendor + 4, &l0.d, 4);
  std::memcpy(vendor + 8, &l0.c, 4);
  f.vendor = vendor;
  while (!f.model.empty() && f.model.back() == ' ') f.model.pop_back();

  const Regs l1 = cpuid(1, 0);
  if (!bit(l1.c, 27)) return f;  // no OSXSAVE: the OS saves no AVX state, so nothing past SSE
  const uint64_t xcr = xcr0();
  const bool os_avx = (xcr & 0x6) == 0x6;         // XMM and YMM
  const bool os_avx512 = (xcr & 0xe6) == 0xe6;    // plus opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  const Regs l7 = cpuid(7, 0), l7s1 = cpuid(7, 1);
  f.avx = os_avx && bit(l1.c, 28);
  f.fma = f.avx && bit(l1.c, 12);
  f.avx2 = f.avx && bit(l7.b, 5);
  f.avx512f = os_avx512 && bit(l7.b, 16);
  f.avx512dq = f.avx512f && bit(l7.b, 17);
  f.avx512bw = f.avx512f && bit(l7.b, 30);
  f.avx512vl = f.avx512f && bit(l7.b, 31);
  f.avx512_bf16 = f.avx512f && bit(l7s1.a, 5);
  f.amx_tile = os_amx && bit(l7.d, 24);
  f.amx_bf16 = f.amx_tile && bit(l7.d, 22);
  return f;
}
#else
CpuFeatures probe() { return CpuFeatures{}; }
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = probe();
  return f;
}

SimdLevel simd_level(const CpuFeatures& f) {
#ifdef TT_X86
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq) {
    return f.avx512_bf16 ? SimdLevel::kAvx512Bf16 : SimdLevel::kAvx512;
  }
  if (f.avx2 && f.fma) return SimdLevel::kAvx2;
  if (f.avx) return SimdLevel::kAvx;
  return SimdLevel::kSse;
#else
  (void)f;
  return SimdLevel::kUnknown;
#endif
}

std::string feature_list(const CpuFeatures& f) {
  const std::pair<bool, const char*> all[] = {
      {f.avx, "avx"},           {f.fma, "fma"},           {f.avx2, "avx2"},
      {f.avx512f, "avx512f"},   {f.avx512dq, "avx512dq"}, {f.avx512bw, "avx512bw"},
      {f.avx512vl, "avx512vl"}, {f.avx512_bf16, "avx512_bf16"}, {f.amx_tile, "amx_tile"},
      {f.amx_bf16, "amx_bf16"}};
  std::string out;
  for (const auto& [on, name] : all) {
    if (!on) continue;
    if (!out.empty()) out += ' ';
    out += name;
  }
  return out.empty() ? "none beyond the baseline" : out;
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kUnknown: return "unknown";
    case SimdLevel::kSse: return "SSE";
    case SimdLevel::kAvx: return "AVX";
    case SimdLevel::kAvx2: return "AVX2+FMA";
    case SimdLevel::kAvx512: return "AVX-512";
    case SimdLevel::kAvx512Bf16: return "AVX-512 with BF16";
  }
  return "unknown";
}

}  // namespace tt::cpu
