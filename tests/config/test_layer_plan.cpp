// Shape inference: LeNet's shapes, Same-mode padding, and the errors for networks that do not fit.
#include "config_test_support.hpp"
#include "nn/layer_plan.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using dl::testing::load;
using dl::testing::load_error;
using dl::testing::source_path;

namespace {

// A programmatic config, as the model builder's tests make them: no YAML, no source locations.
dl::Config image_config(int channels, int height, int width) {
  dl::Config c;
  c.inputType.kind = dl::InputTypeConfig::Kind::kConvolutionalFlat;
  c.inputType.channels = channels;
  c.inputType.height = height;
  c.inputType.width = width;
  return c;
}

dl::LayerConfig conv(int nout, int kernel, int stride, dl::ConvolutionMode mode) {
  dl::LayerConfig l;
  l.type = dl::LayerType::kConvolution;
  l.nOut = nout;
  l.kernelSize[0] = l.kernelSize[1] = kernel;
  l.stride[0] = l.stride[1] = stride;
  l.convolutionMode = mode;
  return l;
}

dl::LayerConfig output(int nout) {
  dl::LayerConfig l;
  l.type = dl::LayerType::kOutput;
  l.nOut = nout;
  return l;
}

}  // namespace

TEST_CASE("LeNet's shapes", "[config][plan]") {
  const dl::Config c = dl::load_config_file(source_path("configs/mnist.yaml"));
  const auto plan = dl::plan_layers(c);
  REQUIRE(plan.size() == 6);
  CHECK(plan[0].input.str() == "1x28x28");
  const char* outputs[] = {"20x24x24", "20x12x12", "50x8x8", "50x4x4", "500", "10"};
  for (int i = 0; i < 6; ++i) CHECK(plan[i].output.str() == outputs[i]);
  CHECK(plan[4].config.nIn == 800);
  CHECK(plan[5].config.nIn == 500);
  CHECK(plan[2].config.nIn == 20);
  CHECK(plan[4].output.spatial == false);
  CHECK(plan[0].activation == dl::Activation::kIdentity);
  CHECK(plan[4].activation == dl::Activation::kRelu);
  CHECK(plan[5].activation == dl::Activation::kSoftmax);
  CHECK(plan[1].activation == dl::Activation::kIdentity);
  CHECK(plan[0].weightInit == dl::WeightInit::kXavier);
  CHECK(plan[1].config.name == "subsampling1");
  CHECK(plan[0].padTop == 0);
}

TEST_CASE("Same mode: out = ceil(in/stride), padding split with the extra at the end",
          "[config][plan]") {
  dl::Config c = image_config(1, 28, 28);
  c.layers = {conv(4, 5, 2, dl::ConvolutionMode::kSame), output(10)};
  auto plan = dl::plan_layers(c);
  CHECK(plan[0].output.str() == "4x14x14");
  // total = (14-1)*2 + 5 - 28 = 3 -> top 1 (and 2 at the bottom)
  CHECK(plan[0].padTop == 1);
  CHECK(plan[0].padLeft == 1);
  CHECK(plan[1].config.nIn == 4 * 14 * 14);

  c.layers[0] = conv(4, 5, 1, dl::ConvolutionMode::kSame);
  plan = dl::plan_layers(c);
  CHECK(plan[0].output.str() == "4x28x28");
  CHECK(plan[0].padTop == 2);

  // A kernel larger than the input is fine in Same mode: it is padded.
  c = image_config(2, 3, 5);
  c.layers = {conv(4, 7, 3, dl::ConvolutionMode::kSame), output(10)};
  plan = dl::plan_layers(c);
  CHECK(plan[0].output.str() == "4x1x2");
  CHECK(plan[0].padTop == 2);   // total = 0*3 + 7 - 3 = 4
  CHECK(plan[0].padLeft == 2);  // total = 1*3 + 7 - 5 = 5 -> 2
}

TEST_CASE("Truncate mode with padding and uneven strides", "[config][plan]") {
  dl::Config c = image_config(3, 28, 30);
  c.layers = {conv(8, 3, 2, dl::ConvolutionMode::kTruncate), output(10)};
  c.layers[0].padding[0] = 1;
  const auto plan = dl::plan_layers(c);
  // height: (28 + 2 - 3)/2 + 1 = 14; width: (30 - 3)/2 + 1 = 14
  CHECK(plan[0].output.str() == "8x14x14");
  CHECK(plan[0].padTop == 1);
  CHECK(plan[0].padLeft == 0);
  CHECK(plan[0].config.nIn == 3);
  CHECK(plan[0].config.name == "convolution0");
  CHECK(plan[1].config.name == "output1");
}

TEST_CASE("a kernel larger than its input is an error at the layer's line", "[config][plan]") {
  const std::string msg = load_error(
      "inputType: {convolutionalFlat: {height: 12, width: 12, channels: 1}}\n"
      "layers:\n"
      "  - convolution: {nOut: 4, kernelSize: 5}\n"
      "  - subsampling: {kernelSize: 2, stride: 2}\n"
      "  - convolution: {nOut: 4, kernelSize: 5}\n"
      "  - output: {nOut: 10}\n");
  // 12 -> 8 -> 4, then a 5x5 kernel on 4x4.
  CHECK_THAT(msg, StartsWith("t.yaml:5:5: layer 2 'convolution2' (convolution): kernel 5x5 is "
                             "larger than its input 4x4"));
  CHECK_THAT(msg, Contains("convolutionMode: Same"));
}

TEST_CASE("an error about a layer names the --set overrides that changed its keys",
          "[config][plan]") {
  const std::string yaml =
      "inputType: {convolutionalFlat: {height: 12, width: 12, channels: 1}}\n"
      "layers:\n"
      "  - convolution: {nOut: 4, kernelSize: 3}\n"
      "  - output: {nOut: 10}\n";
  // The file's line alone shows kernelSize 3, which fits: the message must say what changed it.
  const std::string msg = load_error(yaml, {"layers.0.kernelSize=13", "layers.0.stride=2"});
  CHECK_THAT(msg, StartsWith("t.yaml:3:5 with --set layers.0.kernelSize=13, --set "
                             "layers.0.stride=2: layer 0 'convolution0' (convolution): kernel "
                             "13x13 is larger than its input 12x12"));
  // An override of another layer or of a global key is no part of this layer's place.
  const std::string other = load_error(yaml, {"layers.0.kernelSize=13", "layers.1.nOut=3"});
  CHECK_THAT(other, StartsWith("t.yaml:3:5 with --set layers.0.kernelSize=13: layer 0"));
}

TEST_CASE("programmatic configs are checked too", "[config][plan]") {
  dl::Config c = image_config(1, 4, 4);
  c.layers = {conv(2, 5, 1, dl::ConvolutionMode::kTruncate), output(10)};
  REQUIRE_THROWS_AS(dl::plan_layers(c), dl::ConfigError);
  try {
    dl::plan_layers(c);
  } catch (const dl::ConfigError& e) {
    CHECK_THAT(e.what(), Contains("kernel 5x5 is larger than its input 4x4"));
  }

  c = image_config(1, 8, 8);
  c.layers = {conv(0, 3, 1, dl::ConvolutionMode::kTruncate), output(10)};
  CHECK_THROWS_WITH(dl::plan_layers(c), Contains("nOut = 0 is out of range"));

  c.layers = {};
  CHECK_THROWS_WITH(dl::plan_layers(c), Contains("the network has no layers"));
}

TEST_CASE("layer order errors", "[config][plan]") {
  const std::string head = "inputType: {feedForward: {size: 8}}\nlayers:\n";
  const std::string missing = load_error(head + "  - dense: {nOut: 4}\n");
  CHECK_THAT(missing, StartsWith("t.yaml:3:5: layer 0 'dense0' (dense): the last layer is not "
                                 "an output layer"));
  const std::string after = load_error(head + "  - output: {nOut: 10}\n  - dense: {nOut: 4}\n");
  CHECK_THAT(after, StartsWith("t.yaml:4:5: layer 1 'dense1' (dense): it follows the output "
                               "layer 'output0'"));
  const std::string conv_after_dense =
      load_error(head +
                 "  - dense: {nOut: 4}\n  - convolution: {nOut: 2, kernelSize: 1}\n"
                 "  - output: {nOut: 10}\n");
  CHECK_THAT(conv_after_dense, StartsWith("t.yaml:4:5: layer 1 'convolution1' (convolution): it "
                                          "needs an image input"));
}

TEST_CASE("nIn given must match the inferred one", "[config][plan]") {
  const std::string head =
      "inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}\nlayers:\n";
  CHECK(load(head + "  - dense: {nOut: 4, nIn: 784}\n  - output: {nOut: 10}\n").layers[0].nIn ==
        784);
  const std::string msg = load_error(head +
                                     "  - dense: {nOut: 4, nIn: 780}\n  - output: {nOut: "
                                     "10}\n");
  CHECK_THAT(msg, StartsWith("t.yaml:3:5: layer 0 'dense0' (dense): nIn is 780 but its input "
                             "1x28x28 gives 784"));
  CHECK_THAT(msg, Contains("write nIn: 784"));
}

TEST_CASE("feedForward input, dropout and batch normalization keep the shape", "[config][plan]") {
  const dl::Config c = load(
      "inputType: {feedForward: {size: 30}}\nlayers:\n  - batchNormalization: {decay: 0.5}\n"
      "  - dropout: {dropOut: 0.9}\n  - dense: {nOut: 12}\n  - output: {nOut: 10}\n");
  const auto plan = dl::plan_layers(c);
  CHECK(plan[0].input.str() == "30");
  CHECK(plan[0].output.str() == "30");
  CHECK(plan[0].config.nIn == 30);
  CHECK(plan[0].config.decay == 0.5);
  CHECK(plan[1].output.str() == "30");
  CHECK(plan[2].config.nIn == 30);
  CHECK(plan[2].output.str() == "12");
  CHECK(plan[1].activation == dl::Activation::kIdentity);
}

// One sample of one value per channel: the batch statistics are that value, so the layer would
// output beta and pass no gradient. Planes give a channel more values than one, and so does a
// batch of two.
TEST_CASE("batch normalization over batches of one feature vector is refused", "[config][plan]") {
  const std::string network =
      "inputType: {feedForward: {size: 30}}\nlayers:\n  - dense: {nOut: 12}\n"
      "  - batchNormalization: {}\n  - output: {nOut: 10}\n";
  const std::string message = load_error("batchSize: 1\n" + network);
  CHECK_THAT(message, StartsWith("t.yaml:5:5: layer 1 'batchNormalization1' (batchNormalization): "
                                 "batchSize is 1 and its input (12) holds one value per channel"));
  CHECK_THAT(message, Contains("set batchSize to 2 or more (per worker)"));
  CHECK(load("batchSize: 2\n" + network).layers.size() == 3);
  CHECK(load("batchSize: 1\ninputType: {convolutionalFlat: {height: 4, width: 4, channels: 2}}\n"
             "layers:\n  - batchNormalization: {}\n  - output: {nOut: 10}\n")
            .layers.size() == 2);
}

// Same pads by its own rule, so a padding written beside it was dropped without a word and the
// network was not the one the config described.
TEST_CASE("padding with convolutionMode Same is an error at the layer's line", "[config][plan]") {
  const std::string conv_msg = load_error(
      "inputType: {convolutionalFlat: {height: 12, width: 12, channels: 1}}\n"
      "layers:\n"
      "  - convolution: {nOut: 4, kernelSize: 3, padding: 5, convolutionMode: Same}\n"
      "  - output: {nOut: 10}\n");
  CHECK_THAT(conv_msg, StartsWith("t.yaml:3:5: layer 0 'convolution0' (convolution): padding 5x5 "
                                  "is given with convolutionMode: Same"));
  CHECK_THAT(conv_msg, Contains("convolutionMode: Truncate"));
  const std::string pool_msg = load_error(
      "inputType: {convolutionalFlat: {height: 12, width: 12, channels: 1}}\n"
      "layers:\n"
      "  - subsampling: {kernelSize: 2, stride: 2, padding: [0, 1], convolutionMode: same}\n"
      "  - output: {nOut: 10}\n");
  CHECK_THAT(pool_msg, StartsWith("t.yaml:3:5: layer 0 'subsampling0' (subsampling): padding 0x1 "
                                  "is given with convolutionMode: Same"));
  // Zero padding, written or not, stays valid with Same.
  const dl::Config c = load(
      "inputType: {convolutionalFlat: {height: 12, width: 12, channels: 1}}\n"
      "layers:\n"
      "  - convolution: {nOut: 4, kernelSize: 3, padding: 0, convolutionMode: Same}\n"
      "  - output: {nOut: 10}\n");
  CHECK(dl::plan_layers(c)[0].output.str() == "4x12x12");
}
