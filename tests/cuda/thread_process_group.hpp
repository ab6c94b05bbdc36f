// A ProcessGroup whose "processes" are threads of this test: what the GPU collective's set-up
// exchanges between processes (the NCCL unique id, device counts, the layout) goes through
// memory, so several NcclCommunicators or GpuCollectives in one test process form one job as
// MPI ranks would.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/process_group.hpp"

namespace dl::test {

// What the threads of one job share.
class ThreadJob {
 public:
  explicit ThreadJob(int size) : size_(size), values_(static_cast<std::size_t>(size)) {}
  int size() const { return size_; }

  // Every rank's `bytes` (rank r's in result[r]), once all ranks have called it.
  std::vector<std::string> exchange(int rank, const std::string& bytes) {
    std::unique_lock<std::mutex> lock(mutex_);
    // A rank may come back for the next exchange before the others have read this one.
    changed_.wait(lock, [&] { return leaving_ == 0; });
    values_[static_cast<std::size_t>(rank)] = bytes;
    const std::uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      leaving_ = size_;
      ++generation_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return generation_ != generation; });
    }
    std::vector<std::string> all = values_;
    if (--leaving_ == 0) changed_.notify_all();
    return all;
  }

 private:
  const int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> values_;
  int arrived_ = 0;
  int leaving_ = 0;
  std::uint64_t generation_ = 0;
};

class ThreadProcessGroup final : public ProcessGroup {
 public:
  ThreadProcessGroup(std::shared_ptr<ThreadJob> job, int rank)
      : job_(std::move(job)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return job_->size(); }
  std::string name() const override { return "test threads"; }

  void all_reduce_sum(float*, std::size_t) override { unused("all_reduce_sum"); }
  void all_reduce_sum(double*, std::size_t) override { unused("all_reduce_sum"); }
  void broadcast(void* data, std::size_t bytes, int root) override {
    const std::string mine(static_cast<const char*>(data), bytes);
    const std::string theirs = job_->exchange(rank_, mine)[static_cast<std::size_t>(root)];
    std::memcpy(data, theirs.data(), bytes);
  }
  std::vector<std::uint64_t> all_gather(std::uint64_t value) override {
    std::vector<std::uint64_t> values;
    for (const std::string& v : job_->exchange(rank_, std::to_string(value)))
      values.push_back(std::stoull(v));
    return values;
  }
  std::vector<std::string> gather(const std::string& bytes, int root) override {
    std::vector<std::string> all = job_->exchange(rank_, bytes);
    return rank_ == root ? all : std::vector<std::string>{};
  }
  void barrier() override { job_->exchange(rank_, ""); }
  [[noreturn]] void abort_job(int) override { std::terminate(); }

 private:
  // The GPU collective never sums over the process group; a test that does is wrong.
  [[noreturn]] static void unused(const char* what) {
    throw std::logic_error(std::string("ThreadProcessGroup::") + what + " is not for these tests");
  }

  std::shared_ptr<ThreadJob> job_;
  int rank_;
};

}  // namespace dl::test
