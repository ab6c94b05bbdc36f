#include "random_network.hpp"

#include <cstdlib>
#include <iterator>
#include <random>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace dl::testing {
namespace {

// The smooth ones first: NetworkKind::kSmooth draws from those alone.
constexpr const char* kActivations[] = {"identity", "tanh", "sigmoid",   "gelu",      "silu", "elu",
                                        "mish",     "relu", "leakyrelu", "hardswish", "selu"};
constexpr int kSmoothActivations = 7;
constexpr int kAllActivations = static_cast<int>(std::size(kActivations));

// Sizes stay small so that a finite-difference check over a network's parameters is cheap.
constexpr int kMostChannels = 6;
// ... but a part of the convolutions (and of the image inputs) are as wide as the CPU's Winograd
// path needs, so that the 3x3 and 5x5 stride-1 layers after them run it inside graphs too: fused
// with pooling, with batch normalization around them, as a network's first layer. It takes
// layers of 8 input channels or more (kWinogradMinChannels in conv2d_winograd.cpp) that the
// direct path leaves (more than its 100 taps, kDirectMaxTaps in conv2d_direct.cpp): 3x3 ones from
// 12 channels, 5x5 ones from 8.
constexpr int kWideChannels = 12;
constexpr int kMostWideChannels = 14;
constexpr int kWidePercent = 20;
constexpr int kMostUnits = 8;
constexpr int kLeastBlocks = 3;
constexpr int kMostBlocks = 7;

struct Node {
  std::string name;
  int channels = 0, height = 1, width = 1;
  bool flat = false;  // a dense layer's vector (or a flat input), not an image

  bool same_shape(const Node& o) const {
    return flat == o.flat && channels == o.channels && height == o.height && width == o.width;
  }
  bool same_plane(const Node& o) const {
    return !flat && !o.flat && height == o.height && width == o.width;
  }
  // Whether concat can join the two: images of one plane, or two vectors.
  bool concatenates_with(const Node& o) const { return same_plane(o) || (flat && o.flat); }
};

class Writer {
 public:
  Writer(unsigned seed, NetworkKind kind, const FixedEnds& ends)
      : seed_(seed),
        ends_(ends),
        activation_count_(kind == NetworkKind::kAny ? kAllActivations : kSmoothActivations),
        batchnorm_(kind == NetworkKind::kAny ? "" : "eps: 1.0e-3"),
        rng_(seed) {}
  RandomNetwork write();

 private:
  int below(int n) { return static_cast<int>(rng_() % static_cast<unsigned>(n)); }
  int between(int low, int high) { return low + below(high - low + 1); }
  bool percent(int p) { return below(100) < p; }
  int conv_channels() {
    return percent(kWidePercent) ? between(kWideChannels, kMostWideChannels)
                                 : between(2, kMostChannels);
  }
  std::string activation() { return kActivations[below(activation_count_)]; }
  // ", activation: a", or nothing (the global activation, or the layer kind's default: ReLU for
  // dense layers, so only where every activation may be drawn).
  std::string activation_setting() {
    const bool may_omit = global_activation_ || activation_count_ == kAllActivations;
    return may_omit && percent(20) ? std::string() : ", activation: " + activation();
  }

  Node layer(const std::string& kind, std::string settings, const std::vector<Node>& inputs,
             Node shape);
  Node conv(const Node& x, int channels, int kernel, int stride);
  Node keeping_shape(const Node& x, const char* kind, const std::string& settings);
  Node pool(const Node& x, bool keep_plane);
  std::string window(const Node& x, Node& y);
  Node any_window(const Node& x, bool pooling);
  Node dense(const Node& x, int units);
  Node merge(const char* kind, const std::vector<Node>& inputs);
  Node narrowed(const Node& y);

  Node plain(const Node& x);
  Node residual(const Node& x);
  Node branches(const Node& x);
  Node skip(const Node& x);
  Node block(const Node& x);

  unsigned seed_;
  FixedEnds ends_;
  int activation_count_;
  std::string batchnorm_;           // batch normalization's settings
  bool global_activation_ = false;  // the config sets the top-level activation
  std::mt19937 rng_;
  std::ostringstream layers_;
  std::vector<Node> nodes_;  // the input, then every layer written
  int count_ = 0;
};

// Writes one layer reading `inputs`; its `inputs` key is left out, at random, where it would say
// what the default says (the layer just above).
Node Writer::layer(const std::string& kind, std::string settings, const std::vector<Node>& inputs,
                   Node shape) {
  shape.name = fmt::format("{}{}", kind.substr(0, 4), ++count_);
  std::string names;
  for (const Node& in : inputs) names += (names.empty() ? "" : ", ") + in.name;
  const bool default_input = inputs.size() == 1 && inputs[0].name == nodes_.back().name;
  if (!default_input || percent(50)) {
    settings = fmt::format("inputs: [{}]{}{}", names, settings.empty() ? "" : ", ", settings);
  }
  layers_ << fmt::format("  - {}: {{name: {}{}{}}}\n", kind, shape.name,
                         settings.empty() ? "" : ", ", settings);
  nodes_.push_back(shape);
  return shape;
}

// kernel 1, 3 or 5; 3 and 5 keep the plane (padding, or convolutionMode Same) before the stride.
Node Writer::conv(const Node& x, int channels, int kernel, int stride) {
  Node y{"", channels, 0, 0};
  std::string padding;
  if (kernel > 1 && percent(50)) {
    padding = ", convolutionMode: Same";
    y.height = (x.height + stride - 1) / stride;
    y.width = (x.width + stride - 1) / stride;
  } else {
    const int pad = kernel / 2;
    if (pad > 0) padding = fmt::format(", padding: {}", pad);
    y.height = (x.height + 2 * pad - kernel) / stride + 1;
    y.width = (x.width + 2 * pad - kernel) / stride + 1;
  }
  const std::string settings =
      fmt::format("nOut: {}, kernelSize: {}, stride: {}{}, hasBias: {}{}", channels, kernel, stride,
                  padding, percent(60) ? "true" : "false", activation_setting());
  return layer("convolution", settings, {x}, y);
}

// A layer that keeps its input's shape.
Node Writer::keeping_shape(const Node& x, const char* kind, const std::string& settings) {
  return layer(kind, settings, {x}, x);
}

Node Writer::pool(const Node& x, bool keep_plane) {
  const char* type = percent(50) ? "max" : "avg";
  if (!keep_plane && x.height >= 2 && x.width >= 2 && percent(60)) {
    return layer("subsampling", fmt::format("poolingType: {}, kernelSize: 2, stride: 2", type), {x},
                 Node{"", x.channels, x.height / 2, x.width / 2});
  }
  return keeping_shape(x, "subsampling",
                       fmt::format("poolingType: {}, kernelSize: 3, stride: 1, padding: 1", type));
}

Node Writer::dense(const Node& x, int units) {
  return layer("dense", fmt::format("nOut: {}{}", units, activation_setting()), {x},
               Node{"", units, 1, 1, true});
}

Node Writer::merge(const char* kind, const std::vector<Node>& inputs) {
  Node y = inputs.front();
  std::string settings;
  if (std::string(kind) == "concat") {
    y.channels = 0;
    for (const Node& in : inputs) y.channels += in.channels;
  } else if (percent(70)) {
    settings = "activation: " + activation();
  }
  return layer(kind, settings, inputs, y);
}

// y itself, or where a concat made it wider than kMostChannels, a 1x1 convolution (a dense layer
// for a vector) down to 4, so that the networks stay small.
Node Writer::narrowed(const Node& y) {
  if (y.channels <= kMostChannels) return y;
  return y.flat ? dense(y, 4) : conv(y, 4, 1, 1);
}

// A window of any shape for a layer reading x: kernel 1 to 3 each way (2 too), stride 1 or 2 each
// way, and Truncate with padding up to half the kernel or Same; its settings, with y's plane set.
// None whose output would be empty.
std::string Writer::window(const Node& x, Node& y) {
  for (;;) {
    const int kh = between(1, 3), kw = between(1, 3), sh = between(1, 2), sw = between(1, 2);
    std::string text = fmt::format("kernelSize: [{}, {}], stride: [{}, {}]", kh, kw, sh, sw);
    if (percent(40)) {
      y.height = (x.height + sh - 1) / sh;
      y.width = (x.width + sw - 1) / sw;
      return text + ", convolutionMode: Same";
    }
    const int ph = between(0, kh / 2), pw = between(0, kw / 2);
    if (x.height + 2 * ph < kh || x.width + 2 * pw < kw) continue;
    y.height = (x.height + 2 * ph - kh) / sh + 1;
    y.width = (x.width + 2 * pw - kw) / sw + 1;
    return text + fmt::format(", padding: [{}, {}]", ph, pw);
  }
}

// A convolution or a pooling of any window (window above).
Node Writer::any_window(const Node& x, bool pooling) {
  Node y = x;
  const std::string shape = window(x, y);
  if (pooling) {
    return layer("subsampling",
                 fmt::format("poolingType: {}, {}", percent(50) ? "max" : "avg", shape), {x}, y);
  }
  y.channels = between(2, kMostChannels);
  return layer("convolution",
               fmt::format("nOut: {}, {}, hasBias: {}{}", y.channels, shape,
                           percent(60) ? "true" : "false", activation_setting()),
               {x}, y);
}

Node Writer::plain(const Node& x) {
  if (!x.flat && percent(20)) return any_window(x, percent(40));
  switch (below(x.flat ? 4 : 6)) {
    case 0:
      return keeping_shape(x, "batchNormalization", batchnorm_);
    case 1:
      return keeping_shape(x, "activation", "activation: " + activation());
    case 2:
      return keeping_shape(x, "dropout", percent(50) ? "dropOut: 0.5" : "dropOut: 0.8");
    case 3:
      if (x.flat) return dense(x, between(2, kMostUnits));
      return pool(x, false);
    case 4:
      return conv(x, conv_channels(), percent(70) ? 3 : 1, 1);
    default:
      return conv(x, conv_channels(), percent(80) ? 3 : 5, x.height >= 4 && x.width >= 4 ? 2 : 1);
  }
}

// A residual block: a branch of two or three layers (post- or pre-activation order) added to a
// shortcut, which is x itself or, where the branch changes the shape, a projection.
Node Writer::residual(const Node& x) {
  const bool project = percent(40);
  const int stride = project && !x.flat && x.height >= 4 && x.width >= 4 && percent(60) ? 2 : 1;
  const int width = !project ? x.channels : x.flat ? between(2, kMostUnits) : conv_channels();
  auto weighted = [&](const Node& in, int s) {
    return x.flat ? dense(in, width) : conv(in, width, percent(80) ? 3 : 1, s);
  };
  Node branch = x;
  if (percent(50)) {  // post-activation: weighted, BN, activation, weighted, BN
    branch = keeping_shape(weighted(branch, stride), "batchNormalization", batchnorm_);
    branch = keeping_shape(branch, "activation", "activation: " + activation());
    branch = weighted(branch, 1);
    if (percent(70)) branch = keeping_shape(branch, "batchNormalization", batchnorm_);
  } else {  // pre-activation: BN, activation, weighted
    branch = keeping_shape(branch, "batchNormalization", batchnorm_);
    branch = keeping_shape(branch, "activation", "activation: " + activation());
    branch = weighted(branch, stride);
  }
  Node shortcut = x;
  if (!branch.same_shape(x)) {
    shortcut = x.flat ? dense(x, width) : conv(x, width, 1, stride);
    if (percent(50)) shortcut = keeping_shape(shortcut, "batchNormalization", batchnorm_);
  }
  std::vector<Node> inputs{branch, shortcut};
  if (percent(50)) std::swap(inputs[0], inputs[1]);
  if (shortcut.name != x.name && x.same_shape(branch) && percent(30)) inputs.push_back(x);
  return merge("add", inputs);
}

// Two or three branches from x joined by concat: x itself, 1x1 and 3x3 convolutions, a pooling
// that keeps the plane, batch normalization and an activation (dense layers for a vector).
Node Writer::branches(const Node& x) {
  std::vector<Node> outs;
  const int count = between(2, 3);
  bool took_x = false;
  for (int i = 0; i < count; ++i) {
    const int pick = below(4);
    if (pick == 0 && !took_x) {
      took_x = true;
      outs.push_back(x);
    } else if (x.flat) {
      outs.push_back(dense(x, between(1, 4)));
    } else if (pick == 1) {
      outs.push_back(conv(x, between(1, 3), 1, 1));
    } else if (pick == 2) {
      outs.push_back(conv(x, between(1, 3), 3, 1));
    } else {
      const Node normalized = keeping_shape(x, "batchNormalization", batchnorm_);
      outs.push_back(percent(50)
                         ? pool(normalized, true)
                         : keeping_shape(normalized, "activation", "activation: " + activation()));
    }
  }
  return narrowed(merge("concat", outs));
}

// x joined with a layer from further up (or the network's input): a layer read twice, far apart.
Node Writer::skip(const Node& x) {
  // A merge that names one input twice: its gradient is the sum of both terms.
  if (percent(10)) return merge(percent(50) ? "add" : "concat", {x, x});
  for (std::size_t i = 0; i + 1 < nodes_.size(); ++i) {
    const Node& earlier = nodes_[i];
    if (earlier.name == x.name) continue;
    if (earlier.same_shape(x) && percent(60)) return merge("add", {x, earlier});
    if (earlier.concatenates_with(x) && percent(40)) return narrowed(merge("concat", {x, earlier}));
  }
  return plain(x);
}

Node Writer::block(const Node& x) {
  if (!x.flat && percent(12)) {  // from images to vectors
    if (percent(50)) return dense(x, between(2, kMostUnits));
    return layer("globalPooling", percent(50) ? "poolingType: max" : "", {x},
                 Node{"", x.channels, 1, 1});
  }
  switch (below(4)) {
    case 0:
      return plain(x);
    case 1:
      return residual(x);
    case 2:
      return branches(x);
    default:
      return skip(x);
  }
}

RandomNetwork Writer::write() {
  std::ostringstream head;
  head << "seed: " << seed_ << "\n";
  head << "weightInit: " << (percent(50) ? "XAVIER" : "RELU") << "\n";
  global_activation_ = percent(25);
  if (global_activation_) head << "activation: " << activation() << "\n";
  Node x;
  x.name = "input";
  const bool image = ends_.features == 0 && (ends_.height > 0 || !percent(20));
  if (!image) {
    x.flat = true;
    x.channels = ends_.features > 0 ? ends_.features : between(3, kMostUnits);
    head << "inputType: {feedForward: {size: " << x.channels << "}}\n";
  } else {
    x.channels = percent(kWidePercent / 2) ? kWideChannels : between(1, 3);
    x.height = between(4, 8);
    x.width = percent(70) ? x.height : between(4, 8);
    if (ends_.height > 0) {
      x.channels = ends_.channels;
      x.height = ends_.height;
      x.width = ends_.width;
    }
    head << fmt::format(
        "inputType: {{convolutionalFlat: {{height: {}, width: {}, channels: {}}}}}\n", x.height,
        x.width, x.channels);
  }
  nodes_.push_back(x);
  const int blocks = between(kLeastBlocks, kMostBlocks);
  for (int i = 0; i < blocks; ++i) x = block(x);
  const int drawn_classes = between(2, 4);
  const int classes = ends_.classes > 0 ? ends_.classes : drawn_classes;
  std::string loss;
  switch (below(4)) {
    case 0:
      loss = "activation: softmax, lossFunction: negativeloglikelihood";
      break;
    case 1:
      loss = "activation: softmax, lossFunction: mcxent, labelSmoothing: 0.2";
      break;
    case 2:
      loss = "activation: sigmoid, lossFunction: mse";
      break;
    default:
      loss = "activation: softmax, lossFunction: mcxent";
      break;
  }
  layer("output", fmt::format("nOut: {}, {}", classes, loss), {x}, Node{"", classes, 1, 1, true});
  return {head.str() + "layers:\n" + layers_.str()};
}

}  // namespace

RandomNetwork random_network(unsigned seed, NetworkKind kind, const FixedEnds& ends) {
  return Writer(seed, kind, ends).write();
}

unsigned random_network_count(unsigned usual) {
  const char* count = std::getenv("DL_RANDOM_NETWORKS");
  return count != nullptr ? static_cast<unsigned>(std::strtoul(count, nullptr, 10)) : usual;
}

}  // namespace dl::testing
