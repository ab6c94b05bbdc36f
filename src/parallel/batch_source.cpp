#include "parallel/batch_source.hpp"

#include <limits>
#include <numeric>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "config/enum_names.hpp"
#include "core/error.hpp"
#include "data/batch_loader.hpp"

namespace dl {

namespace {

// The bytes a resident training set occupies in each worker's backend.
std::uint64_t resident_bytes(const Dataset& data) {
  return data.pixels().size() + data.labels().size() * sizeof(std::int32_t);
}

// Sample indices travel to the backend as int32.
bool indices_fit_int32(const Dataset& data) {
  return data.size() <= std::numeric_limits<std::int32_t>::max();
}

class HostBatches final : public BatchSource {
 public:
  HostBatches(const Dataset& data, std::shared_ptr<const EpochPlan> plan, int global_worker,
              std::int64_t first_round, int prefetch_depth, Model& model)
      : data_(data),
        model_(model),
        loader_(data, std::move(plan), global_worker, first_round, prefetch_depth) {}

  int next(std::int64_t round) override {
    const HostBatch* batch = loader_.next();
    DL_CHECK(batch != nullptr && batch->round == round, "the loader fell out of step");
    const int n = static_cast<int>(batch->count);
    if (n > 0) {
      Backend& backend = model_.backend();
      backend.upload(model_.input(), batch->images.data(),
                     n * data_.sample_floats() * sizeof(float));
      backend.upload(model_.labels(), batch->labels.data(), n * sizeof(std::int32_t));
    }
    return n;
  }

 private:
  const Dataset& data_;
  Model& model_;
  BatchLoader loader_;
};

// A batch of `n` samples at `indices` from a data set in the model's backend's memory (`pixels`,
// `labels`, the pipeline's `channel_mean` and `channel_std`) into the model's input and labels:
// through the input pipeline where it transforms, else the plain conversion. A training batch of
// `epoch` where `epoch` is set, else an evaluation batch (normalized, never cropped or flipped).
void gather_batch(const Dataset& data, std::optional<int> epoch, const std::uint8_t* pixels,
                  const std::int32_t* labels, const float* channel_mean, const float* channel_std,
                  const std::int32_t* indices, int n, Model& model) {
  Backend& backend = model.backend();
  const InputPipeline& pipeline = data.pipeline();
  if (pipeline.transforms()) {
    // The host loader's Dataset::gather_training (or gather), on the backend
    // (backend/ops/augment.hpp).
    const ops::SampleTransform t = pipeline.sample_transform(
        data.channels(), data.rows(), data.cols(), epoch.has_value(), epoch.value_or(0));
    backend.gather_transformed(pixels, labels, t, indices, n, channel_mean, channel_std,
                               model.input(), model.labels());
  } else {
    backend.gather_samples(pixels, labels, data.sample_floats(), indices, n, model.input(),
                           model.labels());
  }
}

// The host path on the CPU backend, whose memory is the host's: each round its batch is gathered
// by the backend straight from the data set into the model's input and labels, in the backend's
// own tasks, so there is no loader thread competing with the ops for the cores and no copy.
class HostDirectBatches final : public BatchSource {
 public:
  HostDirectBatches(const Dataset& data, std::shared_ptr<const EpochPlan> plan, int global_worker,
                    Model& model)
      : data_(data), plan_(std::move(plan)), global_worker_(global_worker), model_(model) {
    indices_.reserve(static_cast<std::size_t>(plan_->batch_size()));
  }

  int next(std::int64_t round) override {
    const EpochPlan::Slice slice = plan_->batch(round, global_worker_);
    indices_.assign(slice.indices, slice.indices + slice.count);
    const InputPipeline& pipeline = data_.pipeline();
    const int n = static_cast<int>(slice.count);
    gather_batch(data_, plan_->epoch(), data_.pixels().data(), data_.labels().data(),
                 pipeline.mean.data(), pipeline.std.data(), indices_.data(), n, model_);
    return n;
  }

 private:
  const Dataset& data_;
  std::shared_ptr<const EpochPlan> plan_;
  int global_worker_;
  Model& model_;
  std::vector<std::int32_t> indices_;  // the round's sample indices, as the backend takes them
};

class ResidentBatches final : public BatchSource {
 public:
  // Uploads the worker's sample indices of rounds first_round.. of `plan`, in round order.
  ResidentBatches(const Dataset& data, std::shared_ptr<const EpochPlan> plan, int global_worker,
                  std::int64_t first_round, Model& model, ResidentTrainingSet& resident)
      : data_(data),
        plan_(std::move(plan)),
        global_worker_(global_worker),
        model_(model),
        resident_(resident) {
    std::vector<std::int32_t>& host = resident.host_indices;
    host.clear();
    for (std::int64_t round = first_round; round < plan_->rounds(); ++round) {
      const EpochPlan::Slice slice = plan_->batch(round, global_worker);
      for (std::size_t i = 0; i < slice.count; ++i)
        host.push_back(static_cast<std::int32_t>(slice.indices[i]));
    }
    DL_CHECK(host.size() <= resident.epoch_indices.size(),
             "a worker's epoch has no more samples than rounds x batchSize");
    model.backend().upload(resident.epoch_indices.data(), host.data(),
                           host.size() * sizeof(std::int32_t));
  }

  int next(std::int64_t round) override {
    const int n = static_cast<int>(plan_->batch(round, global_worker_).count);
    gather_batch(data_, plan_->epoch(), resident_.pixels.data(), resident_.labels.data(),
                 resident_.channel_mean.data(), resident_.channel_std.data(),
                 resident_.epoch_indices.data() + offset_, n, model_);
    offset_ += static_cast<std::size_t>(n);
    return n;
  }

 private:
  const Dataset& data_;
  std::shared_ptr<const EpochPlan> plan_;
  int global_worker_;
  Model& model_;
  ResidentTrainingSet& resident_;
  std::size_t offset_ = 0;  // this round's first entry of resident_.epoch_indices
};

}  // namespace

ResidentTrainingSet::ResidentTrainingSet(Backend& backend, const Dataset& data,
                                         std::size_t epoch_capacity)
    : pixels(backend, data.pixels().size()),
      labels(backend, data.labels().size()),
      epoch_indices(backend, epoch_capacity),
      channel_mean(backend, data.pipeline().mean.size()),
      channel_std(backend, data.pipeline().std.size()) {
  backend.upload(pixels.data(), data.pixels().data(), pixels.bytes());
  backend.upload(labels.data(), data.labels().data(), labels.bytes());
  backend.upload(channel_mean.data(), data.pipeline().mean.data(), channel_mean.bytes());
  backend.upload(channel_std.data(), data.pipeline().std.data(), channel_std.bytes());
  host_indices.reserve(epoch_capacity);
}

bool resolve_data_residency(const Config& config, const Dataset& data, BackendKind backend) {
  // Numeric features (CSV) have no pixels to upload: the host loader converts their batches.
  if (data.has_features()) return false;
  // A streamed image folder has no decoded pixels to upload: its batches are decoded on the host.
  if (data.streamed()) {
    if (config.data.deviceResident == DeviceResidency::kAlways)
      throw ConfigError(fmt::format(
          "data.deviceResident: always, but the training folder is streamed: its decoded images "
          "exceed data.cacheBytes ({}); raise data.cacheBytes to hold them, or set "
          "data.deviceResident: auto or never",
          data.origin().holding));
    return false;
  }
  switch (config.data.deviceResident) {
    case DeviceResidency::kNever:
      return false;
    case DeviceResidency::kAlways:
      if (!indices_fit_int32(data)) {
        throw ConfigError(
            fmt::format("data.deviceResident: always, but the training set has {} samples, more "
                        "than the {} a resident set can index; set data.deviceResident: never or "
                        "auto, or a data.trainLimit",
                        data.size(), std::numeric_limits<std::int32_t>::max()));
      }
      return true;
    case DeviceResidency::kAuto:
      return backend == BackendKind::kCuda && indices_fit_int32(data) &&
             resident_bytes(data) <= config.memory.maximumDeviceCacheableLength;
  }
  return false;
}

std::string describe_data_placement(const Config& config, const Dataset& data, BackendKind backend,
                                    bool resident, int workers) {
  const std::uint64_t bytes = resident_bytes(data);
  const std::string_view setting = enum_name(config.data.deviceResident);
  if (resident) {
    return fmt::format(
        "data: resident in backend memory (data.deviceResident: {}): {} bytes of pixels and "
        "labels uploaded once per worker ({} in all); batches gathered there",
        setting, bytes, bytes * static_cast<std::uint64_t>(workers));
  }
  std::string why;
  if (config.data.deviceResident == DeviceResidency::kAuto) {
    why = backend != BackendKind::kCuda ? "; auto keeps it on the host for a CPU backend"
          : !indices_fit_int32(data)
              ? fmt::format("; its {} samples are more than int32 indices reach", data.size())
              : fmt::format(
                    "; the training set's {} bytes exceed "
                    "memory.maximumDeviceCacheableLength ({} bytes)",
                    bytes, config.memory.maximumDeviceCacheableLength);
  }
  if (data.streamed())
    return fmt::format(
        "data: host loader (data.deviceResident: {}; a streamed image folder is never resident): "
        "{}; each worker's loader decodes its own samples of the coming batches on the decode "
        "threads, parallel.prefetchBuffer ({}) batches ahead of the step, each batch then {}",
        setting, data.origin().holding, config.parallel.prefetchBuffer,
        backend == BackendKind::kCpu ? "copied into the model's input" : "uploaded");
  const std::string holding = data.origin().holding.empty() ? "" : "; " + data.origin().holding;
  if (data.has_features())
    return fmt::format(
        "data: host loader (data.deviceResident: {}; numeric features are never resident): each "
        "batch gathered by the loader's thread and copied into the model's input every round",
        setting);
  return fmt::format(
      "data: host loader (data.deviceResident: {}{}): each batch converted on the "
      "host {}{}",
      setting, why,
      backend == BackendKind::kCpu ? "straight into the model's input every round"
                                   : "and uploaded every round",
      holding);
}

bool uses_batch_loader(const Dataset& data, BackendKind backend) {
  // A streamed folder's batches are decoded ahead by the loader's thread, on every backend.
  return backend != BackendKind::kCpu || !indices_fit_int32(data) || data.has_features() ||
         data.streamed();
}

bool gather_evaluation_batch(const Dataset& data, std::int64_t first, int n, Model& model) {
  if (uses_batch_loader(data, model.backend().kind())) return false;
  // Reused batch after batch by the thread that evaluates.
  thread_local std::vector<std::int32_t> indices;
  indices.resize(static_cast<std::size_t>(n));
  std::iota(indices.begin(), indices.end(), static_cast<std::int32_t>(first));
  const InputPipeline& pipeline = data.pipeline();
  gather_batch(data, std::nullopt, data.pixels().data(), data.labels().data(), pipeline.mean.data(),
               pipeline.std.data(), indices.data(), n, model);
  return true;
}

std::vector<std::string> batch_source_threads(const Dataset& data, BackendKind backend,
                                              bool resident, int prefetch_depth, int batch_size,
                                              int global_worker) {
  if (resident || !uses_batch_loader(data, backend)) return {};
  return batch_loader_threads(data, prefetch_depth, batch_size, global_worker);
}

std::unique_ptr<BatchSource> make_batch_source(const Dataset& data,
                                               std::shared_ptr<const EpochPlan> plan,
                                               int global_worker, std::int64_t first_round,
                                               int prefetch_depth, Model& model,
                                               ResidentTrainingSet* resident) {
  if (resident != nullptr) {
    return std::make_unique<ResidentBatches>(data, std::move(plan), global_worker, first_round,
                                             model, *resident);
  }
  if (!uses_batch_loader(data, model.backend().kind()))
    return std::make_unique<HostDirectBatches>(data, std::move(plan), global_worker, model);
  return std::make_unique<HostBatches>(data, std::move(plan), global_worker, first_round,
                                       prefetch_depth, model);
}

}  // namespace dl
