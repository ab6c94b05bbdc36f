#include "backend/cpu/task_trace.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include <fmt/format.h>

namespace dl::cpu {

struct TaskTrace::Impl {
  std::FILE* file = nullptr;
  std::mutex mutex;
  bool named_binary = false;
};

TaskTrace::TaskTrace(const char* path) : impl_(std::make_unique<Impl>()) {
  impl_->file = std::fopen(path, "w");
  // A trace asked for and not written would leave the user guessing why the file is missing.
  if (impl_->file == nullptr)
    std::fprintf(stderr, "dl-train: warning: DL_CPU_TASK_TRACE: cannot write %s; no task trace\n",
                 path);
}

TaskTrace::~TaskTrace() {
  if (impl_->file != nullptr) std::fclose(impl_->file);
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
  Dl_info info{};
  const bool found = dladdr(site, &info) != 0 && info.dli_fbase != nullptr;
  const auto offset = found ? static_cast<const char*>(site) - static_cast<const char*>(info.dli_fbase)
                            : std::ptrdiff_t{0};
  std::string line = fmt::format("{} {} {} {:#x}", start_ns, end_ns, task_ns.size(), offset);
  for (std::int64_t t : task_ns) line += fmt::format(" {}", t);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->named_binary && found && info.dli_fname != nullptr) {
    std::fprintf(impl_->file, "# binary %s\n", info.dli_fname);
    impl_->named_binary = true;
  }
  std::fprintf(impl_->file, "%s\n", line.c_str());
}

}  // namespace dl::cpu
