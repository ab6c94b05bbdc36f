// Each class of config error: the exception type, the place (file:line:column) and the parts of
// the message a user needs (the key, what is wrong, the fix or suggestion). The file-level ones
// (YAML syntax, empty or unreadable files, FIFOs): test_config_file_errors.cpp; enum values and
// structural mistakes: test_config_structure_errors.cpp.
#include "config_test_support.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;
using dl::testing::kNetwork;
using dl::testing::load;
using dl::testing::load_error;

TEST_CASE("unknown key: case-insensitive match suggested first", "[config][errors]") {
  const std::string msg = load_error("updater:\n  learningrate: 0.1\n" + kNetwork);
  CHECK_THAT(msg, StartsWith("t.yaml:2:3: "));
  CHECK_THAT(msg, Contains("unknown key 'learningrate' in updater"));
  CHECK_THAT(msg, EndsWith("did you mean 'learningRate'?"));
}

TEST_CASE("unknown key: a typo gets the nearest key", "[config][errors]") {
  const std::string msg = load_error("seed: 1\nbatchSise: 32\n" + kNetwork);
  CHECK_THAT(msg, StartsWith("t.yaml:2:1: "));
  CHECK_THAT(msg, Contains("unknown key 'batchSise' at the top level"));
  CHECK_THAT(msg, Contains("did you mean 'batchSize'?"));

  const std::string transposed = load_error("parallel:\n  wokrers: 2\n" + kNetwork);
  CHECK_THAT(transposed, StartsWith("t.yaml:2:3: "));
  CHECK_THAT(transposed, Contains("did you mean 'workers'?"));
}

TEST_CASE("a key at the wrong level is named with the section that has it", "[config][errors]") {
  // DL4J's builder sets the learning rate beside the seed; in dl-train it is the updater's.
  const std::string up = load_error("seed: 1\nlearningRate: 0.1\n" + kNetwork);
  CHECK_THAT(up, StartsWith("t.yaml:2:1: "));
  CHECK_THAT(up, Contains("unknown key 'learningRate' at the top level: it is a key of updater; "
                          "write it inside updater (updater.learningRate)"));
  // One indent too many puts a top-level key inside the section above it.
  const std::string down = load_error("output:\n  directory: runs/x\n  epochs: 3\n" + kNetwork);
  CHECK_THAT(down, StartsWith("t.yaml:3:3: "));
  CHECK_THAT(down, Contains("unknown key 'epochs' in output: it is a key of the top level; move "
                            "it out to the top level"));
  // A key of several sections: all of them at the top level; inside a section, its own keys.
  CHECK_THAT(load_error("directory: runs/x\n" + kNetwork),
             Contains("write it inside one of them: data.directory, output.directory"));
  const std::string other = load_error("output:\n  type: x\n" + kNetwork);
  CHECK_THAT(other, Contains("unknown key 'type' in output; use one of: directory"));
  // A format's key is found whatever data.format the config has, and a nested section's too.
  CHECK_THAT(load_error("trainImages: a.gz\n" + kNetwork),
             Contains("write it inside data (data.trainImages)"));
  CHECK_THAT(load_error("parallel:\n  size: 3\n" + kNetwork),
             Contains("write it inside inputType.feedForward (inputType.feedForward.size)"));
}

TEST_CASE("other libraries' words for keys, backends and data formats", "[config][errors]") {
  CHECK_THAT(load_error("lr: 0.1\n" + kNetwork), Contains("; write updater.learningRate"));
  CHECK_THAT(load_error("batch_size: 32\n" + kNetwork), EndsWith("; write batchSize"));
  CHECK_THAT(load_error("weight_decay: 0.1\n" + kNetwork), Contains("; write l2 (PyTorch's"));
  CHECK_THAT(load_error("backend: gpu\n" + kNetwork),
             Contains("unknown backend 'gpu' for backend; write cuda"));
  CHECK_THAT(load_error("data: {format: mnist}\n" + kNetwork),
             Contains("unknown data format 'mnist' for data.format; write idx"));
}

TEST_CASE("unknown key: nothing close lists the valid keys", "[config][errors]") {
  const std::string msg = load_error("updater:\n  zzzzzz: 1\n" + kNetwork);
  CHECK_THAT(msg, StartsWith("t.yaml:2:3: "));
  CHECK_THAT(msg, Contains("unknown key 'zzzzzz' in updater"));
  CHECK_THAT(msg, !Contains("did you mean"));
  CHECK_THAT(msg, Contains("learningRate"));
  CHECK_THAT(msg, Contains("rmsDecay"));
}

TEST_CASE("unknown key inside a layer names the layer", "[config][errors]") {
  const std::string yaml =
      "inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}\n"
      "layers:\n"
      "  - convolution: {kernelSise: 3, nOut: 4}\n"
      "  - output: {nOut: 10}\n";
  const std::string msg = load_error(yaml);
  CHECK_THAT(msg, StartsWith("t.yaml:3:19: "));
  CHECK_THAT(msg, Contains("unknown key 'kernelSise' in layers.0 (convolution)"));
  CHECK_THAT(msg, Contains("did you mean 'kernelSize'?"));

  // The start of a key is enough for a suggestion.
  CHECK_THAT(
      load_error("inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}\n"
                 "layers:\n  - convolution: {kernel: 3, nOut: 4}\n  - output: {nOut: 10}\n"),
      Contains("unknown key 'kernel' in layers.0 (convolution); did you mean 'kernelSize'?"));

  // A key of another layer type is not valid here.
  const std::string pooling = load_error(
      "inputType: {feedForward: {size: 8}}\nlayers:\n  - dense: {nOut: 4, poolingType: max}\n"
      "  - output: {nOut: 10}\n");
  CHECK_THAT(pooling, StartsWith("t.yaml:3:22: "));
  CHECK_THAT(pooling, Contains("unknown key 'poolingType' in layers.0 (dense)"));
}

TEST_CASE("other libraries' words for layers get dl-train's, with the meaning translated",
          "[config][errors]") {
  const auto layers = [](const std::string& items) {
    return "inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}\nlayers:\n" +
           items + "  - output: {nOut: 10}\n";
  };
  // Keras's Dropout(rate) drops, dl-train's dropOut keeps: the near typo alone ("did you mean
  // 'dropOut'?") had a Keras user write dropOut: 0.2 and keep a fifth of the activations.
  for (const char* key : {"rate", "p", "dropout"}) {
    const std::string msg = load_error(layers(std::string("  - dropout: {") + key + ": 0.2}\n"));
    CHECK_THAT(msg, StartsWith("t.yaml:3:15: ") &&
                        Contains(std::string("unknown key '") + key + "' in layers.0 (dropout)") &&
                        Contains("probability of keeping each activation") &&
                        Contains("rate 0.2 is dropOut: 0.8"));
    CHECK_THAT(msg, !Contains("did you mean"));
  }
  // DL4J's builders take dropOut on any layer: here it is a layer before.
  CHECK_THAT(load_error(layers("  - dense: {nOut: 8, dropOut: 0.5}\n")),
             StartsWith("t.yaml:3:22: ") && Contains("put '- dropout: {dropOut: p}' before"));
  // PyTorch's batch-norm momentum 0.1 is decay 0.9.
  CHECK_THAT(load_error(layers("  - batchNormalization: {momentum: 0.1}\n")),
             Contains("unknown key 'momentum' in layers.0 (batchNormalization); write decay") &&
                 Contains("(0.1 is decay: 0.9)"));
  // Keras's and PyTorch's layer names, in any letter case.
  CHECK_THAT(load_error(layers("  - Flatten: {}\n")),
             StartsWith("t.yaml:3:5: ") && Contains("unknown layer type 'Flatten' in layers.0") &&
                 Contains("dense and output layers read an image input as one flat vector"));
  CHECK_THAT(load_error(layers("  - MaxPooling2D: {pool_size: 2}\n")),
             Contains("write subsampling, with poolingType: max or avg"));
  CHECK_THAT(load_error(layers("  - relu: {}\n")), Contains("'- activation: {activation: NAME}'"));
  // A typo of dl-train's own word still gets the near match.
  CHECK_THAT(load_error(layers("  - dropuot: {dropOut: 0.5}\n")),
             Contains("did you mean 'dropout'?"));
  // Enum values: the near typo named a value of another meaning (float16 is HALF, not BFLOAT16;
  // He's normal init is RELU, NORMAL is LeCun's).
  const std::string half = load_error("dtype: float16\n" + kNetwork);
  CHECK_THAT(half, StartsWith("t.yaml:1:8: ") && Contains("unknown dtype 'float16' for dtype") &&
                       Contains("write HALF"));
  CHECK_THAT(half, !Contains("did you mean"));
  CHECK_THAT(load_error("weightInit: he_normal\n" + kNetwork),
             Contains("write RELU (He's normal") && !Contains("did you mean 'NORMAL'"));
  CHECK_THAT(load_error(layers("  - dense: {nOut: 8, activation: linear}\n")),
             Contains("unknown activation 'linear' for layers.0.activation; write identity"));
  CHECK_THAT(load_error("dtype: flaot\n" + kNetwork), Contains("did you mean 'FLOAT'?"));
}

TEST_CASE("wrong types", "[config][errors]") {
  SECTION("a string where a number is") {
    const std::string msg = load_error("l2: abc\n" + kNetwork);
    CHECK_THAT(msg, StartsWith("t.yaml:1:5: "));
    CHECK_THAT(msg, Contains("l2 must be a finite number, got 'abc'"));
  }
  SECTION("a quoted number is a string") {
    const std::string msg = load_error("epochs: \"3\"\n" + kNetwork);
    CHECK_THAT(msg, StartsWith("t.yaml:1:9: "));
    CHECK_THAT(msg, Contains("epochs must be an integer"));
    CHECK_THAT(msg, Contains("remove the quotes"));
  }
  SECTION("numbers follow YAML 1.2's float syntax; infinities and NaN are refused") {
    CHECK(load("l2: .5\n" + kNetwork).l2 == 0.5);
    CHECK(load("l2: 1.\n" + kNetwork).l2 == 1.0);
    CHECK(load("l2: 2.5E-3\n" + kNetwork).l2 == 0.0025);
    for (const char* text : {".inf", ".nan", "0x10", "1e", "1.2.3", "nan", "."}) {
      INFO(text);
      CHECK_THAT(load_error("l2: " + std::string(text) + "\n" + kNetwork),
                 StartsWith("t.yaml:1:5: l2 must be a finite number"));
    }
  }
  SECTION("a very long number is out of range, not a crash") {
    const std::string digits(100000, '9');
    CHECK_THAT(load_error("epochs: " + digits + "\n" + kNetwork), Contains("is out of range"));
    CHECK_THAT(load_error("l2: " + digits + "\n" + kNetwork), Contains("is out of range"));
  }
  SECTION("2.5 for an integer") {
    const std::string msg = load_error("batchSize: 2.5\n" + kNetwork);
    CHECK_THAT(msg, StartsWith("t.yaml:1:12: "));
    CHECK_THAT(msg, Contains("batchSize must be an integer, got '2.5'"));
  }
  SECTION("YAML 1.1 booleans are not booleans") {
    for (const char* word : {"yes", "no", "on", "off", "1"}) {
      const std::string msg =
          load_error("data:\n  shuffle: " + std::string(word) + "\n" + kNetwork);
      CHECK_THAT(msg, StartsWith("t.yaml:2:12: "));
      CHECK_THAT(msg, Contains("data.shuffle must be true or false"));
    }
    CHECK_FALSE(load("data:\n  shuffle: false\n" + kNetwork).data.shuffle);
  }
  SECTION("a map where a list is") {
    const std::string msg =
        load_error("inputType: {feedForward: {size: 4}}\nlayers:\n  dense: {nOut: 3}\n");
    CHECK_THAT(msg, StartsWith("t.yaml:3:3: "));
    CHECK_THAT(msg, Contains("layers must be a list, got a map"));
  }
  SECTION("a list where a single value is") {
    const std::string msg = load_error("seed: [1, 2]\n" + kNetwork);
    CHECK_THAT(msg, StartsWith("t.yaml:1:7: "));
    CHECK_THAT(msg, Contains("seed must be an integer, got a list"));
  }
  SECTION("a value where a section is") {
    const std::string msg = load_error("parallel: 4\n" + kNetwork);
    CHECK_THAT(msg, StartsWith("t.yaml:1:11: "));
    CHECK_THAT(msg, Contains("parallel must be a map of keys"));
  }
  SECTION("a key without a value") {
    const std::string msg = load_error("epochs:\n" + kNetwork);
    CHECK_THAT(msg, StartsWith("t.yaml:"));
    CHECK_THAT(msg, Contains("epochs has no value"));
  }
  SECTION("a kernel of three numbers") {
    const std::string msg = load_error(
        "inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}\nlayers:\n"
        "  - convolution: {nOut: 4, kernelSize: [3, 3, 3]}\n  - output: {nOut: 10}\n");
    CHECK_THAT(msg, StartsWith("t.yaml:3:40: "));
    CHECK_THAT(msg, Contains("layers.0.kernelSize must be one integer or a list of two"));
  }
}

TEST_CASE("values out of range name the allowed range", "[config][errors]") {
  struct Case {
    std::string yaml;
    std::string position;
    std::string what;
    std::string allowed;
  };
  const std::vector<Case> cases{
      {"batchSize: 0\n", "t.yaml:1:12: ", "batchSize = 0 is out of range", ">= 1"},
      {"epochs: -1\n", "t.yaml:1:9: ", "epochs = -1 is out of range", ">= 1"},
      {"parallel:\n  workers: 2000\n", "t.yaml:2:12: ", "parallel.workers = 2000", "1 to 1024"},
      {"parallel:\n  workers: 0\n", "t.yaml:2:12: ", "parallel.workers = 0", "1 to 1024"},
      {"parallel:\n  prefetchBuffer: 5000\n", "t.yaml:2:19: ", "parallel.prefetchBuffer = 5000",
       "0 to 4096"},
      {"parallel:\n  averagingFrequency: 0\n", "t.yaml:2:23: ", "parallel.averagingFrequency = 0",
       ">= 1"},
      {"updater:\n  learningRate: 0\n", "t.yaml:2:17: ", "updater.learningRate = 0", "> 0"},
      {"updater:\n  momentum: 1.0\n", "t.yaml:2:13: ", "updater.momentum = 1.0", "[0, 1)"},
      {"updater:\n  beta1: -0.1\n", "t.yaml:2:10: ", "updater.beta1 = -0.1", "[0, 1)"},
      {"updater:\n  beta2: 1\n", "t.yaml:2:10: ", "updater.beta2 = 1", "[0, 1)"},
      {"l2: -0.0001\n", "t.yaml:1:5: ", "l2 = -0.0001 is out of range", ">= 0"},
      {"seed: -5\n", "t.yaml:1:7: ", "seed = -5 is out of range", "0 to 18446744073709551615"},
      // Larger than an int and larger than any 64-bit integer: out of range, not wrapped around.
      {"epochs: 99999999999\n", "t.yaml:1:9: ", "epochs = 99999999999 is out of range",
       ">= 1 (at most 2147483647)"},
      {"epochs: 99999999999999999999999\n",
       "t.yaml:1:9: ", "epochs = 99999999999999999999999 is out of range", ">= 1"},
      {"l2: 1e999\n", "t.yaml:1:5: ", "l2 = 1e999 is out of range", ">= 0"},
      // In range as a double, not as the float32 training computes with.
      {"updater:\n  learningRate: 1e-320\n", "t.yaml:2:17: ",
       "updater.learningRate = 1e-320 is out of range in float32", "> 0, as a float32 normal"},
      {"updater:\n  learningRate: 1e-40\n", "t.yaml:2:17: ",
       "updater.learningRate = 1e-40 is out of range in float32", "> 0, as a float32 normal"},
      {"l2: 1e39\n", "t.yaml:1:5: ",
       "l2 = 1e39 is out of range in float32, the precision training uses (it becomes inf)",
       ">= 0"},
      {"updater:\n  momentum: 0.999999999\n", "t.yaml:2:13: ",
       "updater.momentum = 0.999999999 is out of range in float32, the precision training uses "
       "(it becomes 1)",
       "[0, 1)"},
  };
  for (const auto& c : cases) {
    INFO(c.yaml);
    const std::string msg = load_error(c.yaml + kNetwork);
    CHECK_THAT(msg, StartsWith(c.position));
    CHECK_THAT(msg, Contains(c.what));
    CHECK_THAT(msg, Contains("allowed: " + c.allowed));
  }
}

TEST_CASE("layer values out of range", "[config][errors]") {
  const std::string head =
      "inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}\nlayers:\n";
  const std::string tail = "  - output: {nOut: 10}\n";
  struct Case {
    std::string layer;
    std::string key;
  };
  const std::vector<Case> cases{
      {"  - dropout: {dropOut: 0}\n", "layers.0.dropOut = 0"},
      {"  - dropout: {dropOut: 1.5}\n", "layers.0.dropOut = 1.5"},
      {"  - dense: {nOut: 0}\n", "layers.0.nOut = 0"},
      {"  - dense: {nOut: 2000000}\n", "layers.0.nOut = 2000000"},
      {"  - convolution: {nOut: 2, kernelSize: 0}\n", "layers.0.kernelSize = 0"},
      {"  - convolution: {nOut: 2, stride: [1, 0]}\n", "layers.0.stride.1 = 0"},
      {"  - convolution: {nOut: 2, padding: -1}\n", "layers.0.padding = -1"},
  };
  for (const auto& c : cases) {
    INFO(c.layer);
    const std::string msg = load_error(head + c.layer + tail);
    CHECK_THAT(msg, StartsWith("t.yaml:3:"));
    CHECK_THAT(msg, Contains(c.key + " is out of range"));
    CHECK_THAT(msg, Contains("allowed: "));
  }
  CHECK(load(head + "  - dropout: {dropOut: 1.0}\n" + tail).layers[0].dropOut == 1.0);
}

TEST_CASE("missing required values", "[config][errors]") {
  const std::string no_layers = load_error("seed: 1\ninputType: {feedForward: {size: 4}}\n");
  CHECK_THAT(no_layers, StartsWith("t.yaml:1:1: "));
  CHECK_THAT(no_layers, Contains("missing required key 'layers'"));

  const std::string no_input = load_error("layers:\n  - output: {nOut: 10}\n");
  CHECK_THAT(no_input, StartsWith("t.yaml:1:1: "));
  CHECK_THAT(no_input, Contains("missing required key 'inputType'"));

  for (const char* type : {"convolution", "dense", "output"}) {
    INFO(type);
    const std::string msg = load_error(
        "inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}\nlayers:\n"
        "  - dense: {nOut: 5}\n  - " +
        std::string(type) + ": {activation: relu}\n");
    CHECK_THAT(msg, StartsWith("t.yaml:4:5: "));
    CHECK_THAT(msg, Contains("missing required key 'nOut' in layers.1 (" + std::string(type)));
  }

  const std::string empty_layers = load_error("inputType: {feedForward: {size: 4}}\nlayers: []\n");
  CHECK_THAT(empty_layers, StartsWith("t.yaml:2:9: "));
  CHECK_THAT(empty_layers, Contains("layers is empty"));
}

TEST_CASE("a key with no value is named at the key, not where the next token is",
          "[config][errors]") {
  // yaml-cpp marks an empty value where it met the next token: below the comments that follow.
  CHECK(load_error("epochs:\n# comment\n\n# another\n" + kNetwork) ==
        "t.yaml:1:1: epochs has no value; write an integer after the colon, or remove the key to "
        "use the default");
  CHECK_THAT(load_error("updater:\n  type: adam\n  learningRate:\n  # later\n" + kNetwork),
             StartsWith("t.yaml:3:3: updater.learningRate has no value; "));
  CHECK_THAT(load_error("inputType: {feedForward: {size: 4}}\nlayers:\n  - dense:\n      nOut:\n"
                        "  # note\n  - output: {nOut: 3}\n"),
             StartsWith("t.yaml:4:7: layers.0.nOut has no value; "));
  // A list item has no key: its '-' is named, past the comments and blank lines after it.
  const std::string layers = "inputType: {feedForward: {size: 4}}\nlayers:\n";
  CHECK_THAT(load_error(layers + "  -\n  - output: {nOut: 3}\n"),
             StartsWith("t.yaml:3:3: layers.0 "));
  CHECK_THAT(load_error(layers + "  - output: {nOut: 3}\n  -   # later\n\n# c\nepochs: 2\n"),
             StartsWith("t.yaml:4:3: layers.1 "));
  CHECK_THAT(load_error(layers + "  - ~\n"), StartsWith("t.yaml:3:5: layers.0 "));
  // From --set, the value is to be written after the '='.
  CHECK(load_error(kNetwork, {"epochs="}) ==
        "--set epochs=: epochs has no value; write an integer after the '=', or remove the key to "
        "use the default");
}
