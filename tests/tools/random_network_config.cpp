// Prints the network of tests/nn/random_network.hpp for a seed, as config YAML (seed, weightInit,
// inputType, layers), for tests/cli/random_networks.sh and for a developer reproducing a failing
// seed by hand.
//   random_network_config SEED [any|smooth] [--input N | --input HxWxC] [--classes K] [--recipe]
// --input fixes the input (N features, or an image), --classes the output layer's classes;
// --recipe adds a random recipe drawn from the same seed: the updater, the learning-rate schedule,
// gradient normalization, L2, the batch size (an odd one too, so an epoch ends on a short batch)
// and early stopping (or none).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>

#include <fmt/format.h>

#include "nn/random_network.hpp"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: random_network_config SEED [any|smooth] [--input N | --input HxWxC] "
               "[--classes K] [--recipe]\n");
  return 2;
}

std::string random_recipe(unsigned seed) {
  // Its own stream, so the network drawn for a seed is the same with and without a recipe.
  std::mt19937 rng(seed ^ 0x5eedu);
  const auto pick = [&](std::initializer_list<const char*> options) {
    return options.begin()[rng() % options.size()];
  };
  std::string text =
      fmt::format("updater: {}\n",
                  pick({"{type: sgd, learningRate: 0.05}",
                        "{type: nesterovs, learningRate: 0.01, momentum: 0.9}",
                        "{type: adam, learningRate: 0.002}", "{type: rmsprop, learningRate: 0.001}",
                        "{type: adamw, learningRate: 0.002, weightDecayBias: false}"}));
  text += fmt::format(
      "learningRateSchedule: {}\n",
      pick({"{type: none}", "{type: step, gamma: 0.5, step: 7}", "{type: exponential, gamma: 0.98}",
            "{type: inverse, gamma: 0.01, power: 0.75}",
            "{type: cosine, warmupIterations: 5, minLearningRate: 1.0e-5}",
            "{type: oneCycle, warmupIterations: 6}"}));
  text += fmt::format(
      "gradientNormalization: {}\ngradientNormalizationThreshold: {}\n",
      pick({"None", "ClipL2Global", "ClipL2PerLayer", "ClipL2PerParamType",
            "ClipElementWiseAbsoluteValue", "RenormalizeL2PerLayer", "RenormalizeL2PerParamType"}),
      pick({"0.5", "1", "5"}));
  text += fmt::format("l2: {}\nl2Bias: {}\nbatchSize: {}\n", pick({"0", "1.0e-4"}),
                      pick({"0", "1.0e-4"}), pick({"8", "20", "32", "33"}));
  text += pick({"", "earlyStopping: {enabled: true, patience: 1, scoreCalculator: testLoss}\n",
                "earlyStopping: {enabled: true, patience: 1, scoreCalculator: accuracy}\n",
                "earlyStopping: {enabled: true, scoreCalculator: f1, saveBestModel: true}\n"});
  return text;
}

bool read_input(const char* text, dl::testing::FixedEnds& ends) {
  if (std::sscanf(text, "%dx%dx%d", &ends.height, &ends.width, &ends.channels) == 3)
    return ends.height > 0 && ends.width > 0 && ends.channels > 0;
  ends.height = ends.width = ends.channels = 0;
  return std::sscanf(text, "%d", &ends.features) == 1 && ends.features > 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const unsigned seed = static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10));
  auto kind = dl::testing::NetworkKind::kAny;
  dl::testing::FixedEnds ends;
  bool recipe = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "any" || arg == "smooth") {
      kind = arg == "any" ? dl::testing::NetworkKind::kAny : dl::testing::NetworkKind::kSmooth;
    } else if (arg == "--input" && i + 1 < argc) {
      if (!read_input(argv[++i], ends)) return usage();
    } else if (arg == "--recipe") {
      recipe = true;
    } else if (arg == "--classes" && i + 1 < argc) {
      ends.classes = std::atoi(argv[++i]);
      if (ends.classes < 2) return usage();
    } else {
      return usage();
    }
  }
  std::fputs(dl::testing::random_network(seed, kind, ends).yaml.c_str(), stdout);
  if (recipe) std::fputs(random_recipe(seed).c_str(), stdout);
  return 0;
}
