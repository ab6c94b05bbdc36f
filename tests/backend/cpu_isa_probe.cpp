// Prints the level detect_cpu_isa finds on this CPU ("AVX-512", "AVX2", "SSE2"), for
// cpu_isa_qemu.sh. Built for plain x86-64, so that it runs on any CPU model qemu emulates.
#include <cstdio>

#include "backend/cpu/isa.hpp"

int main() {
  std::printf("%s\n", dl::cpu::isa_level_vectors(dl::cpu::detect_cpu_isa()));
  return 0;
}
