#include "nn/layer_plan.hpp"

#include <fmt/format.h>

#include "config/config_limits.hpp"
#include "config/read_context.hpp"
#include "core/error.hpp"
#include "core/message_text.hpp"
#include "nn/layer_graph.hpp"
#include "nn/layer_registry.hpp"

namespace dl {

namespace {

using config_limits::kMaxFeatureSize;
using config_limits::kMaxLayerWidth;

constexpr int kHeight = 0;
constexpr int kWidth = 1;

Activation effective_activation(const Config& config, const LayerConfig& layer,
                                const LayerKind& kind) {
  if (!kind.default_activation) return Activation::kIdentity;
  // The global `activation` is meant for the layers that compute (convolution, dense); a merge
  // applies one only where it names it.
  if (kind.merges_inputs) return layer.activation.value_or(*kind.default_activation);
  return layer.activation.value_or(config.activation.value_or(*kind.default_activation));
}

PlannedLayer plan_layer(const Config& config, std::size_t index,
                        const std::vector<PlannedLayer>& above, const LayerSources& graph,
                        const SampleShape& network_input) {
  const LayerConfig& layer = config.layers[index];
  const LayerKind& kind = layer_kind(layer.type);
  PlannedLayer planned;
  planned.sources = graph.sources[index];
  for (int s : planned.sources) {
    planned.source_names.push_back(source_name(graph, s));
    planned.inputs.push_back(s == kNetworkInput ? network_input
                                                : above[static_cast<std::size_t>(s)].output);
  }
  const SampleShape& input = planned.inputs.front();
  const LayerShaping shaping(layer, index, planned.inputs, planned.source_names, config.batchSize);
  planned.config = layer;
  planned.config.name = shaping.name();
  planned.input = input;
  planned.activation = effective_activation(config, layer, kind);
  planned.weightInit = layer.weightInit.value_or(config.weightInit);
  planned.config.nIn = input.channels;
  kind.shape(shaping, planned);
  const int inferred_nin = planned.config.nIn;
  if (layer.nIn != 0 && layer.nIn != inferred_nin)
    shaping.fail(
        fmt::format("nIn is {} but its input {} gives {}", layer.nIn, input.str(), inferred_nin),
        fmt::format("write nIn: {}, or remove nIn to have it inferred", inferred_nin));
  return planned;
}

SampleShape input_shape(const Config& config) {
  const InputTypeConfig& in = config.inputType;
  if (in.kind == InputTypeConfig::Kind::kFeedForward) return SampleShape::flat(in.size);
  return SampleShape::image(in.channels, in.height, in.width);
}

}  // namespace

std::string LayerShaping::name() const {
  return layer_name(layer_, index_);
}

void LayerShaping::fail(const std::string& what, const std::string& fix) const {
  fail_at(layer_.where,
          fmt::format("layer {} '{}' ({}): {}", index_, quoted_value(name()),
                      layer_kind(layer_.type).name, what),
          fix);
}

int LayerShaping::checked_nout() const {
  if (layer_.nOut < 1 || layer_.nOut > kMaxLayerWidth)
    fail(fmt::format("nOut = {} is out of range", layer_.nOut),
         fmt::format("set nOut between 1 and {}", kMaxLayerWidth));
  return layer_.nOut;
}

int LayerShaping::flattened_size() const {
  if (input().size() > static_cast<std::size_t>(kMaxFeatureSize))
    fail(fmt::format("its input {} flattens to {} values, more than {}", input().str(),
                     input().size(), kMaxFeatureSize),
         "shrink the layers before it (more pooling, fewer channels)");
  return static_cast<int>(input().size());
}

LayerShaping::Window LayerShaping::window() const {
  if (!input().spatial)
    fail(fmt::format("it needs an image input (channels x height x width) but gets a flat "
                     "vector of {}",
                     input().size()),
         "use inputType convolutionalFlat and put convolution and subsampling layers before "
         "dense ones");
  const int in[2] = {input().height, input().width};
  const int* k = layer_.kernelSize;
  const int* s = layer_.stride;
  const int* p = layer_.padding;
  for (int d : {kHeight, kWidth}) {
    if (k[d] < 1 || s[d] < 1 || p[d] < 0)
      fail(fmt::format("kernelSize {}x{}, stride {}x{} and padding {}x{} must be >= 1, >= 1 "
                       "and >= 0",
                       k[0], k[1], s[0], s[1], p[0], p[1]),
           "fix kernelSize, stride or padding");
  }
  // Same computes its own padding (window_extent never reads p), so a padding written beside
  // it would be dropped without a word: the network would differ from what the config says.
  if (layer_.convolutionMode == ConvolutionMode::kSame && (p[0] != 0 || p[1] != 0))
    fail(fmt::format("padding {}x{} is given with convolutionMode: Same, which pads by its own "
                     "rule and ignores padding",
                     p[0], p[1]),
         "remove padding to let Same pad, or set convolutionMode: Truncate to pad by hand");
  WindowExtent extent[2];
  for (int d : {kHeight, kWidth}) {
    const auto e = window_extent(in[d], k[d], s[d], p[d], layer_.convolutionMode);
    if (!e)
      fail(fmt::format("kernel {}x{} is larger than its input {}x{} with padding {}x{}", k[0], k[1],
                       in[0], in[1], p[0], p[1]),
           "use a smaller kernelSize, more padding, or convolutionMode: Same");
    extent[d] = *e;
  }
  return Window{extent[kHeight], extent[kWidth]};
}

std::string default_layer_name(LayerType type, std::size_t index) {
  return std::string(layer_kind(type).name) + std::to_string(index);
}

std::string layer_name(const LayerConfig& layer, std::size_t index) {
  return layer.name.empty() ? default_layer_name(layer.type, index) : layer.name;
}

std::vector<PlannedLayer> plan_layers(const Config& config) {
  const SourceLocation file{config.sourcePath, 0, 0};
  if (config.layers.empty())
    fail_at(file, "the network has no layers", "add a 'layers:' list ending with an output layer");
  std::vector<PlannedLayer> planned;
  const SampleShape shape = input_shape(config);
  if (shape.size() == 0 || shape.channels < 1 || shape.height < 1 || shape.width < 1)
    fail_at(file, fmt::format("inputType gives an empty sample shape {}", shape.str()),
            "set inputType's height, width and channels (or size) to at least 1");
  for (std::size_t i = 0; i + 1 < config.layers.size(); ++i) {
    if (config.layers[i].type == LayerType::kOutput)
      LayerShaping(config.layers[i + 1], i + 1, {shape})
          .fail(fmt::format("it follows the output layer '{}'",
                            quoted_value(layer_name(config.layers[i], i))),
                "make the output layer the last one");
  }
  const std::size_t last = config.layers.size() - 1;
  const LayerSources graph = resolve_layer_sources(config);
  for (std::size_t i = 0; i < config.layers.size(); ++i)
    planned.push_back(plan_layer(config, i, planned, graph, shape));
  if (config.layers[last].type != LayerType::kOutput)
    LayerShaping(config.layers[last], last, {planned.back().input})
        .fail("the last layer is not an output layer",
              "end the layers with an output layer, e.g. '- output: {nOut: 10, lossFunction: "
              "negativeloglikelihood}'");
  return planned;
}

}  // namespace dl
