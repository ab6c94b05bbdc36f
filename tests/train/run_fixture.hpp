// A one-worker run of a tiny network for the listeners' tests: its run directory, trainer,
// checkpoint state and listener context, with no training loop around them.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "io/checkpoint_directory.hpp"
#include "io/temp_directory.hpp"
#include "parallel/parallel_test_support.hpp"
#include "train/listeners/listeners.hpp"
#include "train/run_directory.hpp"
#include "train/training_state.hpp"

namespace dl::test {

constexpr int kClasses = 3;

// A one-worker run of a tiny network on random 2x2 images, with its run directory, checkpoint
// state and listener context; `overrides` as --set would give them.
class RunFixture {
 public:
  explicit RunFixture(const std::vector<std::string>& overrides = {})
      : config_(dl::load_config_string(
            "inputType: {convolutionalFlat: {height: 2, width: 2, channels: 1}}\n"
            "layers: [{output: {nOut: 3}}]\nbatchSize: 4\nepochs: 10\noutput: {directory: \"" +
                dir_.path() + "\"}\n",
            "listeners.yaml", overrides)),
        train_(::dl::testing::random_dataset(16, 7, {2, 2, kClasses})),
        trainer_(
            config_, train_, [](int) { return std::make_unique<dl::CpuBackend>(); },
            ::dl::testing::collective_for(1), ::dl::testing::single_process()),
        run_(dir_.path(), dl::RunDirectory::Existing::kResume),
        checkpoints_(run_.checkpoints(), config_.output.keepLast),
        state_(config_, trainer_, progress_, listeners_, checkpoints_) {
    trainer_.initialize(config_.seed);
  }

  dl::ListenerContext context() { return dl::ListenerContext{config_, run_, state_, console_}; }
  std::string file(const std::string& name) const { return dir_.file(name); }
  dl::TrainingState& state() { return state_; }
  dl::RunProgress& progress() { return progress_; }
  const dl::Config& config() const { return config_; }
  // What the console listener has written so far.
  std::string console_text() const { return console_.str(); }

 private:
  TempDirectory dir_;
  dl::Config config_;
  dl::Dataset train_;
  dl::ParallelTrainer trainer_;
  dl::RunDirectory run_;
  dl::CheckpointDirectory checkpoints_;
  dl::RunProgress progress_;
  dl::Listeners listeners_;
  dl::TrainingState state_;
  std::ostringstream console_;
};

}  // namespace dl::test
