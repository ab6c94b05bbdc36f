// detect_cpu_isa and what it needs alone, so that a probe built for plain x86-64 can run it on
// any CPU model (tests/backend/cpu_isa_qemu.sh).
#include <cpuid.h>

#include <cstdint>
#include <initializer_list>

#include "backend/cpu/isa.hpp"

namespace dl::cpu {

namespace {

struct CpuidRegisters {
  unsigned a = 0, b = 0, c = 0, d = 0;
};
CpuidRegisters cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegisters r;
  if (__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d) == 0) return {};
  return r;
}
// Whether every one of `bits` is set in `word`.
bool has_all(unsigned word, std::initializer_list<int> bits) {
  for (int b : bits) {
    if (((word >> b) & 1u) == 0) return false;
  }
  return true;
}

// Feature bits (the processor manuals' CPUID tables): leaf 1 ECX, leaf 7 EBX, leaf 0x80000001 ECX.
namespace leaf1_ecx {
constexpr int kSse3 = 0, kSsse3 = 9, kFma = 12, kCx16 = 13, kSse41 = 19, kSse42 = 20, kMovbe = 22,
              kPopcnt = 23, kOsxsave = 27, kAvx = 28, kF16c = 29;
}
namespace leaf7_ebx {
constexpr int kBmi1 = 3, kAvx2 = 5, kBmi2 = 8, kAvx512f = 16, kAvx512dq = 17, kAvx512cd = 28,
              kAvx512bw = 30, kAvx512vl = 31;
}
namespace extended1_ecx {
constexpr int kLahf = 0, kLzcnt = 5;
}

// The register state the OS saves on a context switch: AVX is usable only where XCR0 has the SSE
// and AVX bits, AVX-512 only where it also has the opmask and upper-ZMM bits. xgetbv itself exists
// only where cpuid reports OSXSAVE.
std::uint64_t os_saved_state(const CpuidRegisters& leaf1) {
  if (!has_all(leaf1.c, {leaf1_ecx::kOsxsave})) return 0;
  unsigned lo = 0, hi = 0;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

constexpr std::uint64_t kAvxState = 0x6;      // XMM, YMM
constexpr std::uint64_t kAvx512State = 0xE0;  // opmask, ZMM0-15 upper halves, ZMM16-31

// GCC's -march=x86-64-v3 may emit any of the v2 level's instructions (SSE3 to SSE4.2, POPCNT,
// CMPXCHG16B, LAHF in 64-bit mode) and AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT and MOVBE;
// -march=x86-64-v4 adds AVX-512 F, BW, CD, DQ and VL.
bool runs_avx2(const CpuidRegisters& l1, const CpuidRegisters& l7, const CpuidRegisters& e1,
               std::uint64_t xcr0) {
  using namespace leaf1_ecx;
  const bool v2 = has_all(l1.c, {kSse3, kSsse3, kCx16, kSse41, kSse42, kPopcnt}) &&
                  has_all(e1.c, {extended1_ecx::kLahf});
  const bool v3 = has_all(l1.c, {kFma, kMovbe, kAvx, kF16c}) &&
                  has_all(l7.b, {leaf7_ebx::kBmi1, leaf7_ebx::kAvx2, leaf7_ebx::kBmi2}) &&
                  has_all(e1.c, {extended1_ecx::kLzcnt});
  return v2 && v3 && (xcr0 & kAvxState) == kAvxState;
}
bool runs_avx512(const CpuidRegisters& l7, std::uint64_t xcr0) {
  using namespace leaf7_ebx;
  const bool v4 = has_all(l7.b, {kAvx512f, kAvx512dq, kAvx512cd, kAvx512bw, kAvx512vl});
  return v4 && (xcr0 & (kAvxState | kAvx512State)) == (kAvxState | kAvx512State);
}

}  // namespace

IsaLevel detect_cpu_isa() {
  const CpuidRegisters l1 = cpuid(1, 0), l7 = cpuid(7, 0), e1 = cpuid(0x80000001u, 0);
  const std::uint64_t xcr0 = os_saved_state(l1);
  if (!runs_avx2(l1, l7, e1, xcr0)) return IsaLevel::kX86_64;
  return runs_avx512(l7, xcr0) ? IsaLevel::kAvx512 : IsaLevel::kAvx2;
}

const char* isa_level_vectors(IsaLevel level) {
  switch (level) {
    case IsaLevel::kAvx512:
      return "AVX-512";
    case IsaLevel::kAvx2:
      return "AVX2";
    case IsaLevel::kX86_64:
      break;
  }
  return "SSE2";
}

}  // namespace dl::cpu
