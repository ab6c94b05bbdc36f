// The network as a graph: `inputs` resolved to layers, shapes inferred through merges, and each
// mistake in a graph reported at its file:line:column with the fix.
#include "config_test_support.hpp"
#include "nn/layer_graph.hpp"
#include "nn/layer_plan.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using dl::testing::check_same_config;
using dl::testing::load;
using dl::testing::load_error;

namespace {

const std::string kImage = "inputType: {convolutionalFlat: {height: 8, width: 8, channels: 3}}\n";

// A residual block with a projection shortcut, a branch from the network's input and a concat.
const std::string kResidual = kImage +
                              "layers:\n"
                              "  - convolution: {name: stem, nOut: 4, kernelSize: 3, "
                              "convolutionMode: same}\n"
                              "  - convolution: {name: a, nOut: 8, kernelSize: 3, stride: 2, "
                              "convolutionMode: same}\n"
                              "  - convolution: {name: shortcut, inputs: stem, nOut: 8, "
                              "kernelSize: 1, stride: 2}\n"
                              "  - add: {name: sum, inputs: [a, shortcut], activation: relu}\n"
                              "  - subsampling: {name: side, inputs: input, kernelSize: 2, "
                              "stride: 2}\n"
                              "  - concat: {name: both, inputs: [sum, side]}\n"
                              "  - globalPooling: {poolingType: avg}\n"
                              "  - output: {nOut: 10}\n";

}  // namespace

TEST_CASE("graph: inputs resolve to layers, shapes flow through add and concat",
          "[config][graph]") {
  const dl::Config c = load(kResidual);
  const dl::LayerSources g = dl::resolve_layer_sources(c);
  CHECK(g.sources[0] == std::vector<int>{dl::kNetworkInput});
  CHECK(g.sources[2] == std::vector<int>{0});     // shortcut reads stem, not a
  CHECK(g.sources[3] == std::vector<int>{1, 2});  // sum
  CHECK(g.sources[4] == std::vector<int>{dl::kNetworkInput});
  CHECK(g.sources[6] == std::vector<int>{5});  // no inputs: the layer before
  const auto plan = dl::plan_layers(c);
  CHECK(plan[3].output.str() == "8x4x4");
  CHECK(plan[3].activation == dl::Activation::kRelu);
  CHECK(plan[5].output.str() == "11x4x4");  // 8 + 3 channels
  CHECK(plan[5].source_names == std::vector<std::string>{"sum", "side"});
  CHECK(plan[7].config.nIn == 11);
}

TEST_CASE("graph: a chain written with explicit inputs is the chain without them",
          "[config][graph]") {
  const std::string head = kImage + "layers:\n";
  const dl::Config implicit = load(head +
                                   "  - convolution: {nOut: 4, kernelSize: 3}\n"
                                   "  - dense: {nOut: 5}\n  - output: {nOut: 2}\n");
  const dl::Config explicit_inputs =
      load(head +
           "  - convolution: {nOut: 4, kernelSize: 3, inputs: input}\n"
           "  - dense: {nOut: 5, inputs: [convolution0]}\n"
           "  - output: {nOut: 2, inputs: dense1}\n");
  CHECK(dl::resolve_layer_sources(implicit).sources ==
        dl::resolve_layer_sources(explicit_inputs).sources);
  const auto a = dl::plan_layers(implicit);
  const auto b = dl::plan_layers(explicit_inputs);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].output == b[i].output);
    CHECK(a[i].source_names == b[i].source_names);
    CHECK(a[i].config.nIn == b[i].config.nIn);
  }
}

TEST_CASE("graph: the dump writes inputs only where they were given, and loads back",
          "[config][graph][dump]") {
  const dl::Config original = load(kResidual);
  const std::string dumped = dl::dump_config_yaml(original);
  CHECK_THAT(dumped, Contains("inputs: [\"a\", \"shortcut\"]"));
  CHECK_THAT(dumped, !Contains("inputs: []"));
  const dl::Config again = dl::load_config_string(dumped, "dump.yaml");
  check_same_config(original, again);
  CHECK(dl::dump_config_yaml(again) == dumped);
  const std::string chain = dl::dump_config_yaml(load(kImage + "layers: [{output: {nOut: 2}}]\n"));
  CHECK_THAT(chain, !Contains("inputs"));
}

TEST_CASE("graph errors name the place and the fix", "[config][graph]") {
  const std::string head = kImage + "layers:\n";
  SECTION("an unknown input, with the closest name") {
    const std::string msg = load_error(head +
                                       "  - convolution: {name: stem, nOut: 4, kernelSize: 3}\n"
                                       "  - dense: {nOut: 4, inputs: [stme]}\n"
                                       "  - output: {nOut: 2}\n");
    CHECK_THAT(msg, StartsWith("t.yaml:4:31: layer 1 'dense1' (dense) reads 'stme', which is no "
                               "layer of this network"));
    CHECK_THAT(msg, Contains("did you mean 'stem'?"));
  }
  SECTION("a cycle: a layer reading a layer below it, or itself") {
    const std::string below = load_error(head +
                                         "  - dense: {name: a, nOut: 4, inputs: b}\n"
                                         "  - dense: {name: b, nOut: 4}\n"
                                         "  - output: {nOut: 2}\n");
    CHECK_THAT(below, StartsWith("t.yaml:3:39: layer 0 'a' (dense) reads 'b', which is listed "
                                 "below it (layer 1)"));
    CHECK_THAT(below, Contains("a loop cannot be computed"));
    const std::string itself = load_error(head +
                                          "  - dense: {name: a, nOut: 4}\n"
                                          "  - dense: {name: b, nOut: 4, inputs: b}\n"
                                          "  - output: {nOut: 2}\n");
    CHECK_THAT(itself, Contains("reads 'b', itself"));
  }
  SECTION("an output nobody reads") {
    const std::string msg = load_error(head +
                                       "  - dense: {name: lost, nOut: 4}\n"
                                       "  - dense: {nOut: 4, inputs: input}\n"
                                       "  - output: {nOut: 2}\n");
    CHECK_THAT(msg, StartsWith("t.yaml:3:5: no layer reads the output of layer 0 'lost' (dense)"));
    CHECK_THAT(msg, Contains("or remove the layer"));
  }
  SECTION("a --set that renamed a layer its readers still name") {
    const std::string yaml = head +
                             "  - dense: {name: stem, nOut: 4}\n"
                             "  - dense: {name: b, inputs: stem, nOut: 4}\n"
                             "  - output: {nOut: 2}\n";
    // It said 'name one of: input, trunk', silent on the --set that made the file's name stale.
    CHECK_THAT(load_error(yaml, {"layers.0.name=trunk"}),
               Contains("reads 'stem', which is no layer of this network; --set "
                        "layers.0.name=trunk renamed a layer that this one may read by its old "
                        "name"));
  }
  SECTION("shapes that do not match at an add") {
    const std::string msg = load_error(head +
                                       "  - convolution: {name: a, nOut: 4, kernelSize: 3}\n"
                                       "  - add: {inputs: [a, input]}\n"
                                       "  - output: {nOut: 2}\n");
    CHECK_THAT(msg, StartsWith("t.yaml:4:5: "));
    CHECK_THAT(msg, Contains("'a' gives 4x6x6, 'input' gives 3x8x8"));
    CHECK_THAT(msg, Contains("1x1 convolution"));
    // concat joins only inputs of one height and width: not offered for an image and a vector.
    CHECK_THAT(msg, !Contains("concat"));
    CHECK_THAT(load_error(head + "  - convolution: {name: a, nOut: 4, kernelSize: 3, padding: 1}\n"
                                 "  - add: {inputs: [a, input]}\n"
                                 "  - output: {nOut: 2}\n"),
               Contains("or join them with concat"));
    const std::string flat = load_error(head +
                                        "  - dense: {name: d, nOut: 16}\n"
                                        "  - convolution: {name: c, inputs: input, nOut: 4, "
                                        "kernelSize: 7}\n"
                                        "  - add: {inputs: [c, d]}\n"
                                        "  - output: {nOut: 2}\n");
    CHECK_THAT(flat, Contains("'c' gives 4x2x2, 'd' gives 16"));
    CHECK_THAT(flat, Contains("pool the image to one pixel with globalPooling"));
    CHECK_THAT(flat, !Contains("concat"));
  }
  SECTION("planes that do not match at a concat") {
    const std::string msg = load_error(head +
                                       "  - convolution: {name: a, nOut: 4, kernelSize: 3}\n"
                                       "  - concat: {inputs: [a, input]}\n"
                                       "  - output: {nOut: 2}\n");
    CHECK_THAT(msg, StartsWith("t.yaml:4:5: "));
    CHECK_THAT(msg, Contains("'a' gives 4x6x6 and 'input' gives 3x8x8"));
  }
  SECTION("a merge of one input, a plain layer of two") {
    CHECK_THAT(load_error(head + "  - add: {}\n  - output: {nOut: 2}\n"),
               Contains("merges two or more inputs but reads 1"));
    CHECK_THAT(load_error(head +
                          "  - dense: {name: a, nOut: 3}\n"
                          "  - dense: {nOut: 3, inputs: [a, input]}\n  - output: {nOut: 2}\n"),
               Contains("reads one input but names 2") && Contains("add or a concat"));
  }
  SECTION("a layer named like the network's input, an empty list") {
    CHECK_THAT(load_error(head + "  - dense: {name: input, nOut: 3}\n  - output: {nOut: 2}\n"),
               StartsWith("t.yaml:3:5: ") && Contains("the name of the network's input"));
    CHECK_THAT(load_error(head + "  - dense: {nOut: 3, inputs: []}\n  - output: {nOut: 2}\n"),
               StartsWith("t.yaml:3:"));
  }
}

// The advice for inputs written in a shape inputs does not take, and for merges of an image
// with a flat vector.
TEST_CASE("graph errors: inputs in the wrong shape, and images meeting flat vectors",
          "[config][graph]") {
  const std::string head = kImage + "layers:\n";
  // "a, b" or "a b" as one string, where a list was meant: the advice used to be "name one of:
  // input, a, b", every one of which the user had written.
  SECTION("several names written as one string, with the list to write") {
    const std::string layers =
        "  - dense: {name: a, nOut: 4}\n"
        "  - dense: {name: b, inputs: input, nOut: 4}\n";
    const std::string commas =
        load_error(head + layers + "  - add: {inputs: \"a, b\"}\n  - output: {nOut: 2}\n");
    CHECK_THAT(commas, StartsWith("t.yaml:5:19: layer 2 'add2' (add) reads 'a, b', which is no "
                                  "layer of this network; to read several layers, write them as "
                                  "a YAML list: inputs: [a, b]"));
    CHECK_THAT(load_error(head + layers + "  - concat: {inputs: a input}\n  - output: {nOut: 2}\n"),
               Contains("inputs: [a, input]"));
    // A string whose words are not all layer names keeps the closest-name advice.
    CHECK_THAT(load_error(head + layers + "  - add: {inputs: \"a, bb\"}\n  - output: {nOut: 2}\n"),
               !Contains("YAML list"));
  }
  // The generic advice for a non-string ("write a single value, not a map or a list") told the
  // user not to write the list that inputs takes.
  SECTION("inputs that are a map, a nested list or no value name the shapes inputs takes") {
    const std::string map =
        load_error(head + "  - dense: {nOut: 3, inputs: {x: a}}\n  - output: {nOut: 2}\n");
    CHECK_THAT(map, StartsWith("t.yaml:3:30: layers.0.inputs must be a layer name, got a map; "
                               "write one layer name (inputs: conv1) or a flat list of them "
                               "(inputs: [conv1, shortcut])"));
    CHECK_THAT(map, !Contains("not a map or a list"));
    const std::string nested =
        load_error(head + "  - dense: {nOut: 3, inputs: [[input]]}\n  - output: {nOut: 2}\n");
    CHECK_THAT(nested, StartsWith("t.yaml:3:31: layers.0.inputs.0 must be a layer name, got a "
                                  "list; write one layer name"));
    const std::string none =
        load_error(head + "  - dense: {nOut: 3, inputs: ~}\n  - output: {nOut: 2}\n");
    CHECK_THAT(none, StartsWith("t.yaml:3:22: layers.0.inputs has no value; write one layer name"));
    CHECK_THAT(none, Contains("or remove the key to read the layer before"));
    CHECK_THAT(load_error(head + "  - dense: {nOut: 3}\n  - output: {nOut: 2}\n",
                          {"layers.1.inputs={a: 1}"}),
               StartsWith("--set layers.1.inputs={a: 1}: layers.1.inputs must be a layer name"));
  }
  SECTION("an image of more than one pixel does not join a flat vector") {
    const std::string msg = load_error(head +
                                       "  - convolution: {name: a, nOut: 4, kernelSize: 3}\n"
                                       "  - dense: {name: d, inputs: input, nOut: 4}\n"
                                       "  - concat: {inputs: [a, d]}\n"
                                       "  - output: {nOut: 2}\n");
    CHECK_THAT(msg, StartsWith("t.yaml:5:5: "));
    CHECK_THAT(msg, Contains("'a' gives 4x6x6 and 'd' gives 4") && Contains("globalPooling"));
    CHECK_THAT(load_error(head +
                          "  - convolution: {name: a, nOut: 4, kernelSize: 3}\n"
                          "  - dense: {name: d, inputs: input, nOut: 144}\n"
                          "  - add: {inputs: [a, d]}\n"
                          "  - output: {nOut: 2}\n"),
               Contains("'a' gives 4x6x6, 'd' gives 144"));
  }
}
