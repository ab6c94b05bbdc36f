#include "parallel/thread_collective.hpp"

#include "parallel/sum_order.hpp"

namespace dl {

ThreadCollective::ThreadCollective(int participants)
    : participants_(participants),
      meeting_(participants),
      buffers_(static_cast<std::size_t>(participants), nullptr) {}

void ThreadCollective::barrier(int /*rank*/) {
  meeting_.arrive();
}

void ThreadCollective::abort() {
  meeting_.abort();
}

void ThreadCollective::all_reduce_sum(int rank, float* data, std::size_t n) {
  buffers_[static_cast<std::size_t>(rank)] = data;
  meeting_.arrive();  // every buffer is registered
  const std::size_t p = static_cast<std::size_t>(participants_);
  const std::size_t begin = n * static_cast<std::size_t>(rank) / p;
  const std::size_t end = n * (static_cast<std::size_t>(rank) + 1) / p;
  // Sum into rank 0's buffer in the job's one order (sum_order.hpp), the other buffers' slices
  // serving as scratch; then copy the sum out to the others.
  add_in_tree_order(buffers_.data(), participants_, begin, end);
  const float* __restrict sum = buffers_[0];
  for (std::size_t r = 1; r < p; ++r) {
    float* __restrict dst = buffers_[r];
    for (std::size_t i = begin; i < end; ++i) dst[i] = sum[i];
  }
  meeting_.arrive();  // every slice is written before anyone reads or reuses its buffer
}

void ThreadCollective::broadcast(int rank, float* data, std::size_t n, int root) {
  buffers_[static_cast<std::size_t>(rank)] = data;
  meeting_.arrive();
  if (rank != root) {
    const float* src = buffers_[static_cast<std::size_t>(root)];
    for (std::size_t i = 0; i < n; ++i) data[i] = src[i];
  }
  meeting_.arrive();
}

}  // namespace dl
