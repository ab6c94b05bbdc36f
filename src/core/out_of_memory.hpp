// Allocation failures that reach the user: exit 7 and one line naming what was being allocated,
// its size, where, and the keys to lower. The backends' allocators throw it (the CPU's aligned
// allocation and the CUDA caching allocator alike); what the memory was for comes from the
// AllocationPurpose of the code that asked for it (binding a model, the updater's state), so the
// allocator need not know.
#pragma once

#include <cstddef>
#include <string>

#include "core/error.hpp"

namespace dl {

// "512 B", "1.5 KiB", "3.2 GiB".
std::string format_bytes(std::size_t bytes);

// What to lower when memory runs out, for every out-of-memory message.
std::string out_of_memory_advice();

// "out of memory; <advice>": a std::bad_alloc's message (main's, a worker's), which knows neither
// what was being allocated nor its size.
std::string bad_alloc_message();

// Makes glibc load what it needs to unwind an exception through its own frames, while memory is
// still free; main calls it first. glibc loads libgcc_s the first time an exception passes one of
// its frames that runs a cleanup, pthread_once's among them (std::call_once, under which oneDNN
// builds its JIT kernels). When that first time is an allocation failing under an address-space
// limit (ulimit -v, a batch system's memory limit), the load fails too and glibc aborts the
// process ("libgcc_s.so.1 must be installed for unwinding to work", exit 134) instead of the
// exception reaching the out-of-memory message (exit 7).
void prepare_exception_unwinding();

class OutOfMemoryError : public Error {
 public:
  // `bytes` of `memory` ("host memory", "CUDA device 0 (1.2 GiB in use, nothing cached)") could
  // not be allocated for the innermost AllocationPurpose of this thread.
  OutOfMemoryError(std::size_t bytes, const std::string& memory);
};

// While it lives, the allocations this thread makes are for `what` ("the outputs of layer 2
// (dense) for batch 512"); nested purposes name the innermost.
class AllocationPurpose {
 public:
  explicit AllocationPurpose(std::string what);
  ~AllocationPurpose();
  AllocationPurpose(const AllocationPurpose&) = delete;
  AllocationPurpose& operator=(const AllocationPurpose&) = delete;

  // The innermost purpose of this thread, or empty.
  static std::string current();

 private:
  std::string what_;
  const AllocationPurpose* outer_;
};

}  // namespace dl
