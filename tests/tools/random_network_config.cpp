// Prints the network of tests/nn/random_network.hpp for a seed, as config YAML (seed, weightInit,
// inputType, layers), for tests/cli/random_networks.sh and for a developer reproducing a failing
// seed by hand.
//   random_network_config SEED [any|smooth] [--input N | --input HxWxC] [--classes K]
// --input fixes the input (N features, or an image), --classes the output layer's classes.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "nn/random_network.hpp"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: random_network_config SEED [any|smooth] [--input N | --input HxWxC] "
               "[--classes K]\n");
  return 2;
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
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "any" || arg == "smooth") {
      kind = arg == "any" ? dl::testing::NetworkKind::kAny : dl::testing::NetworkKind::kSmooth;
    } else if (arg == "--input" && i + 1 < argc) {
      if (!read_input(argv[++i], ends)) return usage();
    } else if (arg == "--classes" && i + 1 < argc) {
      ends.classes = std::atoi(argv[++i]);
      if (ends.classes < 2) return usage();
    } else {
      return usage();
    }
  }
  std::fputs(dl::testing::random_network(seed, kind, ends).yaml.c_str(), stdout);
  return 0;
}
