#include "data/dataset.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "backend/ops/gather.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "data/idx_reader.hpp"

namespace dl {
namespace {

// The labels outside [0, num_classes): where the first one is, and the largest label of all, so
// that the advice (numClasses at least largest + 1) covers every label and not the first alone.
struct BadLabels {
  std::int64_t first = -1;  // index; -1 when every label is in range
  std::int32_t largest = 0;
};

BadLabels find_bad_labels(const std::vector<std::int32_t>& labels, int num_classes) {
  BadLabels bad;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (bad.first < 0 && (labels[i] < 0 || labels[i] >= num_classes))
      bad.first = static_cast<std::int64_t>(i);
    bad.largest = std::max(bad.largest, labels[i]);
  }
  return bad;
}

}  // namespace

Dataset Dataset::load_idx(const std::string& images_path, const std::string& labels_path,
                          int num_classes, std::int64_t limit) {
  if (num_classes < 1) {
    throw DataError(
        fmt::format("{}: numClasses is {}; it must be at least 1", labels_path, num_classes));
  }
  // Compare the declared counts first: a mismatch is then reported before 47 MB are decoded,
  // and also when a limit would hide it.
  const IdxHeader image_header = read_idx_header(images_path, IdxKind::kImages);
  const IdxHeader label_header = read_idx_header(labels_path, IdxKind::kLabels);
  if (image_header.count != label_header.count) {
    throw DataError(
        fmt::format("{}: holds {} images but {} holds {} labels; images and labels "
                    "must come in matching pairs (train-* with train-*, t10k-* with "
                    "t10k-*)",
                    images_path, image_header.count, labels_path, label_header.count));
  }
  IdxImages images = read_idx_images(images_path, limit);
  const std::vector<std::uint8_t> raw_labels = read_idx_labels(labels_path, limit);
  DL_CHECK(static_cast<std::int64_t>(raw_labels.size()) == images.count,
           "image and label counts agree after the header check");
  std::vector<std::int32_t> labels(raw_labels.begin(), raw_labels.end());
  const BadLabels bad = find_bad_labels(labels, num_classes);
  if (bad.first >= 0) {
    throw DataError(
        fmt::format("{}: label {} at index {} (counting from 0) is not below numClasses = {}, "
                    "and the largest label is {}; set data.numClasses to at least {} or use the "
                    "labels file that belongs to {}",
                    labels_path, labels[bad.first], bad.first, num_classes, bad.largest,
                    bad.largest + 1, images_path));
  }
  Dataset data(images.rows, images.cols, std::move(images.pixels), std::move(labels), num_classes);
  DataOrigin origin;
  origin.labels_file = labels_path;
  data.set_origin(std::move(origin));
  return data;
}

Dataset::Dataset(int rows, int cols, std::vector<std::uint8_t> pixels,
                 std::vector<std::int32_t> labels, int num_classes)
    : Dataset(1, rows, cols, std::move(pixels), std::move(labels), num_classes) {}

Dataset::Dataset(int channels, int rows, int cols, std::vector<std::uint8_t> pixels,
                 std::vector<std::int32_t> labels, int num_classes)
    : channels_(channels),
      rows_(rows),
      cols_(cols),
      num_classes_(num_classes),
      pixels_(std::move(pixels)),
      labels_(std::move(labels)) {
  if (channels < 1 || rows < 1 || cols < 1 || num_classes < 1) {
    throw DataError(
        fmt::format("dataset: images of {} channel(s) of {}x{} pixels with {} classes; "
                    "channels, rows, cols and classes must each be at least 1",
                    channels, rows, cols, num_classes));
  }
  sample_bytes_ = static_cast<std::size_t>(channels) * static_cast<std::size_t>(rows) *
                  static_cast<std::size_t>(cols);
  if (pixels_.size() != labels_.size() * sample_bytes_) {
    throw DataError(
        fmt::format("dataset: {} pixel bytes for {} labels of {} images (expected "
                    "{}); give one channels x rows x cols image per label",
                    pixels_.size(), labels_.size(), shape_text(), labels_.size() * sample_bytes_));
  }
  const BadLabels bad = find_bad_labels(labels_, num_classes);
  if (bad.first >= 0) {
    throw DataError(
        fmt::format("dataset: label {} at index {} is outside [0, {}), and the largest label is "
                    "{}; labels must be class indices below numClasses: set data.numClasses to "
                    "at least {}",
                    labels_[bad.first], bad.first, num_classes, bad.largest, bad.largest + 1));
  }
}

Dataset Dataset::from_features(int width, std::vector<float> features,
                               std::vector<std::int32_t> labels, int num_classes) {
  Dataset set(1, 1, width, {}, {}, num_classes);
  if (features.size() != labels.size() * set.sample_bytes_)
    throw DataError(fmt::format("dataset: {} features for {} labels of {} features each",
                                features.size(), labels.size(), width));
  const BadLabels bad = find_bad_labels(labels, num_classes);
  if (bad.first >= 0)
    throw DataError(
        fmt::format("dataset: label {} at index {} is outside [0, {}), and the "
                    "largest label is {}; set data.numClasses to at least {}",
                    labels[bad.first], bad.first, num_classes, bad.largest, bad.largest + 1));
  set.numeric_ = true;
  set.features_ = std::move(features);
  set.labels_ = std::move(labels);
  return set;
}

Dataset Dataset::streamed(std::shared_ptr<const ImageStore> store, std::vector<std::int32_t> labels,
                          int num_classes) {
  const DecodeTarget& t = store->target();
  DL_CHECK(labels.size() == store->size(), "one label per image of the store");
  Dataset set(t.channels, t.height, t.width, {}, {}, num_classes);
  const BadLabels bad = find_bad_labels(labels, num_classes);
  if (bad.first >= 0)
    throw DataError(
        fmt::format("dataset: label {} at index {} is outside [0, {}); set "
                    "data.numClasses to at least {}",
                    labels[bad.first], bad.first, num_classes, bad.largest + 1));
  set.labels_ = std::move(labels);
  set.entries_.resize(set.labels_.size());
  for (std::size_t i = 0; i < set.entries_.size(); ++i)
    set.entries_[i] = static_cast<std::int64_t>(i);
  set.store_ = std::move(store);
  return set;
}

std::uint64_t Dataset::content_hash() const {
  const std::uint64_t hash =
      store_ ? store_->listing_hash(entries_) : fnv1a(pixels_.data(), pixels_.size());
  return fnv1a(labels_.data(), labels_.size() * sizeof(std::int32_t), hash);
}

ChannelStats Dataset::channel_stats() const {
  const std::size_t plane = static_cast<std::size_t>(rows_) * static_cast<std::size_t>(cols_);
  if (store_) return dl::channel_stats(store_->byte_counts(entries_));
  return dl::channel_stats(pixels_, channels_, plane);
}

std::string Dataset::shape_text() const {
  if (numeric_) return fmt::format("{} features", cols_);
  return channels_ == 1 ? fmt::format("{}x{}", rows_, cols_)
                        : fmt::format("{}x{}x{}", channels_, rows_, cols_);
}

void Dataset::set_pipeline(InputPipeline pipeline) {
  const auto channels = static_cast<std::size_t>(channels_);
  if (pipeline.normalizes() &&
      (pipeline.mean.size() != channels || pipeline.std.size() != channels))
    throw DataError(fmt::format(
        "the input normalization has {} mean and {} std value(s) for samples of {} channel(s); "
        "train the model again with one value per channel",
        pipeline.mean.size(), pipeline.std.size(), channels));
  pipeline_ = std::move(pipeline);
}

namespace {

// The origin of the samples at `indices`: each keeps its source's name (its file or line).
DataOrigin picked_origin(const DataOrigin& origin, const std::vector<std::int64_t>& indices) {
  DataOrigin picked = origin;
  const std::vector<std::string>& names = origin.sample_sources.names;
  if (names.empty()) return picked;
  picked.sample_sources.names.clear();
  for (const std::int64_t index : indices) {
    DL_CHECK(static_cast<std::size_t>(index) < names.size(), "a source name for every sample");
    picked.sample_sources.names.push_back(names[static_cast<std::size_t>(index)]);
  }
  return picked;
}

}  // namespace

Dataset Dataset::subset(const std::vector<std::int64_t>& indices) const {
  // Only a set that holds its pixels has pixels to copy (not numeric features, not a stream).
  const bool held = !numeric_ && !store_;
  std::vector<std::uint8_t> pixels(held ? indices.size() * sample_bytes_ : 0);
  std::vector<std::int32_t> labels(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const auto index = static_cast<std::size_t>(indices[i]);
    DL_CHECK(index < labels_.size(), "subset index within the data set");
    if (held)
      std::copy_n(pixels_.begin() + static_cast<std::ptrdiff_t>(index * sample_bytes_),
                  sample_bytes_, pixels.begin() + static_cast<std::ptrdiff_t>(i * sample_bytes_));
    labels[i] = labels_[index];
  }
  if (store_) {
    Dataset part(channels_, rows_, cols_, {}, {}, num_classes_);
    part.store_ = store_;
    part.labels_ = std::move(labels);
    for (const std::int64_t index : indices)
      part.entries_.push_back(entries_[static_cast<std::size_t>(index)]);
    part.set_origin(picked_origin(origin_, indices));
    return part;
  }
  if (numeric_) {
    std::vector<float> features(indices.size() * sample_bytes_);
    for (std::size_t i = 0; i < indices.size(); ++i)
      std::copy_n(features_.begin() + static_cast<std::ptrdiff_t>(
                                          static_cast<std::size_t>(indices[i]) * sample_bytes_),
                  sample_bytes_, features.begin() + static_cast<std::ptrdiff_t>(i * sample_bytes_));
    Dataset part = from_features(cols_, std::move(features), std::move(labels), num_classes_);
    part.set_origin(picked_origin(origin_, indices));
    return part;
  }
  Dataset part(channels_, rows_, cols_, std::move(pixels), std::move(labels), num_classes_);
  part.set_origin(picked_origin(origin_, indices));
  return part;
}

void Dataset::gather(const std::int64_t* indices, std::size_t count, float* images,
                     std::int32_t* labels) const {
  gather_with(indices, count, nullptr, images, labels);
}

void Dataset::gather_training(const std::int64_t* indices, std::size_t count, int epoch,
                              float* images, std::int32_t* labels) const {
  gather_with(indices, count, &epoch, images, labels);
}

// Asks for the bytes of sample `index` (when it is one) ahead of their use: a shuffled batch reads
// samples scattered over the whole data set, each a cache and TLB miss that would otherwise be
// waited for one after the other.
void Dataset::prefetch_sample(std::int64_t index) const {
  if (numeric_ || store_ || index < 0 || index >= size()) return;
  const std::uint8_t* src = pixels_.data() + static_cast<std::size_t>(index) * sample_bytes_;
  ops::prefetch_bytes(src, sample_bytes_);
}

// `epoch` null: no augmentation (evaluation).
void Dataset::gather_with(const std::int64_t* indices, std::size_t count, const int* epoch,
                          float* images, std::int32_t* labels) const {
  const ops::SampleTransform t =
      pipeline_.sample_transform(channels_, rows_, cols_, epoch != nullptr, epoch ? *epoch : 0);
  // Reused by each thread that gathers (a loader's prefetch thread, the evaluator's): a batch's
  // images, not a new buffer per batch.
  thread_local std::vector<std::uint8_t> staging;
  if (store_) stage(indices, count, staging);
  for (std::size_t i = 0; i < count; ++i) {
    if (i + ops::kPrefetchSamplesAhead < count)
      prefetch_sample(indices[i + ops::kPrefetchSamplesAhead]);
    const std::int64_t index = indices[i];
    check_index(index);
    float* dst = images + i * sample_bytes_;
    labels[i] = labels_[static_cast<std::size_t>(index)];
    if (numeric_) {
      gather_features(static_cast<std::size_t>(index), dst);
      continue;
    }
    const std::size_t held_at = static_cast<std::size_t>(index) * sample_bytes_;
    const std::uint8_t* src =
        store_ ? staging.data() + i * sample_bytes_ : pixels_.data() + held_at;
    // The draw is the sample's index's, wherever its pixels came from.
    if (t.augment || t.normalize) {
      ops::transform_sample(src, t, ops::augment_draw(t, index), pipeline_.mean.data(),
                            pipeline_.std.data(), dst);
    } else {
      ops::pixels_to_unit(src, sample_bytes_, dst);
    }
  }
}

void Dataset::check_index(std::int64_t index) const {
  if (index >= 0 && index < size()) return;
  throw DataError(
      fmt::format("dataset: sample index {} is outside [0, {}); the epoch plan must be "
                  "built for this data set's size",
                  index, size()));
}

void Dataset::stage(const std::int64_t* indices, std::size_t count,
                    std::vector<std::uint8_t>& staging) const {
  std::vector<std::int64_t> entries(count);
  for (std::size_t i = 0; i < count; ++i) {
    check_index(indices[i]);
    entries[i] = entries_[static_cast<std::size_t>(indices[i])];
  }
  staging.resize(count * sample_bytes_);
  store_->fetch(entries.data(), count, staging.data());
}

void Dataset::gather_features(std::size_t index, float* dst) const {
  const float* src = features_.data() + index * sample_bytes_;
  if (!pipeline_.normalizes()) {
    std::copy_n(src, sample_bytes_, dst);
    return;
  }
  const float mean = pipeline_.mean.front(), std = pipeline_.std.front();
  for (std::size_t j = 0; j < sample_bytes_; ++j) dst[j] = (src[j] - mean) / std;
}

}  // namespace dl
