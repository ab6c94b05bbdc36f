#include "backend/cpu/isa.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "backend/cpu/kernel_table.hpp"
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

const char* cap_value(IsaLevel level) {
  for (const CapSpelling& s : kCapSpellings)
    if (s.level == level) return s.name;
  return kCapSpellings[0].name;
}

// DL_CPU_ISA's cap, if set and not empty.
std::optional<IsaLevel> cap_from_environment() {
  const char* value = std::getenv("DL_CPU_ISA");
  if (value == nullptr || *value == '\0') return std::nullopt;
  return parse_isa_cap(value);
}

}  // namespace

IsaLevel parse_isa_cap(std::string_view value) {
  for (const CapSpelling& s : kCapSpellings)
    if (value == s.name || (s.alias != nullptr && value == s.alias)) return s.level;
  throw ConfigError(fmt::format(
      "DL_CPU_ISA={}: not a level of the CPU kernels; set x86-64, avx2 or avx512, or unset it "
      "for the widest this CPU runs",
      value));
}

const IsaVariant& choose_isa_variant(const std::vector<IsaVariant>& variants, IsaLevel cpu,
                                     std::optional<IsaLevel> cap) {
  if (cap && *cap > cpu) {
    throw ConfigError(fmt::format(
        "DL_CPU_ISA={}: this CPU (or its OS) does not run {}, its widest level is {}; set "
        "DL_CPU_ISA={} or lower, or unset it",
        cap_value(*cap), isa_level_vectors(*cap), isa_level_vectors(cpu), cap_value(cpu)));
  }
  const IsaLevel limit = cap ? *cap : cpu;
  const IsaVariant* chosen = nullptr;
  for (const IsaVariant& v : variants) {
    if (v.kernels->level <= limit) chosen = &v;
  }
  if (chosen != nullptr) return *chosen;
  const IsaVariant& narrowest = variants.front();
  const char* rebuild = "rebuild with -Dnative_cpu=false for kernels of every x86-64 level";
  if (cap) {
    throw ConfigError(fmt::format(
        "DL_CPU_ISA={}: this dl-train has only the {} kernels, which need {}; unset DL_CPU_ISA, or "
        "{}",
        cap_value(*cap), narrowest.name, isa_level_vectors(narrowest.kernels->level), rebuild));
  }
  throw ConfigError(
      fmt::format("this CPU runs {} at most, but this dl-train's CPU kernels ({}) "
                  "need {}: {}, picked at start-up",
                  isa_level_vectors(cpu), narrowest.name,
                  isa_level_vectors(narrowest.kernels->level), rebuild));
}

const IsaVariant& selected_isa_variant() {
  static const IsaVariant& chosen =
      choose_isa_variant(compiled_isa_variants(), detect_cpu_isa(), cap_from_environment());
  return chosen;
}

const KernelTable& selected_kernels() {
  return *selected_isa_variant().kernels;
}

std::string describe_cpu_isa() {
  const IsaVariant& v = selected_isa_variant();
  const std::optional<IsaLevel> cap = cap_from_environment();
  return fmt::format("own kernels: {} ({}{})", v.name, isa_level_vectors(v.kernels->level),
                     cap ? fmt::format("; DL_CPU_ISA={}", cap_value(*cap)) : "");
}

}  // namespace dl::cpu
