#include "export/onnx_export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "backend/ops/activation.hpp"
#include "core/error.hpp"
#include "core/kinds.hpp"
#include "export/onnx_graph_builder.hpp"
#include "nn/layer_graph.hpp"
#include "nn/layer_plan.hpp"
#include "nn/layer_registry.hpp"
#include "nn/model.hpp"
#include "onnx_subset.pb.h"

namespace dl {
namespace {

constexpr std::int64_t kIrVersion = 7;  // ONNX 1.8 and later read it
constexpr std::int64_t kOpsetVersion = 13;
constexpr const char* kInputName = "input";
constexpr const char* kOutputName = "probabilities";
constexpr int kBatchNormGamma = 0, kBatchNormBeta = 1, kBatchNormMean = 2, kBatchNormVar = 3;

[[noreturn]] void refuse(const PlannedLayer& p, const std::string& what, const std::string& fix) {
  throw ConfigError(fmt::format("export --format onnx: layer '{}' ({}): {}; {}", p.config.name,
                                layer_kind(p.config.type).name, what, fix));
}

std::vector<std::int64_t> shape_dims(const SampleShape& s) {
  if (!s.spatial) return {s.channels};
  return {s.channels, s.height, s.width};
}

// Conv and pooling windows: kernel, strides, and ONNX's pads [top, left, bottom, right], where
// bottom/right are whatever makes the planned output size (Same mode's asymmetric padding).
void add_window(onnx::NodeProto& n, const PlannedLayer& p) {
  const LayerConfig& c = p.config;
  const std::int64_t pad_bottom =
      std::int64_t{p.output.height - 1} * c.stride[0] + c.kernelSize[0] - p.input.height - p.padTop;
  const std::int64_t pad_right =
      std::int64_t{p.output.width - 1} * c.stride[1] + c.kernelSize[1] - p.input.width - p.padLeft;
  const bool truncate = c.convolutionMode == ConvolutionMode::kTruncate;
  GraphBuilder::ints(n, "kernel_shape", {c.kernelSize[0], c.kernelSize[1]});
  GraphBuilder::ints(n, "strides", {c.stride[0], c.stride[1]});
  // Truncate: the rows past the last window are simply unused, as in ONNX with explicit pads.
  GraphBuilder::ints(
      n, "pads",
      {p.padTop, p.padLeft, truncate ? c.padding[0] : std::max<std::int64_t>(pad_bottom, 0),
       truncate ? c.padding[1] : std::max<std::int64_t>(pad_right, 0)});
}

// Opset 13 has no Gelu (opset 20), HardSwish (14), Mish (18) or SiLU: each is written as the nodes
// of its formula (backend/ops/activation.hpp), which any runtime fuses back where it can.
std::string add_decomposed_activation(GraphBuilder& g, Activation a, const std::string& x,
                                      const std::string& out) {
  const auto scalar = [&g, &out](const char* suffix, float value) {
    return g.tensor(out + suffix, {}, &value, 1);
  };
  switch (a) {
    case Activation::kGelu: {  // x/2 (1 + erf(x / sqrt 2))
      const std::string scaled = GraphBuilder::output_of(
          g.node("Mul", {x, scalar(".inverse_sqrt2", ops::kInverseSqrt2)}, out + ".scaled"));
      const std::string erf = GraphBuilder::output_of(g.node("Erf", {scaled}, out + ".erf"));
      const std::string cdf2 =
          GraphBuilder::output_of(g.node("Add", {erf, scalar(".one", 1.0f)}, out + ".cdf2"));
      const std::string x_cdf2 = GraphBuilder::output_of(g.node("Mul", {x, cdf2}, out + ".x_cdf2"));
      return GraphBuilder::output_of(g.node("Mul", {x_cdf2, scalar(".half", 0.5f)}, out));
    }
    case Activation::kSilu: {  // x sigmoid(x)
      const std::string s = GraphBuilder::output_of(g.node("Sigmoid", {x}, out + ".sigmoid"));
      return GraphBuilder::output_of(g.node("Mul", {x, s}, out));
    }
    case Activation::kHardswish: {  // x max(0, min(1, x/6 + 1/2))
      onnx::NodeProto& gate = g.node("HardSigmoid", {x}, out + ".gate");
      GraphBuilder::real(gate, "alpha", ops::kHardswishScale);
      GraphBuilder::real(gate, "beta", ops::kHardswishKnee * ops::kHardswishScale);
      return GraphBuilder::output_of(g.node("Mul", {x, GraphBuilder::output_of(gate)}, out));
    }
    case Activation::kMish: {  // x tanh(softplus(x))
      const std::string sp = GraphBuilder::output_of(g.node("Softplus", {x}, out + ".softplus"));
      const std::string t = GraphBuilder::output_of(g.node("Tanh", {sp}, out + ".tanh"));
      return GraphBuilder::output_of(g.node("Mul", {x, t}, out));
    }
    default:
      DL_CHECK(false, "only GELU, SiLU, hardswish and mish are decomposed");
  }
  return out;
}

// The activation node after a layer (none for identity); returns the output's name.
std::string add_activation(GraphBuilder& g, const PlannedLayer& p, const std::string& x) {
  const std::string out = p.config.name + ".activation";
  switch (p.activation) {
    case Activation::kIdentity:
      return x;
    case Activation::kRelu:
      return GraphBuilder::output_of(g.node("Relu", {x}, out));
    case Activation::kLeakyRelu: {
      onnx::NodeProto& n = g.node("LeakyRelu", {x}, out);
      GraphBuilder::real(n, "alpha", kDefaultLeakyReluAlpha);
      return GraphBuilder::output_of(n);
    }
    case Activation::kTanh:
      return GraphBuilder::output_of(g.node("Tanh", {x}, out));
    case Activation::kSigmoid:
      return GraphBuilder::output_of(g.node("Sigmoid", {x}, out));
    case Activation::kSoftmax: {
      // dl-train's softmax runs over the whole flattened sample; ONNX's over one axis, which is
      // the whole sample where the planes are one pixel (after a globalPooling layer).
      if (p.output.spatial && p.output.height * p.output.width > 1)
        refuse(p, "a softmax over an image-shaped output has no single ONNX axis",
               "use softmax on dense and output layers, or on planes of one pixel (after "
               "globalPooling)");
      onnx::NodeProto& n = g.node("Softmax", {x}, out);
      GraphBuilder::integer(n, "axis", 1);
      return GraphBuilder::output_of(n);
    }
    case Activation::kElu: {
      onnx::NodeProto& n = g.node("Elu", {x}, out);
      GraphBuilder::real(n, "alpha", ops::kEluAlpha);
      return GraphBuilder::output_of(n);
    }
    case Activation::kSelu: {
      onnx::NodeProto& node = g.node("Selu", {x}, out);
      GraphBuilder::real(node, "alpha", ops::kSeluAlpha);
      GraphBuilder::real(node, "gamma", ops::kSeluScale);
      return GraphBuilder::output_of(node);
    }
    case Activation::kGelu:
    case Activation::kSilu:
    case Activation::kHardswish:
    case Activation::kMish:
      return add_decomposed_activation(g, p.activation, x, out);
  }
  return x;
}

// A merge's inputs as ONNX tensors of its output's rank: where it joins flat vectors with images
// of one pixel (merge_input_shapes), those are flattened from [N, c, 1, 1] to [N, c].
std::vector<std::string> merge_inputs(GraphBuilder& g, const PlannedLayer& p,
                                      const std::vector<std::string>& xs) {
  if (p.output.spatial) return xs;
  std::vector<std::string> flat = xs;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    if (!p.inputs[k].spatial) continue;
    onnx::NodeProto& n = g.node("Flatten", {xs[k]}, p.config.name + ".flatten" + std::to_string(k));
    GraphBuilder::integer(n, "axis", 1);
    flat[k] = GraphBuilder::output_of(n);
  }
  return flat;
}

// A subsampling layer: MaxPool or AveragePool (padding counted as zeros), where ONNX and its
// runtimes give dl-train's values.
std::string add_pooling(GraphBuilder& g, const PlannedLayer& p, const std::string& x,
                        const std::string& name) {
  const LayerConfig& c = p.config;
  const bool max = c.poolingType == PoolingType::kMax;
  // Truncate pads each side alike, Same less than the kernel: top and left tell.
  const bool padding_fills_window = p.padTop >= c.kernelSize[0] || p.padLeft >= c.kernelSize[1];
  if (max && padding_fills_window)
    refuse(p,
           "a max-pooling window can lie wholly in the padding (dl-train outputs 0 there, "
           "ONNX -inf)",
           "make the padding smaller than the kernel");
  // The values would agree (zeros, counted), but ONNX Runtime refuses to load any pooling
  // whose pads reach its kernel ("Pad should be smaller than kernel"), so the file would be
  // of no use where it is most often run.
  if (padding_fills_window)
    refuse(p,
           fmt::format("padding {}x{} is not smaller than the kernel {}x{}, which ONNX "
                       "Runtime refuses in a pooling node",
                       c.padding[0], c.padding[1], c.kernelSize[0], c.kernelSize[1]),
           "make the padding smaller than the kernel");
  onnx::NodeProto& n = g.node(max ? "MaxPool" : "AveragePool", {x}, name);
  add_window(n, p);
  if (!max) GraphBuilder::integer(n, "count_include_pad", 1);  // padding counts as zeros
  return GraphBuilder::output_of(n);
}

// Adds the nodes of one layer reading `xs` (one name per input), with its parameters at
// `params`; returns its output.
std::string add_layer(GraphBuilder& g, const PlannedLayer& p, const float* params,
                      const std::vector<std::string>& xs) {
  const std::string& name = p.config.name;
  const LayerConfig& c = p.config;
  const std::string& x = xs.front();
  switch (c.type) {
    case LayerType::kConvolution: {
      const std::size_t weights =
          std::size_t(p.output.channels) * p.input.channels * c.kernelSize[0] * c.kernelSize[1];
      const std::string w = g.tensor(
          name + ".W", {p.output.channels, p.input.channels, c.kernelSize[0], c.kernelSize[1]},
          params, weights);
      std::vector<std::string> inputs{x, w};  // Conv's bias input is optional
      if (c.hasBias)
        inputs.push_back(g.tensor(name + ".b", {p.output.channels}, params + weights,
                                  static_cast<std::size_t>(p.output.channels)));
      onnx::NodeProto& n = g.node("Conv", inputs, name);
      add_window(n, p);
      return add_activation(g, p, GraphBuilder::output_of(n));
    }
    case LayerType::kSubsampling:
      return add_pooling(g, p, x, name);
    case LayerType::kGlobalPooling: {
      const bool max = c.poolingType == PoolingType::kMax;
      return GraphBuilder::output_of(
          g.node(max ? "GlobalMaxPool" : "GlobalAveragePool", {x}, name));
    }
    case LayerType::kDense:
    case LayerType::kOutput: {
      std::string flat = x;
      if (p.input.spatial) {
        onnx::NodeProto& n = g.node("Flatten", {x}, name + ".flatten");
        GraphBuilder::integer(n, "axis", 1);
        flat = GraphBuilder::output_of(n);
      }
      const std::size_t in = p.input.size();
      const auto out = static_cast<std::size_t>(c.nOut);
      const std::string w =
          g.tensor(name + ".W", {static_cast<std::int64_t>(in), c.nOut}, params, in * out);
      std::vector<std::string> inputs{flat, w};  // Gemm's C is optional from opset 11
      if (c.hasBias) inputs.push_back(g.tensor(name + ".b", {c.nOut}, params + in * out, out));
      return add_activation(g, p, GraphBuilder::output_of(g.node("Gemm", inputs, name)));
    }
    case LayerType::kDropout:
      return x;  // inverted dropout: the identity at inference
    case LayerType::kActivation:
      return add_activation(g, p, x);
    case LayerType::kAdd:
      // Sum: any number of inputs; Add: two
      return add_activation(g, p,
                            GraphBuilder::output_of(g.node("Sum", merge_inputs(g, p, xs), name)));
    case LayerType::kConcat: {  // channels, or flat features
      onnx::NodeProto& n = g.node("Concat", merge_inputs(g, p, xs), name);
      GraphBuilder::integer(n, "axis", 1);
      return GraphBuilder::output_of(n);
    }
    case LayerType::kBatchNormalization: {
      const auto ch = static_cast<std::size_t>(p.input.channels);
      std::vector<std::string> inputs{x};
      for (const auto& [part, index] :
           {std::pair{".gamma", kBatchNormGamma}, std::pair{".beta", kBatchNormBeta},
            std::pair{".mean", kBatchNormMean}, std::pair{".var", kBatchNormVar}})
        inputs.push_back(g.tensor(name + part, {p.input.channels}, params + index * ch, ch));
      onnx::NodeProto& n = g.node("BatchNormalization", inputs, name);
      GraphBuilder::real(n, "epsilon", static_cast<float>(c.eps));
      return GraphBuilder::output_of(n);
    }
  }
  return x;
}

// x -> (x - mean) / std per channel, as the loader normalizes (data/input_pipeline.hpp). The
// data's channels are planes of its samples whatever inputType says: a flat input of several
// channels (CIFAR read as feedForward: 3072 = 3 planes of 1024) gets each channel's value over
// its plane's features, where [1, channels] would not broadcast against [N, features].
std::string add_normalization(GraphBuilder& g, const SampleShape& input,
                              const std::vector<float>& mean, const std::vector<float>& stddev,
                              const std::string& x) {
  const std::size_t channels = mean.size();
  std::vector<float> m = mean, s = stddev;
  std::vector<std::int64_t> dims{1, static_cast<std::int64_t>(channels), 1, 1};
  if (!input.spatial) {
    const auto features = static_cast<std::size_t>(input.channels);
    dims = {1, static_cast<std::int64_t>(channels == 1 ? 1 : features)};
    if (channels > 1) {
      DL_CHECK(features % channels == 0, "a flat input holds whole channel planes");
      const std::size_t plane = features / channels;
      m.assign(features, 0.0f);
      s.assign(features, 0.0f);
      for (std::size_t i = 0; i < features; ++i) {
        m[i] = mean[i / plane];
        s[i] = stddev[i / plane];
      }
    }
  }
  const std::string mt = g.tensor("input.mean", dims, m.data(), m.size());
  const std::string st = g.tensor("input.std", dims, s.data(), s.size());
  const std::string centered = GraphBuilder::output_of(g.node("Sub", {x, mt}, "input.centered"));
  return GraphBuilder::output_of(g.node("Div", {centered, st}, "input.normalized"));
}

}  // namespace

bool onnx_export_available() {
  return true;
}

std::string onnx_model_bytes(const Config& config, const std::vector<float>& parameters,
                             const std::vector<float>& mean, const std::vector<float>& stddev,
                             const std::vector<std::string>& class_names) {
  const std::vector<PlannedLayer> plan = plan_layers(config);
  const auto layers = build_layers(plan);
  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("dl-train");
  model.set_producer_version(DL_TRAIN_VERSION);
  model.set_doc_string(
      "input: float NCHW pixels as byte / 255; output: class probabilities (dl-train predict)");
  onnx::OperatorSetIdProto& opset = *model.add_opset_import();
  opset.set_domain("");
  opset.set_version(kOpsetVersion);
  onnx::StringStringEntryProto& signature = *model.add_metadata_props();
  signature.set_key("dl-train.network_signature");
  signature.set_value(network_signature(layers));
  if (!class_names.empty()) {
    onnx::StringStringEntryProto& names = *model.add_metadata_props();
    names.set_key("dl-train.class_names");
    std::string lines;
    for (const std::string& name : class_names) lines += (lines.empty() ? "" : "\n") + name;
    names.set_value(lines);
  }

  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("dl-train");
  GraphBuilder g(graph, {kInputName, kOutputName});
  g.input(kInputName, shape_dims(plan.front().input));
  std::string x = kInputName;
  if (!mean.empty()) x = add_normalization(g, plan.front().input, mean, stddev, x);
  std::vector<std::string> outputs;  // per layer: the name of its output value
  std::size_t offset = 0;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const std::size_t count = layers[i]->parameter_count();
    DL_CHECK(offset + count <= parameters.size(), "the parameters fit the network");
    std::vector<std::string> xs;
    for (int s : plan[i].sources)
      xs.push_back(s == kNetworkInput ? x : outputs[static_cast<std::size_t>(s)]);
    outputs.push_back(add_layer(g, plan[i], parameters.data() + offset, xs));
    offset += count;
  }
  DL_CHECK(offset == parameters.size(), "the parameters fit the network");
  // The last node's output gets the graph output's name.
  graph.mutable_node(graph.node_size() - 1)->set_output(0, kOutputName);
  g.output(kOutputName, shape_dims(plan.back().output));
  std::string bytes;
  DL_CHECK(model.SerializeToString(&bytes), "an ONNX model serializes");
  return bytes;
}

}  // namespace dl
