// DL_CPU_ISA, the cap on the CPU kernels' level (isa.hpp): in the library every variant shares,
// since it caps oneDNN's JIT too (gemm_onednn.cpp).
#include <cstdlib>

#include <fmt/format.h>

#include "backend/cpu/isa.hpp"
#include "core/error.hpp"

namespace dl::cpu {

namespace {

// DL_CPU_ISA's spellings of each level, the first the one it is shown by; read and shown by
// this one table.
struct CapSpelling {
  IsaLevel level;
  const char* name;
  const char* alias;
};
constexpr CapSpelling kCapSpellings[] = {{IsaLevel::kX86_64, "x86-64", nullptr},
                                         {IsaLevel::kAvx2, "avx2", "x86-64-v3"},
                                         {IsaLevel::kAvx512, "avx512", "x86-64-v4"}};

}  // namespace

const char* isa_cap_name(IsaLevel level) {
  for (const CapSpelling& s : kCapSpellings)
    if (s.level == level) return s.name;
  return kCapSpellings[0].name;
}

IsaLevel parse_isa_cap(std::string_view value) {
  for (const CapSpelling& s : kCapSpellings)
    if (value == s.name || (s.alias != nullptr && value == s.alias)) return s.level;
  throw ConfigError(fmt::format(
      "DL_CPU_ISA={}: not a level of the CPU kernels; set x86-64, avx2 or avx512, or unset it "
      "for the widest this CPU runs",
      value));
}

std::optional<IsaLevel> isa_cap_from_environment() {
  const char* value = std::getenv("DL_CPU_ISA");
  if (value == nullptr || *value == '\0') return std::nullopt;
  return parse_isa_cap(value);
}

}  // namespace dl::cpu
