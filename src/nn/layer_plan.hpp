// Shape inference over the layer list: what each layer receives and produces per sample, its
// inferred nIn, its padding and its effective activation and weight init, each by the rules its
// kind declares (nn/layer_registry.hpp). The config loader uses it to reject inconsistent networks
// at load time; the model builder uses it to build the layers.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "core/shape.hpp"
#include "nn/spatial_geometry.hpp"

namespace dl {

struct PlannedLayer {
  LayerConfig config;         // nIn filled in, name defaulted ("convolution0", "subsampling1", ...)
  SampleShape input, output;  // per-sample shapes; `input`: the first input's
  // The layers it reads (kNetworkInput, -1: the network's input; nn/layer_graph.hpp), with their
  // names and output shapes: one for every kind but the merges (add, concat).
  std::vector<int> sources;
  std::vector<std::string> source_names;
  std::vector<SampleShape> inputs;
  // Effective: the layer's, else the global `activation`, else its kind's default (identity for
  // kinds without an activation key: subsampling, dropout, batchNormalization).
  Activation activation = Activation::kIdentity;
  WeightInit weightInit = WeightInit::kXavier;  // the layer's, else the global one
  // Convolution/subsampling: the zero padding before the first row and column
  // (spatial_geometry.hpp says how each convolutionMode sets it).
  int padTop = 0, padLeft = 0;
};

// What a kind's shape rule sees of one layer, with the checks the kinds share. Every failure is a
// ConfigError at the layer's location naming the layer.
class LayerShaping {
 public:
  LayerShaping(const LayerConfig& layer, std::size_t index, std::vector<SampleShape> inputs,
               std::vector<std::string> input_names = {}, int batch_size = 0)
      : layer_(layer),
        index_(index),
        inputs_(std::move(inputs)),
        input_names_(std::move(input_names)),
        batch_size_(batch_size) {}

  const LayerConfig& layer() const { return layer_; }
  // The first input; a merge's rule reads them all (inputs(), input_names()).
  const SampleShape& input() const { return inputs_.front(); }
  const std::vector<SampleShape>& inputs() const { return inputs_; }
  const std::vector<std::string>& input_names() const { return input_names_; }
  std::string name() const;
  // The samples each worker's training batches hold (batchSize), 0 where not planned for training.
  int batch_size() const { return batch_size_; }

  [[noreturn]] void fail(const std::string& what, const std::string& fix) const;
  // nOut, checked to lie in 1 .. the widest layer allowed.
  int checked_nout() const;
  // The input flattened to a vector (dense and output layers), checked against the largest one.
  int flattened_size() const;
  // The output height and width of the layer's window (kernelSize, stride, padding,
  // convolutionMode) over an image input; fails on a flat input or a kernel that does not fit.
  struct Window {
    WindowExtent height, width;
  };
  Window window() const;

 private:
  const LayerConfig& layer_;
  std::size_t index_;
  std::vector<SampleShape> inputs_;
  std::vector<std::string> input_names_;
  int batch_size_ = 0;
};

// Resolves the graph (nn/layer_graph.hpp), then, in the listed order, each layer's shapes from its
// inputs' outputs. Throws ConfigError at the layer's location when the shapes do not fit: a kernel
// larger than its padded input, an output size below 1, nOut < 1, a convolution or subsampling
// after the input was flattened, an nIn that differs from the inferred one, no output layer, or a
// layer after it. A dense or output layer after spatial layers flattens c*h*w, as DL4J does.
std::vector<PlannedLayer> plan_layers(const Config& config);

// "convolution0": a layer's name when the config gives none.
std::string default_layer_name(LayerType type, std::size_t index);
// The layer's name, or default_layer_name when it has none.
std::string layer_name(const LayerConfig& layer, std::size_t index);

}  // namespace dl
