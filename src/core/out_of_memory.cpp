#include "core/out_of_memory.hpp"

#include <cstdio>
#include <iterator>
#include <mutex>
#include <utility>

namespace dl {

namespace {

thread_local const AllocationPurpose* t_innermost = nullptr;

std::string out_of_memory_message(std::size_t bytes, const std::string& memory) {
  const std::string what = AllocationPurpose::current();
  return "out of memory allocating " + (what.empty() ? std::string("a buffer") : what) + ": " +
         format_bytes(bytes) + " of " + memory + "; " + out_of_memory_advice();
}

}  // namespace

std::string format_bytes(std::size_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  constexpr double kStep = 1024.0;
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= kStep && unit + 1 < std::size(kUnits)) {
    value /= kStep;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string out_of_memory_advice() {
  return "lower batchSize, the layers' nOut, parallel.workers, parallel.prefetchBuffer or "
         "data.trainLimit, or run where more memory is free";
}

std::string bad_alloc_message() {
  return "out of memory; " + out_of_memory_advice();
}

OutOfMemoryError::OutOfMemoryError(std::size_t bytes, const std::string& memory)
    : Error(ExitCode::kOutOfMemory, out_of_memory_message(bytes, memory)) {}

AllocationPurpose::AllocationPurpose(std::string what)
    : what_(std::move(what)), outer_(t_innermost) {
  t_innermost = this;
}

AllocationPurpose::~AllocationPurpose() {
  t_innermost = outer_;
}

std::string AllocationPurpose::current() {
  return t_innermost == nullptr ? std::string() : t_innermost->what_;
}

void prepare_exception_unwinding() {
  struct WarmUp {};
  std::once_flag flag;
  try {
    std::call_once(flag, [] { throw WarmUp{}; });
  } catch (const WarmUp&) {
    // Unwound through pthread_once's cleanup: glibc holds libgcc_s from now on.
  }
}

}  // namespace dl
