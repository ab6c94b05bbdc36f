// An in-memory labelled image data set. Pixels stay uint8 (a quarter of the memory of floats)
// and are converted to float in [0, 1] (x / 255) only when a batch is gathered. A sample is
// channels x rows x cols bytes, channel planes first (NCHW, as the layers read it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/image_store.hpp"
#include "data/input_pipeline.hpp"

namespace dl {

// Each sample's source where the reader names them (predict's and eval --predictions' rows): the
// column's name ("file", "line"; empty: none) and one name per sample.
struct SampleSources {
  std::string column;
  std::vector<std::string> names;
  // Sample `index`'s name; empty where the samples are not named.
  std::string_view name(std::size_t index) const {
    return column.empty() ? std::string_view() : std::string_view(names[index]);
  }
};

// What reading a data set found besides its samples: the class names (image folders, CSV text
// labels), the files or rows left out under data.onBadFile: skip, and the image sizes before they
// were fitted (image folders).
struct DataOrigin {
  std::vector<std::string> class_names;             // by label; empty: the classes are numbers
  std::vector<std::string> skipped;                 // "path: why", in listing order
  std::map<std::string, std::int64_t> image_sizes;  // "640x480" -> images of that size
  // How the images are held (image folders: decoded before training, or streamed, and why),
  // for the start-up log's data line; empty for the other formats.
  std::string holding;
  // The file the labels were read from where it is not the samples' own (IDX), for messages
  // about the labels; empty: the samples' source holds them.
  std::string labels_file;
  // Where each sample was read from, in sample order, where a reader was asked to name them
  // (predict's rows): the column's name and a value per sample: "file" and the path under the
  // folder given (images), "line" and the line number (CSV). Empty otherwise.
  SampleSources sample_sources;
  // What the reader noticed that may be a mistake of the config though the data reads, for
  // "dl-train: note:" lines (data_sources.hpp's reading_note_lines): a CSV file's skipped header
  // lines that read as data rows.
  std::vector<std::string> notes;
};

class Dataset {
 public:
  // Loads an IDX images file and its labels file (each plain or gzip). Their headers are
  // compared before any data is read; every label must be below num_classes. limit > 0 keeps
  // only the first `limit` samples.
  static Dataset load_idx(const std::string& images_path, const std::string& labels_path,
                          int num_classes, std::int64_t limit = 0);

  // From raw data (CIFAR, tests, synthetic data): pixels holds labels.size() images of
  // channels x rows x cols.
  Dataset(int channels, int rows, int cols, std::vector<std::uint8_t> pixels,
          std::vector<std::int32_t> labels, int num_classes);
  // One channel.
  Dataset(int rows, int cols, std::vector<std::uint8_t> pixels, std::vector<std::int32_t> labels,
          int num_classes);
  // Numeric features (CSV rows): labels.size() rows of `width` floats, gathered as they are
  // (normalized when the pipeline normalizes: one mean and std, the input's one channel), never
  // divided by 255. Such a set has no pixels; batches always come through gather().
  static Dataset from_features(int width, std::vector<float> features,
                               std::vector<std::int32_t> labels, int num_classes);
  bool has_features() const { return numeric_; }
  // Images decoded when gathered (an image folder larger than data.cacheBytes): sample i is the
  // store's entry i until subset() picks some. Such a set has no pixels(): batches come through
  // gather(), which fetches each batch's images from the store (cache or file).
  static Dataset streamed(std::shared_ptr<const ImageStore> store, std::vector<std::int32_t> labels,
                          int num_classes);
  bool streamed() const { return store_ != nullptr; }
  const ImageStore* store() const { return store_.get(); }
  // A hash of the samples and labels, for the ranks' agreement: of the pixels when they are held,
  // of the store's listing (names and labels) when streamed.
  std::uint64_t content_hash() const;
  // The input pipeline's statistics of this set (data.normalize without given values): from the
  // held pixels, or each streamed image decoded once.
  ChannelStats channel_stats() const;
  const std::vector<float>& features() const { return features_; }

  std::int64_t size() const { return static_cast<std::int64_t>(labels_.size()); }
  int channels() const { return channels_; }
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  int num_classes() const { return num_classes_; }
  std::size_t sample_floats() const { return sample_bytes_; }  // channels * rows * cols
  // "28x28" for one channel, "3x32x32" (channels first) otherwise.
  std::string shape_text() const;

  // Writes `count` samples, in the order of `indices`: images sample-major as floats in [0, 1]
  // (count * sample_floats() values) and their labels. Throws DataError for an index outside
  // [0, size()). Safe to call from several threads at once.
  void gather(const std::int64_t* indices, std::size_t count, float* images,
              std::int32_t* labels) const;
  // gather() for training in `epoch`: the pipeline's random crop and flip of each sample (drawn
  // from its index and the epoch), then its normalization.
  void gather_training(const std::int64_t* indices, std::size_t count, int epoch, float* images,
                       std::int32_t* labels) const;

  // The input pipeline (input_pipeline.hpp): none until set. gather() normalizes with it,
  // gather_training() also augments. Throws DataError when it normalizes another number of
  // channels than the samples have (a model file written so), which gather would read past.
  void set_pipeline(InputPipeline pipeline);
  const InputPipeline& pipeline() const { return pipeline_; }

  void set_origin(DataOrigin origin) { origin_ = std::move(origin); }
  const DataOrigin& origin() const { return origin_; }

  // The samples at `indices` (each within [0, size())), in that order; the same origin.
  Dataset subset(const std::vector<std::int64_t>& indices) const;

  // The raw data, for copying a whole data set to a device once; no pixels when streamed().
  const std::vector<std::uint8_t>& pixels() const { return pixels_; }
  const std::vector<std::int32_t>& labels() const { return labels_; }

 private:
  int channels_ = 1, rows_ = 0, cols_ = 0, num_classes_ = 0;
  std::size_t sample_bytes_ = 0;
  std::vector<std::uint8_t> pixels_;
  std::vector<std::int32_t> labels_;
  bool numeric_ = false;         // from_features: samples are features_, not pixels_
  std::vector<float> features_;  // numeric_ only
  InputPipeline pipeline_;
  DataOrigin origin_;

  std::shared_ptr<const ImageStore> store_;  // streamed only
  std::vector<std::int64_t> entries_;        // streamed only: sample -> store entry

  void check_index(std::int64_t index) const;
  // A streamed batch's images, sample i at staging + i * sample_bytes_.
  void stage(const std::int64_t* indices, std::size_t count,
             std::vector<std::uint8_t>& staging) const;
  void prefetch_sample(std::int64_t index) const;
  void gather_features(std::size_t index, float* dst) const;
  void gather_with(const std::int64_t* indices, std::size_t count, const int* epoch, float* images,
                   std::int32_t* labels) const;
};

}  // namespace dl
