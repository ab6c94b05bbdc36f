// Where a worker's batches come from (config data.deviceResident), behind one interface:
//  - the host path: the worker's BatchLoader converts each batch on the host (prefetching on its
//    own thread) and every round uploads it into the model's input and labels; a CPU worker,
//    whose backend computes in host memory, has its backend gather each round's batch straight
//    from the data set instead, in the backend's own tasks (no loader thread competing with the
//    ops for the cores, no copy; parallel.prefetchBuffer does not apply), except for an image
//    folder streamed because it exceeds data.cacheBytes, whose batches the loader decodes ahead
//    on every backend (data/image_store.hpp);
//  - the resident path: the training set was uploaded into the worker's backend once
//    (ResidentTrainingSet); each epoch uploads the worker's sample indices for all its rounds
//    once, and each round gathers its batch there (Backend::gather_samples, or with the input
//    pipeline's normalization, crops and flips Backend::gather_transformed), with no host copy
//    and no loader thread.
// Both give the same batch bits in the same order, so the choice never changes a result.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/device_buffer.hpp"
#include "config/config.hpp"
#include "data/dataset.hpp"
#include "data/epoch_plan.hpp"
#include "nn/model.hpp"

namespace dl {

// One worker's batches of one epoch.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Puts the worker's batch of `round` (rounds come in order) into the model's input() and
  // labels(); returns its sample count, 0 when the worker has no sample in a short last round.
  virtual int next(std::int64_t round) = 0;
};

// The training set in one backend's memory, with room for one worker's sample indices of a whole
// epoch; uploaded and allocated once, at construction.
struct ResidentTrainingSet {
  ResidentTrainingSet(Backend& backend, const Dataset& data, std::size_t epoch_capacity);

  DeviceBuffer<std::uint8_t> pixels;
  IndexBuffer labels;
  IndexBuffer epoch_indices;
  FloatBuffer channel_mean, channel_std;   // the pipeline's normalization (empty: none)
  std::vector<std::int32_t> host_indices;  // staging for epoch_indices, reused every epoch
};

// data.deviceResident resolved for this training set and the workers' backends (`backend`: the
// first one's kind); throws ConfigError when `always` cannot be honoured.
bool resolve_data_residency(const Config& config, const Dataset& data, BackendKind backend);

// One line for the start-up log: which data path is used, why, and the bytes uploaded.
std::string describe_data_placement(const Config& config, const Dataset& data, BackendKind backend,
                                    bool resident, int workers);

// What make_batch_source gives a worker that has no resident training set: a host loader
// (BatchLoader) rather than the backend's own gather from the host data set.
bool uses_batch_loader(const Dataset& data, BackendKind backend);

// An evaluation batch, samples first .. first + n - 1 of `data` (normalized by the pipeline, never
// cropped or flipped), put into the model's input and labels by the backend's own gather where
// uses_batch_loader is false (the CPU backend, pixels held): the same bits as Dataset::gather and
// an upload, in the backend's tasks instead of on the evaluating thread alone (128 CIFAR images
// took 1 ms there, while a many-core machine's other threads waited). False where the caller
// must gather on the host.
bool gather_evaluation_batch(const Dataset& data, std::int64_t first, int n, Model& model);

// The threads worker `global_worker`'s batch source starts besides the worker's own, as they are
// named: its loader's (batch_loader_threads); none for a resident set or the backend's gather.
std::vector<std::string> batch_source_threads(const Dataset& data, BackendKind backend,
                                              bool resident, int prefetch_depth, int batch_size,
                                              int global_worker);

// Worker `global_worker`'s batches of rounds first_round.. of `plan`, from `resident` when it is
// not null (the indices of the epoch are uploaded now), else from a host loader.
std::unique_ptr<BatchSource> make_batch_source(const Dataset& data,
                                               std::shared_ptr<const EpochPlan> plan,
                                               int global_worker, std::int64_t first_round,
                                               int prefetch_depth, Model& model,
                                               ResidentTrainingSet* resident);

}  // namespace dl
