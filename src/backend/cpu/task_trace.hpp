// The CPU backend's task trace: with DL_CPU_TASK_TRACE=FILE in the environment, every
// parallel_slices call runs its tasks one after another on the calling thread and writes one line
// to FILE: when it began and ended, its task count, the code that called it and each task's
// duration. bench/task_scaling.py reads the file and predicts the speed-up of the same step on
// 2 to 128 threads, op by op, from the tasks' sizes: how a many-core server would run a network,
// measured on any machine (oneDNN's DNNL_VERBOSE is the model). A traced run computes the same
// bits as any other (thread_pool.hpp); it is only slower. Some ops cut their tasks by the thread
// count, so trace with parallel.blasThreads set to the count the prediction is for.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace dl::cpu {

class TaskTrace {
 public:
  // The trace DL_CPU_TASK_TRACE asked for when the process started; null when it is unset.
  static TaskTrace* active();

  // One call's line: the caller's code address (`site`, made relative to its executable so that
  // addr2line can name it), its start and end and each task's duration, in nanoseconds of the
  // steady clock. Several workers may record at once.
  void record(const void* site, std::int64_t start_ns, std::int64_t end_ns,
              const std::vector<std::int64_t>& task_ns);

  static std::int64_t now_ns();

  explicit TaskTrace(const char* path);
  ~TaskTrace();
  TaskTrace(const TaskTrace&) = delete;
  TaskTrace& operator=(const TaskTrace&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dl::cpu
