// The choice of the CPU backend's kernel variant (backend/cpu/isa.hpp): the detected level, the
// DL_CPU_ISA cap, and the errors for a variant this CPU or build cannot run.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "backend/cpu/isa.hpp"
#include "backend/cpu/kernel_table.hpp"
#include "core/error.hpp"

using dl::cpu::IsaLevel;
using dl::cpu::IsaVariant;
using dl::cpu::KernelTable;

namespace {

KernelTable table_for(IsaLevel level) {
  KernelTable t{};
  t.level = level;
  return t;
}

const KernelTable kBaseline = table_for(IsaLevel::kX86_64);
const KernelTable kAvx2 = table_for(IsaLevel::kAvx2);
const KernelTable kAvx512 = table_for(IsaLevel::kAvx512);
const std::vector<IsaVariant> kPortable = {
    {"x86-64", &kBaseline}, {"x86-64-v3", &kAvx2}, {"x86-64-v4", &kAvx512}};

std::string chosen(IsaLevel cpu, std::optional<IsaLevel> cap = std::nullopt) {
  return dl::cpu::choose_isa_variant(kPortable, cpu, cap).name;
}

}  // namespace

TEST_CASE("cpu isa: the widest variant the CPU runs, capped by DL_CPU_ISA", "[cpu_isa]") {
  CHECK(chosen(IsaLevel::kAvx512) == "x86-64-v4");
  CHECK(chosen(IsaLevel::kAvx2) == "x86-64-v3");
  CHECK(chosen(IsaLevel::kX86_64) == "x86-64");
  CHECK(chosen(IsaLevel::kAvx512, IsaLevel::kAvx2) == "x86-64-v3");
  CHECK(chosen(IsaLevel::kAvx512, IsaLevel::kX86_64) == "x86-64");
  CHECK(chosen(IsaLevel::kAvx2, IsaLevel::kAvx2) == "x86-64-v3");
  CHECK_THROWS_AS(chosen(IsaLevel::kAvx2, IsaLevel::kAvx512), dl::ConfigError);
}

TEST_CASE("cpu isa: a native build's one variant, and what it cannot serve", "[cpu_isa]") {
  const std::vector<IsaVariant> native = {{"native", &kAvx512}};
  CHECK(std::string(dl::cpu::choose_isa_variant(native, IsaLevel::kAvx512, {}).name) == "native");
  CHECK_THROWS_AS(dl::cpu::choose_isa_variant(native, IsaLevel::kAvx512, IsaLevel::kAvx2),
                  dl::ConfigError);
  CHECK_THROWS_AS(dl::cpu::choose_isa_variant(native, IsaLevel::kAvx2, {}), dl::ConfigError);
}

TEST_CASE("cpu isa: DL_CPU_ISA values", "[cpu_isa]") {
  CHECK(dl::cpu::parse_isa_cap("x86-64") == IsaLevel::kX86_64);
  CHECK(dl::cpu::parse_isa_cap("avx2") == IsaLevel::kAvx2);
  CHECK(dl::cpu::parse_isa_cap("x86-64-v3") == IsaLevel::kAvx2);
  CHECK(dl::cpu::parse_isa_cap("avx512") == IsaLevel::kAvx512);
  CHECK(dl::cpu::parse_isa_cap("x86-64-v4") == IsaLevel::kAvx512);
  CHECK_THROWS_AS(dl::cpu::parse_isa_cap("sse4"), dl::ConfigError);
  CHECK_THROWS_AS(dl::cpu::parse_isa_cap("AVX2"), dl::ConfigError);
}

TEST_CASE("cpu isa: detection agrees with the compiler's CPU model, and the choice fits it",
          "[cpu_isa]") {
  const IsaLevel cpu = dl::cpu::detect_cpu_isa();
  // libgcc's model also requires the OS to save the registers, like detect_cpu_isa.
  if (cpu >= IsaLevel::kAvx2) CHECK(__builtin_cpu_supports("avx2"));
  if (cpu >= IsaLevel::kAvx512) CHECK(__builtin_cpu_supports("avx512f"));
  if (!__builtin_cpu_supports("avx2")) CHECK(cpu == IsaLevel::kX86_64);
  const IsaVariant& v = dl::cpu::selected_isa_variant();
  CHECK(v.kernels->level <= cpu);
  CHECK(&dl::cpu::selected_kernels() == v.kernels);
  const std::string line = dl::cpu::describe_cpu_isa();
  CHECK(line.rfind(std::string("own kernels: ") + v.name + " (", 0) == 0);
}
