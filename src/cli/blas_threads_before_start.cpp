// OpenBLAS starts its own thread pool while the libraries are loaded, before main, with a thread
// per CPU this process may run on. dl-train never uses that pool (the CPU backend runs every
// product on one BLAS thread: set_cpu_threads), yet each pool thread reserves a 128 MiB buffer as
// it starts: on a 128-core server 16 GiB of address space and 127 thread slots. Under a limit on
// address space (`ulimit -v`, Grid Engine's h_vmem) that reservation fails and OpenBLAS retries
// it for ever, so even `dl-train --version` hung at exit, joining the pool.
//
// OpenBLAS sizes the pool by the CPUs in the process's affinity mask, read when it loads. The
// executable's pre-initializers run before any library's initializer, and its constructors after
// all of them: the first narrows the mask to one CPU, so OpenBLAS starts no pool thread, and the
// second gives the process its mask back before main. (Setting OPENBLAS_NUM_THREADS there would
// not do: the C library's own initializer, which runs after the pre-initializers, resets the
// environment to the one the process started with.)
#include <sched.h>

namespace {

cpu_set_t g_started_with;
bool g_narrowed = false;

void narrow_to_one_cpu(int /*argc*/, char** /*argv*/, char** /*env*/) {
  if (sched_getaffinity(0, sizeof(g_started_with), &g_started_with) != 0) return;
  if (CPU_COUNT(&g_started_with) <= 1) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &g_started_with)) continue;
    CPU_SET(cpu, &one);
    break;
  }
  g_narrowed = sched_setaffinity(0, sizeof(one), &one) == 0;
}

// The first priority a program may use: before the executable's other static initializers,
// which may read the mask.
__attribute__((constructor(101))) void give_back_all_cpus() {
  if (g_narrowed) sched_setaffinity(0, sizeof(g_started_with), &g_started_with);
}

// ELF: run before the shared libraries' initializers (only an executable may hold these).
__attribute__((used, section(".preinit_array"))) void (*const kNarrowToOneCpu)(
    int, char**, char**) = narrow_to_one_cpu;

}  // namespace
