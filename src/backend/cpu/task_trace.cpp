#include "backend/cpu/task_trace.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace dl::cpu {

namespace {

// Numbers held before they are written out as text: formatting a call's line as it ends would
// add its cost to the gap before the next call, which the trace counts as serial work. A flush
// lands in one gap of thousands; task_scaling.py's medians leave it out.
constexpr std::size_t kBufferedNumbers = std::size_t{1} << 20;

}  // namespace

struct TaskTrace::Impl {
  std::FILE* file = nullptr;
  std::mutex mutex;
  std::string binary;  // written before the first line
  std::unordered_map<const void*, std::int64_t> offsets;
  // Per call: site offset, start, end, task count, then each task's duration.
  std::vector<std::int64_t> numbers;

  void flush() {
    if (!binary.empty()) {
      std::fprintf(file, "# binary %s\n", binary.c_str());
      binary.clear();
    }
    std::string line;
    for (std::size_t i = 0; i < numbers.size();) {
      const std::int64_t count = numbers[i + 3];
      line = fmt::format("{} {} {} {:#x}", numbers[i + 1], numbers[i + 2], count, numbers[i]);
      for (std::int64_t t = 0; t < count; ++t) line += fmt::format(" {}", numbers[i + 4 + t]);
      std::fprintf(file, "%s\n", line.c_str());
      i += 4 + static_cast<std::size_t>(count);
    }
    numbers.clear();
  }
};

TaskTrace::TaskTrace(const char* path) : impl_(std::make_unique<Impl>()) {
  impl_->file = std::fopen(path, "w");
  // A trace asked for and not written would leave the user guessing why the file is missing.
  if (impl_->file == nullptr)
    std::cerr << "dl-train: warning: DL_CPU_TASK_TRACE: cannot write " << path
              << "; no task trace\n";
  impl_->numbers.reserve(kBufferedNumbers);
}

TaskTrace::~TaskTrace() {
  if (impl_->file == nullptr) return;
  impl_->flush();
  std::fclose(impl_->file);
}

TaskTrace* TaskTrace::active() {
  // Read once: a trace is for a whole run, and the check sits on every op's path.
  static TaskTrace* const trace = []() -> TaskTrace* {
    const char* path = std::getenv("DL_CPU_TASK_TRACE");
    if (path == nullptr || *path == '\0') return nullptr;
    static TaskTrace t(path);
    return &t;
  }();
  return trace != nullptr && trace->impl_->file != nullptr ? trace : nullptr;
}

std::int64_t TaskTrace::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void TaskTrace::record(const void* site, std::int64_t start_ns, std::int64_t end_ns,
                       const std::vector<std::int64_t>& task_ns) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  // dladdr searches the symbol tables (microseconds, which would count as serial time): once
  // per call site.
  auto [known, added] = impl_->offsets.try_emplace(site, 0);
  if (added) {
    Dl_info info{};
    if (dladdr(site, &info) != 0 && info.dli_fbase != nullptr) {
      known->second = static_cast<const char*>(site) - static_cast<const char*>(info.dli_fbase);
      if (impl_->offsets.size() == 1 && info.dli_fname != nullptr) impl_->binary = info.dli_fname;
    }
  }
  const std::int64_t offset = known->second;
  auto& n = impl_->numbers;
  n.insert(n.end(), {offset, start_ns, end_ns, static_cast<std::int64_t>(task_ns.size())});
  n.insert(n.end(), task_ns.begin(), task_ns.end());
  if (n.size() >= kBufferedNumbers) impl_->flush();
}

}  // namespace dl::cpu
