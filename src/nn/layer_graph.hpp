// The network as a graph: which layers each layer reads. A layer names its inputs (`inputs:`,
// default: the layer before), so a plain list of layers is a chain and a residual block or a
// branch is written by naming. The layers are computed in the order they are listed, which must
// be an order in which every layer comes after the layers it reads: that rules out a cycle and
// lets the forward pass run top to bottom and the backward pass bottom to top, summing the
// gradients of a layer read more than once (Caffe's split).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace dl {

// The name by which a layer reads the network's input.
inline constexpr std::string_view kNetworkInputName = "input";
// What a source index of -1 means: the network's input.
inline constexpr int kNetworkInput = -1;

struct LayerSources {
  std::vector<std::string> names;  // each layer's name, defaulted ("convolution0")
  std::vector<std::vector<int>>
      sources;  // per layer: the layers it reads, kNetworkInput for the input
};

// Resolves every layer's inputs. Throws ConfigError at the name or the layer for a name used
// twice or "input" used as a layer's name, an input that names no layer, this layer or one listed
// after it (a cycle or an order that cannot be computed), a kind given the wrong number of inputs,
// and a layer whose output no later layer reads (the output layer aside).
LayerSources resolve_layer_sources(const Config& config);

// Per layer, the layers that read its output, in ascending order (a layer reading it twice is
// listed twice); the network's input is not a layer and has no entry.
std::vector<std::vector<int>> layer_readers(const std::vector<std::vector<int>>& sources);

// "input" or the layer's name: what an error or a table calls source `s`.
std::string source_name(const LayerSources& graph, int s);

}  // namespace dl
