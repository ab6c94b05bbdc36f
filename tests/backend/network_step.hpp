// One training step of a config's network on a backend, from the parameters its seed gives and a
// fixed random batch: what backend_network_tests.cpp compares between backends, and
// backends_cpu_variant.cpp between thread counts.
#pragma once

#include <vector>

#include "backend/backend.hpp"
#include "config/config.hpp"

namespace dl::testing {

struct NetworkStep {
  float loss = 0.0f;
  std::vector<float> output, gradients;
};

NetworkStep take_network_step(const Config& config, Backend& backend, int batch);

}  // namespace dl::testing
