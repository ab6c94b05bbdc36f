// Shared by the ParallelTrainer tests: a random data set, the single-process group, the
// collective for CPU worker threads, and a worker's parameters read back.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "core/random.hpp"
#include "data/dataset.hpp"
#include "parallel/collective.hpp"
#include "parallel/parallel_trainer.hpp"
#include "parallel/process_group.hpp"
#include "parallel/thread_collective.hpp"

namespace dl::testing {

struct ImageShape {
  int rows = 0, cols = 0, classes = 0;
};

// `n` images of uniformly random bytes and random labels, reproducible from `seed`.
inline Dataset random_dataset(std::int64_t n, std::uint64_t seed, ImageShape shape) {
  constexpr std::uint64_t kByteValues = 256;
  RandomStream rng(seed, 0);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(n) * shape.rows * shape.cols);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng.below(kByteValues));
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(shape.classes));
  return Dataset(shape.rows, shape.cols, std::move(pixels), std::move(labels), shape.classes);
}

inline ProcessGroup& single_process() {
  static const std::unique_ptr<ProcessGroup> group = make_single_process_group();
  return *group;
}

// The collective of `workers` CPU worker threads in one process.
inline CollectiveFactory collective_for(int workers) {
  return [workers](const std::vector<Backend*>& backends) -> std::unique_ptr<Collective> {
    REQUIRE(static_cast<int>(backends.size()) == workers);
    if (workers == 1) return std::make_unique<LocalCollective>();
    return std::make_unique<ThreadCollective>(workers);
  };
}

inline std::vector<float> parameters_of(ParallelTrainer& trainer, int worker = 0) {
  std::vector<float> params(trainer.model(worker).parameter_count());
  trainer.model(worker).download_parameters(params.data());
  return params;
}

}  // namespace dl::testing
