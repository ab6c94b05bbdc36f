// The config of one layer: every key any layer kind accepts, with its default. Which keys a kind
// accepts, and their ranges, are declared with the kind (nn/layer_registry.hpp); this struct is
// part of `Config`, so it sits with the config fields, below the layers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/source_location.hpp"
#include "core/kinds.hpp"

namespace dl {

// One name in a layer's `inputs`, with where it was written (for errors about it).
struct LayerInput {
  std::string name;
  SourceLocation where;
};

struct LayerConfig {
  LayerType type = LayerType::kDense;
  std::string name;  // defaults to "<type><index>", e.g. "convolution0"
  SourceLocation where;
  // The layers this one reads, by name ("input": the network's input); empty: the layer before
  // (the network's input for the first), so a list of layers is a chain.
  std::vector<LayerInput> inputs;

  int nIn = 0;   // inferred from the previous layer / inputType when 0
  int nOut = 0;  // convolution, dense, output: required

  // convolution / subsampling
  int kernelSize[2] = {5, 5};
  int stride[2] = {1, 1};
  int padding[2] = {0, 0};
  ConvolutionMode convolutionMode = ConvolutionMode::kTruncate;
  PoolingType poolingType = PoolingType::kMax;

  // Unset means: the global `activation` if set, else the kind's default: identity
  // (convolution), relu (dense), softmax (output).
  std::optional<Activation> activation;
  std::optional<WeightInit> weightInit;  // unset: the global weightInit
  // convolution, dense: false drops the bias (a layer followed by batch normalization, whose
  // beta does the bias's work)
  bool hasBias = true;

  LossFunction lossFunction = LossFunction::kNegativeLogLikelihood;  // output
  // output, softmax with cross-entropy: the targets (1 - e) one-hot + e / classes
  double labelSmoothing = 0.0;

  double dropOut = 0.5;  // dropout: probability of *retaining* an activation (DL4J's meaning)

  double decay = 0.9;  // batchNormalization: running-statistics decay
  double eps = 1e-5;   // batchNormalization
};

}  // namespace dl
