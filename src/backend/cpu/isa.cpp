#include "backend/cpu/isa.hpp"

#include <fmt/format.h>

#include "backend/cpu/kernel_table.hpp"
#include "core/error.hpp"

namespace dl::cpu {

const IsaVariant& choose_isa_variant(const std::vector<IsaVariant>& variants, IsaLevel cpu,
                                     std::optional<IsaLevel> cap) {
  if (cap && *cap > cpu) {
    throw ConfigError(fmt::format(
        "DL_CPU_ISA={}: this CPU (or its OS) does not run {}, its widest level is {}; set "
        "DL_CPU_ISA={} or lower, or unset it",
        isa_cap_name(*cap), isa_level_vectors(*cap), isa_level_vectors(cpu), isa_cap_name(cpu)));
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
        isa_cap_name(*cap), narrowest.name, isa_level_vectors(narrowest.kernels->level), rebuild));
  }
  throw ConfigError(
      fmt::format("this CPU runs {} at most, but this dl-train's CPU kernels ({}) "
                  "need {}: {}, picked at start-up",
                  isa_level_vectors(cpu), narrowest.name,
                  isa_level_vectors(narrowest.kernels->level), rebuild));
}

const IsaVariant& selected_isa_variant() {
  static const IsaVariant& chosen =
      choose_isa_variant(compiled_isa_variants(), detect_cpu_isa(), isa_cap_from_environment());
  return chosen;
}

const KernelTable& selected_kernels() {
  return *selected_isa_variant().kernels;
}

std::string describe_cpu_isa() {
  const IsaVariant& v = selected_isa_variant();
  const std::optional<IsaLevel> cap = isa_cap_from_environment();
  return fmt::format("own kernels: {} ({}{})", v.name, isa_level_vectors(v.kernels->level),
                     cap ? fmt::format("; DL_CPU_ISA={}", isa_cap_name(*cap)) : "");
}

}  // namespace dl::cpu
