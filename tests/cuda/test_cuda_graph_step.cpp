// A training step recorded as a CUDA graph and replayed trains exactly as the same steps launched
// op by op: bit-identical parameters after two epochs (full batches and each epoch's short last
// batch, FLOAT and HALF with dynamic loss scaling), and the replays did happen.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "backend/backend_registry.hpp"
#include "config/config_loader.hpp"
#include "gpu_test_support.hpp"
#include "parallel/parallel_test_support.hpp"
#include "parallel/parallel_trainer.hpp"

namespace {

struct Trained {
  std::vector<float> parameters;
  std::int64_t replays = 0;
};

Trained train_two_epochs(const dl::Config& c, const dl::Dataset& data) {
  dl::ParallelTrainer trainer(
      c, data, [&c](int) { return dl::make_backend(dl::BackendKind::kCuda, c, 0); },
      dl::testing::collective_for(1), dl::testing::single_process());
  trainer.initialize(c.seed);
  std::int64_t iteration = 0;
  for (int epoch = 0; epoch < 2; ++epoch)
    trainer.run_epoch(epoch, 0, iteration,
                      [](const dl::SyncPoint&) { return dl::SyncAction::kContinue; });
  Trained t;
  t.parameters = dl::testing::parameters_of(trainer);
  t.replays = trainer.step_recorder(0).replays();
  return t;
}

}  // namespace

TEST_CASE(
    "[gpu] a step replayed from its CUDA graph trains bit-identically to one launched op by op",
    "[gpu][graph]") {
  if (!dl::test::gpu_test_can_run()) return;
  // 10 rounds: 9 full, one of 7.
  const dl::Dataset data = dl::testing::random_dataset(32 * 9 + 7, 2024, {12, 12, 5});
  for (const char* dtype : {"FLOAT", "HALF"}) {
    INFO("dtype " << dtype);
    dl::Config c = dl::load_config_string(std::string(R"(
seed: 9
dtype: )") + dtype + R"(
batchSize: 32
updater: {type: adam, learningRate: 0.002}
l2: 0.0001
inputType: {convolutionalFlat: {height: 12, width: 12, channels: 1}}
layers:
  - convolution: {kernelSize: [3, 3], nOut: 6, activation: relu}
  - batchNormalization: {}
  - subsampling: {kernelSize: [2, 2], stride: [2, 2]}
  - dense: {nOut: 16, activation: relu}
  - output: {nOut: 5, activation: softmax, lossFunction: negativeloglikelihood}
output: {scoreEveryIterations: 4}
)",
                                          "graph-step.yaml");
    c.cuda.graphs = false;
    const Trained op_by_op = train_two_epochs(c, data);
    c.cuda.graphs = true;
    const Trained replayed = train_two_epochs(c, data);
    CHECK(op_by_op.replays == 0);
    // FLOAT, per epoch: the first full batch runs as is, the second is recorded, 7 more replay;
    // the short batch runs as is in epoch 0 and is recorded and replayed in epoch 1. HALF's
    // dynamic loss scale backs off from 2^16 in the first steps, and each new scale is a new key.
    if (c.dtype == dl::DType::kFloat) {
      CHECK(replayed.replays == 8 + 9 + 1);
    } else {
      CHECK(replayed.replays > 0);
    }
    CHECK(replayed.parameters == op_by_op.parameters);
  }
}
