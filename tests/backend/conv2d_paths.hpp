// The CPU convolution's paths as the conv2d tests call them: as dispatched, the columns, the
// direct path and the Winograd path with 16 and 8 lanes, each with the geometries it takes; the
// geometries test_conv2d.cpp runs them on and the random problems. Compiled into each test
// program with its variant of the kernels (tests/backend/meson.build).
#pragma once

#include <random>
#include <vector>

#include "backend/ops/conv2d.hpp"

namespace dl::testing::conv_paths {

constexpr unsigned kSeed = 20240601;

struct Problem {
  Conv2dGeometry g;
  std::vector<float> x, w, b, dy;
};
// x, w, b and dy of g's sizes, random.
Problem random_problem(const Conv2dGeometry& g, std::mt19937& rng);

struct Path {
  const char* name;
  void (*forward)(const Conv2dGeometry& g, const float* x, const float* w, const float* b, float* y,
                  float* workspace);
  void (*backward)(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                   float* dx, float* dw, float* db, float* workspace);
  bool (*takes)(const Conv2dGeometry& g);
};
// kPaths' order.
enum PathIndex { kDispatched, kColumns, kDirect, kWinograd16, kWinograd8, kPathCount };
extern const Path kPaths[kPathCount];
bool takes(const Path& path, const Conv2dGeometry& g);

// LeNet's layers, and every case each path handles apart (padding, strides, Same, the direct
// path's and the Winograd path's edges).
std::vector<Conv2dGeometry> geometries();

}  // namespace dl::testing::conv_paths
