// YAML anchors, aliases and merge keys in a config, and --set overrides of what they share: a
// merged key is the merging map's own (an override changes that map alone), and an override that
// would go through an alias into the node it shares is refused instead of changing every place.
#include <catch2/catch.hpp>

#include "config_test_support.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using dl::testing::load;
using dl::testing::load_error;

namespace {

// A config of 28x28 images whose `layers:` list is `layers` (its first item on line 4).
std::string image_network(const std::string& layers) {
  return "inputType:\n"
         "  convolutionalFlat: {height: 28, width: 28, channels: 1}\n"
         "layers:\n" +
         layers;
}

// Two anchored convolutions, a third whose settings are `merge` (merging them), the output.
dl::Config merging_two(const std::string& merge) {
  return load(
      image_network("  - convolution: &a {kernelSize: 5, nOut: 6}\n"
                    "  - convolution: &b {kernelSize: 3, padding: 2, nOut: 6}\n"
                    "  - convolution: {" +
                    merge +
                    "}\n"
                    "  - output: {nOut: 10}\n"));
}

// Three convolutions: the first anchors its settings, the second merges them and writes its own
// nOut, the third is an alias of the whole first layer.
const std::string kShared = image_network(
    "  - &first\n"
    "    convolution: &c3 {kernelSize: 3, padding: 1, nOut: 4, activation: relu}\n"
    "  - convolution: {<<: *c3, nOut: 8}\n"
    "  - *first\n"
    "  - output: {nOut: 10}\n");

// The same without the alias of the whole first layer.
const std::string kMerged = image_network(
    "  - convolution: &c3 {kernelSize: 3, padding: 1, nOut: 4, activation: relu}\n"
    "  - convolution: {<<: *c3, nOut: 8}\n"
    "  - output: {nOut: 10}\n");

}  // namespace

TEST_CASE("merge keys add the keys a map does not write itself", "[config][yaml]") {
  const dl::Config c = load(kShared);
  REQUIRE(c.layers.size() == 4);
  CHECK(c.layers[1].nOut == 8);  // its own key wins
  CHECK(c.layers[1].kernelSize[0] == 3);
  CHECK(c.layers[1].padding[0] == 1);
  CHECK(c.layers[1].activation == c.layers[0].activation);
  CHECK(c.layers[2].nOut == 4);
  // A list of maps: the first that has a key gives it.
  const dl::Config two = merging_two("<<: [*a, *b]");
  CHECK(two.layers[2].kernelSize[0] == 5);
  CHECK(two.layers[2].padding[0] == 2);
  CHECK(two.layers[2].nOut == 6);
  // '<<' written twice in one map (yaml-cpp keeps both): both merge, in the order written.
  const dl::Config twice = merging_two("<<: *a, <<: *b");
  CHECK(twice.layers[2].kernelSize[0] == 5);
  CHECK(twice.layers[2].padding[0] == 2);
}

TEST_CASE("a merged key's error points where it is written", "[config][yaml]") {
  const std::string message =
      load_error(image_network("  - convolution: &c {kernelSize: 3, nOut: 4, stride: 0}\n"
                               "  - convolution: {<<: *c, nOut: 8}\n"
                               "  - output: {nOut: 10}\n"));
  CHECK_THAT(message, StartsWith("t.yaml:4:"));
  CHECK_THAT(message, Contains("stride"));
}

TEST_CASE("a merge key without a map to merge is refused at its place", "[config][yaml]") {
  const std::string message =
      load_error(image_network("  - convolution: {<<: 3, nOut: 8}\n"
                               "  - output: {nOut: 10}\n"));
  CHECK_THAT(message, StartsWith("t.yaml:4:19: the merge key '<<' takes a map or a list of maps"));
  CHECK_THAT(message, Contains("'<<: *name'"));
  CHECK_THAT(load_error("seed: {<<: [*x]}\n" + dl::testing::kNetwork), Contains("t.yaml:1:"));
}

TEST_CASE("--set on a merged key changes that layer alone", "[config][yaml][overrides]") {
  const dl::Config c = load(kShared, {"layers.1.convolution.kernelSize=5"});
  CHECK(c.layers[1].kernelSize[0] == 5);
  CHECK(c.layers[0].kernelSize[0] == 3);
  // And the anchored original changes its own layer: the merge took its values when read.
  const dl::Config original = load(kMerged, {"layers.0.convolution.padding=0"});
  CHECK(original.layers[0].padding[0] == 0);
  CHECK(original.layers[1].padding[0] == 1);
}

TEST_CASE("--set through an alias is refused: it would change every place",
          "[config][yaml][overrides]") {
  // layers.2 is *first, the same node as layers.0: setting its nOut changed both, silently.
  const std::string message = load_error(kShared, {"layers.2.nOut=16"});
  CHECK_THAT(message, StartsWith("--set layers.2.nOut=16: 'layers.2' is the part of the file "
                                 "written at line 4 and used again by a YAML alias"));
  CHECK_THAT(message, Contains("write layers.2 out in the file instead of using the alias"));
  CHECK(message.find('\n') == std::string::npos);
  CHECK_THAT(load_error(kShared, {"layers.0.nOut=16"}), Contains("'layers.0' is the part"));
  // A whole list item replaced is refused the same way; one not shared is replaced.
  CHECK_THAT(load_error(kShared, {"layers.2={dense: {nOut: 5}}"}), Contains("'layers.2'"));
  CHECK(load(kShared, {"layers.1={convolution: {nOut: 5}}"}).layers[1].nOut == 5);
  // A value aliased as a whole (not a map) is replaced where it is set, and only there.
  const std::string scalars =
      "seed: &s 7\n"
      "epochs: *s\n" +
      dl::testing::kNetwork;
  const dl::Config c = load(scalars, {"epochs=3"});
  CHECK(c.epochs == 3);
  CHECK(c.seed == 7);
}
