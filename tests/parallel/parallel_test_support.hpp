// Shared by the ParallelTrainer tests: a random data set, the single-process group, the
// collective for CPU worker threads, and a worker's parameters read back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
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

// What a checkpoint keeps of a trainer stopped at a sync point: the averaged parameters and each
// worker's updater and loss-scaler state.
struct SavedTrainer {
  std::vector<float> parameters;
  std::vector<std::vector<float>> updaters;
  std::vector<std::string> scalers;
};

inline SavedTrainer save_trainer(ParallelTrainer& trainer) {
  SavedTrainer saved{parameters_of(trainer), {}, {}};
  for (int w = 0; w < trainer.workers(); ++w) {
    Optimizer& opt = trainer.optimizer(w);
    saved.updaters.emplace_back(opt.state_floats());
    trainer.model(w).backend().download(saved.updaters.back().data(), opt.state(),
                                        opt.state_floats() * sizeof(float));
    saved.scalers.push_back(trainer.loss_scaler(w).save_state());
  }
  return saved;
}

// Puts `saved` into a new trainer, as a resume from a checkpoint does.
inline void restore_trainer(ParallelTrainer& trainer, const SavedTrainer& saved) {
  trainer.model(0).upload_parameters(saved.parameters.data());
  trainer.replicate_parameters();
  for (int w = 0; w < trainer.workers(); ++w) {
    Optimizer& opt = trainer.optimizer(w);
    const std::vector<float>& state = saved.updaters[static_cast<std::size_t>(w)];
    trainer.model(w).backend().upload(opt.state(), state.data(), state.size() * sizeof(float));
    trainer.loss_scaler(w).restore_state(saved.scalers[static_cast<std::size_t>(w)]);
  }
}

}  // namespace dl::testing
