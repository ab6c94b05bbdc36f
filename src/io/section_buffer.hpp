// A buffer sized for a file's section before it is read: a section larger than memory allows is
// an out-of-memory error naming the file, the section and the size (a bare std::bad_alloc said
// only "out of memory", with a training run's advice).
#pragma once

#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/memory_limits.hpp"
#include "core/out_of_memory.hpp"

namespace dl {

// Sizes `buffer` to `count` elements for the section `context` ("PATH: section 'PARM'") of
// `bytes` bytes.
template <class T>
void resize_for_section(std::vector<T>& buffer, std::uint64_t count, const std::string& context,
                        std::uint64_t bytes) {
  try {
    buffer.resize(static_cast<std::size_t>(count));
  } catch (const std::bad_alloc&) {
    const MemoryLimit memory = host_memory_limit();
    throw Error(
        ExitCode::kOutOfMemory,
        fmt::format("out of memory reading {} ({}; {} of host memory may be used: {}); read "
                    "the file where more memory is free",
                    context, format_bytes(bytes), format_bytes(memory.bytes), memory.source));
  }
}

}  // namespace dl
